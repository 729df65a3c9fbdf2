"""The values each run setting accepts, in one table: the plugin's ``--violin-*`` options and ``evaluate()``
check the same bounds and say what is accepted in the same words.

A bound keeps a run within what one process can hold: every repeat of a sample is kept until it is scored,
every generation in flight has its thread and connection, and an integer far past :data:`MAX_DIGITS` digits
cannot even be printed in a message (Python refuses to turn an integer of over 4,300 digits into text).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MAX_CONCURRENCY", "MAX_COST", "MAX_DIGITS", "MAX_PRICE", "MAX_REPEATS", "MAX_RETRIES",
           "MAX_TIMEOUT", "PASS_RULES", "PROFILES", "RUN_BOUNDS", "Bound"]

#: The metric profiles a run may take (:mod:`pytest_violin.metrics` computes them).
PROFILES = ("violin", "strict")
#: How a sample's repeats are judged: on their mean or on the worst repeat.
PASS_RULES = ("mean", "worst")

#: Largest concurrency: generations in flight per process.
MAX_CONCURRENCY = 256
#: Largest timeout in seconds (one day).
MAX_TIMEOUT = 86400.0
#: Most retries of one HTTP attempt.
MAX_RETRIES = 100
#: Most repeats: every repeat of a sample is held until it is scored.
MAX_REPEATS = 64
#: Largest price: USD per image.
MAX_PRICE = 1000.0
#: Largest cost cap: USD.
MAX_COST = 1_000_000.0
#: Most digits of an integer setting (a seed, a limit, a call cap).
MAX_DIGITS = 40


@dataclass(frozen=True)
class Bound:
    """The values one setting accepts: ``low`` to ``high`` (``None``: no upper bound but
    :data:`MAX_DIGITS`), integers or numbers; ``low_open``: ``low`` itself is refused."""

    low: float
    high: float | None = None
    integer: bool = True
    low_open: bool = False
    what: str = "a number"

    @property
    def accepted(self) -> str:
        """What is accepted, for a message: ``an integer from 1 to 256``."""
        if self.integer and self.high is None:
            return f"an integer >= {self.low}"
        if self.integer:
            return f"an integer from {self.low} to {self.high}"
        return f"{self.what} {'>' if self.low_open else '>='} {self.low:g} and <= {self.high:g}"

    def holds(self, value) -> bool:
        """Whether ``value`` (an ``int`` or, for a number, a ``float``; never a ``bool``) is accepted."""
        kinds = int if self.integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.integer and abs(value) >= 10**MAX_DIGITS:
            return False
        high = self.high is None or value <= self.high
        return high and (value > self.low if self.low_open else value >= self.low)


#: The bounded settings, by their ``evaluate()`` argument (``--violin-`` and the name with ``-`` for ``_``).
RUN_BOUNDS = {
    "concurrency": Bound(1, MAX_CONCURRENCY),
    "repeats": Bound(1, MAX_REPEATS),
    "retries": Bound(0, MAX_RETRIES),
    "timeout": Bound(0.0, MAX_TIMEOUT, integer=False, low_open=True, what="a number of seconds"),
    "price": Bound(0.0, MAX_PRICE, integer=False, what="a price in USD per image"),
    "max_cost": Bound(0.0, MAX_COST, integer=False, what="an amount in USD"),
    "seed": Bound(0),
    "limit": Bound(1),
    "max_calls": Bound(0),
}

