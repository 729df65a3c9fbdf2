"""Probe readings: the paper's three observations measured on a violin-probes run.

Synthetic models with one known defect of a chosen strength answer real
probe samples; each answer goes the plugin's way (score, judge, diagnose the
failures: results.score_generation), and the readings must move with the
defect: a gradient only where the prompt negates one, a colour pulled toward
the conflicting context's colour, a split pulled toward 50%.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from pytest_violin.diagnosis.probes import PROBES_SUITE, probe_lines, probe_readings
from pytest_violin.suite import load_suite

MODELS = '''
import numpy as np

from pytest_violin.suite.builtin.probes import farthest_color
from pytest_violin.suite.colors import ISCC_NBS_COLORS
from pytest_violin.suite.drawing import render_ratio


def answer(sample, prompt, strength):
    """The exact answer with the probes' three defects at ``strength`` (0: exact)."""
    img = sample.expected().astype(np.float64)
    spec = sample.spec
    if sample.variation == "negation" and "gradient" in prompt.lower():
        # negation: the model draws what the prompt negates, +-15 levels per unit of strength
        img += strength * np.linspace(-15, 15, sample.height)[:, None, None]
    elif sample.variation == "gravity" and spec.get("probe") == "conflict":
        own = next(c for c in ISCC_NBS_COLORS if tuple(c.rgb) == tuple(spec["colors"][0]))
        img += strength * (np.asarray(farthest_color(own).rgb, float) - img)
    elif sample.variation == "inertia":
        side = sample.width if spec["orientation"] == "vertical" else sample.height
        share = spec["ratio"] + strength * (0.5 - spec["ratio"])
        return render_ratio(spec["orientation"], int(round(share * side)), spec["colors"],
                            sample.width, sample.height)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def inertia_half(request):
    return answer(request.sample, request.prompt, 0.5)


def negation_full(request):
    return answer(request.sample, request.prompt, 1.0)
