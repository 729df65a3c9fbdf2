"""Every error pytest-violin raises on purpose derives from its one exception tree."""

from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path

import pytest

import pytest_violin
from pytest_violin import errors

PACKAGE = Path(pytest_violin.__file__).parent

#: Raised for a protocol, not as an error of ours: argparse's type= converters
#: must raise ArgumentTypeError (pytest turns it into a usage error); a module
#: or object ``__getattr__`` must raise AttributeError; hypothesis strategies
#: validate arguments with hypothesis's InvalidArgument; the atomic file writer
#: fails like ``open()`` does, with an OSError, which its callers handle.
PROTOCOL = {"ArgumentTypeError", "AttributeError", "InvalidArgument", "FileExistsError"}


def _builtin_exceptions() -> set[str]:
    return {name for name, obj in vars(builtins).items()
            if inspect.isclass(obj) and issubclass(obj, BaseException)}


def _raised_names():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        # ``def read(..., error=InvalidArgumentError): raise error(...)``: the parameter's default is
        # what is raised (callers that pass another class are checked where they name it)
        defaults = {}
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = func.args
                pairs = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
                for arg, default in pairs:
                    if isinstance(default, ast.Name):
                        for node in ast.walk(func):
                            defaults[(id(node), arg.arg)] = default.id
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                name = func.id if isinstance(func, ast.Name) else (
                    func.attr if isinstance(func, ast.Attribute) else None)
                name = defaults.get((id(node), name), name)
                if name:
                    yield path.relative_to(PACKAGE.parent), node.lineno, name


def test_no_bare_builtin_exception_is_raised():
    bare = _builtin_exceptions() - PROTOCOL - {"KeyboardInterrupt", "NotImplementedError"}
    found = [f"{path}:{line}: raise {name}(...)" for path, line, name in _raised_names() if name in bare]
    assert not found, "raise an error of pytest_violin.errors instead:\n" + "\n".join(found)


def test_every_error_class_derives_from_violin_error():
    found = [obj for obj in vars(errors).values()
             if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__]
    # warnings are their own category (as pytest's PytestWarning is): one, a UserWarning
    warnings = [c for c in found if issubclass(c, Warning)]
    classes = [c for c in found if c not in warnings]
    assert errors.ViolinError in classes and len(classes) > 10
    assert all(issubclass(c, errors.ViolinError) for c in classes)
    assert warnings == [errors.ViolinWarning] and issubclass(errors.ViolinWarning, UserWarning)
    assert set(errors.__all__) == {c.__name__ for c in found}


def test_classes_named_in_raise_statements_are_ours_or_pytests():
    ours = {c for c in errors.__all__}
    allowed = ours | PROTOCOL | {"UsageError", "fail", "exit", "skip", "_Stopped", "_BodyTooLarge",
                                 "_Deadline"}
    strange = sorted({name for _, _, name in _raised_names()
                      if name not in allowed and name not in _builtin_exceptions()
                      and not name.startswith("_")})
    # anything else raised by name must itself be one of ours (a subclass defined elsewhere)
    for name in strange:
        obj = _find_class(name)
        assert obj is not None and issubclass(obj, errors.ViolinError), name


def _find_class(name):
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(pytest_violin.__path__, "pytest_violin."):
        if "diffusers" in info.name:
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        obj = getattr(module, name, None)
        if inspect.isclass(obj):
            return obj
    return None


@pytest.mark.parametrize("cls", [errors.InvalidArgumentError])
def test_invalid_argument_is_also_value_and_type_error(cls):
    assert issubclass(cls, ValueError) and issubclass(cls, TypeError)
