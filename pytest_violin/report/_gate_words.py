"""What the regression gate says, in one place for the terminal, summary.md, report.html and the
``violin::gate`` item: the verdict, the rule, each group's causes and statistics, the ratchet.

Every reporter renders these sentences and rows; none words the verdict itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from ..gating.evidence import MIN_TESTED
from ..gating.policy import MIN_SHARED
from .json_report import fmt, fmt_pct, fmt_signed

__all__ = ["EVIDENCE_HEAD", "StatRow", "cause_line", "evidence_line", "evidence_lines", "evidence_rows", "group_rows",
           "headline", "id_list", "mismatch_line", "not_compared", "not_judged", "not_judged_line", "not_shown_text",
           "ratchet_line", "rule_line", "too_few_line", "where"]

#: Statistic key -> how the reports name it.
STAT_NAMES = {"mean": "mean metric", "pass_rate": "pass rate", "refusal_rate": "refusal rate"}


def _points(x, signed: bool = False) -> str:
    """A rate in [0, 1] in points: ``12.3%``, or ``+12.3`` signed (followed by "points")."""
    if not signed:
        return fmt_pct(x)
    return fmt_signed(None if x is None else 100 * float(x), 1)


@dataclass(frozen=True)
class StatRow:
    """One statistic of one group, formatted: what every reporter's gate table shows."""

    group: str
    statistic: str      # "mean metric", "pass rate", "refusal rate"
    status: str         # regressed, improved, unchanged
    n: int
    old: str
    new: str
    delta: str          # "+0.0832" or "-19.3 points"
    bounds: str         # "[+0.0790, +0.0874]"


def _stat_rows(g) -> list:
    m = g.mean
    rows = [StatRow(g.label, STAT_NAMES["mean"], m.status, g.n, fmt(m.old, 4), fmt(m.new, 4),
                    fmt_signed(m.delta, 4), f"[{fmt_signed(m.ci_low, 4)}, {fmt_signed(m.ci_high, 4)}]")]
    for key in ("pass_rate", "refusal_rate"):
        s = getattr(g, key)
        rows.append(StatRow(g.label, STAT_NAMES[key], s.status, g.n, _points(s.old), _points(s.new),
                            f"{_points(s.delta, True)} points",
                            f"[{_points(s.ci_low, True)}, {_points(s.ci_high, True)}]"))
    return rows


def group_rows(comparison, *, which: str = "regressed") -> list:
    """``(group, [StatRow of the statistics that regressed / improved])`` for every such group."""
    out = []
    for g in comparison.groups:
        stats = g.regressed if which == "regressed" else g.improved
        if stats:
            keys = list(STAT_NAMES)
            out.append((g, [row for key, row in zip(keys, _stat_rows(g)) if key in stats]))
    return out


def cause_line(g) -> str | None:
    """Causes before numbers: the samples of ``g`` without an image now (that had one in the
    baseline), how many and why; None when there are none."""
    if not g.no_image:
        return None
    causes = "; ".join(f"{cause} ({count})" for cause, count in g.no_image_causes)
    imaged = (f"; the {g.imaged_n} with an image on both sides moved the mean by {fmt_signed(g.imaged_delta, 4)}"
              if g.imaged_n else "")
    return f"{g.no_image} of {g.n} samples have no image now (each counts 1.0): {causes}{imaged}"


def too_few_line(comparison) -> str | None:
    """The one line of a gate that cannot decide (too few shared samples), or None."""
    if not comparison.too_few:
        return None
    parts = ", ".join(f"{task} shares {shared} of this run's {total} samples" for task, shared, total
                      in comparison.too_few)
    tail = ("; --violin-allow-mismatch was given: decided anyway" if comparison.allow_mismatch else
            "; --violin-allow-mismatch decides anyway")
    return (f"the baseline does not cover this run: {parts} (another seed, suite or a narrow "
            f"selection?); to show a regression of the margins a task needs at least {MIN_SHARED} "
            f"comparable samples in the baseline, and at least half of its samples in this run{tail}")


