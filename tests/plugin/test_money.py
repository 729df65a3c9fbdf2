"""Money: the plan states an estimated cost, --violin-max-cost refuses a run over it, the reports record it."""

from __future__ import annotations

import json

import pytest

from pytest_violin.pytest_plugin._planning import Plan, cost_limit_message, format_usd

# imported once, outside pytester's in-process runs (see tests/conftest.py)
import pytest_violin.models.http  # noqa: F401

#: A cacheable python: model that appends one line per call to calls.txt.
MODEL = """
from pathlib import Path

class Model:
    cacheable = True

    def generate(self, request):
        with open(Path(__file__).with_name("calls.txt"), "a") as fh:
            fh.write(request.sample.id + "\\n")
        return request.sample.expected()
"""

ARGS = ("--violin-model=python:violin_models:Model", "--violin-tasks=color,shape", "--violin-limit=6",
        "-p", "no:randomly")


def _calls(pytester) -> int:
    path = pytester.path / "calls.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_plan_line_states_the_estimated_cost_of_the_uncached_generations(pytester):
    pytester.makepyfile(violin_models=MODEL)
    first = pytester.runpytest(*ARGS, "--violin-price=0.04", "--violin-cache-dir=cache")
    first.stdout.fnmatch_lines(["violin plan: * 6 to make, estimated cost $0.24 at $0.04 per image"])
    assert first.ret == 0
    # everything is cached now: nothing to pay, and a budget of 0 lets the run start
    again = pytester.runpytest(*ARGS, "--violin-price=0.04", "--violin-max-cost=0",
                               "--violin-cache-dir=cache")
    again.stdout.fnmatch_lines(["violin plan: * 6 in the cache, 0 to make, estimated cost $0.00 *"])
    assert again.ret == 0 and _calls(pytester) == 6
    # without a price the plan line is as before
    plain = pytester.runpytest(*ARGS, "--violin-cache-dir=cache")
    assert "estimated cost" not in plain.stdout.str()


def test_max_cost_refuses_to_start_before_any_generation(pytester):
    pytester.makepyfile(violin_models=MODEL)
    result = pytester.runpytest(*ARGS, "--violin-price=0.05", "--violin-max-cost=0.2", "--violin-no-cache")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--violin-max-cost=0.2" in err and "6 uncached generations" in err and "$0.30" in err
    assert "at most 4 uncached generations" in err and "--violin-limit=N" in err
    assert _calls(pytester) == 0
    # within the budget it runs; ini keys work too
    pytester.makeini("[pytest]\nviolin_price = 0.05\nviolin_max_cost = 0.30\n")
    assert pytester.runpytest(*ARGS, "--violin-no-cache").ret == 0 and _calls(pytester) == 6


@pytest.mark.slow  # two xdist runs, two workers each: seconds
def test_max_cost_under_xdist_is_checked_by_the_controller(pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(violin_models=MODEL)
    result = pytester.runpytest(*ARGS, "--violin-price=0.05", "--violin-max-cost=0.2", "--violin-no-cache",
                                "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "an estimated $0.30" in result.stderr.str() + result.stdout.str()
    assert _calls(pytester) == 0
    # within the budget: the workers' generations add up in the controller's report
    ok = pytester.runpytest(*ARGS, "--violin-price=0.05", "--violin-max-cost=0.3", "--violin-no-cache",
                            "-n", "2", "-p", "no:cacheprovider", "--violin-report=rep")
    assert ok.ret == 0 and _calls(pytester) == 6
    ok.stdout.fnmatch_lines(["violin plan: * 6 to make, estimated cost $0.30 at $0.05 per image*"])
    meta = json.loads((pytester.path / "rep" / "results.json").read_text())["metadata"]
    assert (meta["generations"], meta["cache_hits"], meta["estimated_cost"]) == (6, 0, pytest.approx(0.3))


@pytest.mark.parametrize("args, named", [
    (("--violin-max-cost=5",), "--violin-price=USD"),
    (("--violin-price=-1",), "-1"),
    (("--violin-price=abc",), "abc"),
    (("--violin-price=nan",), "nan"),
    (("--violin-price=0.1", "--violin-max-cost=-2"), "-2"),
])
def test_bad_money_options_are_usage_errors(pytester, args, named):
    result = pytester.runpytest("--violin-model=oracle", "--violin-limit=2", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert named in result.stderr.str() and "accepted" in result.stderr.str()  # our message, not argparse's "unrecognized"


def test_reports_record_generations_made_cache_hits_and_the_cost(pytester):
    pytester.makepyfile(violin_models=MODEL)
    args = (*ARGS, "--violin-price=0.04", "--violin-cache-dir=cache", "--violin-report=rep")
    first = pytester.runpytest(*args)
    assert first.ret == 0
    meta = json.loads((pytester.path / "rep" / "results.json").read_text())["metadata"]
    assert (meta["generations"], meta["cache_hits"]) == (6, 0)
    assert meta["price"] == 0.04 and meta["estimated_cost"] == pytest.approx(0.24)
    first.stdout.fnmatch_lines(["6 generations made, 0 from the cache, estimated cost $0.24 at $0.04 per image"])
    again = pytester.runpytest(*args, "--violin-repeats=2")  # repeat 0 cached, repeat 1 new
    assert again.ret == 0
    doc = json.loads((pytester.path / "rep" / "results.json").read_text())
    assert (doc["metadata"]["generations"], doc["metadata"]["cache_hits"]) == (6, 6)
    assert all((s["generations"], s["cache_hits"]) == (1, 1) for s in doc["samples"])
    assert _calls(pytester) == 12
    usage = "6 generations made, 6 from the cache, estimated cost $0.24 at $0.04 per image"
    assert usage in (pytester.path / "rep" / "summary.md").read_text().lower()
    assert usage in (pytester.path / "rep" / "report.html").read_text()


def test_cost_comparison_tolerates_binary_floats_and_formats_cents():
    plan = Plan("m", "violin", samples=3, repeats=1, cached=0, price=0.1)
    assert plan.estimated_cost == pytest.approx(0.3)
    assert cost_limit_message(plan, 0.3) is None  # 3 x 0.1 is 0.30000000000000004
    assert "at most 2 uncached" in cost_limit_message(plan, 0.29)
    assert Plan("m", "violin", 3, 1, 0).estimated_cost is None
    assert (format_usd(1234.5), format_usd(0.0025), format_usd(0), format_usd(None)) == (
        "$1,234.50", "$0.0025", "$0.00", "n/a")
