"""The task registry: one :class:`TaskFamily` per task, looked up by everything else.

A task family (color, shape, mask, ratio, border, count) declares its metric names, default limits, the sample
spec kinds it renders, how to render the ground truth (and input images), how to score an image and how to put
a sample into words (see :class:`~pytest_violin.tasks.base.TaskFamily`). The suite, the thresholds, the
assertions and the strategies read those facts here, so a new family is its own module plus one line in
:data:`BUILTIN_FAMILIES`; a test or a plugin may also :func:`register` one at run time (it then renders and
scores like a built-in one; the threshold tables :data:`pytest_violin.thresholds.DEFAULT_LIMITS` and
``KNOWN_METRICS`` are views of the built-in families taken at import).

Importing this package is light: no numpy, no OpenCV; the families import their drawing and metric code when
they are called.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from contextlib import suppress

from ..errors import InvalidArgumentError, SuiteError
from .base import DEFAULT_EXTRA_LIMIT, TaskFamily

__all__ = ["TaskFamily", "DEFAULT_EXTRA_LIMIT", "BUILTIN_FAMILIES", "register", "unregister",
           "families", "builtin_families", "family", "find_family", "family_for_kind", "task_names",
           "renderable_kinds", "known_metrics", "default_limits", "metric_names", "render",
           "render_inputs", "score", "describe", "costly_render"]

#: task name -> "module:attribute" of the families shipped with the package, in display order. A new built-in
#: family is one line here.
BUILTIN_FAMILIES: Mapping[str, str] = {
    "color": "pytest_violin.tasks.color:FAMILY",
    "shape": "pytest_violin.tasks.geometric:SHAPE",
    "mask": "pytest_violin.tasks.geometric:MASK",
    "ratio": "pytest_violin.tasks.geometric:RATIO",
    "border": "pytest_violin.tasks.geometric:BORDER",
    "count": "pytest_violin.tasks.geometric:COUNT",
}

_LOCK = threading.Lock()
_FAMILIES: dict[str, TaskFamily] = {}
_BY_KIND: dict[str, TaskFamily] = {}


def _load_builtin(name: str, target: str) -> TaskFamily:
    module_name, _, attr = target.partition(":")
    loaded = getattr(importlib.import_module(module_name), attr)
    if not isinstance(loaded, TaskFamily) or loaded.name != name:
        raise InvalidArgumentError(f"built-in task family {target!r} is not a TaskFamily named {name!r}")
    return loaded


def register(new: TaskFamily, *, replace: bool = False) -> TaskFamily:
    """Add a task family to the registry; return it (``FAMILY = register(TaskFamily(...))``).

    Its name and spec kinds must be new, unless ``replace`` replaces a registered family of the same name (its
    kinds are freed). Something that is not a :class:`TaskFamily`, a name already registered or a spec kind
    another family renders is an :class:`~pytest_violin.errors.InvalidArgumentError`.
    """
    if not isinstance(new, TaskFamily):
        raise InvalidArgumentError(f"register({new!r}): expected a pytest_violin.tasks.TaskFamily")
    with _LOCK:
        old = _FAMILIES.get(new.name)
        if old is not None and not replace:
            raise InvalidArgumentError(f"task family {new.name!r} is already registered; "
                                       f"pass replace=True to replace it")
        taken = [k for k in new.kinds if k in _BY_KIND and _BY_KIND[k] is not old]
        if taken:
            raise InvalidArgumentError(
                f"task family {new.name!r}: spec kind {taken[0]!r} is already rendered by family "
                f"{_BY_KIND[taken[0]].name!r}; registered kinds: {', '.join(_BY_KIND)}")
        if old is not None:
            for kind in old.kinds:
                _BY_KIND.pop(kind, None)
        _FAMILIES[new.name] = new
        for kind in new.kinds:
            _BY_KIND[kind] = new
    return new


def unregister(name: str) -> TaskFamily:
    """Remove a family added with :func:`register`; a built-in or unknown name is an
    :class:`~pytest_violin.errors.InvalidArgumentError`.
    """
    if name in BUILTIN_FAMILIES:
        raise InvalidArgumentError(f"task family {name!r} is built in and cannot be unregistered")
    with _LOCK:
        old = _FAMILIES.pop(name, None)
        if old is None:
            raise InvalidArgumentError(f"task family {name!r} is not registered; "
                                       f"registered: {', '.join(_FAMILIES)}")
        for kind in old.kinds:
            _BY_KIND.pop(kind, None)
    return old


for _name, _target in BUILTIN_FAMILIES.items():
    register(_load_builtin(_name, _target))
del _name, _target


# ---------------------------------------------------------------- lookup
def builtin_families() -> tuple:
    """The families shipped with the package, in :data:`BUILTIN_FAMILIES` order."""
    return tuple(_FAMILIES[name] for name in BUILTIN_FAMILIES)


def families() -> tuple:
    """Every registered family, built-in ones first, in registration order."""
    return tuple(_FAMILIES.values())


def find_family(task: str) -> TaskFamily | None:
    """The family of a task name, or ``None``."""
    return _FAMILIES.get(task)


def family(task: str) -> TaskFamily:
    """The family of a task name; a :class:`~pytest_violin.errors.SuiteError` listing the known ones if none."""
    found = _FAMILIES.get(task)
    if found is None:
        raise SuiteError(f"unknown task {task!r}; accepted: {', '.join(_FAMILIES)}")
    return found


def family_for_kind(kind) -> TaskFamily | None:
    """The family that renders a spec kind, or ``None``."""
    return _BY_KIND.get(kind) if isinstance(kind, str) else None


def task_names() -> tuple:
    """Names of every registered task, in registration order."""
    return tuple(_FAMILIES)


def renderable_kinds() -> tuple:
    """Every spec kind some family renders, in registration order."""
    return tuple(_BY_KIND)


def metric_names(task: str) -> tuple:
    """The metric names a task's score returns (see :func:`family`)."""
    return family(task).metric_names


