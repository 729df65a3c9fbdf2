"""The risk-aware gate's error rates, power and samples generated, fixed-sample and sequential.

Over many seeded runs, a synthetic candidate is held against a synthetic baseline shaped like the built-in
``violin`` suite (the populations of ``bench_sequential.py``: its beta mixtures, task means of a mid-field
model of the paper's Tables 1-3, outcomes by the default limits), once by the fixed-sample gate on every
sample (:func:`pytest_violin.gating.compare`, what ``--violin-baseline`` runs) and once by the sequential
gate (:class:`~pytest_violin.gating.sequential.SequentialGate`, fed as the plugin feeds it). Per case and
gate: the share of runs that are **red** (a group regressed), **green** (every group shown within its
margins) and **not shown** (neither), with Wilson 95% intervals, and the sequential gate's share of the suite
generated (mean / p90).

The cases (``d = new - old``, margins 0.01 / 5 points / 1 point):

* ``identical``: a deterministic unchanged model (``d = 0``);
* ``stochastic-P``: an unchanged model that answers a share P% of the samples anew in every run (the
  baseline's run too): every expected difference 0;
* ``shift-K``: another model (50% redrawn) whose every variation is worse by K x margin on the mean metric
  (outcomes the baseline's): K = 1 is at the margin, where "green" must stay under ``alpha``;
* ``task-K``: the colour task alone worse by K x margin (its two variations), the rest identical;
* ``var-K``: the triangles alone (250 samples) worse by K x margin, the rest identical;
* ``noisy-var-K``: the triangles alone worse by K x margin in expectation, each answer's difference drawn
  around it (sd 0.05), so the realised mean falls on either side: at K = 1, the case where "green" is
  likeliest for a model at the margin, and must stay under ``alpha``;
* ``refuse-R``: a task (shape) newly refuses R% of its samples (points of refusal rate), the rest identical;
* ``refuse-var-R``: one variation (shape/triangle, 250 samples) refuses R% more.

Usage::

    python benchmarks/bench_risk.py                                   # colour+shape, 20 runs per case
    python benchmarks/bench_risk.py --suite full --runs 10
    python benchmarks/bench_risk.py --cases identical,shift-1 --runs 100 --gates fixed
    python benchmarks/bench_risk.py --suite full --mde                 # what each group can show

Prints a markdown table and the load average (the machine is shared: say it with the numbers).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_sequential as base  # noqa: E402

from pytest_violin.gating import compare  # noqa: E402
from pytest_violin.gating.sequential import SequentialGate  # noqa: E402

DEFAULT_CASES = ("identical,stochastic-10,stochastic-30,shift-1,shift-5,task-1.5,task-1,refuse-4,"
                 "refuse-var-0.8")


def make_run(suite: str, case: str, seed: int, margin: float):
    """``(members, order, new)`` of one seeded run (``bench_sequential.make_run`` for its own cases)."""
    if case.startswith("noisy-var-"):
        # the triangles worse by K margins in expectation, each answer's difference drawn afresh around it:
        # the realised mean falls on either side of K margins, as a real model's does
        members, order, new = base.make_run(suite, "identical", seed, margin)
        rng = np.random.default_rng([seed, 78])
        k = float(case.rsplit("-", 1)[1])
        for sid, m in members.items():
            if (m.task, m.variation) == base.ALONE:
                new[sid] = (float(min(1.0, max(0.0, m.old + k * margin + rng.normal(0.0, 0.05)))), new[sid][1])
        return members, order, new
    if case.startswith(("task-", "var-", "refuse-")):
        members, order, new = base.make_run(suite, "identical", seed, margin)
        rng = np.random.default_rng([seed, 77])
        if case.startswith(("task-", "var-")):
            k = float(case.split("-", 1)[1])
            chosen = ({(m.task, m.variation) for m in members.values() if m.task == "color"}
                      if case.startswith("task-") else {base.ALONE})
            for task_var in chosen:
                ids = [sid for sid, m in members.items() if (m.task, m.variation) == task_var]
                old = np.array([members[sid].old for sid in ids])
                raw = np.clip(old * np.exp(rng.normal(0.0, 0.15, old.size)), 0, 1)
                if k == 1.0:
                    target = k * margin - 1e-9
                else:
                    target = k * margin
                values = base.calibrate(raw, old, target)
                for sid, v in zip(ids, values):
                    new[sid] = (float(v), new[sid][1])
        else:
            share = float(case.rsplit("-", 1)[1]) / 100
            alone = case.startswith("refuse-var-")
            for sid, m in members.items():
                inside = (m.task, m.variation) == base.ALONE if alone else m.task == "shape"
                if inside and rng.random() < share:
                    new[sid] = (1.0, "refused")
        return members, order, new
    return base.make_run(suite, case, seed, margin)


def fixed_outcome(members, new, *, margin: float, alpha: float) -> str:
    """The fixed-sample gate's outcome on every sample: ``regressed``, ``within-margin`` or ``not-shown``."""
    old_doc = {"samples": [{"sample_id": sid, "task": m.task, "variation": m.variation,
                            "outcome": str(m.old_outcome.value if hasattr(m.old_outcome, "value") else m.old_outcome),
                            "metrics": {"mean": m.old}} for sid, m in members.items()]}
    records = []
    for sid, m in members.items():
        value, outcome = new[sid]
        records.append({"sample_id": sid, "task": m.task, "variation": m.variation, "outcome": outcome,
                        "metrics": {} if outcome == "refused" else {"mean": value}})
    return compare(old_doc, records, max_regression=margin, alpha=alpha).outcome


