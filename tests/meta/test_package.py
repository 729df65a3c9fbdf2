from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import pytest_violin
from pytest_violin import errors


def test_public_names_resolve_lazily():
    assert pytest_violin.as_rgb8 is pytest_violin.imaging.as_rgb8
    assert "load_suite" in pytest_violin.__all__


def test_error_tree_inherits_builtins():
    assert issubclass(errors.InvalidImageError, ValueError)
    assert issubclass(errors.GenerationError, RuntimeError)
    assert issubclass(errors.ManifestError, errors.ViolinError)
    err = errors.ManifestError("bad id", path="m.jsonl", line=3, field="id")
    assert str(err) == "m.jsonl:3, field 'id': bad id"


# ------------------------------------------------------------ declared minimum versions
ROOT = Path(__file__).resolve().parents[2]


def _lower_bounds():
    """``{name: Version}`` of every ``>=`` bound in [project] dependencies and the test extra."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    bounds = {}
    for text in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        req = Requirement(text)
        lows = [Version(s.version) for s in req.specifier if s.operator == ">="]
        assert len(lows) == 1, f"{text!r}: declare exactly one lower bound (>=)"
        bounds[canonicalize_name(req.name)] = lows[0]
    return bounds


def _pins(path):
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def test_minimum_versions_constraints_pin_exactly_the_declared_lower_bounds():
    """CI installs .ci/constraints-min.txt: it must be the bounds pyproject.toml declares."""
    assert _pins(ROOT / ".ci" / "constraints-min.txt") == _lower_bounds()


def test_declared_pythons_match_requires_python():
    """The classifiers name every minor Python from requires-python's bound on, with no gap:
    .ci/run (step pythons) tests each of them, and fails on one it cannot find."""
    tomllib = pytest.importorskip("tomllib")
    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    prefix = "Programming Language :: Python :: 3."
    minors = sorted(int(c[len(prefix):]) for c in project["classifiers"]
                    if c.startswith(prefix) and c[len(prefix):].isdigit())
    assert minors and minors == list(range(minors[0], minors[-1] + 1)), minors
    requires = SpecifierSet(project["requires-python"])
    assert f"3.{minors[0]}" in requires and f"3.{minors[0] - 1}" not in requires, requires
    assert all(f"3.{m}" in requires for m in minors)
    assert "Programming Language :: Python :: 3 :: Only" in project["classifiers"]


def test_pyyaml_is_in_the_test_extra():
    # the example workflow check (tests/e2e/test_example_suite.py) must run, not skip
    assert "pyyaml" in _lower_bounds()


# ------------------------------------------------------------ the run's slowest tests
TIMED_CONFTEST = '''
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase takes what the test's ``took`` marker says (default 0.001 s): known durations."""
    report = yield
    marker = item.get_closest_marker("took")
    report.duration = (marker.kwargs if marker else {}).get(call.when, 0.001)
    return report
'''

TIMED_TESTS = '''
import pytest


@pytest.mark.parametrize("i", range(12))
def test_fast(i):
    pass


@pytest.mark.took(setup=2.0, call=0.5, teardown=0.25)
def test_slow_phases():
    pass


@pytest.mark.took(call=1.5)
def test_slow_call():
    pass
'''


def test_every_run_ends_with_its_ten_slowest_tests(pytester):
    """tests/conftest.py loads tests/_slowest.py: one list, setup + call + teardown per test."""
    import _slowest

    pytester.makeconftest(TIMED_CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    took: phase durations")
    pytester.makepyfile(test_mix=TIMED_TESTS)
    result = pytester.runpytest("-p", "_slowest", "-p", "no:randomly", "-p", "no:cacheprovider",
                                "-W", "ignore::pytest.PytestAssertRewriteWarning")  # _slowest: imported already
    result.assert_outcomes(passed=14)
    lines = result.stdout.lines
    title = [i for i, line in enumerate(lines) if _slowest.TITLE.format(10) in line]
    assert len(title) == 1
    rows = [line.split() for line in lines[title[0] + 1: title[0] + 11]]
    assert rows[:3] == [["2.75s", "test_mix.py::test_slow_phases"], ["1.50s", "test_mix.py::test_slow_call"],
                        ["0.00s", "test_mix.py::test_fast[0]"]]
    fast = [r[1] for r in rows[2:]]  # equal times: in node id order, 8 of the 12
    assert fast == sorted(fast) and len(set(fast)) == 8 and all("::test_fast[" in i for i in fast)
    assert sum("test_mix.py::" in line for line in lines[title[0] + 1:]) == 10


def test_the_slowest_list_sums_the_phases_of_each_test():
    from types import SimpleNamespace

    import _slowest

    plugin = _slowest.SlowestTests(shown=2)
    for nodeid, when, duration in [("a", "setup", 0.5), ("a", "call", 0.25), ("a", "teardown", 0.25),
                                   ("b", "call", 0.9), ("c", "call", 0.1)]:
        plugin.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when=when, duration=duration))
    assert plugin.slowest() == [(1.0, "a"), (0.9, "b")]
    assert _slowest.SlowestTests().slowest() == []