def known_metrics(selected=None) -> dict:
    """``task -> metric names`` of the families with strict thresholds.

    ``selected``: the families to read (default: every registered one).
    """
    chosen = families() if selected is None else selected
    return {f.name: f.metric_names for f in chosen if f.strict_thresholds}


def default_limits(selected=None) -> dict:
    """Every family's default limits keyed ``"task.metric"`` (and ``"task.mean"``)."""
    out: dict[str, float] = {}
    for f in families() if selected is None else selected:
        out.update(f.limit_keys())
    return out


# ---------------------------------------------------------------- dispatch
def render(spec, width: int, height: int):
    """The ground truth of a spec, drawn by the family of its kind (a
    :class:`~pytest_violin.errors.SuiteError` listing the accepted kinds if none).
    """
    kind = spec.get("kind")
    owner = family_for_kind(kind)
    if owner is None:
        raise SuiteError(f"spec kind {kind!r} cannot be rendered; accepted: "
                         f"{', '.join(renderable_kinds())}")
    return owner.render(spec, width, height)


def render_inputs(spec, width: int, height: int) -> tuple:
    """The input images of a spec (``()`` for generation tasks and unknown kinds)."""
    owner = family_for_kind(spec.get("kind"))
    return () if owner is None else owner.inputs(spec, width, height)


def costly_render(spec) -> bool:
    """Whether the ground truth of a spec is worth caching (see :attr:`TaskFamily.costly_render`)."""
    owner = family_for_kind(spec.get("kind"))
    return owner is not None and owner.costly_render


def _join(words, last: str) -> str:
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"


def score(sample, image, profile: str):
    """Score an RGB uint8 image of the sample's size with the family that owns it.

    A spec kind listed in some family's ``score_kinds`` decides; otherwise the family of the sample's task
    scores it when it ``scores_any_kind``; else a :class:`~pytest_violin.errors.SuiteError`.
    """
    kind = sample.spec.get("kind")
    owner = family_for_kind(kind)
    if owner is not None and kind in owner.score_kinds:
        return owner.score(sample, image, profile)
    owner = find_family(sample.task)
    if owner is not None and owner.scores_any_kind:
        return owner.score(sample, image, profile)
    needy = [f for f in families() if not f.scores_any_kind]
    need = (f"; {_join((f.name for f in needy), 'and')} samples need spec kind "
            f"{_join((k for f in needy for k in f.score_kinds), 'or')}") if needy else ""
    raise SuiteError(f"sample {sample.id!r}: no metric for task {sample.task!r} with spec kind "
                     f"{kind!r}{need}")


def describe(sample) -> str:
    """A sample's ground truth in one line of words, else its prompt.

    The family of the spec kind is asked first, then the family of the task; a spec missing what its family
    needs falls back to the prompt.
    """
    with suppress(KeyError, TypeError, ValueError, IndexError):
        for owner in (family_for_kind(sample.spec.get("kind")), find_family(sample.task)):
            if owner is not None:
                text = owner.describe(sample)
                if text:
                    return text
    return sample.prompt
