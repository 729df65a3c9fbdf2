"""Benchmark: ``python -m pytest_violin compare`` on 4 full runs, HTML included.

Plain script, prints a table::

    python benchmarks/bench_compare.py                 # 4 runs x 7,745 samples
    python benchmarks/bench_compare.py --limit 500 --runs 2
    python benchmarks/bench_compare.py --thumbnails    # worst case: every record carries thumbnails
    python benchmarks/bench_compare.py --only-large    # 1 and 2 runs of 1,000,000 samples only

It writes ``--runs`` synthetic ``results.json`` files for the samples of the
``violin`` suite (the real sample ids, tasks, variations, prompts and metric
names; seeded random metric values around the limits so that runs disagree
on many samples), then times the command as a user runs it, each in a fresh
process: ``compare RUN... --paper --format md`` and ``--format html
--output FILE``. Wall time and peak RSS are of that child process
(``resource.getrusage(RUSAGE_CHILDREN)``, so Python start-up and imports
are included). A third, in-process pass splits the time into load, build
(paired bootstrap), text formats and HTML.

The target (issue 16): 4 runs of 7,745 samples from results.json in under
10 s and under 500 MB on 2 cores, HTML included.

The large rows (issue 21) compare 1 and 2 runs of 1,000,000 samples each
(``MAX_SAMPLES``, the most a RUN may hold, in a ~215 MB results.json under the
256 MB ``MAX_JSON_BYTES``), written by :func:`make_large_runs`; target under
60 s and under 2 GB per format. The HTML gallery lists at most 20,000 samples
(``DEFAULT_MAX_SAMPLES``, failures and disagreements first).

``results.json`` written by ``--violin-report`` carries no thumbnails (they
are report plumbing, dropped from the file); ``--thumbnails`` writes
synthetic ones (noisy 96-pixel PNGs, the worst case for size) into every
record to measure the page's bound with pictures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_runs(folder: Path, *, n_runs: int, limit, thumbnails: bool, seed: int = 0) -> list[Path]:
    """Write ``n_runs`` results.json files; return their paths."""
    import numpy as np

    from pytest_violin import __version__
    from pytest_violin.report.json_report import build_results
    from pytest_violin.report.thumbnails import make_thumbnails
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", limit=limit)
    rng = np.random.default_rng(seed)
    pool = []
    if thumbnails:
        for i in range(32):
            exp = np.zeros((128, 128, 3), np.uint8)
            exp[:] = rng.integers(0, 256, 3)
            gen = np.clip(exp.astype(np.int16) + rng.normal(0, 25, exp.shape), 0, 255).astype(np.uint8)
            pool.append(make_thumbnails(exp, gen))
    paths = []
    for r in range(n_runs):
        quality = 0.08 + 0.04 * r  # run 0 best, each next run a little worse
        records = []
        for i, s in enumerate(samples):
            m = {name: float(abs(rng.normal(quality, 0.06))) for name in s.metric_names}
            m["mean"] = float(np.mean(list(m.values())))
            failed = [k for k, v in m.items() if v > 0.15]
            rec = {"sample_id": s.id, "suite": s.suite, "task": s.task, "variation": s.variation,
                   "prompt": s.prompt, "metrics": m, "limits": {k: 0.15 for k in m}, "failed": failed,
                   "outcome": "failed" if failed else "passed", "error": None, "seconds": 0.1,
                   "cached": False, "seed": 0, "repeats": [m], "extra": {}}
            records.append(rec)
        meta = {"suite": "violin", "adapter": f"model-{r}", "profile": "violin",
                "package_version": __version__, "fingerprint": "synthetic", "seed": 0}
        doc = build_results(records, metadata=meta)
        if thumbnails:
            for i, rec in enumerate(doc["samples"]):
                rec["extra"] = {"thumbnails": pool[(i * 7 + r) % len(pool)]}
        path = folder / f"run{r}" / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
        paths.append(path)
    return paths


def make_large_runs(folder: Path, *, n_samples: int, n_runs: int, seed: int = 0) -> list[Path]:
    """Write ``n_runs`` results.json files of ``n_samples`` records each, streamed (bounded memory).

    The records are those of the suite's samples repeated (ids ``<sample id>/r<k>``,
    real tasks, variations and metric names), with what ``compare`` reads of a
    results.json record: ``sample_id``, ``task``, ``variation``, ``metrics`` (four
    decimals), ``failed`` and ``outcome``; no prompt, limits or repeats, so that
    1,000,000 of them (~215 MB) stay under the 256 MB a RUN may be. Seeded
    random metric values around the limits, run 0 best.
    """
    import numpy as np

    from pytest_violin import __version__
    from pytest_violin.suite import load_suite

    samples = load_suite("violin")
    paths = []
    for r in range(n_runs):
        rng = np.random.default_rng([seed, r])
        quality = 0.08 + 0.04 * r
        meta = {"suite": "violin", "adapter": f"model-{r}", "profile": "violin",
                "package_version": __version__, "fingerprint": "synthetic", "seed": 0,
                "samples": n_samples}
        path = folder / f"large{r}" / "results.json"
        path.parent.mkdir(parents=True)
        with path.open("w", encoding="utf-8") as fh:
            fh.write('{"format":"pytest-violin-results","schema_version":1,"metadata":'
                     + json.dumps(meta) + ',"aggregates":null,"comparison":null,"samples":[')
            for start in range(0, n_samples, 100_000):
                stop = min(n_samples, start + 100_000)
                values = np.abs(rng.normal(quality, 0.06, (stop - start, 5))).round(4)
                parts = []
                for i, row in zip(range(start, stop), values.tolist()):
                    s = samples[i % len(samples)]
                    m = dict(zip(s.metric_names, row))
                    m["mean"] = round(sum(row) / len(row), 4)
                    failed = [k for k, v in m.items() if v > 0.15]
                    parts.append(json.dumps(
                        {"sample_id": f"{s.id}/r{i // len(samples)}", "task": s.task,
                         "variation": s.variation, "metrics": m, "failed": failed,
                         "outcome": "failed" if failed else "passed"}, separators=(",", ":")))
                fh.write(("," if start else "") + ",".join(parts))
            fh.write("]}")
        paths.append(path)
    return paths


def large_rows(folder: Path, n_samples: int, n_runs: int) -> None:
    """Time ``compare`` (md and html) on ``n_runs`` runs of ``n_samples`` samples each."""
    t0 = time.perf_counter()
    paths = make_large_runs(folder, n_samples=n_samples, n_runs=n_runs)
    size = sum(p.stat().st_size for p in paths)
    print(f"\n{n_runs} synthetic results.json of {n_samples:,} samples each ({size / 1e6:.0f} MB "
          f"in all), written in {time.perf_counter() - t0:.0f} s")
    md = run_cli(paths, "md", None)
    page = folder / "large.html"
    html = run_cli(paths, "html", page)
    label = f"compare {n_runs} x {n_samples:,} --paper"
    print(f"{label:<48}{'wall s':>9}{'CPU s':>9}{'peak MB':>10}")
    print(f"{'  --format md':<48}{md[0]:>9.1f}{md[1]:>9.1f}{md[2]:>10.0f}")
    print(f"{'  --format html --output FILE':<48}{html[0]:>9.1f}{html[1]:>9.1f}{html[2]:>10.0f}")
    print(f"{'  target':<48}{'< 60':>9}{'':>9}{'< 2048':>10}")
    print(f"large.html: {page.stat().st_size / 1e6:.1f} MB")
    for p in paths:
        p.unlink()


def run_cli(paths, fmt: str, out: Path | None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one ``python -m pytest_violin compare`` process."""
    args = [sys.executable, "-m", "pytest_violin", "compare", *map(str, paths), "--paper",
            "--format", fmt]
    if out is not None:
        args += ["--output", str(out)]
    # a fresh wrapper per command, so its children's peak RSS is this command's alone
    wrapper = ("import resource,subprocess,sys;r=subprocess.run(sys.argv[1:]).returncode;"
               "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
               "print('RUSAGE',u.ru_utime+u.ru_stime,u.ru_maxrss,file=sys.stderr);sys.exit(r)")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
        raise SystemExit(f"compare failed with exit code {proc.returncode}")
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("RUSAGE ")][-1].split()
    return wall, float(line[1]), int(line[2]) / 1024  # ru_maxrss is KiB on Linux


