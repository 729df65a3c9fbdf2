"""Issue 25's "done when", end to end (slow): the built-in violin color and shape samples
against the oracle's baseline, in process, with a model function; numbers in docs/gating.md."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

MODELS = '''
import numpy as np


def degraded(request):
    """Every colour shifted by 40 levels: clearly worse, same layout."""
    img = request.sample.expected().astype(np.int16)
    return np.clip(img + 40, 0, 255).astype(np.uint8)


def same(request):
    """The oracle's answers, through the python adapter."""
    return request.sample.expected()
'''


def test_a_clear_regression_fails_under_20_percent_and_the_same_model_passes_under_35(pytester):
    pytester.makepyfile(violin_models=MODELS)
    common = ["--violin-tasks=color,shape", "-p", "no:cacheprovider", "-q"]
    base = pytester.runpytest("--violin-model=oracle", "--violin-save-baseline=base.json", *common)
    assert base.ret == 0
    shares = {}
    for model, code in (("degraded", 1), ("same", 0)):
        result = pytester.runpytest(f"--violin-model=python:violin_models:{model}", "--violin-baseline=base.json",
                                    "--violin-sequential", f"--violin-report={model}", *common)
        assert result.ret == code, result.stdout.str()[-3000:]
        seq = json.loads((pytester.path / model / "results.json").read_text())["metadata"]["sequential"]
        assert seq["total"] == 2345
        shares[model] = seq["used"] / seq["total"]
        assert seq["verdict"] == ("regressed" if code else "not-regressed")
    assert shares["degraded"] < 0.20 and shares["same"] < 0.35, shares
