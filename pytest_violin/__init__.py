"""pytest-violin: gate image-generation releases on visual obedience.

The Violin benchmark (Visual obedience Level-4) as a pytest plugin: every sample becomes a test that asks a
model for an image and asserts its metrics against thresholds.

Public names are imported lazily so that installing the plugin costs an ordinary pytest run nothing.
"""

from __future__ import annotations

from ._lazy import lazy_names

__version__ = "0.1.0"

#: Public names by the module that defines them.
_PUBLIC = {
    "pytest_violin.imaging": ("as_rgb8", "encode_png"),
    "pytest_violin.metrics": ("Metrics", "color_metrics", "shape_metrics", "mask_metrics", "ciede2000"),
    "pytest_violin.suite": ("Sample", "load_suite", "parse_color"),
    "pytest_violin.models": ("GenerationRequest", "AdapterOptions", "resolve_model"),
    "pytest_violin.diagnosis": ("diagnose", "Diagnosis"),
    "pytest_violin.assertions": ("assert_obeys", "assert_pure_color", "assert_blocks", "assert_shape",
                                 "assert_masked"),
    "pytest_violin.errors": ("ViolinError", "InvalidImageError", "GenerationError"),
}
_LAZY = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = ["__version__", *_LAZY]


__getattr__, __dir__ = lazy_names(globals(), _LAZY)
