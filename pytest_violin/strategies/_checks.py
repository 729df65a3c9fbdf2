"""Argument checks shared by the strategies: each raises ``InvalidArgument`` naming the value.

Every public strategy validates its arguments when it is called, not when it is drawn from, through these
helpers, so a wrong argument reads the same in every strategy: ``name=value is invalid: expected ...``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

#: Largest canvas side the strategies accept (the suite's 1024 plus room).
MAX_SIDE = 4096


def _fmt(value) -> str:
    return repr(value)


def check(ok: bool, name: str, value, expected: str) -> None:
    """Raise InvalidArgument ``name=value`` unless ``ok``."""
    if not ok:
        raise InvalidArgument(f"{name}={_fmt(value)} is invalid: expected {expected}")


def is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_real(value) -> bool:
    return (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
            and math.isfinite(float(value)))


def check_side(name: str, value, minimum: int = 1) -> int:
    check(is_int(value) and minimum <= value <= MAX_SIDE, name, value,
          f"an integer number of pixels in {minimum}..{MAX_SIDE}")
    return int(value)


def check_choice(name: str, value, choices: Sequence, allow_none: bool = False) -> None:
    accepted = ", ".join(repr(c) for c in choices) + (" or None" if allow_none else "")
    check((value is None and allow_none) or (isinstance(value, str) and value in choices),
          name, value, f"one of {accepted}")


def check_subset(name: str, value, choices: Sequence) -> tuple:
    accepted = ", ".join(repr(c) for c in choices)
    ok = (isinstance(value, (tuple, list)) and len(value) > 0
          and all(isinstance(v, str) and v in choices for v in value)
          and len(set(value)) == len(value))
    check(ok, name, value, f"a non-empty sequence of distinct values from {accepted}")
    return tuple(value)


def check_bool(name: str, value) -> bool:
    check(isinstance(value, bool), name, value, "True or False")
    return value


def check_strategy_or_none(name: str, value) -> None:
    check(value is None or isinstance(value, st.SearchStrategy), name, value,
          "a hypothesis strategy or None")


def check_canvas(width, height, minimum: int = 1) -> tuple:
    """``(width, height)`` as ints, each checked by :func:`check_side`."""
    return check_side("width", width, minimum), check_side("height", height, minimum)
