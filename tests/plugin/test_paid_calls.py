"""Paid calls are counted before they are made; a dead endpoint stops the run early."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest

# imported once, outside pytester's in-process runs (which drop modules first
# imported during a run; requests' cookie jar classes would then differ)
import pytest_violin.models.http  # noqa: F401  (see tests/conftest.py)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_network_adapter_refuses_the_full_suite_by_default(pytester):
    # a remote endpoint bills (a loopback one is self-hosted: no default limit);
    # the usage error comes before any request, so the host is never looked up
    url = "http://violin-endpoint.example.invalid/generate"
    result = pytester.runpytest(f"--violin-model={url}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "7745" in err and "--violin-max-calls=2000" in err and "--violin-limit" in err
    # the usage error comes before any request: nothing listens on that port anyway,
    # and the plan line says what would have run
    assert "7745 to make" in result.stdout.str()


def test_local_adapters_have_no_default_limit_and_the_option_applies_to_them(pytester):
    assert pytester.runpytest("--violin-model=oracle", "--violin-limit=30", "-q").ret == 0
    result = pytester.runpytest("--violin-model=oracle", "--violin-limit=30", "--violin-max-calls=29")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    pytester.makeini("[pytest]\nviolin_max_calls = 10\n")
    result = pytester.runpytest("--violin-model=oracle", "--violin-limit=30")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_plan_counts_cache_hits(pytester):
    pytester.makepyfile(violin_models=(
        "class Model:\n"
        "    cacheable = True\n"
        "    def generate(self, request):\n"
        "        return request.sample.expected()\n"))
    args = ["--violin-model=python:violin_models:Model", "--violin-limit=6", "--violin-tasks=color,shape",
            "--violin-cache-dir=cache"]
    first = pytester.runpytest(*args)
    first.stdout.fnmatch_lines(["violin plan: * 6 samples x 1 repeat = 6 generations, 0 in the cache, 6 to make"])
    # every image is cached now: a limit of 0 uncached calls lets the run start
    again = pytester.runpytest(*args, "--violin-max-calls=0")
    again.stdout.fnmatch_lines(["violin plan: * 6 in the cache, 0 to make"])
    assert again.ret == 0


@pytest.mark.slow  # the full suite through the plugin: 10-16 s
def test_dead_endpoint_stops_the_full_suite_within_seconds(pytester):
    url = f"http://127.0.0.1:{_closed_port()}/generate"
    t0 = time.monotonic()
    result = pytester.runpytest(f"--violin-model={url}", "--violin-max-calls=none", "--violin-no-cache",
                                "-p", "no:cacheprovider", "--violin-report=rep")
    elapsed = time.monotonic() - t0
    assert elapsed < 30, elapsed
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert re.search(r"endpoint unreachable after \d+ consecutive failures in \d+ s", out)
    outcomes = result.parseoutcomes()
    # no answer at all is not the model's failure: errors, never scores; the run stops once the
    # failures have lasted DEAD_WINDOW seconds: as many samples as fail in that time (more on a
    # faster machine), a small part of the suite's thousands
    assert 0 < outcomes.get("errors", 0) < 500 and "passed" not in outcomes and "failed" not in outcomes
    meta = json.loads((pytester.path / "rep" / "results.json").read_text())["metadata"]
    assert meta["interrupted"] is True and "endpoint unreachable" in meta["stop_reason"]


def test_max_answer_mb_reaches_the_http_client(pytester):
    import numpy as np

    from _servers import FaultServer, Reply

    noise = np.random.default_rng(0).integers(0, 256, (1024, 1024, 3), dtype=np.uint8)
    with FaultServer(default=Reply.png(noise)) as server:  # a ~3 MiB PNG
        args = [f"--violin-model={server.url}", "--violin-tasks=color", "--violin-limit=1",
                "--violin-no-cache", "--violin-retries=0", "-p", "no:cacheprovider"]
        small = pytester.runpytest(*args, "--violin-max-answer-mb=1")
        big = pytester.runpytest(*args, "--violin-max-answer-mb=8")
    small.assert_outcomes(failed=1)
    assert "--violin-max-answer-mb" in small.stdout.str()
    # within the cap the image is read (and fails obedience, being noise): no size complaint
    big.assert_outcomes(failed=1)
    assert "over the limit of" not in big.stdout.str()


@pytest.mark.slow  # an xdist run with two workers: seconds
def test_under_xdist_the_limit_counts_user_tests_over_violin_sample(pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_team=(
        "import pytest\n"
        "@pytest.mark.violin(tasks='color', limit=5)\n"
        "def test_brand(violin_sample, violin_generate):\n"
        "    violin_generate(violin_sample)\n"))
    result = pytester.runpytest("--violin-model=oracle", "test_team.py", "--violin-max-calls=3", "-n", "2",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "plans 5 uncached generations" in result.stderr.str() + result.stdout.str()
