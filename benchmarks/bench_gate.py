"""How often the (fixed-sample) gate is red, through the plugin, for models that are not the oracle.

Each case runs ``pytest --violin-model=python:acme_models:MODEL --violin-baseline=...`` in a fresh
subprocess (the example project's models, ``example_suite/acme_models.py``) and counts the runs by the
gate's outcome in results.json: red (a group regressed), green (every group shown within its margins), not
shown (neither), and any other ending:

* ``stochastic``: the realistic model with fresh noise on every run (an API that ignores the seed),
  against a baseline of one of its own runs: an unchanged model, every red run is a false alarm;
* ``production``: the same model, deterministic per sample, against its own baseline;
* ``worse``: a clearly worse candidate against the production baseline (power);
* ``off_colour``: production with a fifth of the colour samples 12 levels off (power, pass rate).

Usage::

    python benchmarks/bench_gate.py                  # 20 stochastic runs, 5 of each other case (480 samples)
    python benchmarks/bench_gate.py --runs 40 --tasks color,shape --limit 200
    python benchmarks/bench_gate.py --tasks color --limit 400 --cases off_colour --other-runs 3
    python benchmarks/bench_gate.py --compare-only   # the comparison's cost at the full suite's size

Prints one line per case: runs, red, green, other exit codes, mean seconds a run, and the load
average when the benchmark started and ended (the machine is shared: say it with the numbers).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(cwd: Path, *args: str) -> int:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "violin", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    return proc.returncode


def _outcome(cwd: Path, *args: str) -> str:
    """The gate's outcome of one run (``regressed``, ``within-margin``, ``not-shown``), or ``exit N``."""
    import json

    report = cwd / "bench-report"
    shutil.rmtree(report, ignore_errors=True)
    code = _pytest(cwd, *args, f"--violin-report={report}")
    try:
        return json.loads((report / "results.json").read_text())["comparison"]["outcome"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"exit {code}"


def _compare_only() -> None:
    """Time :func:`~pytest_violin.gating.compare` on two synthetic runs of the full suite's shape
    (7,745 samples; the violin suite's tasks and variations), half of them failing."""
    import numpy as np

    from pytest_violin.gating import build_baseline, compare

    sizes = {("color", "v1"): 435, ("color", "v2"): 1160, ("shape", "circle"): 250,
             ("shape", "square"): 250, ("shape", "triangle"): 250, ("mask", "inpainting"): 1800,
             ("mask", "outpainting"): 1800, ("mask", "random"): 1800}
    rng = np.random.default_rng(0)

    def run(shift: float) -> dict:
        recs = []
        for (task, var), n in sizes.items():
            for i in range(n):
                value = float(np.clip(rng.beta(1.5, 20) + shift, 0, 1))
                recs.append({"id": f"{task}/{var}/s{i:05d}", "task": task, "variation": var,
                             "metrics": {"a": value, "mean": value},
                             "outcome": "passed" if value < 0.06 else "failed", "definition": "d"})
        return build_baseline(recs, suite="violin", profile="violin", seed=0, adapter="bench")

    old, new = run(0.0), run(0.0)
    start = time.perf_counter()
    comparison = compare(old, new)
    took = time.perf_counter() - start
    print(f"compare: {len(old['samples'])} samples, {len(comparison.groups)} groups, {comparison.tests} "
          f"statistics: {took:.2f} s (load average {os.getloadavg()[0]:.1f})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of the stochastic model (default 20)")
    parser.add_argument("--other-runs", type=int, default=5, help="runs of every other case (default 5)")
    parser.add_argument("--tasks", default="color,shape")
    parser.add_argument("--limit", type=int, default=480)
    parser.add_argument("--cases", default="stochastic,production,worse,off_colour",
                        help="the candidates to run (default: all four)")
    parser.add_argument("--compare-only", action="store_true",
                        help="only time the comparison of two full-suite-sized runs")
    args = parser.parse_args(argv)
    if args.compare_only:
        _compare_only()
        return 0
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="violin-bench-gate-") as tmp:
        cwd = Path(tmp)
        shutil.copy(ROOT / "example_suite" / "acme_models.py", cwd)
        common = (f"--violin-tasks={args.tasks}", f"--violin-limit={args.limit}")
        for name in ("stochastic", "production"):
            code = _pytest(cwd, f"--violin-model=python:acme_models:{name}", *common,
                           f"--violin-save-baseline={name}.json")
            if not (cwd / f"{name}.json").is_file():
                raise SystemExit(f"the {name} baseline was not written (exit {code})")
        cases = [("stochastic", "stochastic", args.runs), ("production", "production", args.other_runs),
                 ("worse", "production", args.other_runs), ("off_colour", "production", args.other_runs)]
        cases = [case for case in cases if case[0] in args.cases.split(",")]
        print(f"tasks {args.tasks}, limit {args.limit}; load average at the start "
              f"{load_before[0]:.1f} / {load_before[1]:.1f}")
        print(f"{'candidate':<12} {'baseline':<11} {'runs':>4} {'red':>4} {'green':>5} {'not shown':>9} "
              f"{'other':>5} {'s/run':>6}")
        for model, base, runs in cases:
            got, start = [], time.perf_counter()
            for _ in range(runs):
                got.append(_outcome(cwd, f"--violin-model=python:acme_models:{model}", *common,
                                    f"--violin-baseline={base}.json"))
            took = (time.perf_counter() - start) / max(1, runs)
            red, green, unshown = got.count("regressed"), got.count("within-margin"), got.count("not-shown")
            print(f"{model:<12} {base:<11} {runs:>4} {red:>4} {green:>5} {unshown:>9} "
                  f"{runs - red - green - unshown:>5} {took:>6.1f}")
    load_after = os.getloadavg()
    print(f"load average at the end {load_after[0]:.1f} / {load_after[1]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