def where(comparison) -> str:
    """`` <baseline path>`` to follow "baseline" in a sentence, or nothing."""
    return f" {comparison.baseline_path}" if comparison.baseline_path else ""


def counts_text(comparison) -> str:
    """``40 samples compared: 21 known failures, 2 new failures, 1 now passing``."""
    tasks = [g for g in comparison.groups if g.variation is None]
    known = sum(g.still_failing for g in tasks)
    new = sum(len(g.newly_failing) for g in tasks)
    fixed = sum(len(g.newly_passing) for g in tasks)
    parts = [f"{known} known failure{'s' if known != 1 else ''}"]
    if new:
        parts.append(f"{new} new failure{'s' if new != 1 else ''}")
    if fixed:
        parts.append(f"{fixed} now passing")
    return f"{comparison.compared} samples compared: " + ", ".join(parts)


#: How each outcome of a group is written before its label.
OUTCOME_WORDS = {"within": "within", "regressed": "REGRESSED", "not-shown": "not shown", "not-compared": "-"}


def _stat_evidence(key: str, st) -> str:
    """``mean +0.0031, ruled out above +0.0061`` for one statistic, and why it is not within (with the
    samples it would need)."""
    if key == "mean":
        text = f"mean {fmt_signed(st.delta, 4)}, ruled out above {fmt_signed(st.bound, 4)}"
    else:
        verb = "fall" if key == "pass_rate" else "rise"
        text = (f"{STAT_NAMES[key]} {_points(st.delta, True)} points, a {verb} above "
                f"{_points(st.bound, True).lstrip('+')} ruled out")
    need = f"; ~{st.planned:,} needed" if st.planned else ""
    if st.status == "not-shown" and st.n < MIN_TESTED:
        text += f" [too few to test: {st.n}, a test needs {MIN_TESTED}{need}]"
    elif st.status == "not-shown":
        text += f" [NOT SHOWN within {_margin(key, st.margin)}{need}]"
    elif st.status in ("regressed", "improved", "harm-only"):
        text += {"regressed": " [REGRESSED]", "improved": " [improved]", "harm-only": " [harm test only]"}[st.status]
    return text


def _margin(key: str, margin: float) -> str:
    return f"{margin:g}" if key == "mean" else _count_points(margin)


def evidence_line(g) -> str:
    """One group's evidence: ``within  mask/random n=1,800: mean +0.0031, ruled out above +0.0061; pass rate
    -0.4 points, a fall above 1.9 ruled out; ...``."""
    parts = "; ".join(_stat_evidence(key, st) for key, st in g.stats.items() if st.status != "not-compared")
    return f"{OUTCOME_WORDS.get(g.outcome, g.outcome):<9s} {g.label} n={g.n:,}: {parts}"


#: The columns of :func:`evidence_rows`.
EVIDENCE_HEAD = ("group", "outcome", "n", "mean metric", "pass rate", "refusal rate")


def evidence_rows(comparison) -> list[tuple]:
    """One row of :data:`EVIDENCE_HEAD` per compared group: its outcome and each statistic's evidence."""
    return [(g.label, OUTCOME_WORDS.get(g.outcome, g.outcome), f"{g.n:,}",
             *(_stat_evidence(key, st) if st.status != "not-compared" else "-" for key, st in g.stats.items()))
            for g in comparison.groups if g.n]


def evidence_lines(comparison) -> list[tuple[str, str]]:
    """``(line, level)`` of every compared group, in the groups' order: what each ruled out."""
    levels = {"within": "good", "regressed": "bad", "not-shown": "warn"}
    return [(evidence_line(g), levels.get(g.outcome, "info")) for g in comparison.groups if g.n]


