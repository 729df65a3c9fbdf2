"""Simulated error rates and samples used of the sequential gate.

Over many seeded runs, a synthetic candidate is gated against a synthetic
baseline with :class:`pytest_violin.gating.sequential.SequentialGate`, fed
exactly as the plugin feeds it (``pytest_plugin/sequential.py``): the samples
in the gate's own order (:func:`~pytest_violin.gating.sequential.sequential_order`
stratified by task, one seed per run), a sample skipped once ``gate.needed`` says its task is
decided, the run ending when ``gate.finished`` is set. Reported per case:

* the share of runs the gate fails (verdict *regressed*), with a Wilson 95%
  interval: for the null cases (an expected difference at or below the margin)
  this is the false-alarm rate, which must be at most ``alpha`` (5%); the
  share it passes (every task and variation *not regressed*) and the share
  that ends *undecided* (a group's samples ran out: the fixed-sample rule
  then judges the run, which this script does not simulate);
* the share of the suite generated: mean and 90th percentile;
* the share undecided with ``--violin-max-calls`` at ``--cap`` of the suite
  (the runs that needed more than that), and the share that ran to the end
  of a task's samples;
* "at every look", for the null cases: every group's three sequences (the
  gate's own :class:`~pytest_violin.gating._confseq.MeanSequence`, same
  groups, ranges, error split and order) are fed the group's whole stream
  without stopping, and a run counts if any lower bound was ever above its
  margin (the first ``--every-look-runs`` runs). Not run for the identical
  model unless ``--every-look-identical``: with every ``d = 0`` no lower
  bound ever passes 0. Any stopping rule can only see fewer of those looks,
  so this bounds the false-alarm rate of every stopping rule, the gate's
  included.

The population
--------------
Shaped like the built-in ``violin`` suite: color v1 435, color v2 1,160,
shape circle / square / triangle 250 each (``--suite color-shape``, the
default); ``--suite full`` adds mask inpaint / outpaint / random 1,800 each
(7,745 samples). Each sample's baseline value (its mean metric, in [0, 1],
0 = perfect) is drawn from a two-part beta mixture: passes near 0 and
failures spread over the middle, Beta(1.5, 60) and Beta(2, 6) for color,
Beta(2, 25) and Beta(3, 4) for shape and mask, with the share of failures
set so that the task's mean is what the paper reports for a mid-field model
(Violin paper, Tables 1-3: color-mean 0.057 for FLUX.2 / Qwen-Image,
shape-mean 0.282 for Nano-Banana-2, mask-mean 0.280 for Seedream-5). Mostly
small values with a long tail of failures is what a real run looks like,
and the tail is what makes the paired differences hard to bound. A sample
*fails* when its value is over the task's default mean limit (color 0.02,
shape 0.06, mask 0.03); no sample is refused (the refusal rate's difference
is 0 throughout, and still has to be shown under its margin).

The candidates (``d = new - old`` per sample)
---------------------------------------------
The first cases move only the mean metric (each sample keeps its baseline
outcome, so the fail rate's difference is 0):

* ``identical``: the baseline's own values, ``d = 0`` exactly;
* ``rerun``: the same model generated again: 20% of samples redrawn from the
  mixture (a pass may become a failure and back), the rest the old value
  times a log-normal jitter (sd 0.15); every variation's mean ``d`` exactly 0;
* ``mixed-0``: another model, equal on average: 50% redrawn, variations
  off by +-0.999 margin (color v1 +0.999, v2 -0.999 x 435/1160; circle
  +0.999, square -0.999, triangle 0; mask alike), every task's mean exactly 0:
  one variation just under the margin in each task, the hardest null for the
  watch groups;
* ``shift-K``: another model (50% redrawn) whose every variation is worse
  by exactly K x margin, K = 0, 0.5, 1, 2 (``--multiples``).

Every variation's mean ``d`` is set exactly (to 1e-12) by one shift of the
candidate's values found by bisection (values clipped to [0, 1]). The gate
calls a group regressed when its mean is *above* the margin, so K <= 1 are
null cases; K = 1 is the boundary, set 1e-9 below the margin so that the
exact mean at the end of the stream is on the not-regressed side whatever
the rounding (the sequence cannot tell it from the margin before the end, so
it is where the gate needs the most samples).

Two more kinds of case:

* ``stochastic-P``: an unchanged *stochastic* model against a baseline of one
  of its runs. Each sample has a value of its own (drawn from the mixture);
  each run answers it with that value, except a share P (10, 30, 50%) of the
  samples it answers anew (a fresh draw of the mixture), independently in the
  baseline's run and the candidate's, outcomes by the limits. The expected
  difference of every statistic is exactly 0, the realised one over a suite is
  not: the gate must test the model, not the draw (a null case);
* ``triangle-K``: one variation regressed alone: every triangle's value
  worse by K x margin (K = 1.5, 1.6, 2, 2.5; ``--variation-multiples``), every
  other answer the baseline's, outcomes unchanged: how often the gate passes
  such a model (it must not: the group is watched until decided itself).

Usage::

    python benchmarks/bench_sequential.py           # 20 runs per case, about 15 minutes at load 9
    python benchmarks/bench_sequential.py --runs 300 --every-look-runs 300 --every-look-identical
                                                    # the README numbers
    python benchmarks/bench_sequential.py --suite full --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_violin.gating._confseq import MeanSequence  # noqa: E402
from pytest_violin.gating.sequential import (  # noqa: E402
    DEFAULT_ALPHA,
    SequentialGate,
    population,
    sequential_order,
)

SUITES = {
    "color-shape": [("color", "v1", 435), ("color", "v2", 1160),
                    ("shape", "circle", 250), ("shape", "square", 250), ("shape", "triangle", 250)],
}
SUITES["full"] = SUITES["color-shape"] + [("mask", "inpaint", 1800), ("mask", "outpaint", 1800),
                                          ("mask", "random", 1800)]

#: task -> (pass Beta(a, b), failure Beta(a, b), the task mean to match: Violin paper, Tables 1-3)
MIXTURES = {
    "color": ((1.5, 60.0), (2.0, 6.0), 0.057),
    "shape": ((2.0, 25.0), (3.0, 4.0), 0.282),
    "mask": ((2.0, 25.0), (3.0, 4.0), 0.280),
}

#: mixed-0: each variation's offset in margins (tasks average 0, by size)
#: A sample fails when its value is over its task's default mean limit (pytest_violin.thresholds).
LIMITS = {"color": 0.02, "shape": 0.06, "mask": 0.03}

#: The one variation of the variation-only cases.
ALONE = ("shape", "triangle")

MIXED = {("color", "v1"): 0.999, ("color", "v2"): -0.999 * 435 / 1160,
         ("shape", "circle"): 0.999, ("shape", "square"): -0.999, ("shape", "triangle"): 0.0,
         ("mask", "inpaint"): 0.999, ("mask", "outpaint"): -0.999, ("mask", "random"): 0.0}


def draw_mixture(rng, task: str, n: int) -> np.ndarray:
    (pa, pb), (fa, fb), target = MIXTURES[task]
    share = (target - pa / (pa + pb)) / (fa / (fa + fb) - pa / (pa + pb))
    fail = rng.random(n) < share
    return np.where(fail, rng.beta(fa, fb, n), rng.beta(pa, pb, n))


def calibrate(raw: np.ndarray, old: np.ndarray, target: float) -> np.ndarray:
    """``clip(raw + s, 0, 1)`` with the one ``s`` that makes ``mean(new - old)`` equal ``target``."""
    lo, hi = -1.0, 1.0
    want = target + old.mean()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.clip(raw + mid, 0, 1).mean() < want:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15:
            break
    new = np.clip(raw + (lo + hi) / 2, 0, 1)
    if abs((new - old).mean() - target) > 1e-12:
        raise RuntimeError(f"cannot set the mean difference to {target}: {(new - old).mean()}")
    return new


def candidate(rng, case: str, task: str, var: str, old: np.ndarray, margin: float) -> np.ndarray:
    if case == "identical":
        return old.copy()
    if case.startswith("triangle-"):
        if (task, var) != ALONE:
            return old.copy()
        return calibrate(old, old, float(case.split("-", 1)[1]) * margin)
    redraw = 0.2 if case == "rerun" else 0.5
    jitter = old * np.exp(rng.normal(0.0, 0.15, old.size))
    raw = np.where(rng.random(old.size) < redraw, draw_mixture(rng, task, old.size), jitter)
    if case == "rerun":
        target = 0.0
    elif case == "mixed-0":
        target = MIXED[(task, var)] * margin
    else:
        target = float(case.split("-", 1)[1]) * margin
        if target == margin:
            target -= 1e-9  # the boundary, on the not-regressed side whatever the rounding
    return calibrate(np.clip(raw, 0, 1), old, target)


def _outcome(task: str, value: float) -> str:
    return "passed" if value <= LIMITS[task] else "failed"


def make_run(suite: str, case: str, seed: int, margin: float):
    """One run's baseline document, candidate (value, outcome) per sample and the gate's order (seeded)."""
    rng = np.random.default_rng([seed, 25])
    samples, old_doc, new = [], [], {}
    for task, var, n in SUITES[suite]:
        ids = [f"{task}/{var}/{i:04d}" for i in range(n)]
        if case.startswith("stochastic-"):
            share = float(case.split("-", 1)[1]) / 100
            own = draw_mixture(rng, task, n)  # what the model answers most of the time
            old = np.where(rng.random(n) < share, draw_mixture(rng, task, n), own)
            values = np.where(rng.random(n) < share, draw_mixture(rng, task, n), own)
            outcomes = [_outcome(task, v) for v in values]  # the limits judge both runs
        else:
            old = draw_mixture(rng, task, n)
            values = candidate(rng, case, task, var, old, margin)
            outcomes = [_outcome(task, o) for o in old]  # only the mean metric moves
        for sid, o, v, out in zip(ids, old, values, outcomes):
            samples.append((sid, task, var, None))
            old_doc.append({"id": sid, "task": task, "outcome": _outcome(task, o), "metrics": {"mean": float(o)}})
            new[sid] = (float(v), out)
    members = population({"samples": old_doc}, samples)
    # stratified by task, as the plugin does (pytest_plugin/sequential.py): within a task the order
    # must be uniformly random for the task's confidence sequence
    strata = {sid: m.task for sid, m in members.items()}
    order = sequential_order([s[0] for s in samples], strata, seed=seed)
    return members, order, new


def gated(members, order, new, *, margin: float, alpha: float, cap: int | None):
    """The plugin's loop: the gate's order, skipping what it does not need, until it finishes."""
    gate = SequentialGate(members, order, margin=margin, alpha=alpha)
    generated = 0
    exhausted = False
    for sid in order:
        if gate.finished is not None:
            break
        if not gate.needed(sid):
            continue
        if cap is not None and generated >= cap:
            gate.stop("budget spent")
            break
        gate.add(sid, *new[sid])
        generated += 1
    exhausted = any(g.status == "not-shown" for g in gate.groups)
    return gate, generated, exhausted


def every_look(gate, new) -> bool:
    """Whether any lower bound of any group was ever above its margin, each group's whole stream
    fed to fresh copies of its three sequences (same ranges, levels and order), never stopping."""
    if gate.verdict == "regressed":
        return True
    from pytest_violin.gating.sequential import STATISTICS, _ranges

    for g in gate.groups:
        ranges = _ranges([gate.members[sid] for sid in g.members])
        seqs = [MeanSequence(gate.margins[name], alpha_low=gate.alpha_low, alpha_high=gate.alpha_high,
                             low=ranges[name][0], high=ranges[name][1]) for name in STATISTICS]
        for sid in g.members:
            m = gate.members[sid]
            value, outcome = new[sid]
            ds = (min(1.0, max(0.0, value)) - m.old, float(outcome != "passed") - float(m.old_failed),
                  float(outcome == "refused") - float(m.old_refused))
            for seq, d in zip(seqs, ds):
                seq.add(d)
            if any(seq.above_margin for seq in seqs):
                return True
    return False


def code_version() -> str:
    """The commit measured, and whether the gate's modules differ from it."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "pytest_violin/gating"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    import hashlib

    digest = hashlib.sha256(b"".join((root / "pytest_violin" / "gating" / name).read_bytes()
                                     for name in ("_confseq.py", "sequential.py", "evidence.py"))).hexdigest()[:12]
    return head + (" + uncommitted changes in pytest_violin/gating" if dirty else "") + \
        f" (confseq.py + sequential.py sha256 {digest})"


