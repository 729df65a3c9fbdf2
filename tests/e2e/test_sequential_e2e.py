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


def test_a_clear_regression_fails_under_20_percent_and_the_same_model_is_shown_within_early(pytester):
    """The same answers are shown within every margin before the suite's end: the tasks at an early look,
    the shape variations (250 samples, under the 300 a look before the last needs) at their end, about
    71% of the samples; a clearly worse model is regressed on under a fifth of them."""
    pytester.makepyfile(violin_models=MODELS)
    common = ["--violin-tasks=color,shape", "-p", "no:cacheprovider", "-q"]
    base = pytester.runpytest("--violin-model=oracle", "--violin-save-baseline=base.json", *common)
    assert base.ret == 0
    shares = {}
    for model, code, verdict, outcome in (("degraded", 1, "regressed", "regressed"),
                                          ("same", 0, "within-margin", "within-margin")):
        result = pytester.runpytest(f"--violin-model=python:violin_models:{model}", "--violin-baseline=base.json",
                                    "--violin-sequential", f"--violin-report={model}", *common)
        assert result.ret == code, result.stdout.str()[-3000:]
        doc = json.loads((pytester.path / model / "results.json").read_text())
        seq = doc["metadata"]["sequential"]
        assert seq["total"] == 2345
        shares[model] = seq["used"] / seq["total"]
        assert seq["verdict"] == verdict, seq
        assert doc["comparison"]["ok"] is (code == 0)
        assert doc["comparison"]["outcome"] == outcome
        words = {"degraded": f"FAILED: sequential gate: a regression is shown after {seq['used']} of 2345 samples",
                 "same": f"PASSED: sequential gate: every task and variation shown within its margins after "
                         f"{seq['used']} of 2345 samples"}[model]
        assert words in result.stdout.str(), result.stdout.str()[-3000:]
    same_groups = {g["group"]: g["status"] for g in seq["groups"]}
    assert set(same_groups) == {"color", "color/v1", "color/v2", "shape", "shape/circle", "shape/square",
                                "shape/triangle"} and set(same_groups.values()) == {"within"}, same_groups
    assert doc["comparison"]["not_shown"] == []
    assert shares["degraded"] < 0.20, shares
    # the shape variations are judged at their end only: the whole shape task runs, not the whole colour task
    assert 0.6 < shares["same"] < 0.8, shares
