"""Per-sample CPU time of the ``diffusers:`` adapter on tiny random pipelines.

The pipelines are the test suite's (``tests/diffusers_fixtures/tiny.py``):
a Stable Diffusion folder with random weights (UNet (8, 16), a four-block
VAE so the latents are 1/8 of the image, a one-layer CLIP text encoder),
built offline in a temporary folder; nothing is downloaded. The adapter
is loaded once through ``resolve_model("diffusers:PATH?steps=N")`` and each
request goes through ``adapter.generate`` exactly as in a run:

* text-to-image (a color sample, no input image);
* image-to-image (a color sample with one source image);
* inpainting (a mask sample: source image + mask) from the same folder's
  shared components;
* inpainting with a 9-channel inpainting checkpoint (its own folder).

The figures measure the adapter plus diffusers' pipeline machinery on
CPU, not a real model: the tiny UNet makes the denoising nearly free, so
the VAE at full size and the per-call overhead dominate.

torch runs on one thread by default (``--threads 1``): with two threads
on a shared two-core machine, torch's OpenMP workers spin while they wait
for a descheduled partner, and the CPU time of a 0.17 s text-to-image
sample swung between 0.2 s and 5 s from one call to the next; on one
thread it stays within 10%. ``--threads 0`` keeps torch's own default.

For each kind: one warm-up call, then ``--samples`` calls with other
seeds; the table shows the median and minimum CPU time of the process
(``time.process_time``, all torch threads together) and the median wall
time per sample, and the load time (folder -> all pipelines).

Needs the ``[diffusers]`` extra (torch, diffusers, transformers). Run it
with the virtual environment ``.ci/diffusers`` builds (run that script once)::

    ${XDG_CACHE_HOME:-$HOME/.cache}/pytest-violin-ci/diffusers-*/bin/python \\
        benchmarks/bench_diffusers.py [--samples 5] [--size 512] [--steps 2] [--threads N]

``--batch B`` measures batched generation instead: ``--samples`` color
samples (text-to-image) of the suite go through the runner once with
``?batch=1`` and once with ``?batch=B`` (the runner's threads hand their
requests to one pipeline call, ``pytest_violin.execution.batching``); it
prints the samples per second of each, their ratio, and the largest
difference of a sample's mean metric between the two runs.

Without the extra it exits with status 2 and says so. Exits 1 when the
median CPU time of a kind is over ``--target`` seconds per sample.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tiny pipelines of the test suite

EXTRA = ("torch", "diffusers", "transformers")
CI_PYTHON = "${XDG_CACHE_HOME:-$HOME/.cache}/pytest-violin-ci/diffusers-*/bin/python"


def missing_extra() -> str | None:
    """A one-line reason when a package of the ``[diffusers]`` extra cannot be imported, else None."""
    for name in EXTRA:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # includes ModuleNotFoundError
            return (f"bench_diffusers: the [diffusers] extra is missing: cannot import {name!r} ({exc}). "
                    f"Run .ci/diffusers once, then run this script with {CI_PYTHON} "
                    f"(or pip install 'pytest-violin[diffusers]').")
    return None


def time_kind(adapter, images: tuple, size: int, samples: int) -> dict:
    """Warm-up call, then ``samples`` timed calls; CPU and wall seconds per call.

    Two input images (source, mask) make a mask sample (inpainting), else a
    color sample (text-to-image without images, image-to-image with one).
    """
    from pytest_violin.models import GenerationRequest

    task = "mask" if len(images) == 2 else "color"
    cpu, wall = [], []
    for seed in range(samples + 1):
        request = GenerationRequest(prompt="a pure red image", width=size, height=size, seed=seed,
                                    sample_id=f"{task}/bench/{seed}", task=task, images=images)
        w, c = time.perf_counter(), time.process_time()
        adapter.generate(request)
        if seed:  # the first call is the warm-up
            wall.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
    return {"cpu_median": statistics.median(cpu), "cpu_min": min(cpu), "wall_median": statistics.median(wall)}


def batch_throughput(folder, *, batch: int, samples: int, steps: int) -> None:
    """Samples per second through the runner with ``?batch=1`` and ``?batch=B`` (module docstring)."""
    from pytest_violin.execution.runner import Runner
    from pytest_violin.execution.usage import CallCounter, CountingAdapter
    from pytest_violin.models import AdapterOptions, resolve_model
    from pytest_violin.suite import load_suite

    chosen = load_suite("violin", tasks=["color"], limit=samples)
    rates, means = {}, {}
    for size in (1, batch):
        adapter = resolve_model(f"diffusers:{folder}?steps={steps}&batch={size}", AdapterOptions())
        warm = Runner(CountingAdapter(adapter, CallCounter()))
        warm.get(chosen[0])  # one warm-up generation (first-call costs)
        warm.close()
        runner = Runner(CountingAdapter(adapter, CallCounter()), concurrency=1)
        t0 = time.perf_counter()
        runner.plan(chosen)
        gens = {s.id: runner.get(s) for s in chosen}
        rates[size] = len(chosen) / (time.perf_counter() - t0)
        runner.close()
        adapter.close()
        means[size] = {s.id: s.score(gens[s.id].images[0]).mean for s in chosen}
    drift = max(abs(means[1][k] - means[batch][k]) for k in means[1])
    print(f"batch=1: {rates[1]:.2f} samples/s; batch={batch}: {rates[batch]:.2f} samples/s; "
          f"ratio {rates[batch] / rates[1]:.2f} ({len(chosen)} color samples, 512x512, {steps} steps); "
          f"largest difference of a sample's mean metric: {drift:.2e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5, help="timed calls per kind after one warm-up")
    parser.add_argument("--size", type=int, default=512, help="image side in pixels (a multiple of 8)")
    parser.add_argument("--steps", type=int, default=2, help="denoising steps (the adapter's ?steps=)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1, see above; 0: torch's own default)")
    parser.add_argument("--batch", type=int, default=0,
                        help="measure ?batch=B against ?batch=1 through the runner (see above)")
    parser.add_argument("--target", type=float, default=1.0,
                        help="seconds of CPU per sample, median, for every kind (default 1.0)")
    args = parser.parse_args(argv)
    if args.threads < 0:
        parser.error(f"--threads={args.threads}: accepted: an integer >= 0")
    for name in ("samples", "size", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)}: accepted: an integer >= 1")
    if args.size % 8:
        parser.error(f"--size={args.size}: accepted: a multiple of 8")

    reason = missing_extra()
    if reason:
        print(reason, file=sys.stderr)
        return 2

    import numpy as np
    import torch

    from diffusers_fixtures.tiny import build_tiny_sd
    from pytest_violin.models import AdapterOptions, resolve_model
    from pytest_violin.models.diffusers import quiet

    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    source = rng.integers(0, 256, (args.size, args.size, 3), dtype=np.uint8)
    mask = np.zeros((args.size, args.size, 3), np.uint8)
    mask[:, : args.size // 2] = 255

    if args.batch > 1:
        with tempfile.TemporaryDirectory() as tmp:
            with quiet():
                folder = build_tiny_sd(tmp, kind="text2image")
            print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads")
            batch_throughput(folder, batch=args.batch, samples=args.samples, steps=args.steps)
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with quiet():
            folders = {"text2image": build_tiny_sd(tmp, kind="text2image"),
                       "inpaint-only": build_tiny_sd(tmp, kind="inpaint-only")}
        loads = {}
        adapters = {}
        for name, folder in folders.items():
            t0 = time.perf_counter()
            adapters[name] = resolve_model(f"diffusers:{folder}?steps={args.steps}", AdapterOptions())
            loads[name] = time.perf_counter() - t0
        cases = (("text-to-image", "text2image", ()),
                 ("image-to-image", "text2image", (source,)),
                 ("inpainting (shared components)", "text2image", (source, mask)),
                 ("inpainting (9-channel checkpoint)", "inpaint-only", (source, mask)))
        for label, folder, images in cases:
            figures = time_kind(adapters[folder], images, args.size, args.samples)
            rows.append((label, figures))
            print(f"  {label}: cpu median {figures['cpu_median']:.3f} s", flush=True)
        for adapter in adapters.values():
            close = getattr(adapter, "close", None)
            if close:
                close()

    print(f"\ntiny random SD pipelines, {args.size}x{args.size}, {args.steps} steps, "
          f"torch {torch.__version__}, {torch.get_num_threads()} torch threads, {args.samples} samples "
          f"after one warm-up")
    print(f"load (folder -> pipelines): SD folder {loads['text2image']:.2f} s, "
          f"inpainting checkpoint {loads['inpaint-only']:.2f} s\n")
    print("| kind | CPU per sample, median | CPU min | wall per sample, median | target |")
    print("|---|---|---|---|---|")
    ok = True
    for label, f in rows:
        hit = f["cpu_median"] < args.target
        ok &= hit
        print(f"| {label} | {f['cpu_median']:.3f} s | {f['cpu_min']:.3f} s | {f['wall_median']:.3f} s | "
              f"< {args.target:g} s {'PASS' if hit else 'FAIL'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
