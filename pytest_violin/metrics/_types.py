"""The :class:`Metrics` result type shared by every task."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from ..errors import InvalidArgumentError

__all__ = ["Metrics", "PROFILES", "check_profile"]

#: Metric profiles: ``violin`` reproduces the published reference numbers,
#: ``strict`` fixes their documented weaknesses (see docs/metrics.md).
PROFILES = ("violin", "strict")


def check_profile(profile: str) -> str:
    """Return ``profile`` if it is a known profile, else raise ``ValueError``."""
    if profile not in PROFILES:
        raise InvalidArgumentError(f"unknown metric profile {profile!r}; accepted: {', '.join(PROFILES)}")
    return profile


class Metrics(Mapping):
    """A read-only mapping from metric name to a distance in ``[0, 1]``.

    0.0 means perfect obedience; higher is worse.

    Parameters
    ----------
    values : Mapping[str, float]
        Metric name to value, in display order.
    task : str
        The task the metrics belong to (``color``, ``shape``, ``mask``, ...).
    profile : str, optional
        The metric profile used.
    info : Mapping, optional
        Extra read-only facts about the measurement (e.g. the original
        size of a resized image).

    Attributes
    ----------
    mean : float
        The average of all metric values (the paper's ``*-mean`` column).
    """

    __slots__ = ("_values", "task", "profile", "info")

    def __init__(self, values: Mapping[str, float], *, task: str, profile: str = "violin",
                 info: Mapping | None = None):
        clean = {}
        for name, value in values.items():
            v = float(value)
            if math.isnan(v):
                raise InvalidArgumentError(f"metric {name!r} is NaN")
            clean[str(name)] = v
        object.__setattr__(self, "_values", MappingProxyType(clean))
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "profile", profile)
        object.__setattr__(self, "info", MappingProxyType(dict(info or {})))

    def __setattr__(self, name, value):
        raise AttributeError("Metrics is read-only")

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def mean(self) -> float:
        """Average of all metric values (0.0 for an empty set)."""
        if not self._values:
            return 0.0
        return sum(self._values.values()) / len(self._values)

    def to_dict(self) -> dict:
        """Return the values plus ``mean`` as a plain dict."""
        out = dict(self._values)
        out["mean"] = self.mean
        return out

    def with_info(self, **info) -> "Metrics":
        """Return a copy with ``info`` entries added."""
        merged = dict(self.info)
        merged.update(info)
        return Metrics(self._values, task=self.task, profile=self.profile, info=merged)

    def __eq__(self, other):
        if isinstance(other, Metrics):
            return dict(self._values) == dict(other._values) and self.task == other.task
        if isinstance(other, Mapping):
            return dict(self._values) == dict(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v:.4f}" for k, v in self._values.items())
        return f"Metrics[{self.task}]({body}, mean={self.mean:.4f})"
