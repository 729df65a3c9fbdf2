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
ROOT = Path(__file__).resolve().parents[1]


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


def test_pyyaml_is_in_the_test_extra():
    # the example workflow check (tests/test_example_suite.py) must run, not skip
    assert "pyyaml" in _lower_bounds()
