"""Every call made to the model is counted, where it is made, and the caps hold on calls.

Against a server that logs every POST: reruns (pytest-rerunfailures), ``-x``
(samples prefetched and never reached), the cache, repeats, the
``violin_generate`` fixture and direct ``violin_model.generate`` calls in a
hypothesis test, HTTP retries (counted apart) and xdist workers. The
generations and the cost the run reports (terminal, ``results.json``) equal
the requests the server received, and ``--violin-max-calls`` /
``--violin-max-cost`` stop the run at that many calls.
"""

from __future__ import annotations

import json
import re
import threading

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import numpy as np
import pytest

from _servers import FaultServer, Reply
from pytest_violin.execution.usage import CallCounter, CallLimitReached, CountingAdapter, SharedCalls

# imported once, outside pytester's in-process runs (see tests/conftest.py)
import pytest_violin.models.http  # noqa: F401

pytest.importorskip("pytest_rerunfailures")

#: Half black, half white: no color sample obeys it, so every sample fails (and is rerun).
WRONG = np.zeros((64, 64, 3), dtype=np.uint8)
WRONG[:, 32:] = 255


def _server(**kw) -> FaultServer:
    return FaultServer(handler=lambda rec: Reply.png(WRONG), **kw)


def _posts(server) -> int:
    return sum(1 for r in server.requests if r.method == "POST")


def _run(pytester, server, *args, limit=4):
    return pytester.runpytest(f"--violin-model={server.url}/gen", "--violin-tasks=color",
                              f"--violin-limit={limit}", "--violin-retries=0", "-p", "no:randomly",
                              "-p", "no:cacheprovider", "--violin-report=rep", *args)


def _meta(pytester) -> dict:
    return json.loads((pytester.path / "rep" / "results.json").read_text())["metadata"]


def _summary_counts(result) -> tuple[int, int]:
    """``(generations made, from the cache)`` of the terminal summary."""
    match = re.search(r"(\d+) generations made, (\d+) from the cache", result.stdout.str())
    assert match, result.stdout.str()
    return int(match[1]), int(match[2])


def test_reruns_are_counted_and_priced_as_calls(pytester):
    with _server() as server:
        result = _run(pytester, server, "--reruns=2", "--violin-no-cache", "--violin-price=0.04")
    assert _posts(server) == 12  # 4 samples, each failing 3 times
    meta = _meta(pytester)
    assert (meta["generations"], meta["cache_hits"]) == (12, 0)
    assert meta["estimated_cost"] == pytest.approx(12 * 0.04)
    assert _summary_counts(result) == (12, 0)
    assert "$0.48" in result.stdout.str()
    plan = [line for line in result.stdout.lines if line.startswith("violin plan:")]
    assert plan and "--reruns=2" in plan[0] and "counted" in plan[0]


def test_max_calls_holds_on_calls_reruns_included(pytester):
    with _server() as server:
        result = _run(pytester, server, "--reruns=2", "--violin-no-cache", "--violin-max-calls=4")
    # the plan (4 uncached) fits; the first rerun would be call 5: refused, nothing sent
    assert _posts(server) == 4
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert "--violin-max-calls=4 reached" in out and "the run stops here" in out
    assert "CallLimitReached" in out  # the refused sample ends as an error naming the cap
    meta = _meta(pytester)
    assert meta["generations"] == 4 and meta["calls_refused"] >= 1
    assert meta["interrupted"] is True and "--violin-max-calls=4 reached" in meta["stop_reason"]


def test_max_cost_caps_calls_at_run_time(pytester):
    with _server() as server:
        # $0.45 at $0.10 per image affords 4 calls; the plan's 4 fit, the reruns do not
        result = _run(pytester, server, "--reruns=1", "--violin-no-cache", "--violin-price=0.1",
                      "--violin-max-cost=0.45")
    assert _posts(server) == 4
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "--violin-max-cost=0.45" in result.stdout.str()
    assert _meta(pytester)["estimated_cost"] == pytest.approx(0.4)


def test_a_rerun_reuses_the_cached_image_and_says_so(pytester):
    with _server() as server:
        result = _run(pytester, server, "--reruns=2", "--violin-cache-dir=cache")
    assert _posts(server) == 4
    meta = _meta(pytester)
    assert (meta["generations"], meta["cache_hits"]) == (4, 8)
    assert _summary_counts(result) == (4, 8)
    out = result.stdout.str()
    assert "rerun 2: the image came from the cache, no model call was made" in out
    plan = [line for line in result.stdout.lines if line.startswith("violin plan:")]
    assert "scores its cached image again, no call" in plan[0]


def test_exitfirst_counts_the_prefetched_calls(pytester):
    with _server() as server:
        result = _run(pytester, server, "-x", "--violin-no-cache", "--violin-concurrency=2", limit=12)
    made = _posts(server)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert 1 < made < 12  # the runner prefetched ahead of the first failure
    assert _meta(pytester)["generations"] == made
    assert _summary_counts(result) == (made, 0)


