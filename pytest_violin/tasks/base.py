"""The :class:`TaskFamily` record: everything the package knows about one task.

This module imports nothing heavy (no numpy, no OpenCV, nothing of :mod:`pytest_violin.suite` or
:mod:`pytest_violin.metrics`): a family's functions import what they draw and measure with when they are
called, so the registry (and the threshold tables derived from it) can be read without loading the imaging
stack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import InvalidArgumentError

__all__ = ["TaskFamily", "DEFAULT_EXTRA_LIMIT", "no_inputs", "color_words", "plain_color", "pct"]

#: Limit of a metric (and of the mean) of a family that declares no limit for it, when that family's
#: thresholds are not strict (see :attr:`TaskFamily.strict_thresholds`).
DEFAULT_EXTRA_LIMIT = 0.05


def no_inputs(spec, width: int, height: int) -> tuple:
    """The input images of a generation task: none."""
    return ()


def _no_description(sample) -> str | None:
    return None


@dataclass(frozen=True)
class TaskFamily:
    """One task family: its metrics, limits, renderer, scorer and words.

    Parameters
    ----------
    name : str
        The task name samples carry (``Sample.task``), e.g. ``"color"``.
    metric_names : tuple of str
        The metrics a score of this task returns, in display order.
    default_limits : Mapping[str, float]
        Default pass limit per bare metric name and ``"mean"``; a metric missing here has no default limit
        (strict families) or :data:`DEFAULT_EXTRA_LIMIT` (the others).
    kinds : tuple of str
        The sample spec kinds (``spec["kind"]``) this family renders.
    render : callable
        ``render(spec, width, height) -> ndarray``: the ground truth of a spec of one of :attr:`kinds`
        (``(height, width, 3)`` uint8 RGB).
    score : callable
        ``score(sample, image, profile) -> Metrics``: the metrics of an RGB uint8 image of the sample's size.
    describe : callable, optional
        ``describe(sample) -> str or None``: the ground truth in words for a failure message; ``None`` when
        the sample is not one it can describe (the prompt is used then).
    inputs : callable, optional
        ``inputs(spec, width, height) -> tuple`` of input images (RGB uint8); default: none (a generation
        task).
    score_kinds : tuple of str
        Spec kinds whose samples this family scores whatever their task (e.g. ``fuzzy`` colors, ``ratio``):
        the kind carries the numbers the scorer needs.
    scores_any_kind : bool
        Whether samples of this task whose spec kind is not in any family's :attr:`score_kinds` are scored
        here too (from the expected image alone, e.g. an exported suite read from PNG files).
    strict_thresholds : bool
        The family's metric names are checked in threshold overrides
        (:data:`pytest_violin.thresholds.KNOWN_METRICS`) and a metric without a limit has none; otherwise a
        metric without a limit gets :data:`DEFAULT_EXTRA_LIMIT`.
    costly_render : bool
        Whether rendering the ground truth is expensive enough to keep the last few renders
        (:data:`pytest_violin.suite.sample.RENDER_CACHE`).
    """

    name: str
    metric_names: tuple
    default_limits: Mapping = field(default_factory=dict)
    kinds: tuple = ()
    render: Callable | None = None
    score: Callable | None = None
    describe: Callable = _no_description
    inputs: Callable = no_inputs
    score_kinds: tuple = ()
    scores_any_kind: bool = True
    strict_thresholds: bool = False
    costly_render: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier() or self.name != self.name.lower():
            raise InvalidArgumentError(f"task family name {self.name!r} must be a lowercase identifier "
                                       f"(e.g. 'color', 'text')")
        names = tuple(self.metric_names)
        if not names or not all(isinstance(n, str) and n and n != "mean" for n in names) \
                or len(set(names)) != len(names):
            raise InvalidArgumentError(f"task family {self.name!r}: metric_names {self.metric_names!r} must "
                                       f"be distinct non-empty strings other than 'mean'")
        object.__setattr__(self, "metric_names", names)
        limits = dict(self.default_limits)
        for key, value in limits.items():
            if key not in (*names, "mean"):
                raise InvalidArgumentError(f"task family {self.name!r}: a default limit names "
                                           f"{key!r}; accepted: {', '.join((*names, 'mean'))}")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
                raise InvalidArgumentError(f"task family {self.name!r}: default limit {key}={value!r} "
                                           f"must be a number in [0, 1]")
        object.__setattr__(self, "default_limits", MappingProxyType(limits))
        object.__setattr__(self, "kinds", tuple(self.kinds))
        object.__setattr__(self, "score_kinds", tuple(self.score_kinds))
        stray = [k for k in self.score_kinds if k not in self.kinds]
        if stray:
            raise InvalidArgumentError(f"task family {self.name!r}: score_kinds {stray!r} are not among "
                                       f"its kinds {self.kinds!r}")
        if self.kinds and not callable(self.render):
            raise InvalidArgumentError(f"task family {self.name!r} declares kinds {self.kinds!r} but "
                                       f"render {self.render!r} is not callable")
        if not callable(self.score):
            raise InvalidArgumentError(f"task family {self.name!r}: score {self.score!r} is not callable")

    def limit_keys(self) -> dict:
        """Default limits keyed ``"task.metric"``, in metric order, mean last."""
        return {f"{self.name}.{k}": float(self.default_limits[k])
                for k in (*self.metric_names, "mean") if k in self.default_limits}


# colors and fractions in words, for the families' descriptions


def color_words(rgb) -> str:
    """``#RRGGBB`` followed by its ISCC-NBS name (or pure black / white) when it has one."""
    from ..suite.colors import ISCC_NBS_COLORS, format_color

    rgb = tuple(int(c) for c in rgb)
    text = format_color(rgb, "hex")
    for color in ISCC_NBS_COLORS:
        if color.rgb == rgb:
            return f"{text} ({color.phrase})"
    if rgb == (0, 0, 0):
        return f"{text} (pure black)"
    if rgb == (255, 255, 255):
        return f"{text} (pure white)"
    return text


def plain_color(rgb) -> str:
    """``white`` or ``black``, else :func:`color_words`."""
    rgb = tuple(int(c) for c in rgb)
    return {(255, 255, 255): "white", (0, 0, 0): "black"}.get(rgb) or color_words(rgb)


def pct(fraction: float) -> str:
    """A fraction as a percentage with at most two decimals (``0.315`` -> ``31.5%``)."""
    text = f"{100.0 * fraction:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"
