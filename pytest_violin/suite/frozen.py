"""Read-only, JSON-able containers for sample specs."""

from __future__ import annotations

import json
from ..errors import InvalidArgumentError

__all__ = ["FrozenMap", "freeze", "thaw", "canonical_json"]


class FrozenMap(dict):
    """A ``dict`` that refuses every mutation (so ``json.dumps`` still works).

    Values are frozen recursively by :func:`freeze`: nested dicts become
    ``FrozenMap`` and lists become tuples.
    """

    __slots__ = ()

    def _readonly(self, *args, **kwargs):
        raise InvalidArgumentError("sample specs are read-only; build a new sample instead")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly

    def __ior__(self, other):
        self._readonly()

    def __hash__(self):
        return hash(canonical_json(self))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (FrozenMap, (dict(self),))

    def __repr__(self):
        return f"FrozenMap({dict.__repr__(self)})"


_SCALARS = (str, int, float, bool, type(None))


def freeze(value):
    """Deep-freeze JSON-like data: dict -> FrozenMap, list/tuple -> tuple."""
    kind = type(value)
    if kind in _SCALARS or kind is FrozenMap:
        return value
    if isinstance(value, dict):
        return FrozenMap({str(k): (v if type(v) in _SCALARS else freeze(v))
                          for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        if all(type(v) in _SCALARS for v in value):
            return tuple(value)
        return tuple(freeze(v) for v in value)
    return value


def thaw(value):
    """Inverse of :func:`freeze`: plain dicts and lists (JSON round-trip form)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def canonical_json(value) -> str:
    """Compact JSON with sorted keys: a stable text form of spec data."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
