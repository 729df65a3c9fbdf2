"""Benchmark the pytest plugin end to end with the oracle model.

Prints a table:

* ``render+score``: the floor, rendering and scoring every sample in a
  plain loop (no pytest);
* ``pytest 1 core``: ``pytest --violin-model=oracle`` in an empty
  directory pinned to one CPU (``taskset -c 0`` where available);
* ``pytest -n 2``: the same with two xdist workers;
* harness overhead = pytest wall / samples - render+score per sample;
* peak RSS of the pytest process for a small and the full selection
  (memory must stay flat in suite size).

Usage::

    python benchmarks/bench_plugin.py            # full violin suite (7,745 samples)
    python benchmarks/bench_plugin.py --limit 1000
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time


def _pytest(args, *, cwd, one_core=False):
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    if one_core and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    env = dict(os.environ, PYTHONHASHSEED="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:]
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"pytest failed ({proc.returncode}): {tail}")
    return wall, max(peak, before) / 1024.0, tail


_STUB_CONFTEST = """
import numpy as np
from pytest_violin.metrics import Metrics
from pytest_violin.suite.sample import Sample

_IMAGE = np.zeros((8, 8, 3), np.uint8)

def _score(self, image, *, profile="violin"):
    return Metrics(dict.fromkeys(self.metric_names, 0.0), task=self.task, profile=profile)

Sample.score = _score

def generate(request):
    return _IMAGE
"""


def _floor(limit):
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", limit=limit)
    start = time.perf_counter()
    for s in samples:
        s.score(s.expected())
    return len(samples), time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="samples (default: the full suite)")
    parser.add_argument("--skip-xdist", action="store_true")
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--harness-only", action="store_true", help="only the stubbed harness row")
    opts = parser.parse_args(argv)
    limit_args = [] if opts.limit is None else [f"--violin-limit={opts.limit}"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        n = None
        floor = None
        if opts.harness_only:
            with open(os.path.join(tmp, "conftest.py"), "w") as fh:
                fh.write(_STUB_CONFTEST)
            harness, _, tail = _pytest(["--violin-model=python:conftest:generate", *limit_args], cwd=tmp,
                                       one_core=True)
            count = int(tail.split()[0])
            print(f"harness only (stub model + stub score, 1 core): {harness:.2f} s for {count} samples "
                  f"= {1000 * harness / count:.2f} ms/sample")
            return 0
        if not opts.skip_floor:
            n, floor = _floor(opts.limit)
            rows.append(("render+score loop (no pytest)", floor, n, None))
        # small run first: ru_maxrss of children only ever grows
        small, rss_small, _ = _pytest(["--violin-model=oracle", "--violin-limit=200"], cwd=tmp, one_core=True)
        rows.append(("pytest --violin-model=oracle --violin-limit=200", small, 200, rss_small))
        wall1, rss1, tail1 = _pytest(["--violin-model=oracle", *limit_args], cwd=tmp, one_core=True)
        n = n or int(tail1.split()[0])
        rows.append(("pytest --violin-model=oracle, 1 core", wall1, n, rss1))
        if not opts.skip_xdist:
            wall2, _, _ = _pytest(["--violin-model=oracle", "-n", "2", *limit_args], cwd=tmp)
            rows.append(("pytest --violin-model=oracle -n 2", wall2, n, None))
        with open(os.path.join(tmp, "conftest.py"), "w") as fh:
            fh.write(_STUB_CONFTEST)
        harness, _, _ = _pytest(["--violin-model=python:conftest:generate", *limit_args], cwd=tmp, one_core=True)
        rows.append(("harness only: stub model, stub score, 1 core", harness, n, None))
        os.unlink(os.path.join(tmp, "conftest.py"))
        collect, _, _ = _pytest(["--violin-model=oracle", "--collect-only", *limit_args], cwd=tmp, one_core=True)
        rows.append(("collect only, 1 core", collect, n, None))
    print(f"{'run':44} {'wall s':>8} {'samples':>8} {'ms/sample':>10} {'peak RSS MB':>12}")
    for name, wall, count, rss in rows:
        rss_text = "" if rss is None else f"{rss:.0f}"
        print(f"{name:44} {wall:8.2f} {count:8d} {1000 * wall / count:10.2f} {rss_text:>12}")
    if floor is not None:
        overhead = 1000 * (wall1 - floor) / n
        print(f"\nharness overhead (1 core, incl. pytest start-up): {overhead:.2f} ms/sample")
    print(f"peak RSS: {rss_small:.0f} MB for 200 samples vs {rss1:.0f} MB for {n} samples")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
