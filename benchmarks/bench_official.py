"""Benchmark of the official-data reader (plain script, prints a table).

    python benchmarks/bench_official.py                # 3,000 rows at 512x512
    python benchmarks/bench_official.py --rows 600     # smaller

Writes a parquet in the official format (tests/_official_data.py's columns
and ``{"bytes"}`` image structs; a fifth of the rows colour var-1, a fifth
var-2, a fifth shapes, the rest masks with photo and mask) of ``--rows``
rows and a fifth of that, each into a temporary folder, then measures in a
fresh child process each:

* the first load (stream the parquet, extract its images, read every
  ground truth's header, decode where the split, shape class or mask
  polarity is read, write the index): rows/s and peak RSS;
* a second load (the cached index): seconds;
* scoring every sample with its own ground truth (``sample.score(sample.expected())``,
  profile violin): samples/s and peak RSS.

Peak RSS is the child's ``VmHWM`` (Linux); the parquet is written by another child, so
no process measured holds the generator's arrays.

Memory is flat when the peak RSS of the large and the small file are close.

    python benchmarks/bench_official.py --bomb         # a 64-row dictionary bomb

``--bomb`` writes the hostile file instead: mask rows whose three image cells
repeat one value of ``--cell-mib`` MiB (a 1x1 PNG and zeros), dictionary
encoded and zstd compressed, so a file of some tens of KB decodes to
gigabytes, and no prompts (a loader that decodes it all stops at row 0 after
its first record batch). It measures the load's peak RSS, its seconds and what
it left in the official cache; the load must be refused.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

CHILD = r'''
import os, resource, sys, time
from pytest_violin import load_suite
phase, path = sys.argv[1], sys.argv[2]
t = time.perf_counter()
samples = load_suite(path)
load = time.perf_counter() - t
if phase == "score":
    t = time.perf_counter()
    worst = 0.0
    for s in samples:
        worst = max(worst, s.score(s.expected()).mean)
    load = time.perf_counter() - t
    assert worst == 0.0, worst
# VmHWM: this process's own peak (ru_maxrss would include the parent's size at the spawn)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(len(samples), samples.dataset["rows"], load, peak / 1024)
'''


BOMB_CHILD = r'''
import os, sys, time
from pytest_violin import load_suite
from pytest_violin.errors import ManifestError
t = time.perf_counter()
try:
    load_suite(sys.argv[1])
    said = "LOADED"
except ManifestError as exc:
    said = str(exc)
took = time.perf_counter() - t
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(f"{took} {peak / 1024} {said[:300]}")
'''


def write_bomb(folder: Path, rows: int, cell_mib: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import _official_data as od

    cell = od.png(od.solid((1, 2, 3), 1))
    cell += b"\0" * ((cell_mib << 20) - len(cell))
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    struct = [{"bytes": cell, "path": None}] * rows
    path = folder / "violin-test.parquet"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({
        "task": pa.array([4] * rows, pa.int64()), "id": [f"id_{i + 1}" for i in range(rows)],
        "mask_type": ["inpainting"] * rows, "image_id": [f"img_{i}" for i in range(rows)],
        "ground_truth": pa.array(struct, image), "image1_path": pa.array(struct, image),
        "image2_path": pa.array(struct, image)}), str(path), compression="zstd",
        dictionary_pagesize_limit=(cell_mib + 1) << 20)
    return path


def bomb(rows: int, cell_mib: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, __file__, "--write-bomb", str(tmp), "--rows", str(rows),
                        "--cell-mib", str(cell_mib)], check=True)
        path = tmp / "violin-test.parquet"
        env = dict(os.environ, VIOLIN_OFFICIAL_CACHE=str(tmp / "cache"))
        proc = subprocess.run([sys.executable, "-c", BOMB_CHILD, str(path)], env=env,
                              capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"the load crashed:\n{proc.stderr[-3000:]}")
        took, peak, said = proc.stdout.split(" ", 2)
        cached = sum(p.stat().st_size for p in (tmp / "cache").rglob("*") if p.is_file())
        decoded = 3 * rows * (cell_mib << 20)
        print(f"file {path.stat().st_size / 1024:.0f} KB, {decoded / 2**30:.1f} GiB decoded; "
              f"load {float(took):.1f} s, peak RSS {float(peak):.0f} MB, official cache "
              f"{cached / 2**20:.0f} MB\n  {said.strip()[:200]}")


def write_dataset(folder: Path, rows: int, size: int = 512) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import _official_data as od

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("task", pa.int64()), ("id", pa.string()), ("mask_type", pa.string()),
                        ("image_id", pa.string()), ("prompt", pa.string()),
                        ("ground_truth", image), ("image1_path", image), ("image2_path", image)])
    path = folder / "violin-test.parquet"
    writer = pq.ParquetWriter(str(path), schema)
    batch = []
    fifth = rows // 5
    for n in range(rows):
        k = n % 97
        if n < fifth:
            row = (1, n, None, None, "a solid colour", od.solid(od.COLORS[k % 10], size), None, None)
        elif n < 2 * fifth:
            row = (2, n, None, None, "left half and right half",
                   od.two_blocks(od.COLORS[k % 10], od.COLORS[(k + 3) % 10], True, size), None, None)
        elif n < 3 * fifth:
            kind = od.SHAPES[k % 3]
            row = (3, n, None, None, f"one white {kind}",
                   od.shape_image(kind, 40 + k, 60, 200, size), None, None)
        else:
            mt = od.MASK_TYPES[n % 3]
            src, keep = od.photo(k, size), od.keep_mask(mt, k, size)
            gt = src.copy()
            gt[keep == 0] = 0
            row = (4, n, mt, f"img_{n:05d}", "mask it", gt, src, np.dstack([keep] * 3))
        batch.append(row)
        if len(batch) == 64 or n == rows - 1:
            cols = list(zip(*batch))
            enc = [[None if im is None else {"bytes": od.png(im), "path": None} for im in col]
                   for col in cols[5:]]
            writer.write_table(pa.table({
                "task": pa.array(cols[0], pa.int64()), "id": pa.array([f"id_{i}" for i in cols[1]]),
                "mask_type": pa.array(cols[2], pa.string()), "image_id": pa.array(cols[3], pa.string()),
                "prompt": pa.array(cols[4]), "ground_truth": pa.array(enc[0], image),
                "image1_path": pa.array(enc[1], image), "image2_path": pa.array(enc[2], image)},
                schema=schema))
            batch = []
    writer.close()
    return path


def child(phase: str, path: Path, cache: Path):
    env = dict(os.environ, VIOLIN_OFFICIAL_CACHE=str(cache))
    proc = subprocess.run([sys.executable, "-c", CHILD, phase, str(path)], env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{phase} failed:\n{proc.stderr[-3000:]}")
    out = proc.stdout.split()
    return int(out[0]), int(out[1]), float(out[2]), float(out[3])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--bomb", action="store_true", help="measure a dictionary bomb instead")
    parser.add_argument("--cell-mib", type=int, default=60, help="--bomb: MiB per image cell")
    parser.add_argument("--write-bomb", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_dataset(Path(args.write), args.rows)
        return
    if args.write_bomb:
        write_bomb(Path(args.write_bomb), args.rows, args.cell_mib)
        return
    if args.bomb:
        bomb(args.rows if args.rows != 3000 else 64, args.cell_mib)
        return
    print(f"{'rows':>6} {'file MB':>8} {'first load s':>12} {'rows/s':>8} {'RSS MB':>8} "
          f"{'cached s':>9} {'score s':>8} {'samples/s':>9} {'RSS MB':>8}")
    for rows in (max(args.rows // 5, 50), args.rows):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            t = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--write", str(tmp), "--rows", str(rows)],
                           check=True)
            path = tmp / "violin-test.parquet"
            made = time.perf_counter() - t
            cache = tmp / "cache"
            n, total, first, rss_load = child("load", path, cache)
            _, _, cached, _ = child("load", path, cache)
            _, _, score, rss_score = child("score", path, cache)
            mb = path.stat().st_size / 2**20
            print(f"{rows:>6} {mb:>8.0f} {first:>12.1f} {total / first:>8.0f} {rss_load:>8.0f} "
                  f"{cached:>9.2f} {score:>8.1f} {n / score:>9.0f} {rss_score:>8.0f}"
                  f"   (file written in {made:.0f} s)")


if __name__ == "__main__":
    main()
