"""Model adapters: the request type, the adapter protocol and the registry."""

from .request import ModelAdapter
from .registry import AdapterOptions, available_schemes, parse_spec, resolve_model
from .request import GenerationRequest, derive_seed

__all__ = [
    "AdapterOptions",
    "GenerationRequest",
    "ModelAdapter",
    "available_schemes",
    "derive_seed",
    "parse_spec",
    "resolve_model",
]
