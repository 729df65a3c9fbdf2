"""The image reader a run's profile sets holds for that run only: runs in one process's threads (two
evaluate() calls, a plugin run beside an evaluate() call) each get the numbers they get alone, whichever
ends while the other is mid-run."""

from __future__ import annotations

import json
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pytest_violin.evaluation import evaluate
from pytest_violin.imaging import current_reader

#: the expected picture, half transparent: the readers disagree on it (pillow composites it over black,
#: opencv drops the alpha as cv2.imread does)
RGBA_MODEL = textwrap.dedent("""
    import numpy as np

    #: (event to set, event to wait for) on the first call; None: no waiting
    SYNC = None

    def rgba(request):
        expected = request.sample.expected()
        return np.dstack([expected, np.full(expected.shape[:2], 128, np.uint8)])

    def generate(request):
        global SYNC
        if SYNC is not None:
            mine, theirs = SYNC
            SYNC = None
            mine.set()
            assert theirs.wait(120), "the other run never got there"
        return rgba(request)
""")

SELECTION = {"tasks": ["color"], "limit": 4, "concurrency": 1, "cache": False, "progress": False,
             "thumbnails": False}


def _rgba(request):
    expected = request.sample.expected()
    return np.dstack([expected, np.full(expected.shape[:2], 128, np.uint8)])


def _waiting(mine: threading.Event, theirs: threading.Event):
    """A model that, on its first call, sets ``mine`` and waits for ``theirs``."""
    first = threading.Lock()

    def generate(request):
        if first.acquire(blocking=False):
            mine.set()
            assert theirs.wait(120), "the other run never got there"
        return _rgba(request)
    return generate


def _metrics(run):
    return {r.sample_id: r.metrics for r in run.results}


def _strict_run(started: threading.Event, go: threading.Event, done: threading.Event) -> dict:
    """The metrics of a strict evaluate() whose first answer comes once ``go`` is set (``started`` is set
    before it waits); ``done`` is set when it has returned."""
    try:
        return _metrics(evaluate(_waiting(started, go), profile="strict", **SELECTION))
    finally:
        done.set()


def test_two_evaluate_calls_in_threads_each_read_with_their_own_profile():
    alone = {profile: _metrics(evaluate(_rgba, profile=profile, **SELECTION)) for profile in ("strict", "violin")}
    assert alone["strict"] != alone["violin"]  # the alpha matters: the test can tell the readers apart

    strict_in_model, violin_in_model, strict_done = threading.Event(), threading.Event(), threading.Event()

    def violin_run():
        assert strict_in_model.wait(120), "the strict run never called its model"
        # its first answer is decoded after the strict run has ended
        return evaluate(_waiting(violin_in_model, strict_done), profile="violin", **SELECTION)

    with ThreadPoolExecutor(2) as pool:
        # strict's first answer is decoded once the violin run has started; it ends while that run waits
        strict = pool.submit(_strict_run, strict_in_model, violin_in_model, strict_done)
        violin = pool.submit(violin_run)
        together = {"strict": strict.result(), "violin": _metrics(violin.result())}
    assert together == alone
    assert current_reader() == "pillow"


def _plugin_metrics(pytester, folder: str) -> dict:
    result = pytester.runpytest("--violin-model=python:rgba_model:generate", "--violin-profile=violin",
                                "--violin-tasks=color", "--violin-limit=4", "--violin-concurrency=1",
                                f"--violin-report={folder}", "-p", "no:cacheprovider")
    assert result.ret in (0, 1), result.stdout.str()
    doc = json.loads((pytester.path / folder / "results.json").read_text())
    return {r["sample_id"]: r["metrics"] for r in doc["samples"]}


def test_a_plugin_run_and_an_evaluate_call_in_another_thread_keep_their_readers(pytester):
    pytester.makepyfile(rgba_model=RGBA_MODEL)
    pytester.syspathinsert()
    import rgba_model  # the plugin run imports this same module: its SYNC reaches the model

    plugin_alone = _plugin_metrics(pytester, "alone")
    strict_alone = _metrics(evaluate(_rgba, profile="strict", **SELECTION))
    assert len(plugin_alone) == 4 and set(plugin_alone) == set(strict_alone)
    assert plugin_alone != strict_alone

    strict_in_model, plugin_in_model, strict_done = threading.Event(), threading.Event(), threading.Event()
    with ThreadPoolExecutor(1) as pool:
        # strict's first answer is decoded once the plugin run has set its profile; it ends while that run waits
        strict = pool.submit(_strict_run, strict_in_model, plugin_in_model, strict_done)
        assert strict_in_model.wait(120), "the strict run never called its model"
        rgba_model.SYNC = (plugin_in_model, strict_done)  # the plugin's first answer comes after strict's end
        plugin_together = _plugin_metrics(pytester, "together")
        strict_together = strict.result()
    assert rgba_model.SYNC is None  # the plugin's model did wait for the other run
    assert plugin_together == plugin_alone
    assert strict_together == strict_alone
    assert current_reader() == "pillow"