def not_shown_text(comparison) -> str:
    """``color/v1 (pass rate), shape/triangle (mean metric; 12 samples)``: the groups not shown within."""
    out = []
    for g in comparison.not_shown_groups:
        stats = [STAT_NAMES[k] for k in g.not_shown] or ["not shown by the sequential gate"]
        small = f"; {g.n} sample{'' if g.n == 1 else 's'}" if g.n < MIN_TESTED else ""
        out.append(f"{g.label} ({', '.join(stats)}{small})")
    return ", ".join(out)


def headline(comparison) -> tuple[str, str]:
    """``(sentence, level)``: the fixed-sample gate's verdict (``bad``, ``warn`` or ``good``), worded from
    :attr:`~pytest_violin.gating.comparison.Comparison.outcome`."""
    place = where(comparison)
    outcome = comparison.outcome
    if outcome == "regressed":
        named = ", ".join(f"{g.label} ({', '.join(STAT_NAMES[k] for k in g.regressed)})"
                          for g in comparison.regressed_groups)
        return f"FAILED: the model got worse against baseline{place}: {named}", "bad"
    if outcome == "errored":
        return (f"FAILED: {len(comparison.errored)} sample(s) of this run ended in an error (no answer "
                f"from the endpoint, or a fault of pytest-violin) and could not be compared with "
                f"baseline{place}", "bad")
    if outcome == "not-decided" and comparison.compared == 0:
        return (f"NOT DECIDED: this run shares no comparable sample with baseline{place}: nothing was "
                f"compared (another suite, selection or seed?)", "bad")
    if outcome == "not-decided":
        return f"NOT DECIDED against baseline{place}: {too_few_line(comparison)}", "bad"
    if outcome == "not-shown":
        groups = not_shown_text(comparison)
        if comparison.accept_not_shown:
            return (f"PASSED WITH --violin-accept-not-shown: nothing regressed against baseline{place}, but "
                    f"these were NOT SHOWN within their margins: {groups} ({counts_text(comparison)})", "warn")
        return (f"NOT SHOWN: nothing regressed against baseline{place}, but these were not shown within their "
                f"margins: {groups}; a green gate needs every task and variation shown within (more samples, "
                f"or --violin-repeats for a stochastic model: the planned sizes are below; "
                f"--violin-accept-not-shown passes such a run and says so)", "bad")
    return (f"PASSED: every task and variation shown within its margins against baseline{place} "
            f"({counts_text(comparison)})", "good")


def not_judged(reason: str) -> str:
    """The skip reason of ``violin::gate`` in a run stopped before its end by ``reason`` (-x, Ctrl-C, ...)."""
    return f"not judged: {reason}"


def not_judged_line(reason: str) -> str:
    """The gate's verdict line in a run stopped before its end: a part of a run is no evidence either way."""
    return (f"NOT JUDGED: the run stopped before its end ({reason}); the gate judges a whole run, so the "
            f"samples that ran are shown below for information only")


def mismatch_line(label: str, *, differences=(), too_few=(), nothing_shared: int = 0,
                  fingerprints: tuple | None = None, data: str | None = None) -> str:
    """The usage error of a baseline this run cannot be compared with, given before any generation:
    ``differences`` ``(field, baseline's, this run's)``; ``too_few`` ``(task, shared, in_run)`` as
    :attr:`~pytest_violin.gating.comparison.Comparison.too_few`; ``nothing_shared`` the run's samples when
    none is comparable (no option decides on nothing); ``fingerprints`` ``(baseline's, this run's)`` when
    this run's samples are not a selection of the baseline's; ``data`` the sentence naming other data
    (:func:`~pytest_violin.gating.baseline.dataset_change`)."""
    parts = [data] if data else []
    parts += [f"the baseline's {key} is {old!r}, this run's {new!r}" for key, old, new in differences]
    if fingerprints:
        parts.append(f"suite fingerprint {fingerprints[0]} in the baseline, {fingerprints[1]} for this run's "
                     f"samples")
    if nothing_shared:
        parts.append(f"none of this run's {nothing_shared} samples is in the baseline (same id and definition, "
                     f"no error there)")
    elif too_few:
        shares = ", ".join(f"{task} shares {shared} of this run's {total} samples" for task, shared, total in too_few)
        parts.append(f"{shares} (a task needs at least {MIN_SHARED} comparable samples in the baseline, and at "
                     f"least half of its samples in this run)")
    accepted = "a baseline of this run's suite, profile and seed that holds its samples"
    if not nothing_shared:
        accepted += ", or --violin-allow-mismatch to decide on the samples both hold"
    return (f"--violin-baseline={label!r} cannot be compared with this run, so no sample was generated: "
            f"{'; '.join(parts)}; accepted: {accepted}")


