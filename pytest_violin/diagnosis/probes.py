"""Probe readings: the paper's three observations, measured on a ``violin-probes`` run.

The ``violin-probes`` suite (:mod:`pytest_violin.suite.builtin.probes`) pairs each probe with a control. Its
run summary states, for this model:

* **negation**: the share of answers with a ``gradient`` finding, per prompt variant: the plain hex
  prompt (control), with " No gradient." and with " No ripples, no waves, no gradient.";
* **gravity**: how far the colour moved toward the colour of a conflicting context ("the color of
  ..." of the ISCC-NBS colour farthest away,
  :func:`~pytest_violin.suite.builtin.probes.farthest_color`), in CIEDE2000: ``dE(requested,
  context) - dE(found, context)``, positive toward the context, against the same measure on the
  control (same hex, no context); and the mean CIEDE2000 from the requested colour per variant;
* **inertia**: the mean split position found for the 13%, 31.5% and 70% requests (and the 50%
  controls), and how far toward 50% it was pulled.

Everything is read from the records the run wrote (results.json samples or
:meth:`~pytest_violin.results.SampleResult.to_dict`): the diagnosis of a failing sample (``extra.diagnosis``)
says what it found; a passing sample was not diagnosed (the plugin diagnoses failures only) and counts as the
answer asked for (its colour and split are within the limits). Samples in error, refused or failed without a
recorded diagnosis are left out and counted. docs/diagnoses.md ("Probe readings") shows real output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from ..verdict import Outcome

__all__ = ["PROBES_SUITE", "ProbeReadings", "probe_readings", "probe_lines"]

#: The suite whose samples are read.
PROBES_SUITE = "violin-probes"


@dataclass
class ProbeReadings:
    """The measured numbers; a group a run did not hold is empty."""

    #: ``(probe, clause, hits, n)`` per prompt variant (``control`` has clause ``""``): answers with a
    #: ``gradient`` finding, of ``n`` judged.
    negation: list = field(default_factory=list)
    #: ``probe -> list`` of per-answer drifts toward the conflicting context's colour (``conflict``, and
    #: ``control`` for the same colours).
    gravity_drift: dict = field(default_factory=dict)
    #: ``probe -> list`` of CIEDE2000 from the requested colour.
    gravity_error: dict = field(default_factory=dict)
    #: ``(requested_pct, [found_pct, ...])`` per requested share (as the prompt says it: 13.0), in suite
    #: order; an answer without a ``wrong_split`` finding counts at the exact split (whole pixels: 13.09%).
    inertia: list = field(default_factory=list)
    #: Inertia answers split the other way (left out of the means).
    wrong_orientation: int = 0
    #: Probe samples not counted (error, refused, failed without a diagnosis, or an inertia answer with no
    #: measurable split).
    left_out: int = 0


@lru_cache(maxsize=1)
def _probe_samples() -> dict:
    from ..suite import load_suite

    return {s.id: s for s in load_suite(PROBES_SUITE)}


def _findings(rec) -> list | None:
    """The answer's findings: ``[]`` for a passing sample, None when not known."""
    if rec.get("outcome") == Outcome.PASSED:
        return []
    if rec.get("outcome") != Outcome.FAILED:
        return None
    found = (rec.get("extra") or {}).get("diagnosis")
    return [f for f in found if isinstance(f, dict)] if isinstance(found, list) else None


def _first(findings, kind: str) -> dict | None:
    return next((f.get("numbers") or {} for f in findings if f.get("kind") == kind), None)


def _found_color(findings, requested):
    """The colour the answer holds: a ``wrong_color`` finding's, else the requested one."""
    from ..suite.colors import parse_color

    numbers = _first(findings, "wrong_color")
    if numbers and isinstance(numbers.get("found"), str):
        try:
            return parse_color(numbers["found"])
        except Exception:  # noqa: BLE001 - a hand-edited record: the colour is not known
            return None
    return tuple(requested)


def _context_color(requested):
    """The conflicting context's colour of a gravity probe of ``requested`` (the suite's rule)."""
    from ..suite.builtin.probes import farthest_color
    from ..suite.colors import ISCC_NBS_COLORS

    own = next((c for c in ISCC_NBS_COLORS if tuple(c.rgb) == tuple(requested)), None)
    return None if own is None else tuple(farthest_color(own).rgb)


def _split_found(rec, findings, spec, side: int):
    """``(found %, wrong orientation)``; found None when the answer has no measurable split."""
    numbers = _first(findings, "wrong_split")
    requested = 100.0 * int(spec["split"]) / side
    if numbers is not None:
        if numbers.get("orientation") != spec["orientation"]:
            return None, True
        value = numbers.get("position_pct")
        return (float(value) if isinstance(value, (int, float)) else None), False
    # no wrong_split: the split is within 1% (SPLIT_MIN_SHARE) unless its own metric failed, which without a
    # finding means the answer is not two-tone (no split to measure)
    if "ratio" in (rec.get("failed") or ()):
        return None, False
    return requested, False


