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
