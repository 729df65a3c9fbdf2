"""Benchmark the metrics on 512x512 images, pinned to one thread.

Run:  python benchmarks/bench_metrics.py [--repeat N]

Prints one table:

* ``color_metrics`` (violin) against the straightforward path
  (``pytest_violin.metrics._reference.plain_color_metrics`` with
  ``skimage_ciede2000``: the reference's ``deltaE_ciede2000`` per pixel on
  float32 Lab over the whole image, ``numpy.std``, a full
  ``fft2``/``fftshift``, Canny), on a near-uniform image and on a pure-noise
  image; "cold" clears the per-colour CIEDE2000 table cache before every
  call, "warm" reuses it (a suite scores many answers per colour). The
  speed-up is against that path; the largest difference over all five
  metrics is against the plain path with the reference's arithmetic
  (``ciede2000_32`` per pixel; the in-process skimage call can take the
  other hue branch at exactly opposite hues on numpy builds with AVX-512
  code, which the second number shows). The target is >= 10x at <= 1e-6.
* ``color_metrics`` strict profile on the noise image, against violin warm
  (target: within 3x), and its largest difference from the plain strict
  path (skimage ``rgb2lab`` and float64 ``deltaE_ciede2000``).
* ``shape_metrics`` and ``mask_metrics`` on realistic answers; target < 5 ms.

Each case is called ``--repeat`` times after one warm-up call; the table
shows the minimum CPU time of the calling thread (``time.thread_time``),
the minimum and the median wall time. The speed-up is the ratio of the
minimum CPU times: on a shared machine wall times, medians above all,
mostly measure the neighbours. The
process is pinned to one CPU (``os.sched_setaffinity`` where available),
``cv2.setNumThreads(1)``, and OpenBLAS/OpenMP/MKL are limited to one thread
through the environment before numpy is imported.
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

from pytest_violin.metrics import (COLOR_METRICS, color_metrics, mask_metrics,  # noqa: E402
                                   shape_metrics)
from pytest_violin.metrics._reference import (plain_color_metrics,  # noqa: E402
                                              skimage_ciede2000)
from pytest_violin.metrics.color import _CH_TABLES  # noqa: E402

SIZE = 512
COLOR = (217, 180, 81)  # ISCC-NBS "yellowish" #D9B451


def timed(fn, repeat, before=None):
    """Return (min CPU ms, min wall ms, median wall ms) over ``repeat`` calls."""
    fn()
    cpu, wall = [], []
    for _ in range(repeat):
        if before is not None:
            before()
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return min(cpu) * 1e3, min(wall) * 1e3, statistics.median(wall) * 1e3


def images():
    rng = np.random.default_rng(0)
    expected = np.full((SIZE, SIZE, 3), COLOR, np.uint8)
    near = expected.astype(np.int16) + rng.integers(-2, 3, expected.shape)
    near = np.clip(near, 0, 255).astype(np.uint8)
    noise = rng.integers(0, 256, expected.shape, dtype=np.uint8)

    shape_exp = np.zeros((SIZE, SIZE, 3), np.uint8)
    cv2.circle(shape_exp, (51, SIZE // 2), 51, (255, 255, 255), -1)
    shape_gen = np.zeros_like(shape_exp)
    cv2.circle(shape_gen, (60, SIZE // 2 + 4), 49, (250, 245, 240), -1, lineType=cv2.LINE_AA)
    shape_gen = np.clip(shape_gen + rng.integers(0, 6, shape_gen.shape), 0, 255).astype(np.uint8)

    photo = cv2.GaussianBlur(rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8), (0, 0), 3)
    photo = cv2.normalize(photo, None, 40, 255, cv2.NORM_MINMAX)
    mask_exp = photo.copy()
    cv2.ellipse(mask_exp, (256, 256), (120, 80), 20, 0, 360, (0, 0, 0), -1)
    mask_gen = photo.copy()
    cv2.ellipse(mask_gen, (262, 252), (118, 84), 20, 0, 360, (8, 8, 8), -1)
    mask_gen = cv2.GaussianBlur(mask_gen, (5, 5), 0)
    return expected, near, noise, (shape_gen, shape_exp), (mask_gen, mask_exp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    expected, near, noise, shape_pair, mask_pair = images()

    print(f"pytest-violin metrics benchmark: {SIZE}x{SIZE}, one thread, "
          f"{args.repeat} calls per case")
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"opencv {cv2.__version__}, {platform.machine()}")
    print()
    header = (f"{'case':<42}{'cpu ms':>8}{'wall ms':>9}{'median':>9}"
              f"{'speed-up':>10}{'max |diff|':>12}{'vs skimage':>12}")
    print(header)
    print("-" * len(header))

    def row(label, t, speedup="", diff="", diff2=""):
        print(f"{label:<42}{t[0]:>8.2f}{t[1]:>9.2f}{t[2]:>9.2f}{speedup:>10}{diff:>12}"
              f"{diff2:>12}")

    def largest_diff(a, b):
        return max(abs(a[k] - b[k]) for k in COLOR_METRICS)

    warm_of = {}
    for label, gen in (("near-uniform", near), ("pure noise", noise)):
        plain_t = timed(lambda: plain_color_metrics(gen, expected,
                                                    violin_ciede2000=skimage_ciede2000),
                        max(3, args.repeat // 3))
        cold = timed(lambda: color_metrics(gen, expected), args.repeat, before=_CH_TABLES.clear)
        warm = warm_of[label] = timed(lambda: color_metrics(gen, expected), args.repeat)
        fast = color_metrics(gen, expected)
        diff = largest_diff(fast, plain_color_metrics(gen, expected))
        diff_sk = largest_diff(fast, plain_color_metrics(gen, expected,
                                                         violin_ciede2000=skimage_ciede2000))
        row(f"color plain path, {label}", plain_t, "1.0x")
        for kind, t in (("cold", cold), ("warm", warm)):
            row(f"color_metrics violin {kind}, {label}", t, f"{plain_t[0] / t[0]:.1f}x",
                f"{diff:.1e}", f"{diff_sk:.1e}")
    strict_t = timed(lambda: color_metrics(noise, expected, profile="strict"), args.repeat)
    strict_diff = largest_diff(color_metrics(noise, expected, profile="strict"),
                               plain_color_metrics(noise, expected, profile="strict"))
    row("color_metrics strict, pure noise", strict_t,
        f"{strict_t[0] / warm_of['pure noise'][0]:.1f}x vw", f"{strict_diff:.1e}")
    for profile in ("violin", "strict"):
        row(f"shape_metrics {profile}", timed(lambda: shape_metrics(*shape_pair, profile=profile),
                                             args.repeat))
        row(f"mask_metrics {profile}", timed(lambda: mask_metrics(*mask_pair, profile=profile),
                                            args.repeat))


if __name__ == "__main__":
    main()