def test_repeats_are_counted(pytester):
    with _server() as server:
        _run(pytester, server, "--violin-repeats=3", "--violin-no-cache", limit=2)
    assert _posts(server) == 6
    assert _meta(pytester)["generations"] == 6


def test_retries_are_counted_apart(pytester):
    answered: set = set()
    lock = threading.Lock()

    def flaky(rec):  # every sample's first attempt gets a 503, its retry the image
        with lock:
            first = rec.body not in answered
            answered.add(rec.body)
        return Reply(503, {"error": "busy"}) if first else Reply.png(WRONG)

    with FaultServer(handler=flaky) as server:
        result = pytester.runpytest(f"--violin-model={server.url}/gen", "--violin-tasks=color",
                                    "--violin-limit=3", "--violin-retries=1", "--violin-no-cache",
                                    "-p", "no:cacheprovider", "--violin-report=rep")
    meta = _meta(pytester)
    assert _posts(server) == 6
    assert (meta["generations"], meta["retries"]) == (3, 3)
    assert "3 retries (counted apart)" in result.stdout.str()


FIXTURE_TESTS = """
from hypothesis import given, strategies as st

from pytest_violin import load_suite
from pytest_violin.models.request import GenerationRequest

SAMPLES = load_suite("violin", tasks=["color"], limit=3)


@given(index=st.sampled_from([0, 1, 2]))
def test_property(violin_generate, index):
    violin_generate(SAMPLES[index])


def test_direct_calls(violin_model):
    for sample in SAMPLES:
        violin_model.generate(GenerationRequest.from_sample(sample, base_seed=0, repeat=0))
"""


def test_fixture_and_direct_model_calls_are_counted(pytester):
    pytester.makepyfile(test_team=FIXTURE_TESTS)
    with _server() as server:
        result = pytester.runpytest(f"--violin-model={server.url}/gen", "test_team.py", "--violin-no-cache",
                                    "-p", "no:randomly", "-p", "no:cacheprovider", "--violin-report=rep")
    assert result.ret == 0, result.stdout.str()
    made = _posts(server)
    assert made >= 4  # at least one hypothesis example and the three direct calls
    assert _meta(pytester)["generations"] == made


def test_fixture_calls_are_capped(pytester):
    pytester.makepyfile(test_team=FIXTURE_TESTS)
    with _server() as server:
        result = pytester.runpytest(f"--violin-model={server.url}/gen", "test_team.py", "--violin-no-cache",
                                    "--violin-max-calls=2", "-p", "no:randomly", "-p", "no:cacheprovider")
    assert _posts(server) == 2
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "--violin-max-calls=2 reached" in result.stdout.str()


@pytest.mark.slow  # two workers start: seconds (test_money covers the workers' sums in the default run)
def test_under_xdist_the_workers_counts_add_up_and_share_the_cap(pytester):
    pytest.importorskip("xdist")
    with _server() as server:
        result = _run(pytester, server, "--reruns=2", "--violin-no-cache", "--violin-max-calls=6",
                      "-n", "2", limit=6)
    # 6 planned calls fit; every rerun is refused, in whichever worker it runs
    assert _posts(server) == 6
    assert _meta(pytester)["generations"] == 6
    assert result.ret == pytest.ExitCode.INTERRUPTED


# ------------------------------------------------------------------ the counter itself
def test_counter_refuses_past_the_limit_and_gives_back_calls_never_sent():
    counter = CallCounter()
    counter.set_limit(2, "--violin-max-calls=2")
    counter.reserve()
    counter.done()
    counter.reserve()
    counter.done(sent=False)  # cancelled before its first request
    counter.reserve()
    counter.done()
    with pytest.raises(CallLimitReached, match="--violin-max-calls=2 reached"):
        counter.reserve()
    assert counter.snapshot() == {"calls": 2, "cache_hits": 0, "retries": 0, "refused": 1}
    assert counter.settle(0)


def test_shared_claims_never_exceed_the_cap_across_counters(tmp_path):
    counters = []
    for _ in range(4):  # four "workers" sharing one claim folder
        c = CallCounter()
        c.set_limit(25, "cap")
        c.shared = SharedCalls(tmp_path)
        counters.append(c)
    made = []

    def work(counter):
        n = 0
        for _ in range(20):
            try:
                counter.reserve()
            except CallLimitReached:
                continue
            counter.done()
            n += 1
        made.append(n)

    threads = [threading.Thread(target=work, args=(c,)) for c in counters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(made) == 25
    total = CallCounter()
    for c in counters:
        total.add_worker(c.snapshot(local=True))
    assert total.snapshot()["calls"] == 25


def test_counting_adapter_is_the_adapter_for_everything_else():
    class Model:
        identity = "m"
        cacheable = False

        def generate(self, request):
            return "image"

    counter = CallCounter()
    adapter = CountingAdapter(Model(), counter)
    assert adapter.identity == "m" and adapter.cacheable is False
    assert adapter.generate(None) == "image" and counter.snapshot()["calls"] == 1
