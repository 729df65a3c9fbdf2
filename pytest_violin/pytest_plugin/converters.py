"""The converters of the ``--violin-*`` options (:mod:`.options` holds the table).

Each turns an option's text into its value or raises
:class:`argparse.ArgumentTypeError` naming the value and the accepted forms
(a header's value is masked: it may hold a secret).
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Callable


def _text(value) -> str:
    return str(value).strip()


def integer(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A converter to an integer in ``[minimum, maximum]``."""
    accepted = f"an integer >= {minimum}" if maximum is None else f"an integer from {minimum} to {maximum}"

    def convert(value) -> int:
        text = _text(value)
        if not re.fullmatch(r"[+-]?[0-9]+", text):  # ASCII digits only (int() takes any script's)
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; accepted: {accepted}")
        if len(text) > 40:  # int() refuses over 4,300 digits with a ValueError
            raise argparse.ArgumentTypeError(f"{text!r} is out of range; accepted: {accepted}")
        number = int(text)
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is below {minimum}; accepted: {accepted}")
        if maximum is not None and number > maximum:
            raise argparse.ArgumentTypeError(f"{text!r} is above {maximum}; accepted: {accepted}")
        return number

    return convert


def number(low: float, high: float, *, low_open: bool, what: str) -> Callable[[str], float]:
    """A converter to a finite float in ``(low, high]`` or ``[low, high]``."""
    accepted = f"{what} {'>' if low_open else '>='} {low:g} and <= {high:g}"

    def convert(value) -> float:
        text = _text(value)
        try:
            x = float(text)
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and (x > low if low_open else x >= low) and x <= high):
            raise argparse.ArgumentTypeError(f"{text!r} is invalid; accepted: {accepted}")
        return x

    return convert


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value) -> float:
    """A converter to seconds from ``90``, ``90s``, ``30m``, ``2h`` or ``1d`` (0 to 7 days)."""
    text = _text(value).strip().lower()
    unit = _UNITS.get(text[-1:], None) if text else None
    number_text = text[:-1] if unit is not None else text
    try:
        seconds = float(number_text) * (unit or 1)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 <= seconds <= 7 * 86400):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid; accepted: a duration such as 90s, 30m, 2h "
                                         f"or 1d (a bare number is seconds), from 0 to 7d")
    return seconds


def choice(options: tuple) -> Callable[[str], str]:
    """A converter to one of ``options`` (case-insensitive)."""

    def convert(value) -> str:
        text = _text(value).lower()
        if text not in options:
            raise argparse.ArgumentTypeError(f"{text!r} is unknown; accepted: {', '.join(options)}")
        return text

    return convert


def nonempty(value) -> str:
    """A converter to a non-blank string."""
    text = _text(value)
    if not text:
        raise argparse.ArgumentTypeError("an empty value; accepted: a non-empty string")
    return text


def task_list(value) -> tuple:
    """``"color,shape"`` or a list ``["color", "shape"]`` as a tuple of task names."""
    parts = [str(p) for p in value] if isinstance(value, (list, tuple)) else [str(value)]
    tasks = tuple(t.strip().lower() for p in parts for t in p.split(",") if t.strip())
    if not tasks:
        raise argparse.ArgumentTypeError(
            f"{value!r} names no task; accepted: comma-separated task names such as color,shape,mask")
    return tasks


def calls_limit(value) -> float:
    """A number of generations, or ``none`` for no limit (``math.inf``)."""
    if _text(value).lower() in ("none", "unlimited"):
        return math.inf
    return integer(0)(value)


def threshold(value) -> str:
    """One ``TASK.METRIC=VALUE`` override, checked for syntax (names are checked against the suite)."""
    from ..errors import ThresholdError
    from ..thresholds import parse_thresholds

    text = str(value)
    try:
        parse_thresholds([text], None)
    except ThresholdError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _mask_header(text: str) -> str:
    """A malformed header as it may be shown: its name at most, never a value.

    ``'Authorization Bearer s3cr3t'`` (no colon) shows as
    ``'Authorization ***'``; a lone word that is not a plausible header name
    (it may be the token itself) shows as ``'***'``.
    """
    name, sep, value = text.partition(":")
    if sep:
        return f"{name}:***" if value.strip() else text
    words = text.split()
    first = words[0] if words else ""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]{0,39}", first) or any(c.isdigit() for c in first):
        return "***"
    return first + (" ***" if len(words) > 1 else "")


def header(value) -> tuple | None:
    """``'Name: value'`` as ``(name, value)``; blank lines are ``None``."""
    text = str(value)
    if not text.strip():
        return None
    name, sep, rest = text.partition(":")
    if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
        raise argparse.ArgumentTypeError(
            f"{_mask_header(text)!r} is malformed (no 'Name:' before the value); accepted: "
            f"'Name: value' (value may reference ${{ENV_VAR}})")
    return name.strip(), rest.strip()


_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f", "")


def boolean(value) -> bool:
    """true/false, yes/no, on/off, 1/0."""
    if isinstance(value, bool):
        return value
    text = _text(value).lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"{value!r} is not a boolean; accepted: true/false, yes/no, on/off, 1/0")


