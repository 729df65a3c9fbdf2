"""pytest-violin: gate image-generation releases on visual obedience.

The Violin benchmark (Visual obedience Level-4) as a pytest plugin: every
sample becomes a test that asks a model for an image and asserts its
metrics against thresholds.

Public names are imported lazily so that installing the plugin costs an
ordinary pytest run nothing.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    # images
    "as_rgb8": "pytest_violin.imaging",
    "encode_png": "pytest_violin.imaging",
    # metrics
    "Metrics": "pytest_violin.metrics",
    "color_metrics": "pytest_violin.metrics",
    "shape_metrics": "pytest_violin.metrics",
    "mask_metrics": "pytest_violin.metrics",
    "ciede2000": "pytest_violin.metrics",
    # suites
    "Sample": "pytest_violin.suite",
    "load_suite": "pytest_violin.suite",
    "parse_color": "pytest_violin.suite",
    # models
    "GenerationRequest": "pytest_violin.models",
    "AdapterOptions": "pytest_violin.models",
    "resolve_model": "pytest_violin.models",
    # diagnoses of failing answers
    "diagnose": "pytest_violin.diagnosis",
    "Diagnosis": "pytest_violin.diagnosis",
    # assertions
    "assert_obeys": "pytest_violin.testing.assertions",
    "assert_pure_color": "pytest_violin.testing.assertions",
    "assert_blocks": "pytest_violin.testing.assertions",
    "assert_shape": "pytest_violin.testing.assertions",
    "assert_masked": "pytest_violin.testing.assertions",
    # evaluating from Python (notebooks, training loops)
    "evaluate": "pytest_violin.evaluation",
    "EvaluationRun": "pytest_violin.evaluation",
    "trend": "pytest_violin.evaluation",
    # errors
    "ViolinError": "pytest_violin.errors",
    "InvalidImageError": "pytest_violin.errors",
    "GenerationError": "pytest_violin.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_violin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
