"""Benchmark ``evaluate("oracle", limit=N)`` against the plugin on the same samples.

Prints one line per way of running the same ``--violin-limit`` selection
with the oracle model (the median of ``--rounds`` runs, each in a fresh
process, so imports count for both):

* ``pytest``: ``pytest --violin-model=oracle --violin-limit=N`` in an empty folder;
* ``pytest + report``: the same with ``--violin-report`` (thumbnails, results.json, HTML);
* ``evaluate()``: ``python -c "evaluate('oracle', limit=N)"``;
* ``evaluate() + save()``: the same, then ``run.save(DIR)`` (the files ``--violin-report`` writes);
* ``evaluate() warm``: a second ``evaluate`` in the same process (a training loop's
  later checkpoints: imports and suite tables already loaded).

Usage::

    python benchmarks/bench_evaluate.py                 # limit 200, 3 rounds
    python benchmarks/bench_evaluate.py --limit 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

_EVALUATE = textwrap.dedent("""
    import sys, time
    from pytest_violin import evaluate
    limit, save = int(sys.argv[1]), sys.argv[2]
    start = time.perf_counter()
    run = evaluate("oracle", limit=limit, progress=False)
    if save != "-":
        run.save(save)
    first = time.perf_counter() - start
    assert run.passed == len(run) == limit, run
    start = time.perf_counter()
    evaluate("oracle", limit=limit, progress=False)
    print(f"{first} {time.perf_counter() - start}")
""")


def _wall(cmd, cwd) -> tuple:
    env = dict(os.environ, PYTHONHASHSEED="0")
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode})")
    return wall, proc.stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    times: dict = {k: [] for k in ("pytest", "pytest + report", "evaluate()", "evaluate() + save()",
                                   "evaluate() warm")}
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "evaluate_oracle.py")
        with open(script, "w") as f:
            f.write(_EVALUATE)
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                  "--violin-model=oracle", f"--violin-limit={args.limit}"]
        for i in range(args.rounds):
            times["pytest"].append(_wall(pytest, tmp)[0])
            times["pytest + report"].append(_wall([*pytest, f"--violin-report=rep{i}"], tmp)[0])
            wall, out = _wall([sys.executable, script, str(args.limit), "-"], tmp)
            first, warm = map(float, out.split())
            # the process's wall less the second, warm evaluate it ran after the first
            times["evaluate()"].append(wall - warm)
            times["evaluate() warm"].append(warm)
            wall, out = _wall([sys.executable, script, str(args.limit), os.path.join(tmp, f"saved{i}")], tmp)
            times["evaluate() + save()"].append(wall - float(out.split()[1]))
    load = os.getloadavg()
    print(f"{args.limit} oracle samples, median of {args.rounds} rounds, load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    base = statistics.median(times["pytest"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<22} {median:6.2f} s  {1000 * median / args.limit:6.2f} ms/sample  "
              f"{median / base:5.2f}x pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
