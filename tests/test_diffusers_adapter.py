"""diffusers:PATH_OR_ID: importable without the extra, tested offline.

torch and diffusers are an optional extra and are not installed by the
tests or CI; the test with a real (tiny, randomly initialised) pipeline is
skipped without them. The adapter's own logic is tested with a stand-in
pipeline object.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import time

import numpy as np
import pytest
from PIL import Image

from pytest_violin.errors import GenerationError, ModelSpecError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models.diffusers import INSTALL_HINT, DiffusersAdapter

HAVE_BACKEND = all(importlib.util.find_spec(m) is not None for m in ("torch", "diffusers", "transformers"))


def req(task="color", images=(), seed=5):
    return GenerationRequest(prompt="a white circle", width=16, height=8, seed=seed,
                             sample_id="shape/circle/t01", task=task, images=tuple(images))


class FakeOutput:
    def __init__(self, images):
        self.images = images


class FakePipeline:
    """Called like a diffusers inpainting pipeline; records its calls."""

    def __init__(self, fail=False):
        self.calls = []
        self.fail = fail
        self.active = 0
        self.overlap = False
        self._lock = threading.Lock()

    def __call__(self, prompt, width=512, height=512, generator=None, num_inference_steps=50,
                 image=None, mask_image=None):
        with self._lock:
            self.active += 1
            self.overlap |= self.active > 1
        time.sleep(0.01)
        with self._lock:
            self.active -= 1
        if self.fail:
            raise RuntimeError("CUDA out of memory")
        self.calls.append(dict(prompt=prompt, width=width, height=height, generator=generator,
                               steps=num_inference_steps, image=image, mask_image=mask_image))
        return FakeOutput([Image.new("RGB", (width, height), (generator % 256, 0, 0))])


class TextOnlyPipeline:
    def __call__(self, prompt, width, height, generator=None):
        return FakeOutput([np.zeros((height, width, 3), np.float32)])


def test_module_imports_without_the_extra():
    import pytest_violin.models.diffusers as mod

    assert callable(mod.create)


@pytest.mark.skipif(HAVE_BACKEND, reason="torch/diffusers installed: the install hint is not shown")
def test_missing_extra_is_a_usage_error_with_install_hint(tmp_path):
    with pytest.raises(ModelSpecError) as info:
        resolve_model(f"diffusers:{tmp_path}", AdapterOptions(rootdir=tmp_path))
    assert INSTALL_HINT in str(info.value)


def test_empty_target_and_bad_dtype(tmp_path):
    with pytest.raises(ModelSpecError, match="no pipeline given"):
        resolve_model("diffusers:", AdapterOptions(rootdir=tmp_path))
    with pytest.raises(ModelSpecError, match="dtype='float8'"):
        resolve_model("diffusers:x?dtype=float8", AdapterOptions(rootdir=tmp_path))


def test_text_request_with_seeded_generator():
    pipe = FakePipeline()
    adapter = DiffusersAdapter(pipe, "diffusers:fake", make_generator=lambda seed: seed,
                               call_kwargs={"num_inference_steps": 3})
    out = adapter.generate(req(seed=77))
    assert out.shape == (8, 16, 3) and out.dtype == np.uint8 and out[0, 0, 0] == 77
    call = pipe.calls[0]
    assert (call["prompt"], call["width"], call["height"], call["steps"]) == ("a white circle", 16, 8, 3)
    assert call["image"] is None and call["mask_image"] is None
    assert adapter.cacheable is True


def test_mask_task_passes_source_and_inverted_mask():
    pipe = FakePipeline()
    source = np.full((8, 16, 3), 120, np.uint8)
    mask = np.zeros((8, 16, 3), np.uint8)
    mask[:, :8] = 255  # white = keep
    adapter = DiffusersAdapter(pipe, "diffusers:fake", make_generator=lambda seed: seed)
    adapter.generate(req(task="mask", images=(source, mask)))
    call = pipe.calls[0]
    assert np.array_equal(np.asarray(call["image"]), source)
    inverted = np.asarray(call["mask_image"])
    assert (inverted[:, :8] == 0).all() and (inverted[:, 8:] == 255).all()  # white = repaint


def test_pipeline_without_image_argument_gets_prompt_only():
    adapter = DiffusersAdapter(TextOnlyPipeline(), "diffusers:t", make_generator=lambda s: s)
    out = adapter.generate(req(task="mask", images=(np.zeros((8, 16, 3), np.uint8),) * 2))
    assert out.shape == (8, 16, 3)


def test_calls_are_serialised_and_failures_explained():
    pipe = FakePipeline()
    adapter = DiffusersAdapter(pipe, "diffusers:fake", make_generator=lambda s: s)
    threads = [threading.Thread(target=adapter.generate, args=(req(seed=i),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(pipe.calls) == 4 and not pipe.overlap
    failing = DiffusersAdapter(FakePipeline(fail=True), "diffusers:bad", make_generator=lambda s: s)
    with pytest.raises(GenerationError, match="diffusers pipeline failed: RuntimeError: CUDA out of memory"):
        failing.generate(req())


def _tiny_pipeline_dir(root):
    """A randomly initialised, tiny Stable Diffusion pipeline saved to disk (no downloads)."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
        norm_num_groups=4, attention_head_dim=2,
    )
    vae = AutoencoderKL(
        block_out_channels=(8, 16), in_channels=3, out_channels=3, latent_channels=4,
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        norm_num_groups=4,
    )
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1, "!": 2}
    for ch in letters:
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    (root / "tok").mkdir()
    (root / "tok" / "vocab.json").write_text(json.dumps(vocab))
    (root / "tok" / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(root / "tok" / "vocab.json"), str(root / "tok" / "merges.txt"))
    text_encoder = CLIPTextModel(CLIPTextConfig(
        bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_size=16, intermediate_size=16,
        num_attention_heads=2, num_hidden_layers=1, vocab_size=len(vocab), projection_dim=16,
    ))
    pipe = StableDiffusionPipeline(
        unet=unet, vae=vae, text_encoder=text_encoder, tokenizer=tokenizer,
        scheduler=DDIMScheduler(), safety_checker=None, feature_extractor=None,
        requires_safety_checker=False,
    )
    path = root / "tiny-sd"
    pipe.save_pretrained(path)
    return path


@pytest.mark.skipif(not HAVE_BACKEND, reason="optional extra 'diffusers' (torch) not installed")
def test_tiny_random_pipeline_end_to_end(tmp_path):
    path = _tiny_pipeline_dir(tmp_path)
    adapter = resolve_model(f"diffusers:{path}?steps=2", AdapterOptions(rootdir=tmp_path))
    request = GenerationRequest(prompt="a white circle", width=32, height=32, seed=3,
                                sample_id="s/1", task="shape")
    a = adapter.generate(request)
    b = adapter.generate(request)
    adapter.close()
    assert a.shape == (32, 32, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)  # same seed, same image
    assert adapter.identity == f"diffusers:{path.resolve()}?num_inference_steps=2"