def _count_points(share: float) -> str:
    points = 100 * float(share)
    return f"{points:g} point{'' if points == 1 else 's'}"


def rule_line(comparison) -> str:
    """The rule the fixed-sample gate applied, with its margins and error rates."""
    from ..gating.policy import DEFAULT_RESAMPLES

    confidence = f"{100 * (1 - comparison.alpha):g}%"
    return (f"rule: a task or variation is within its margins when its mean metric is shown to worsen by "
            f"less than {comparison.max_regression:g}, its pass rate to fall by less than "
            f"{_count_points(comparison.max_pass_drop)} and, on a task of at least "
            f"{math.ceil(3 / comparison.max_refusal_rise) if comparison.max_refusal_rise else '-'} samples, its "
            f"refusal rate to rise by less than {_count_points(comparison.max_refusal_rise)} (each a one-sided "
            f"{confidence} bound: 'ruled out above'); it regressed when one is shown above its margin (error "
            f"rate {comparison.alpha:g} over the {comparison.tests} statistics tested); the mean metric by a "
            f"paired bootstrap ({DEFAULT_RESAMPLES:,} resamples), the rates by Tango's score interval; a group "
            f"of fewer than {MIN_TESTED} samples is not tested; planned sizes are for "
            f"{100 * comparison.power:g}% power; samples over their limits in the baseline too are known "
            f"failures (xfailed)")


def ratchet_line(comparison) -> str | None:
    """Improvements, and the command that records them as the new baseline; None without any."""
    fixed = comparison.newly_passing
    better = comparison.improvements
    if not comparison.ok or comparison.regressed_groups or comparison.errored:
        return None  # only a green gate's run may become the baseline
    if not better and (not fixed or any(g.newly_failing for g in comparison.groups)):
        # known failures passing beside new failures is a stochastic model's churn, not progress
        return None
    parts = []
    if fixed:
        parts.append(f"{len(fixed)} known failure{'s' if len(fixed) != 1 else ''} of the baseline now "
                     f"pass{'es' if len(fixed) == 1 else ''}")
    if better:
        parts.append("improved: " + ", ".join(
            f"{g.label} ({', '.join(STAT_NAMES[k] for k in g.improved)})" for g in better))
    target = comparison.baseline_path or "the baseline"
    return (f"ratchet: {'; '.join(parts)}: make this run the new baseline (save it with "
            f"--violin-save-baseline=FILE beside --violin-baseline, then commit FILE as {target}; "
            f"docs/gating.md, 'The ratchet')")


def not_compared(comparison, selection) -> list[tuple[str, tuple]]:
    """``(title, ids)`` of the samples on one side only or redefined (the missing ones not for a
    ``selection``: :func:`~pytest_violin.gating.comparison.selection_text` says it), non-empty lists only."""
    return [(title, ids) for title, ids in (("Missing from this run", () if selection else comparison.missing),
                                            ("Not in the baseline", comparison.added),
                                            ("Redefined since the baseline (not compared)", comparison.changed))
            if ids]


def id_list(ids, each=str, limit: int = 10) -> str:
    """At most ``limit`` sample ids, each written by ``each``, then "and N more"."""
    ids = list(ids)
    return ", ".join(map(each, ids[:limit])) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
