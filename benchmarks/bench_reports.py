"""Benchmark: the cost of ``--violin-report`` and the size of report.html.

Plain script, prints a table::

    python benchmarks/bench_reports.py            # full violin suite (a few minutes)
    python benchmarks/bench_reports.py --limit 500 --workers 0

Part 1 runs the suite with the oracle model twice per configuration, with
and without ``--violin-report`` (alternating, the faster of each pair kept),
and reports the added wall time; the target is < 10%.

Part 2 builds the report of a *noisy* model for the same samples (Gaussian
noise on the expected image: the worst case for thumbnail size, every
sample failing so every sample gets its thumbnails first) and reports the
size of report.html; the target for the 7,745 samples of ``violin`` is < 50 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_suite(workdir: Path, *, limit, workers, report: Path | None) -> float:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--violin-model=oracle",
            "--violin-no-cache", "-o", "addopts="]
    if limit:
        args.append(f"--violin-limit={limit}")
    if workers:
        args += ["-n", str(workers)]
    else:
        args += ["-p", "no:xdist"]
    if report is not None:
        args.append(f"--violin-report={report}")
    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(args, cwd=workdir, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
        raise SystemExit(f"pytest failed with exit code {proc.returncode}")
    return elapsed, cpu


def part1(limit, workers, pairs):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain, with_report = [], []
        for i in range(pairs):
            plain.append(run_suite(tmp, limit=limit, workers=workers, report=None))
            with_report.append(run_suite(tmp, limit=limit, workers=workers, report=tmp / f"r{i}"))
        html = (tmp / "r0" / "report.html").stat().st_size
        rjson = (tmp / "r0" / "results.json").stat().st_size
    return min(plain), min(with_report), html, rjson


def part2(limit, seed=0):
    import numpy as np

    from pytest_violin.report.html import render_html
    from pytest_violin.report.json_report import build_results
    from pytest_violin.report.markdown import render_markdown
    from pytest_violin.report.thumbnails import make_thumbnails
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", limit=limit)
    rng = np.random.default_rng(seed)
    records = []
    t_thumb = 0.0
    for i, s in enumerate(samples):
        exp = s.expected()
        noisy = np.clip(exp.astype(np.int16) + rng.normal(0, 25, exp.shape), 0, 255).astype(np.uint8)
        t0 = time.process_time()
        thumbs = make_thumbnails(exp, noisy)
        t_thumb += time.process_time() - t0
        m = {name: 0.3 for name in s.metric_names}
        m["mean"] = 0.3
        records.append({"sample_id": s.id, "suite": s.suite, "task": s.task, "variation": s.variation,
                        "prompt": s.prompt, "metrics": m, "limits": {k: 0.05 for k in m},
                        "failed": list(m), "outcome": "failed", "error": None, "seconds": 0.1,
                        "repeats": [m], "extra": {"thumbnails": thumbs}})
    t0 = time.perf_counter()
    html = render_html(records, metadata={"suite": "violin", "adapter": "noisy"})
    t_html = time.perf_counter() - t0
    t0 = time.perf_counter()
    build_results(records)
    render_markdown(records)
    t_rest = time.perf_counter() - t0
    thumbs_bytes = sum(sum(len(u) for u in r["extra"]["thumbnails"].values()) for r in records)
    with_pics = html.count('alt="generated"')
    return len(samples), len(html.encode()), thumbs_bytes, with_pics, t_thumb, t_html, t_rest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="stratified subset (default: full suite)")
    ap.add_argument("--workers", type=int, default=2, help="-n for pytest (0: single process)")
    ap.add_argument("--pairs", type=int, default=2, help="runs per configuration")
    ap.add_argument("--skip-runs", action="store_true", help="only part 2")
    ns = ap.parse_args(argv)

    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    if not ns.skip_runs:
        a, b, html, rjson = part1(ns.limit, ns.workers, ns.pairs)
        print("\nPart 1: oracle run (best of %d; CPU = user+sys of pytest and its workers)" % ns.pairs)
        print(f"{'configuration':<44}{'wall s':>10}{'CPU s':>10}")
        print(f"{'without --violin-report':<44}{a[0]:>10.1f}{a[1]:>10.1f}")
        print(f"{'with --violin-report':<44}{b[0]:>10.1f}{b[1]:>10.1f}")
        print(f"{'added by reports':<44}{100 * (b[0] - a[0]) / a[0]:>9.1f}%{100 * (b[1] - a[1]) / a[1]:>9.1f}%"
              "   (target < 10%)")
        print(f"{'report.html / results.json (oracle)':<44}{html / 1e6:>7.1f} MB / {rjson / 1e6:.1f} MB")
    n, size, thumbs, pics, t_thumb, t_html, t_rest = part2(ns.limit)
    print(f"\nPart 2: report of a noisy model (every sample failing), {n} samples")
    print(f"{'thumbnail data URIs, all samples':<44}{thumbs / 1e6:>7.1f} MB ({thumbs / n / 1e3:.1f} kB/sample)")
    print(f"{'report.html':<44}{size / 1e6:>7.1f} MB   (target < 50 MB)")
    print(f"{'samples shown with thumbnails':<44}{pics:>10d}")
    print(f"{'thumbnails of a failure: CPU per sample':<44}{1e3 * t_thumb / n:>8.2f} ms")
    print(f"{'render_html':<44}{t_html:>10.2f} s")
    print(f"{'results.json + summary.md documents':<44}{t_rest:>10.2f} s")


if __name__ == "__main__":
    main()
