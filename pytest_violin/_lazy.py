"""A package's names loaded on first use (PEP 562): importing the package costs what its callers use only."""

from __future__ import annotations

import importlib
from collections.abc import Mapping

__all__ = ["lazy_names"]


def lazy_names(namespace: dict, homes: Mapping[str, str]):
    """``(__getattr__, __dir__)`` for the package whose globals are ``namespace``: ``homes`` maps a name to
    the module that defines it (dotted: absolute; else a submodule); a name loaded is kept in the globals."""
    package = namespace["__name__"]

    def __getattr__(name: str):
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home if "." in home else f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__
