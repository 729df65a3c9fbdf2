"""Benchmark :func:`pytest_violin.diagnose` per task family on failing 512x512 answers.

Run:  python benchmarks/bench_diagnosis.py [--repeat N]

One failing answer per family, built from a built-in sample's own ground
truth with a known defect (the same kinds tests/unit/test_diagnosis.py checks):

* color: text drawn on a 16-level vertical gradient (objects + gradient);
* color quad: the four blocks 8 levels lighter, with gray noise;
* ratio: the split at 50% instead of 13%;
* shape: a circle moved by (+40, -10) px and scaled 1.3x;
* mask: a 6 px feathered edge (``diagnose``, which renders the sample's
  inputs, the source photo and mask, on every call; and the mask
  diagnoser alone, given them);
* border: twice as thick; count: two dots missing.

Target (issue 24): < 20 ms per image. Each case runs ``--repeat`` times
after one warm-up; the table shows the minimum CPU time of the calling
thread, the minimum and the median wall time (a shared machine's medians
mostly measure the neighbours). Pinned to one CPU, one OpenCV/BLAS thread.
Diagnoses run only for failing samples, so this is a cost per failure.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from pytest_violin.diagnosis import diagnose  # noqa: E402
from pytest_violin.diagnosis.mask import diagnose_mask  # noqa: E402
from pytest_violin.suite import load_suite  # noqa: E402
from pytest_violin.suite.drawing import (render_border, render_dots, render_ratio,  # noqa: E402
                                         render_shape)


def timed(fn, repeat):
    """Return (min CPU ms, min wall ms, median wall ms) over ``repeat`` calls."""
    fn()
    cpu, wall = [], []
    for _ in range(repeat):
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return min(cpu) * 1e3, min(wall) * 1e3, statistics.median(wall) * 1e3


def _pick(suite, **where):
    for s in load_suite(suite):
        values = {**dict(s.spec), "task": s.task, "layout": s.layout}
        if all(values.get(k) == v for k, v in where.items()):
            return s
    raise SystemExit(f"no sample of {suite} with {where}")


def cases():
    rng = np.random.default_rng(0)
    out = []
    s = _pick("violin", task="color", layout="single")
    img = s.expected()
    cv2.putText(img, "SALE", (150, 300), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (20, 20, 20), 4)
    ramp = np.rint(np.linspace(-8, 8, 512)).astype(np.int16)[:, None, None]
    out.append(("color (text + gradient)", s, np.clip(img + ramp, 0, 255).astype(np.uint8)))
    s = _pick("violin-absolute", task="color", layout="quad")
    noise = rng.normal(0, 4, (512, 512, 1))
    out.append(("color quad (lighter + noise)", s,
                np.clip(s.expected() + 8.0 + noise, 0, 255).astype(np.uint8)))
    s = _pick("violin-extra", task="ratio", orientation="vertical", ratio=0.13)
    out.append(("ratio (split at 50%)", s, render_ratio("vertical", 256, s.spec["colors"], 512, 512)))
    s = _pick("violin", task="shape", shape="circle", size=0.3, anchor="center")
    x0, y0, bw, bh = s.spec["bbox"]
    side = round(bw * 1.3)
    out.append(("shape (moved + scaled)", s, render_shape(
        "circle", (round(x0 + bw / 2 + 40 - side / 2), round(y0 + bh / 2 - 10 - side / 2), side, side),
        512, 512)))
    s = _pick("violin", task="mask", mask_kind="inpaint")
    source, mask = s.inputs
    keep = mask[:, :, 0] >= 128
    inside = cv2.distanceTransform(keep.astype(np.uint8), cv2.DIST_L2, 5)
    outside = cv2.distanceTransform((~keep).astype(np.uint8), cv2.DIST_L2, 5)
    alpha = np.clip((np.where(keep, inside - 0.5, 0.5 - outside) + 3) / 6, 0, 1)[..., None]
    out.append(("mask (feathered 6 px)", s, np.rint(source * alpha).astype(np.uint8)))
    s = _pick("violin-extra", task="border", thickness=8)
    out.append(("border (twice as thick)", s, render_border(16, 512, 512, s.spec["fg"], s.spec["bg"])))
    s = _pick("violin-extra", task="count", count=10)
    out.append(("count (two dots missing)", s, render_dots(
        s.spec["positions"][:-2], s.spec["dot"], 512, 512, s.spec["fg"], s.spec["bg"])))
    return out


class _Given:
    """A mask sample whose inputs are already rendered (the diagnoser alone)."""

    def __init__(self, sample):
        self._s, self.inputs = sample, sample.inputs

    def __getattr__(self, name):
        return getattr(self._s, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    print(f"python {platform.python_version()}, numpy {np.__version__}, opencv {cv2.__version__}, "
          f"{platform.machine()}; repeat {args.repeat}")
    print(f"{'case':32} | {'cpu ms':>7} | {'wall min':>8} | {'wall med':>8} | first finding")
    for name, sample, image in cases():
        d = diagnose(sample, image)
        cpu, wmin, wmed = timed(lambda: diagnose(sample, image), args.repeat)
        print(f"{name:32} | {cpu:7.1f} | {wmin:8.1f} | {wmed:8.1f} | {d.first.kind if d else '-'}")
        if sample.task == "mask":
            given, exp = _Given(sample), sample.expected()
            cpu, wmin, wmed = timed(lambda: diagnose_mask(given, image, exp), args.repeat)
            print(f"{'  mask diagnoser, inputs given':32} | {cpu:7.1f} | {wmin:8.1f} | {wmed:8.1f} |")
            cpu, wmin, wmed = timed(lambda: sample.inputs, args.repeat)
            print(f"{'  rendering the inputs alone':32} | {cpu:7.1f} | {wmin:8.1f} | {wmed:8.1f} |")


if __name__ == "__main__":
    main()
