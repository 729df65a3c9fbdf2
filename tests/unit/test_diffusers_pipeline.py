"""diffusers:PATH with real tiny pipelines (random weights, built offline, saved to disk).

Needs the ``[diffusers]`` extra (torch, diffusers, transformers). Skipped
without it, unless ``VIOLIN_REQUIRE_DIFFUSERS=1`` (set by ``.ci/diffusers``):
then a missing extra is a collection error, so a skip cannot hide a broken
adapter in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("VIOLIN_REQUIRE_DIFFUSERS") != "1":
    for _name in ("torch", "diffusers", "transformers"):
        pytest.importorskip(_name, reason="optional extra 'diffusers' not installed")

import torch  # noqa: E402  (a collection error under VIOLIN_REQUIRE_DIFFUSERS=1 when missing)
import diffusers  # noqa: E402,F401

from diffusers_fixtures.tiny import build_tiny_sd  # noqa: E402
from pytest_violin.errors import GenerationError, ModelSpecError  # noqa: E402
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model  # noqa: E402
from pytest_violin.models.diffusers import KINDS, quiet  # noqa: E402

SIZE = 64  # 8x8 latents: fast on one CPU core


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-diffusers")
    with quiet():
        return {kind: build_tiny_sd(root, kind=kind) for kind in ("text2image", "inpaint-only")}


def load(path, query="?steps=2"):
    return resolve_model(f"diffusers:{path}{query}", AdapterOptions(rootdir=Path(path).parent))


@pytest.fixture(scope="session")
def tiny(tiny_dirs):
    adapter = load(tiny_dirs["text2image"])
    yield adapter
    adapter.close()


def photo(seed, size=SIZE):
    return np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)


def mask_image(size=SIZE):
    mask = np.zeros((size, size, 3), np.uint8)
    mask[:, : size // 2] = 255  # white = keep the left half, change the right half
    return mask


def request(task="color", images=(), seed=3, prompt="a pure red image"):
    return GenerationRequest(prompt=prompt, width=SIZE, height=SIZE, seed=seed, sample_id="t/1",
                             task=task, images=tuple(images))


def test_one_folder_serves_every_kind_from_shared_components(tiny):
    assert tiny.kinds() == tuple(KINDS)
    names = {k: type(p).__name__ for k, p in tiny.pipelines.items()}
    assert names == {"text2image": "StableDiffusionPipeline",
                     "image2image": "StableDiffusionImg2ImgPipeline",
                     "inpaint": "StableDiffusionInpaintPipeline"}
    unets = {id(p.unet) for p in tiny.pipelines.values()}
    assert len(unets) == 1  # from_pipe shares the weights, nothing is loaded twice


def test_seed_makes_outputs_identical_across_loads(tiny, tiny_dirs):
    first = tiny.generate(request(seed=11))
    again = load(tiny_dirs["text2image"])
    try:
        second = again.generate(request(seed=11))
        other = again.generate(request(seed=12))
    finally:
        again.close()
    assert first.shape == (SIZE, SIZE, 3) and first.dtype == np.uint8
    assert np.array_equal(first, second)
    assert not np.array_equal(first, other)


def test_mask_output_depends_on_the_source_image(tiny):
    black, white = np.zeros((SIZE, SIZE, 3), np.uint8), np.full((SIZE, SIZE, 3), 255, np.uint8)
    a = tiny.generate(request("mask", (black, mask_image())))
    b = tiny.generate(request("mask", (white, mask_image())))
    again = tiny.generate(request("mask", (black, mask_image())))
    assert a.shape == (SIZE, SIZE, 3)
    assert np.array_equal(a, again)
    # random weights blur everything, but the source image must reach the model
    assert not np.array_equal(a, b)
    text_only = tiny.generate(request())
    assert not np.array_equal(a, text_only)


def test_image_request_uses_its_image(tiny):
    a = tiny.generate(request("color", (photo(1),)))
    b = tiny.generate(request("color", (photo(2),)))
    assert a.shape == (SIZE, SIZE, 3) and not np.array_equal(a, b)


def test_inpainting_checkpoint_serves_masks_and_refuses_text_with_one_line(tiny_dirs):
    adapter = load(tiny_dirs["inpaint-only"])
    try:
        assert adapter.kinds() == ("inpaint",)
        out = adapter.generate(request("mask", (photo(1), mask_image())))
        assert out.shape == (SIZE, SIZE, 3)
        with pytest.raises(GenerationError) as info:
            adapter.generate(request())
    finally:
        adapter.close()
    text = str(info.value)
    assert "\n" not in text and "need a text-to-image pipeline" in text
    assert "StableDiffusionInpaintPipeline" in text


def test_device_and_parameter_errors_are_usage_errors(tiny_dirs):
    path = tiny_dirs["text2image"]
    cuda = "cuda:999" if torch.cuda.is_available() else "cuda"
    for query, value in ((f"?device={cuda}", f"device='{cuda}'"), ("?device=gpu", "device='gpu'"),
                         ("?device=meta", "device='meta'"), ("?device=0", "device='0'"),
                         ("?sampler=ddim", "'sampler'"), ("?steps=2&generator=1", "'generator'")):
        with pytest.raises(ModelSpecError) as info:
            load(path, query)
        assert value in str(info.value)


def test_loading_and_generating_print_nothing(tiny_dirs, capfd):
    adapter = load(tiny_dirs["text2image"])
    adapter.generate(request())
    adapter.generate(request("mask", (photo(1), mask_image())))
    adapter.close()
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_stratified_suite_runs_without_generation_error(tiny_dirs, tmp_path):
    """``pytest --violin-model=diffusers:PATH --violin-limit=12``, as a team runs it."""
    report = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"--violin-model=diffusers:{tiny_dirs['text2image']}?steps=2", "--violin-limit=12",
         "--violin-no-cache", f"--violin-report={report}", "--violin-concurrency=2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), output  # random weights fail the metrics, nothing else
    samples = json.loads((report / "results.json").read_text())["samples"]
    assert len(samples) == 12
    assert [s["id"] for s in samples if s["error"]] == []
    assert {"color", "shape", "mask"} <= {s["task"] for s in samples}
    for noise in ("Loading pipeline components", "it/s]", "accelerate", "INTERNALERROR", "FutureWarning",
                  "torchvision"):
        assert noise not in output
    seconds = sorted(s["seconds"] for s in samples)
    print(f"per-sample generation seconds (512x512, 2 steps): median {seconds[6]:.3f}, max {seconds[-1]:.3f}")


def test_device_without_hardware_is_a_usage_error_of_the_run(tiny_dirs, tmp_path):
    """``?device=cuda`` on a machine without a GPU: exit 4 and one line, no INTERNALERROR."""
    cuda = "cuda:999" if torch.cuda.is_available() else "cuda"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"--violin-model=diffusers:{tiny_dirs['text2image']}?device={cuda}", "--violin-limit=2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 4, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and f"device='{cuda}'" in errors[0]


def _run_report(tiny_dirs, tmp_path, name, query):
    report = tmp_path / name
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"--violin-model=diffusers:{tiny_dirs['text2image']}?steps=2{query}", "--violin-limit=12",
         "--violin-tasks=color,mask", "--violin-no-cache", f"--violin-report={report}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-2000:]
    samples = json.loads((report / "results.json").read_text())["samples"]
    return {s["sample_id"]: s for s in samples}


def test_a_batch_gives_each_sample_the_image_it_gets_alone(tiny_dirs, tmp_path):
    """``?batch=4`` against ``?batch=1``: a generator per request, so each sample's metrics agree
    (batched matrix products may differ in the last bits: within 1e-3)."""
    alone = _run_report(tiny_dirs, tmp_path, "alone", "")
    batched = _run_report(tiny_dirs, tmp_path, "batched", "&batch=4")
    assert alone.keys() == batched.keys() and len(alone) == 12
    assert {s["task"] for s in alone.values()} == {"color", "mask"}  # text-to-image and inpainting
    for sid, rec in alone.items():
        other = batched[sid]
        assert rec["error"] is None and other["error"] is None
        assert rec["outcome"] == other["outcome"], sid
        for metric, value in rec["metrics"].items():
            assert abs(value - other["metrics"][metric]) <= 1e-3, (sid, metric)