def sequential(members, order, new, *, margin: float, alpha: float):
    """The plugin's loop: the gate's order, skipping what it does not need, until it finishes."""
    gate = SequentialGate(members, order, margin=margin, alpha=alpha)
    generated = 0
    for sid in order:
        if gate.finished is not None:
            break
        if not gate.needed(sid):
            continue
        gate.add(sid, *new[sid])
        generated += 1
    return gate.verdict, generated


def mde_table(suite: str, *, margin: float, pass_drop: float, alpha: float, power: float = 0.8) -> None:
    """Per group of ``suite``: the noisiest an unchanged model may be and still be shown within each margin
    at ``power`` (the per-sample sd of the paired worsening; for the pass rate, the share of samples whose
    outcome flips between two runs), and the smallest worsening of the mean the harm test finds at
    ``power`` for a paired sd of 0.05 and 0.10 (normal approximation, the gate's formulas)."""
    from pytest_violin.gating.evidence import normal_z

    sizes: dict = {}
    for task, var, n in base.SUITES[suite]:
        sizes[task] = sizes.get(task, 0) + n
        sizes[f"{task}/{var}"] = n
    tests = 3 * len(sizes)
    z_in, z_power, z_harm = normal_z(alpha), normal_z(1 - power), normal_z(alpha / tests)
    print(f"suite {suite}: {len(sizes)} groups, {tests} statistics; alpha {alpha}, power {power}\n")
    print("| group | n | within 0.01: paired sd at most | within 5 points: outcome flips at most "
          "| red at 80%: worsening of the mean (sd 0.05 / 0.10) |")
    print("|---|---:|---:|---:|---|")
    for label, n in sorted(sizes.items()):
        sd_max = margin * n ** 0.5 / (z_in + z_power)
        flips = min(1.0, (pass_drop * n ** 0.5 / (z_in + z_power)) ** 2)
        red = " / ".join(f"+{margin + (z_harm + z_power) * sd / n ** 0.5:.4f}" for sd in (0.05, 0.10))
        print(f"| {label} | {n:,} | {sd_max:.3f} | {100 * flips:.0f}% | {red} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=sorted(base.SUITES), default="color-shape")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--gates", default="fixed,sequential")
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mde", action="store_true", help="only print what each group of --suite can show")
    args = ap.parse_args(argv)
    if args.mde:
        mde_table(args.suite, margin=args.margin, pass_drop=0.05, alpha=args.alpha)
        return 0
    gates = args.gates.split(",")
    total = sum(n for *_, n in base.SUITES[args.suite])
    load = os.getloadavg()[0]
    started = time.perf_counter()
    print(f"suite {args.suite} ({total} samples), {args.runs} runs per case (seeds {args.seed}..."
          f"{args.seed + args.runs - 1}), margins {args.margin} / 5 points / 1 point, alpha {args.alpha}; "
          f"load average at the start {load:.1f}\n")
    print("| case | gate | red (95% CI) | green (95% CI) | not shown | suite generated, mean / p90 |")
    print("|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        results = {g: [] for g in gates}
        shares = []
        for i in range(args.runs):
            members, order, new = make_run(args.suite, case, args.seed + i, args.margin)
            if "fixed" in gates:
                results["fixed"].append(fixed_outcome(members, new, margin=args.margin, alpha=args.alpha))
            if "sequential" in gates:
                verdict, generated = sequential(members, order, new, margin=args.margin, alpha=args.alpha)
                results["sequential"].append(verdict)
                shares.append(generated / total)
        for g in gates:
            got = results[g]
            red = sum(o == "regressed" for o in got)
            green = sum(o == "within-margin" for o in got)
            rlo, rhi = base.wilson(red, len(got))
            glo, ghi = base.wilson(green, len(got))
            used = (f"{base.pct(float(np.mean(shares)))} / {base.pct(float(np.quantile(shares, 0.9)))}"
                    if g == "sequential" else "100%")
            print(f"| {case} | {g} | {red}/{len(got)} ({base.pct(rlo)}-{base.pct(rhi)}) | "
                  f"{green}/{len(got)} ({base.pct(glo)}-{base.pct(ghi)}) | {len(got) - red - green} | {used} |",
                  flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s; load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
