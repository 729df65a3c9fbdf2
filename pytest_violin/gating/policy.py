"""The gate's constants: light, so that option declarations can import them."""

from __future__ import annotations

__all__ = ["DEFAULT_ALPHA", "DEFAULT_MAX_PASS_DROP", "DEFAULT_MAX_REFUSAL_RISE", "DEFAULT_MAX_REGRESSION",
           "DEFAULT_RESAMPLES", "ERROR_VALUE", "MAX_ALPHA", "MIN_SHARED", "OUTCOMES", "TIE_TOLERANCE",
           "above_margin", "check_alpha", "check_power", "refusal_guardrail"]

#: Default ``--violin-max-regression``: an absolute worsening of the mean metric (distances in [0, 1]).
#: Justified in docs/gating.md.
DEFAULT_MAX_REGRESSION = 0.01

#: Default ``--violin-max-pass-drop``: the largest fall of a task's or variation's pass rate (the share of its
#: samples within their limits) that is not a regression: 5 points.
DEFAULT_MAX_PASS_DROP = 0.05

#: Default ``--violin-max-refusal-rise``: the largest rise of the share of samples refused that is not a
#: regression: 1 point.
DEFAULT_MAX_REFUSAL_RISE = 0.01


def refusal_guardrail(task_level: bool, n: int, margin: float) -> bool:
    """Whether a group's refusal rate is a guardrail (green needs it shown within its margin): on a task of
    at least ``3 / margin`` samples. Below that no refusal at all on both sides cannot rule out a rise of the
    margin (``-ln(alpha) / n`` is above it), and a variation is judged through its task; elsewhere the refusal
    rate is tested for harm alone."""
    return bool(task_level and margin > 0 and n >= 3.0 / margin)


#: Default ``--violin-alpha``: the chance that a gate (fixed-sample or sequential) fails a model that did not
#: get worse, over all its groups and statistics together.
DEFAULT_ALPHA = 0.05

#: The largest error rate a gate takes: each side of a group's interval is at ``alpha / tests``, and past
#: one half a two-sided interval of one test would have no width left.
MAX_ALPHA = 0.5


def check_alpha(alpha) -> None:
    """Raise :class:`~pytest_violin.errors.InvalidArgumentError` unless ``alpha`` is a number in
    ``(0, MAX_ALPHA]``."""
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha <= MAX_ALPHA):
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(f"alpha must be a number in (0, {MAX_ALPHA}], got {alpha!r}")

def check_power(power) -> None:
    """Raise :class:`~pytest_violin.errors.InvalidArgumentError` unless ``power`` is a number in
    ``[0.5, 1)``: the chance a plan gives an unchanged model to be shown within its margins."""
    if not (isinstance(power, (int, float)) and not isinstance(power, bool) and 0.5 <= power < 1):
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(f"power must be a number in [0.5, 1), got {power!r}")


#: The fewest comparable samples a task must share with the baseline for a gate to decide it: below 20, one
#: sample moves the task's pass rate by more than the default 5-point margin and its mean by up to 0.05 (five
#: times the default margin), so "not worse" could not be shown.
MIN_SHARED = 20

#: Two quantities of the gate closer than this are equal: a bound "above the margin" must exceed it by more
#: (0.03 - 0.02 is 0.009999999999999998 in floating point, and a mean of such differences may land on either
#: side of 0.01). One rule for both gates.
TIE_TOLERANCE = 1e-9


def above_margin(value: float, margin: float) -> bool:
    """Whether ``value`` (a bound of a worsening) is above ``margin``, ties (within
    :data:`TIE_TOLERANCE`) counting as at the margin, not above it."""
    return value > margin + TIE_TOLERANCE


#: Bootstrap resamples used by :func:`~pytest_violin.gating.compare`.
DEFAULT_RESAMPLES = 4000

from ..results import NO_IMAGE_VALUE, Outcome

#: The distance a judged sample without metrics counts for (no image, or a refusal).
ERROR_VALUE = NO_IMAGE_VALUE

#: A sample's outcomes, as files hold them (:class:`~pytest_violin.results.Outcome`).
OUTCOMES = tuple(o.value for o in Outcome)
