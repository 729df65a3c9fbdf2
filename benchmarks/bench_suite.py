"""Benchmark of the Violin suites (plain script, prints tables).

    python benchmarks/bench_suite.py                 # load, render (subset + all), export RSS
    python benchmarks/bench_suite.py --score         # also: every sample scores 0.0, both profiles
    python benchmarks/bench_suite.py --quick         # skip the full render and full export

Measures:
* ``load_suite(name)`` wall time in a fresh child process (imports included);
* mean ``expected()`` render time per task, over a stratified subset and over
  every sample of every suite (photos cached first, as in a real run);
* peak RSS of a child process exporting the whole ``violin`` suite
  (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

_LOAD = ("import time; t = time.perf_counter(); c = time.process_time(); "
         "import pytest_violin as pv; s = pv.load_suite({name!r}); "
         "print(len(s), time.perf_counter() - t, time.process_time() - c)")


def bench_load(suites):
    print("\n## load_suite (fresh process, imports included)")
    print("(CPU seconds are what the machine spends; wall seconds include waiting for a "
          "busy CPU)")
    print(f"{'suite':<18} {'samples':>8} {'wall s':>8} {'CPU s':>8}")
    for name in suites:
        out = subprocess.run([sys.executable, "-c", _LOAD.format(name=name)], check=True,
                             capture_output=True, text=True).stdout.split()
        print(f"{name:<18} {int(out[0]):>8} {float(out[1]):>8.3f} {float(out[2]):>8.3f}")


def bench_render(samples, title):
    from pytest_violin.suite.drawing import SKIMAGE_PHOTOS, load_photo

    for name in SKIMAGE_PHOTOS:
        load_photo("skimage", name)
    times = defaultdict(list)
    for s in samples:
        t = time.perf_counter()
        s.expected()
        times[s.task].append(time.perf_counter() - t)
    print(f"\n## expected() render time, {title}")
    print(f"{'task':<8} {'samples':>8} {'mean ms':>8} {'max ms':>8}")
    total = []
    for task, ts in times.items():
        total.extend(ts)
        print(f"{task:<8} {len(ts):>8} {1000 * sum(ts) / len(ts):>8.2f} {1000 * max(ts):>8.2f}")
    print(f"{'all':<8} {len(total):>8} {1000 * sum(total) / len(total):>8.2f} "
          f"{1000 * max(total):>8.2f}")


def bench_export():
    print("\n## export of the whole violin suite (child process)")
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest_violin", "export", tmp, "--suite", "violin",
                        "--no-progress"], check=True, capture_output=True)
        wall = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        size = subprocess.run(["du", "-sm", tmp], capture_output=True, text=True).stdout.split()[0]
    print(f"samples 7745, wall {wall:.1f} s, peak RSS {rss:.0f} MB, output {size} MB")


def bench_score(suites):
    from pytest_violin.suite import load_suite

    print("\n## ground truth scored against itself (every sample, both profiles)")
    print(f"{'suite':<18} {'samples':>8} {'nonzero':>8} {'seconds':>8}")
    for name in suites:
        t = time.perf_counter()
        bad = 0
        samples = load_suite(name)
        for s in samples:
            exp = s.expected()
            for profile in ("violin", "strict"):
                if any(v != 0.0 for v in s.score(exp, profile=profile).values()):
                    bad += 1
                    print(f"  NONZERO {s.id} {profile}")
        print(f"{name:<18} {len(samples):>8} {bad:>8} {time.perf_counter() - t:>8.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip full render and export")
    parser.add_argument("--score", action="store_true", help="score every ground truth")
    args = parser.parse_args()
    from pytest_violin.suite import SUITES, load_suite

    bench_load(SUITES)
    subset = [s for name in SUITES for s in load_suite(name, limit=400, seed=0)]
    bench_render(subset, "stratified subset (400 per suite)")
    if not args.quick:
        bench_render([s for name in SUITES for s in load_suite(name)], "all samples")
        bench_export()
    if args.score:
        bench_score(SUITES)


if __name__ == "__main__":
    main()