def phases(paths) -> dict:
    """Seconds per phase, in this process."""
    from pytest_violin.compare.formats import FORMATS, render
    from pytest_violin.compare.html import render_html
    from pytest_violin.compare.paper import published_rows
    from pytest_violin.compare.runs import load_run
    from pytest_violin.compare.table import build

    out = {}
    t0 = time.perf_counter()
    runs = [load_run(str(p)) for p in paths]
    out["load_run x %d" % len(paths)] = time.perf_counter() - t0
    t0 = time.perf_counter()
    comparison = build(runs, paper=published_rows())
    out["build (paper rows, bootstrap)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for fmt in FORMATS:
        render(comparison, fmt)
    out["render " + "/".join(FORMATS)] = time.perf_counter() - t0
    t0 = time.perf_counter()
    html = render_html(comparison, runs)
    out["render_html"] = time.perf_counter() - t0
    out["_html_bytes"] = len(html.encode("utf-8"))
    out["_html_imgs"] = html.count("<img ")
    out["_rows"] = html.count('<tr class="s"')
    out["_disagree"] = html.count('data-disagree="1"')
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="stratified subset (default: full suite)")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--thumbnails", action="store_true", help="every record carries thumbnails")
    ap.add_argument("--keep", metavar="DIR", help="write the runs and the page here and keep them")
    ap.add_argument("--large", type=int, default=1_000_000, metavar="N",
                    help="samples per run of the large rows (default 1,000,000, the most a RUN may "
                         "hold; 0: no large rows)")
    ap.add_argument("--large-runs", type=int, nargs="+", default=[1, 2], metavar="K",
                    help="runs compared in the large rows (default: 1 and 2)")
    ap.add_argument("--only-large", action="store_true", help="only the large rows")
    ns = ap.parse_args(argv)
    if ns.only_large:
        with tempfile.TemporaryDirectory() as tmp:
            for k in ns.large_runs:
                large_rows(Path(tmp) / f"k{k}", ns.large, k)
        return

    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(ns.keep) if ns.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        paths = make_runs(folder, n_runs=ns.runs, limit=ns.limit, thumbnails=ns.thumbnails)
        n = len(json.loads(paths[0].read_text())["samples"])
        size = sum(p.stat().st_size for p in paths)
        print(f"{ns.runs} synthetic results.json of {n} samples each ({size / 1e6:.1f} MB in all, "
              f"thumbnails: {'yes' if ns.thumbnails else 'no'}), written in {time.perf_counter() - t0:.1f} s")
        md = run_cli(paths, "md", None)
        page = folder / "compare.html"
        html = run_cli(paths, "html", page)
        print(f"\n{'python -m pytest_violin compare ... --paper':<48}{'wall s':>9}{'CPU s':>9}{'peak MB':>10}")
        print(f"{'  --format md':<48}{md[0]:>9.2f}{md[1]:>9.2f}{md[2]:>10.0f}")
        print(f"{'  --format html --output FILE':<48}{html[0]:>9.2f}{html[1]:>9.2f}{html[2]:>10.0f}")
        print(f"{'  target':<48}{'< 10':>9}{'':>9}{'< 500':>10}")
        print(f"compare.html: {page.stat().st_size / 1e6:.1f} MB")
        ph = phases(paths)
        print(f"\n{'in-process phase':<48}{'s':>9}")
        for k, v in ph.items():
            if not k.startswith("_"):
                print(f"{k:<48}{v:>9.2f}")
        print(f"gallery: {ph['_rows']} rows, {ph['_disagree']} where the runs disagree, "
              f"{ph['_html_imgs']} pictures, {ph['_html_bytes'] / 1e6:.1f} MB")
        if ns.large:
            for k in ns.large_runs:
                large_rows(folder / f"k{k}", ns.large, k)


if __name__ == "__main__":
    main()
