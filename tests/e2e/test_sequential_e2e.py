"""The sequential gate end to end (slow): the built-in violin color and shape samples against
the oracle's baseline, in process, with a model function; numbers in docs/gating.md."""

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


def test_a_clear_regression_fails_under_20_percent_and_the_same_model_is_not_failed(pytester):
    """The same answers cannot be shown within the default margins on groups of 250 samples (the
    shape variations) anytime-valid: the gate ends undecided and the fixed-sample rule passes it."""
    pytester.makepyfile(violin_models=MODELS)
    common = ["--violin-tasks=color,shape", "-p", "no:cacheprovider", "-q"]
    base = pytester.runpytest("--violin-model=oracle", "--violin-save-baseline=base.json", *common)
    assert base.ret == 0
    shares = {}
    for model, code in (("degraded", 1), ("same", 0)):
        result = pytester.runpytest(f"--violin-model=python:violin_models:{model}", "--violin-baseline=base.json",
                                    "--violin-sequential", f"--violin-report={model}", *common)
        assert result.ret == code, result.stdout.str()[-3000:]
        doc = json.loads((pytester.path / model / "results.json").read_text())
        seq = doc["metadata"]["sequential"]
        assert seq["total"] == 2345
        shares[model] = seq["used"] / seq["total"]
        assert seq["verdict"] == ("regressed" if code else "undecided")
        assert doc["comparison"]["ok"] is (code == 0)
    assert shares["degraded"] < 0.20, shares
