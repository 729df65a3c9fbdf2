"""Merging the reports of a sharded run: time and peak memory of ``python -m pytest_violin merge``.

Two modes:

* default (synthetic): the full ``violin`` suite (7,745 samples) split with ``--violin-shard``'s
  own split into 4 shards of 1,937 samples, each written as the plugin writes a
  ``--violin-report`` folder (results.json with every record's fields, thumbnails.json with
  PNG thumbnails for the failing samples, as many as the plugin's 35 MB budget holds); then
  ``merge`` runs in a fresh subprocess, timed, its peak RSS read from ``getrusage``;
* ``--oracle``: the real thing, slow (minutes): the suite (``--limit`` samples, default all)
  run once and as 4 shards with ``--violin-model=oracle``, the shards merged, and the merged
  sample ids, metrics, outcomes, aggregates and gate verdict (``gate`` against the one run's
  baseline) checked equal to the one run's.

Usage::

    python benchmarks/bench_merge.py                    # synthetic 4 x 1,937
    python benchmarks/bench_merge.py --shards 8
    python benchmarks/bench_merge.py --oracle --limit 800

Prints the sizes, seconds, peak RSS and the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _thumbnail(rng: random.Random) -> str:
    """A 96 x 96 PNG data URI of noise (about what a report's thumbnail weighs)."""
    import numpy as np

    from pytest_violin.imaging import encode_png

    img = np.asarray([[rng.randrange(256) for _ in range(96 * 3)] for _ in range(96)],
                     dtype=np.uint8).reshape(96, 96, 3)
    return "data:image/png;base64," + base64.b64encode(encode_png(img)).decode("ascii")


def synthesize(out: Path, shards: int, seed: int = 0) -> list[Path]:
    """Write ``shards`` report folders of the full violin suite as the plugin writes them."""
    from pytest_violin.gating.records import sample_definition
    from pytest_violin.report.json_report import write_results_json, write_thumbnails_json
    from pytest_violin.suite import load_suite
    from pytest_violin.suite.shard import Shard, select_shard, selection_digest

    suite = load_suite("violin")
    position = {s.id: i for i, s in enumerate(suite)}
    digest = selection_digest(suite)
    rng = random.Random(seed)
    thumbs = [_thumbnail(rng) for _ in range(16)]
    folders = []
    for k in range(1, shards + 1):
        part = select_shard(suite, Shard(k, shards))
        records = []
        for sample in part:
            names = list(sample.metric_names)
            metrics = {n: rng.random() * 0.06 for n in names}
            metrics["mean"] = sum(metrics.values()) / len(names)
            limits = {n: 0.03 for n in [*names, "mean"]}
            failed = [n for n in metrics if metrics[n] > limits[n]]
            extra = {"adapter": "oracle", "definition": sample_definition(sample)}
            if failed:
                extra["thumbnails"] = {"expected": rng.choice(thumbs), "generated": rng.choice(thumbs),
                                       "diff": rng.choice(thumbs)}
            records.append({
                "sample_id": sample.id, "suite": "violin", "task": sample.task,
                "variation": sample.variation, "prompt": sample.prompt, "metrics": metrics,
                "limits": limits, "failed": failed, "outcome": "failed" if failed else "passed",
                "error": None, "seconds": rng.random(), "cached": False, "generations": 1,
                "cache_hits": 0, "seed": rng.randrange(2**31), "repeats": [metrics],
                "spread": {n: 0.0 for n in metrics}, "worst": metrics, "original_size": None,
                "index": position[sample.id], "pass_rule": "mean", "extra": extra})
        meta = {"suite": "violin", "profile": "violin", "seed": 0, "repeats": 1, "pass_rule": "mean",
                "adapter": "oracle", "package_version": __import__("pytest_violin").__version__,
                "interrupted": False, "generations": len(records), "cache_hits": 0, "price": None,
                "shard": {"index": k, "total": shards, "selected": len(suite), "digest": digest}}
        folder = out / f"shard-{k}"
        folder.mkdir(parents=True)
        write_results_json(folder / "results.json", records, metadata=meta)
        write_thumbnails_json(folder / "thumbnails.json", records)
        folders.append(folder)
    return folders


def _merge(folders, output: Path, *extra: str) -> tuple[float, float, float]:
    """Run the merge in a fresh process: ``(seconds, peak RSS in MiB, CPU seconds)`` (the CPU
    seconds include the interpreter's start and imports; the wall seconds do not)."""
    code = ("import resource, sys, time\n"
            "from pytest_violin.__main__ import main\n"
            "t = time.perf_counter(); status = main(sys.argv[1:]); t = time.perf_counter() - t\n"
            "use = resource.getrusage(resource.RUSAGE_SELF)\n"
            "print(f'BENCH {t:.3f} {use.ru_maxrss / 1024:.1f} {use.ru_utime + use.ru_stime:.3f}', "
            "file=sys.stderr); sys.exit(status)\n")
    proc = subprocess.run([sys.executable, "-c", code, "merge", *map(str, folders), "--output", str(output),
                           *extra], env=_env(), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"merge failed ({proc.returncode}): {proc.stderr[-2000:]}")
    line = next(x for x in proc.stderr.splitlines() if x.startswith("BENCH "))
    _, seconds, rss, cpu = line.split()
    return float(seconds), float(rss), float(cpu)


def _pytest(cwd: Path, *args: str) -> int:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--violin-model=oracle",
           "--violin-no-cache", *args]
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=7200)
    if proc.returncode not in (0, 1):
        sys.exit(f"pytest {' '.join(args)} ended {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.returncode


def oracle(tmp: Path, shards: int, limit: int | None) -> None:
    sel = [f"--violin-limit={limit}"] if limit else []
    t = time.perf_counter()
    _pytest(tmp, *sel, "--violin-report=whole", "--violin-save-baseline=whole.json")
    one = time.perf_counter() - t
    t = time.perf_counter()
    for k in range(1, shards + 1):
        _pytest(tmp, *sel, f"--violin-shard={k}/{shards}", f"--violin-report=shard-{k}")
    parts = time.perf_counter() - t
    seconds, rss, cpu = _merge([tmp / f"shard-{k}" for k in range(1, shards + 1)], tmp / "merged",
                          "--save-baseline", str(tmp / "merged.json"))
    a = json.loads((tmp / "whole" / "results.json").read_text())
    b = json.loads((tmp / "merged" / "results.json").read_text())

    def rows(doc):
        return [(s["sample_id"], s["outcome"], s["metrics"], s["failed"]) for s in doc["samples"]]

    same = rows(a) == rows(b) and a["aggregates"] == b["aggregates"]
    gates = []
    for run in ("whole", "merged"):
        proc = subprocess.run([sys.executable, "-m", "pytest_violin", "gate", str(tmp / run), "--baseline",
                               str(tmp / "whole.json")], env=_env(), capture_output=True, text=True)
        gates.append((proc.returncode, proc.stdout.splitlines()[0] if proc.stdout else ""))
    print(f"oracle: {len(a['samples'])} samples; one run {one:.1f} s, {shards} shards {parts:.1f} s in "
          f"sequence; merge {seconds:.2f} s ({cpu:.2f} s of CPU), peak RSS {rss:.0f} MiB")
    print(f"merged == one run (ids, outcomes, metrics, failed metrics, aggregates): {same}")
    print(f"gate against the one run's baseline: one run exit {gates[0][0]}, merged exit {gates[1][0]}; "
          f"verdicts equal: {gates[0] == gates[1]}")
    if not same or gates[0] != gates[1]:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--oracle", action="store_true", help="real oracle runs, checked equal")
    parser.add_argument("--limit", type=int, default=None, help="with --oracle: a stratified subset")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as tmp:
        tmp = Path(tmp)
        if args.oracle:
            oracle(tmp, args.shards, args.limit)
        else:
            t = time.perf_counter()
            folders = synthesize(tmp, args.shards)
            made = time.perf_counter() - t
            sizes = [sum(f.stat().st_size for f in folder.iterdir()) for folder in folders]
            counts = [len(json.loads((f / "results.json").read_text())["samples"]) for f in folders]
            seconds, rss, cpu = _merge(folders, tmp / "merged", "--save-baseline", str(tmp / "merged.json"))
            print(f"synthetic: {args.shards} shards of {'/'.join(map(str, counts))} samples, "
                  f"{sum(sizes) / 2**20:.1f} MiB of reports (written in {made:.1f} s)")
            print(f"merge: {seconds:.2f} s ({cpu:.2f} s of CPU), peak RSS {rss:.0f} MiB (targets: under "
                  f"10 s, under 500 MB)")
    print(f"load average: {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end "
          f"({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
