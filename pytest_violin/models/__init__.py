"""Model adapters: the request type, the adapter protocol and the registry."""

from .request import GenerationRequest, ModelAdapter, derive_seed
from .registry import AdapterOptions, available_schemes, parse_spec, resolve_model

__all__ = ["AdapterOptions", "GenerationRequest", "ModelAdapter", "available_schemes", "derive_seed", "parse_spec",
           "resolve_model"]