'''

_NS: dict = {}
exec(compile(MODELS, "probe_models", "exec"), _NS)  # the same code the pytester run loads


@lru_cache(maxsize=None)
def _subset() -> tuple:
    """4 colours of negation (x3) and gravity (x4), and 2 colour pairs x 2 orientations of inertia (x4)."""
    samples = load_suite(PROBES_SUITE)
    slugs = list(dict.fromkeys(s.id.split("/")[2] for s in samples if s.variation == "negation"))[:4]
    pairs = list(dict.fromkeys(s.id.split("/")[3] for s in samples if s.variation == "inertia"))[:2]
    return tuple(s for s in samples
                 if (s.variation in ("negation", "gravity") and s.id.split("/")[2] in slugs)
                 or (s.variation == "inertia" and s.id.split("/")[3] in pairs))


def _records(strength, variations=("negation", "gravity", "inertia")) -> list:
    return [dict(r) for r in _scored(strength, variations)]


@lru_cache(maxsize=None)
def _scored(strength, variations) -> tuple:
    from pytest_violin.execution.runner import Generation
    from pytest_violin.pytest_plugin._options import ViolinSettings
    from pytest_violin.results import score_generation
    from pytest_violin.tasks import default_limits

    out = []
    for sample in _subset():
        if sample.variation in variations:
            image = _NS["answer"](sample, sample.prompt, strength)
            result, _ = score_generation(sample, Generation(images=[image]), ViolinSettings(),
                                         default_limits())
            out.append(result.to_dict())
    return tuple(out)


def test_exact_answers_read_as_no_effect():
    r = probe_readings(_records(0.0))
    assert [(p, hits) for p, _, hits, _ in r.negation] == [("control", 0), ("no-gradient", 0),
                                                            ("no-ripples", 0)]
    assert all(n == 4 for *_, n in r.negation)
    assert r.gravity_drift["conflict"] == pytest.approx([0.0] * 4)
    assert r.gravity_drift["control"] == pytest.approx([0.0] * 4)
    exact = {50.0: 50.0, 31.5: 100 * 161 / 512, 13.0: 100 * 67 / 512, 70.0: 100 * 358 / 512}
    assert {k: pytest.approx(v) for k, v in dict(r.inertia).items()} == {k: [v] * 4 for k, v in exact.items()}
    assert r.left_out == 0 and r.wrong_orientation == 0


def test_negation_reads_the_gradient_the_clause_brings():
    r = probe_readings(_records(1.0, ("negation",)))
    rates = {p: (hits, n) for p, _, hits, n in r.negation}
    assert rates == {"control": (0, 4), "no-gradient": (4, 4), "no-ripples": (4, 4)}
    (line,) = probe_lines(_records(1.0, ("negation",)))
    assert line.startswith('negation: a gradient in 100% with "No gradient." (4 of 4)')
    assert line.endswith("0% without a clause (control) (0 of 4)")


@pytest.mark.parametrize("strength", [0.2, 0.5])
def test_gravity_drift_grows_with_the_pull_toward_the_context(strength):
    from pytest_violin.diagnosis.color import delta_e

    r = probe_readings(_records(strength, ("gravity",)))
    drift = r.gravity_drift["conflict"]
    assert len(drift) == 4 and r.gravity_drift["control"] == pytest.approx([0.0] * 4)
    # what the drift must be: the colour moved by ``strength`` of the way in RGB
    want = []
    for s in _subset():
        if s.variation == "gravity" and s.spec["probe"] == "conflict":
            req = np.asarray(s.spec["colors"][0], float)
            ctx = np.asarray(_NS["farthest_color"](next(c for c in _NS["ISCC_NBS_COLORS"]
                                                        if tuple(c.rgb) == tuple(req))).rgb, float)
            found = np.rint(req + strength * (ctx - req))
            want.append(delta_e(req, ctx) - delta_e(found, ctx))
    assert drift == pytest.approx(want, abs=1.0)
    assert min(drift) > 0
    errors = {p: np.mean(v) for p, v in r.gravity_error.items()}
    assert errors["control"] == pytest.approx(0.0) and errors["conflict"] > 5


def test_gravity_drift_is_larger_for_a_stronger_pull():
    weak = np.mean(probe_readings(_records(0.2, ("gravity",))).gravity_drift["conflict"])
    strong = np.mean(probe_readings(_records(0.5, ("gravity",))).gravity_drift["conflict"])
    assert strong > 2 * weak > 0


@pytest.mark.parametrize("strength", [0.3, 0.7])
def test_inertia_reads_the_split_pulled_toward_fifty(strength):
    r = probe_readings(_records(strength, ("inertia",)))
    found = dict(r.inertia)
    for requested in (13.0, 31.5, 70.0):
        want = requested + strength * (50 - requested)
        assert np.mean(found[requested]) == pytest.approx(want, abs=0.5), requested
    assert np.mean(found[50.0]) == pytest.approx(50.0, abs=0.5)
    (line,) = probe_lines(_records(strength, ("inertia",)))
    pulled = int(line.split("pulled ")[1].split("%")[0])
    assert abs(pulled - 100 * strength) <= 2


def test_records_in_error_or_without_a_diagnosis_are_left_out_and_counted():
    records = _records(1.0, ("negation",))
    records[1] = {**records[1], "outcome": "error"}
    failing = next(i for i, r in enumerate(records) if r["outcome"] == "failed")
    records[failing] = {**records[failing], "extra": {}}
    r = probe_readings(records)
    assert r.left_out == 2 and sum(n for *_, n in r.negation) == 10
    assert probe_lines(records)[-1].startswith("(2 probe samples not counted")


def test_a_run_without_probe_samples_has_no_readings():
    violin = load_suite("violin", limit=3)
    records = [{"sample_id": s.id, "suite": s.suite, "outcome": "passed"} for s in violin]
    assert probe_readings(records) is None and probe_lines(records) == []


def test_the_terminal_and_summary_md_state_the_readings(pytester):
    """A real in-process plugin run on violin-probes with a fake model."""
    pytester.makepyfile(probe_models=MODELS)
    result = pytester.runpytest("--violin-suite=violin-probes", "-k", "inertia and vertical",
                                "--violin-model=python:probe_models:inertia_half",
                                "--violin-report=rep", "-p", "no:randomly", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "probe readings (violin-probes):" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("inertia: mean split found"))
    assert "pulled 50% of the way toward 50%" in line
    # 13 + (50 - 13) / 2 = 31.5% of 512 px, drawn at 161 px: 31.4%; 4 colour pairs, vertical
    assert "31.4% for 13% requested (4)" in line
    summary = (pytester.path / "rep" / "summary.md").read_text()
    assert "### Probe readings" in summary and "- inertia: mean split found" in summary