def probe_readings(records, samples=None) -> ProbeReadings | None:
    """The readings of the ``violin-probes`` records among ``records`` (None when there is none).

    ``records`` are result records (``sample_id``, ``suite``, ``outcome``, ``failed``, ``extra.diagnosis``);
    ``samples`` maps their ids to samples (default the built-in ``violin-probes`` suite).
    """
    probes = [r for r in records if isinstance(r, dict) and r.get("suite") == PROBES_SUITE]
    if not probes:
        return None
    samples = _probe_samples() if samples is None else samples
    by_id = {str(r.get("sample_id") or r.get("id")): r for r in probes}
    out = ProbeReadings()
    from ..suite.prompts import NEGATION_CLAUSES

    negation: dict = {}
    inertia: dict = {}
    found_colors: dict = {}
    for sid, rec in by_id.items():
        sample = samples.get(sid)
        if sample is None:
            continue
        findings = _findings(rec)
        if findings is None:
            out.left_out += 1
            continue
        spec = sample.spec
        if sample.variation == "negation":
            probe = str(spec.get("probe", "control"))
            row = negation.setdefault(probe, [0, 0])
            row[0] += any(f.get("kind") == "gradient" for f in findings)
            row[1] += 1
        elif sample.variation == "gravity":
            found = _found_color(findings, spec["colors"][0])
            if found is None:
                out.left_out += 1
                continue
            found_colors[sid] = found
        elif sample.variation == "inertia":
            side = sample.width if spec["orientation"] == "vertical" else sample.height
            pct, flipped = _split_found(rec, findings, spec, side)
            if flipped:
                out.wrong_orientation += 1
                continue
            if pct is None:
                out.left_out += 1
                continue
            # keyed by the share the prompt asks for (13%); the exact split is whole pixels (13.09%)
            inertia.setdefault(round(100.0 * float(spec["ratio"]), 3), []).append(pct)
    out.negation = [(p, NEGATION_CLAUSES.get(p, "").strip(), hits, n) for p, (hits, n) in negation.items()]
    out.inertia = list(inertia.items())
    _gravity(out, found_colors, samples)
    return out


def _gravity(out: ProbeReadings, found_colors: dict, samples: dict) -> None:
    from .color import delta_e

    for sid, found in found_colors.items():
        sample = samples[sid]
        requested = tuple(sample.spec["colors"][0])
        probe = str(sample.spec.get("probe", "control"))
        out.gravity_error.setdefault(probe, []).append(delta_e(found, requested))
        if probe != "conflict":
            continue
        context = _context_color(requested)
        if context is None:
            continue
        drift = lambda colour: delta_e(requested, context) - delta_e(colour, context)  # noqa: E731
        out.gravity_drift.setdefault("conflict", []).append(drift(found))
        control = found_colors.get(sample.control)
        if control is not None:
            out.gravity_drift.setdefault("control", []).append(drift(control))


def _mean(values) -> float:
    return sum(values) / len(values)


def probe_lines(records, samples=None) -> list:
    """The readings as lines of text (empty when the run holds no probe sample).

    ``negation: a gradient in 41% of the answers with "No gradient." (12 of 29) ...``
    """
    r = probe_readings(records, samples)
    if r is None:
        return []
    lines = []
    if r.negation:
        parts = []
        for probe, clause, hits, n in sorted(r.negation, key=lambda row: row[0] == "control"):
            where = f'with "{clause}"' if clause else ("without a clause (control)" if probe == "control"
                                                         else f"with probe {probe}")
            parts.append(f"{100 * hits / n:.0f}% {where} ({hits} of {n})")
        lines.append("negation: a gradient in " + ", ".join(parts))
    drift = r.gravity_drift.get("conflict")
    if drift or r.gravity_error:
        text = "gravity: "
        if drift:
            control = r.gravity_drift.get("control")
            text += (f"with a conflicting context the colour moved {_mean(drift):+.1f} CIEDE2000 toward "
                     f"the context's colour (mean of {len(drift)}"
                     + (f"; the same hex without a context: {_mean(control):+.1f}" if control else "")
                     + "); ")
        text += "CIEDE2000 from the requested colour: " + ", ".join(
            f"{_mean(v):.1f} {p}" for p, v in r.gravity_error.items())
        lines.append(text)
    if r.inertia:
        parts, pulls = [], []
        for requested, found in sorted(r.inertia, key=lambda row: (row[0] == 50.0, row[0])):
            mean = _mean(found)
            label = "the 50% controls" if requested == 50.0 else f"{requested:g}% requested"
            parts.append(f"{mean:.1f}% for {label} ({len(found)})")
            if requested != 50.0:
                pulls.extend((f - requested) / (50.0 - requested) for f in found)
        text = "inertia: mean split found " + ", ".join(parts)
        if pulls:
            text += f"; pulled {100 * _mean(pulls):.0f}% of the way toward 50% on average"
        if r.wrong_orientation:
            text += f"; {r.wrong_orientation} split the other way (not in the means)"
        lines.append(text)
    if r.left_out:
        lines.append(f"({r.left_out} probe samples not counted: in error, refused, failed without a "
                     f"diagnosis, or without a measurable split)")
    return lines
