"""The runner's stop rule: samples in a row failing the same way stop the run, in the plugin and in evaluate();
a model's failures that do not repeat never do."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from _comfyui_fake import TEXT_WORKFLOW, FakeComfyUI, quick_polls  # noqa: F401  the fixture applies here
from _processes import run_hanging_model
from pytest_violin.errors import GenerationCrashed, GenerationError, GenerationUnjudged, ViolinWarning
from pytest_violin.evaluation import evaluate
from pytest_violin.execution.runner import REPEAT_AFTER, Runner
from pytest_violin.models.registry import AdapterOptions, resolve_model
from pytest_violin.suite import load_suite


@pytest.fixture(scope="module")
def many():
    return load_suite("violin", tasks=["color"], limit=40)


@pytest.mark.slow  # each prompt waits out its time-out on the fake server: about 12 s
def test_a_workflow_timing_out_on_every_prompt_stops_the_evaluation_within_ten_prompts(tmp_path, many):
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(TEXT_WORKFLOW))
    with FakeComfyUI({s.id: s for s in many}, default="hang") as fake:
        # a 1 s timeout (2 s of running per prompt): the submit and the polls keep time to spare under load
        adapter = resolve_model(f"comfyui:{fake.url}",
                                AdapterOptions(rootdir=tmp_path, timeout=1.0, extra={"workflow": str(path)}))
        try:
            with pytest.warns(ViolinWarning, match="the run stops after"):
                run = evaluate(adapter, tasks="color", limit=32, concurrency=1, cache=False, progress=False)
        finally:
            adapter.close()
        sent = len(fake.prompts)
    assert run.interrupted and 0 < len(run) <= 10 and 0 < sent <= 10, (len(run), sent)
    # each prompt's own URL is in its line: the cause is still one
    assert f"the same failure on {REPEAT_AFTER} samples in a row" in run.stop_reason
    assert "GenerationUnjudged: ComfyUI prompt at " in run.stop_reason and "timed out" in run.stop_reason
    assert all(r.outcome == "error" for r in run.results)


def test_a_python_model_timing_out_on_every_call_stops_the_evaluation_within_ten_calls():
    never, calls, lock = threading.Event(), [], threading.Lock()

    def hanging(request):
        with lock:
            calls.append(request.sample_id)
        never.wait()

    try:
        with pytest.warns(ViolinWarning, match="the run stops after"):
            run = evaluate(hanging, tasks="color", limit=32, timeout=0.2, cache=False, progress=False)
    finally:
        never.set()  # the abandoned calls end
    # 4 generations at once: the stop comes with the 6th time-out, while at most 3 more are running
    assert run.interrupted and len(calls) <= 10 and len(run) <= 10, (len(calls), len(run))
    assert "GenerationUnjudged: timed out:" in run.stop_reason and "did not return within 0.2 s" in run.stop_reason
    assert all(r.outcome == "error" for r in run.results)


@pytest.mark.slow  # a session in its own process, waiting out its time-outs
def test_a_python_model_timing_out_on_every_call_stops_the_session_within_ten_samples(pytester):
    result = run_hanging_model(pytester, "--violin-limit=32", "--violin-timeout=0.3", "--violin-no-cache")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines([f"*Interrupted: violin: the same failure on {REPEAT_AFTER} samples in a row, "
                                 "no image in between: GenerationUnjudged: timed out: python:hanging_model:generate"
                                 " did not return within 0.3 s*"])
    outcomes = result.parseoutcomes()
    assert 0 < outcomes.get("errors", 0) <= 10 and "passed" not in outcomes and "failed" not in outcomes


def test_a_model_failing_one_sample_in_three_for_different_reasons_never_stops():
    causes = [GenerationError("HTTP 503: the gateway is busy", status=503),
              GenerationCrashed("KeyError: 'steps'; traceback (most recent call last): glue.py:9 in generate"),
              GenerationUnjudged("timed out: the model did not return within 120 s")]
    seen = iter(range(10**6))

    def sometimes(request):
        n = next(seen)
        if n % 3 == 2:
            raise causes[(n // 3) % len(causes)]
        return request.sample.expected()

    run = evaluate(sometimes, tasks="color", limit=40, concurrency=1, cache=False, progress=False)
    assert not run.interrupted and run.stop_reason is None and len(run) == 40
    assert sum(r.outcome == "passed" for r in run.results) == 27


class _Model:
    cacheable = False

    def __init__(self, fail):
        self.fail = fail  # call number -> exception to raise (else an image)
        self.calls = 0
        self.lock = threading.Lock()

    def generate(self, request):
        with self.lock:
            n, self.calls = self.calls, self.calls + 1
        error = self.fail(n)
        if error is not None:
            raise error
        return np.zeros((request.height, request.width, 3), np.uint8)


def _consume(runner, samples):
    runner.plan(samples)
    try:
        return [runner.get(s) for s in samples]
    finally:
        runner.close()


def test_the_same_failure_after_an_image_stops_the_runner_and_an_image_between_resets_it(many):
    # a server whose model breaks in the middle of a run (out of memory on every prompt from then on)
    oom = _Model(lambda n: None if n < 3 else GenerationError("HTTP 500: CUDA out of memory", status=500))
    runner = Runner(oom, concurrency=1)
    gens = _consume(runner, many)
    assert oom.calls == 3 + REPEAT_AFTER
    assert runner.stop_reason == (f"the same failure on {REPEAT_AFTER} samples in a row, no image in between: "
                                  "GenerationError: HTTP 500: CUDA out of memory")
    assert all(g.error is not None and g.error.unjudged for g in gens[3 + REPEAT_AFTER:])
    # one image short of the row, every time
    flaky = _Model(lambda n: None if n % REPEAT_AFTER == 0 else GenerationError("HTTP 500: busy", status=500))
    runner = Runner(flaky, concurrency=1)
    _consume(runner, many)
    assert runner.stop_reason is None and flaky.calls == len(many)


def test_a_burst_no_longer_than_the_generations_in_flight_stops_nothing(many):
    # a server's restart loses the jobs running at once: each vanishes, each from its own URL
    burst = _Model(lambda n: GenerationUnjudged(f"job at http://gpu:8000/jobs/{n} vanished") if n < 8 else None)
    runner = Runner(burst, concurrency=8)
    gens = _consume(runner, many)
    assert runner.stop_reason is None and sum(g.error is None for g in gens) == len(many) - 8