def wilson(k: int, n: int, z: float = 1.959964) -> tuple:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=sorted(SUITES), default="color-shape")
    ap.add_argument("--runs", type=int, default=20, help="seeded gate runs per case (default 20)")
    ap.add_argument("--every-look-runs", type=int, default=5,
                    help="runs per null case fed to the end without stopping (default 5; 0: none)")
    ap.add_argument("--every-look-identical", action="store_true",
                    help="the every-look check for the identical model too (never flagged by construction)")
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    ap.add_argument("--multiples", default="0,0.5,1,2",
                    help="true regressions of every variation, in margins (default 0,0.5,1,2)")
    ap.add_argument("--stochastic", default="10,30,50",
                    help="shares (%%) of answers an unchanged stochastic model redraws (default 10,30,50)")
    ap.add_argument("--variation-multiples", default="1.5,1.6,2,2.5",
                    help="regressions of the triangles alone, in margins (default 1.5,1.6,2,2.5)")
    ap.add_argument("--cases", default=None, help="only these cases (comma-separated names)")
    ap.add_argument("--cap", type=float, default=0.5,
                    help="report the share undecided with --violin-max-calls at this share of the suite")
    ap.add_argument("--seed", type=int, default=0, help="first seed (run i uses seed + i)")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.every_look_runs < 0:
        ap.error("--runs must be >= 1 and --every-look-runs >= 0")

    cases = (["identical", "rerun", "mixed-0"] + [f"shift-{float(k):g}" for k in args.multiples.split(",")]
             + [f"stochastic-{float(k):g}" for k in args.stochastic.split(",") if k]
             + [f"triangle-{float(k):g}" for k in args.variation_multiples.split(",") if k])
    if args.cases:
        cases = [c for c in cases if c in args.cases.split(",")]
    total = sum(n for *_, n in SUITES[args.suite])
    version = code_version()
    started = time.perf_counter()
    rows = []
    for case in cases:
        null = (case in ("identical", "rerun", "mixed-0") or case.startswith("stochastic-")
                or (case.startswith("shift-") and float(case.split("-", 1)[1]) <= 1.0))
        t0 = time.perf_counter()
        failed, undecided_cap, ran_out, shares, passed = 0, 0, 0, [], 0
        flagged, looked = 0, 0
        for i in range(args.runs):
            members, order, new = make_run(args.suite, case, args.seed + i, args.margin)
            gate, generated, exhausted = gated(members, order, new, margin=args.margin, alpha=args.alpha,
                                               cap=None)
            failed += gate.verdict == "regressed"
            passed += gate.verdict == "within-margin"
            shares.append(generated / total)
            undecided_cap += generated > args.cap * total
            ran_out += exhausted
            if null and i < args.every_look_runs and (case != "identical" or args.every_look_identical):
                flagged += every_look(gate, new)
                looked += 1
        shares = np.asarray(shares)
        row = {"case": case, "null": null, "runs": args.runs, "failed": failed, "passed": passed,
               "fail_rate": failed / args.runs, "fail_ci95": wilson(failed, args.runs),
               "used_mean": float(shares.mean()), "used_p90": float(np.quantile(shares, 0.9)),
               "used_max": float(shares.max()),
               "undecided_at_cap": undecided_cap / args.runs, "ran_to_end": ran_out / args.runs,
               "every_look_runs": looked, "every_look_flagged": flagged,
               "every_look_ci95": wilson(flagged, looked) if looked else None,
               "seconds": round(time.perf_counter() - t0, 1)}
        rows.append(row)
        print(f"# {case}: {row['seconds']} s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started

    try:
        load = " / ".join(f"{x:.1f}" for x in __import__("os").getloadavg())
    except OSError:
        load = "unknown"
    print(f"Code: {version}; load average at the end {load}")
    print(f"Sequential gate, suite {args.suite} ({total} samples), margin {args.margin}, "
          f"alpha {args.alpha}, {args.runs} runs per case (seeds {args.seed}..{args.seed + args.runs - 1}), "
          f"every look: {args.every_look_runs} runs per null case; {seconds:.0f} s\n")
    print("| true regression | fails the gate (95% CI) | passes | undecided (fixed-sample rule) "
          f"| suite generated, mean / p90 / max | undecided at a {pct(args.cap)} cap "
          "| ever regressed, every look (95% CI) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        lo, hi = r["fail_ci95"]
        ev = "-"
        if r["every_look_runs"]:
            elo, ehi = r["every_look_ci95"]
            ev = f"{r['every_look_flagged']}/{r['every_look_runs']} ({pct(elo)}-{pct(ehi)})"
        label = r["case"] + (" (null)" if r["null"] else "")
        print(f"| {label} | {r['failed']}/{r['runs']} = {pct(r['fail_rate'])} ({pct(lo)}-{pct(hi)}) "
              f"| {pct(r['passed'] / r['runs'])} | {pct(1 - (r['failed'] + r['passed']) / r['runs'])} "
              f"| {pct(r['used_mean'])} / "
              f"{pct(r['used_p90'])} / {pct(r['used_max'])} | {pct(r['undecided_at_cap'])} | {ev} |")
    if args.json is not None:
        doc = {"suite": args.suite, "total": total, "margin": args.margin, "alpha": args.alpha,
               "seed": args.seed, "code": version, "seconds": round(seconds, 1), "rows": rows}
        args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    bad = [r["case"] for r in rows if r["null"] and (
        r["fail_rate"] > args.alpha
        or (r["every_look_runs"] and r["every_look_flagged"] / r["every_look_runs"] > args.alpha))]
    if bad:
        print(f"\nFALSE-ALARM RATE ABOVE {args.alpha} in: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
