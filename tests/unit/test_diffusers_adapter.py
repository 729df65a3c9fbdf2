"""diffusers:PATH_OR_ID: routing, argument and error logic with stand-in pipelines.

These tests need neither torch nor diffusers. The tests with real tiny
pipelines are in test_diffusers_pipeline.py.
"""

from __future__ import annotations

import sys
import threading
import types

import numpy as np
import pytest
from PIL import Image

from pytest_violin.errors import GenerationCancelled, GenerationError, ModelSpecError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
import pytest_violin.models.diffusers as diffusers_mod
from pytest_violin.models.diffusers import (INSTALL_HINT, DiffusersAdapter, build_pipelines,
                                            named_parameters, request_kind)

SOURCE = np.full((8, 16, 3), 120, np.uint8)
MASK = np.zeros((8, 16, 3), np.uint8)
MASK[:, :8] = 255  # white = keep


def req(task="color", images=(), seed=5):
    return GenerationRequest(prompt="a white circle", width=16, height=8, seed=seed,
                             sample_id="shape/circle/t01", task=task, images=tuple(images))


class FakeOutput:
    def __init__(self, images):
        self.images = images


class Recorder:
    """Base of the stand-in pipelines: records calls, checks they never overlap."""

    def __init__(self, fail=False, entered=None, release=None):
        self.calls = []
        self.fail = fail
        self.active = 0
        self.overlap = False
        self.entered = entered
        self.release = release
        self._guard = threading.Lock()

    def _run(self, **call):
        with self._guard:
            self.active += 1
            self.overlap |= self.active > 1
        if self.entered is not None:
            self.entered.set()
            assert self.release.wait(10)
        with self._guard:
            self.active -= 1
        if self.fail:
            raise RuntimeError("CUDA out of memory\nsecond line")
        self.calls.append(call)
        w, h = call.get("width") or 16, call.get("height") or 8
        return FakeOutput([Image.new("RGB", (w, h), (call["generator"] % 256, 0, 0))])


class Text2Image(Recorder):
    def __call__(self, prompt, width=512, height=512, generator=None, num_inference_steps=50,
                 guidance_scale=7.5, callback_on_step_end=None, **kwargs):
        if callback_on_step_end is not None:
            callback_on_step_end(self, 0, 999, {})
        return self._run(prompt=prompt, width=width, height=height, generator=generator,
                         steps=num_inference_steps, kwargs=kwargs)


class Image2Image(Recorder):
    def __call__(self, prompt, image=None, strength=0.8, generator=None, num_inference_steps=50, **kwargs):
        return self._run(prompt=prompt, image=image, strength=strength, generator=generator,
                         steps=num_inference_steps)


class Inpaint(Recorder):
    def __call__(self, prompt, image=None, mask_image=None, width=None, height=None, strength=1.0,
                 generator=None, num_inference_steps=50, **kwargs):
        return self._run(prompt=prompt, image=image, mask_image=mask_image, width=width, height=height,
                         strength=strength, generator=generator, steps=num_inference_steps)


def adapter(pipelines=None, **kw):
    if pipelines is None:
        pipelines = {"text2image": Text2Image(), "image2image": Image2Image(), "inpaint": Inpaint()}
    return DiffusersAdapter(pipelines, "diffusers:fake", make_generator=lambda seed: seed, **kw)


def test_module_imports_without_the_extra():
    import pytest_violin.models.diffusers as mod

    assert callable(mod.create)


def test_missing_extra_is_a_usage_error_with_install_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import fails as if not installed
    with pytest.raises(ModelSpecError) as info:
        resolve_model(f"diffusers:{tmp_path}", AdapterOptions(rootdir=tmp_path))
    assert INSTALL_HINT in str(info.value)


def test_empty_target_and_bad_dtype(tmp_path):
    with pytest.raises(ModelSpecError, match="no pipeline given"):
        resolve_model("diffusers:", AdapterOptions(rootdir=tmp_path))
    with pytest.raises(ModelSpecError, match="dtype='float8'"):
        resolve_model("diffusers:x?dtype=float8", AdapterOptions(rootdir=tmp_path))


def test_kwargs_is_not_a_named_parameter():
    def call(prompt, width=1, *args, generator=None, **kwargs):
        pass

    assert named_parameters(call) == {"prompt", "width", "generator"}
    assert named_parameters(Text2Image().__call__) >= {"prompt", "generator"}
    assert "image" not in named_parameters(Text2Image().__call__)


@pytest.mark.parametrize("task, images, kind", [
    ("color", (), "text2image"),
    ("shape", (), "text2image"),
    ("color", (SOURCE,), "image2image"),
    ("mask", (SOURCE, MASK), "inpaint"),
])
def test_request_kind(task, images, kind):
    assert request_kind(req(task=task, images=images)) == kind


@pytest.mark.parametrize("task, images", [("mask", (SOURCE,)), ("mask", ()), ("color", (SOURCE, MASK))])
def test_input_images_that_cannot_be_used_fail_the_sample(task, images):
    with pytest.raises(GenerationError, match="input images") as info:
        request_kind(req(task=task, images=images))
    assert "\n" not in str(info.value)


def test_text_request_goes_to_text2image_with_seeded_generator():
    a = adapter(call_kwargs={"num_inference_steps": 3})
    out = a.generate(req(seed=77))
    assert out.shape == (8, 16, 3) and out.dtype == np.uint8 and out[0, 0, 0] == 77
    call = a.pipelines["text2image"].calls[0]
    assert (call["prompt"], call["width"], call["height"], call["steps"]) == ("a white circle", 16, 8, 3)
    assert call["kwargs"] == {}
    assert not a.pipelines["image2image"].calls and not a.pipelines["inpaint"].calls
    assert a.cacheable is True and a.max_concurrency == 1


def test_mask_request_goes_to_inpaint_with_source_and_inverted_mask():
    a = adapter()
    a.generate(req(task="mask", images=(SOURCE, MASK)))
    assert not a.pipelines["text2image"].calls
    call = a.pipelines["inpaint"].calls[0]
    assert np.array_equal(np.asarray(call["image"]), SOURCE)
    inverted = np.asarray(call["mask_image"])
    assert inverted.ndim == 2 and (inverted[:, :8] == 0).all() and (inverted[:, 8:] == 255).all()
    assert (call["width"], call["height"]) == (16, 8)


def test_image_request_goes_to_image2image_without_size_it_does_not_name():
    a = adapter(call_kwargs={"strength": 0.6, "guidance_scale": 3})
    a.generate(req(task="color", images=(SOURCE,)))
    call = a.pipelines["image2image"].calls[0]
    assert np.array_equal(np.asarray(call["image"]), SOURCE) and call["strength"] == 0.6
    kwargs = a.call_arguments(req(task="color", images=(SOURCE,)))
    assert "width" not in kwargs and "guidance_scale" not in kwargs  # Image2Image names neither
    assert "strength" not in a.call_arguments(req())  # Text2Image does not name it


def test_folder_without_inpainting_fails_mask_samples_with_one_line():
    a = adapter({"text2image": Text2Image(), "inpaint": "AutoPipelineForInpainting has none for X"},
                source="XPipeline")
    with pytest.raises(GenerationError) as info:
        a.generate(req(task="mask", images=(SOURCE, MASK)))
    text = str(info.value)
    assert "\n" not in text and "an inpainting pipeline" in text and "XPipeline" in text
    assert not a.pipelines["text2image"].calls  # never a fallback to text-to-image
    with pytest.raises(GenerationError, match="an image-to-image pipeline"):
        a.generate(req(images=(SOURCE,)))


def test_folder_without_text2image_fails_text_samples_with_one_line():
    a = adapter({"inpaint": Inpaint(), "text2image": "an inpainting checkpoint"}, source="SDInpaint")
    with pytest.raises(GenerationError, match="text-only samples need a text-to-image pipeline"):
        a.generate(req())
    assert not a.pipelines["inpaint"].calls


def test_unknown_and_per_request_parameters_are_usage_errors():
    with pytest.raises(ModelSpecError, match="'sampler'.*accepted: steps, .*guidance_scale"):
        adapter(call_kwargs={"sampler": "ddim"})
    with pytest.raises(ModelSpecError, match="'image' is set by the adapter"):
        adapter(call_kwargs={"image": "x.png"})
    with pytest.raises(ModelSpecError, match="serves none of"):
        adapter({"text2image": "no", "inpaint": "no"}, source="WanPipeline")


def _fake_diffusers(t2i, i2i, inp):
    def auto(result):
        def from_pipe(pipe):
            if isinstance(result, Exception):
                raise result
            return result
        return types.SimpleNamespace(from_pipe=from_pipe)

    return types.SimpleNamespace(AutoPipelineForText2Image=auto(t2i), AutoPipelineForImage2Image=auto(i2i),
                                 AutoPipelineForInpainting=auto(inp))


def test_build_pipelines_judges_by_named_parameters_not_kwargs():
    # an "inpainting" pipeline whose __call__ only takes the images through **kwargs
    fake = _fake_diffusers(Text2Image(), Image2Image(), Text2Image())
    built = build_pipelines(Text2Image(), fake)
    assert isinstance(built["text2image"], Text2Image) and isinstance(built["image2image"], Image2Image)
    assert built["inpaint"] == "Text2Image.__call__ does not name image=, mask_image="


def test_build_pipelines_keeps_the_from_pipe_error_as_the_reason(monkeypatch):
    monkeypatch.setattr(diffusers_mod, "_mapped", lambda pipe: True)  # a class diffusers knows
    fake = _fake_diffusers(Text2Image(), ValueError("AutoPipeline can't find\na pipeline"), Inpaint())
    built = build_pipelines(Text2Image(), fake)
    assert built["image2image"].startswith("AutoPipelineForImage2Image.from_pipe(Text2Image) failed: ")
    assert "\n" not in built["image2image"]


def test_build_pipelines_uses_an_unmapped_pipeline_for_the_kinds_it_names(monkeypatch):
    monkeypatch.setattr(diffusers_mod, "_mapped", lambda pipe: False)  # a custom pipeline class
    no_link = ValueError("AutoPipeline can't find a pipeline linked to Inpaint for None")
    pipe = Inpaint()
    built = build_pipelines(pipe, _fake_diffusers(no_link, no_link, no_link))
    assert built["inpaint"] is pipe and built["image2image"] is pipe
    assert built["text2image"] is pipe  # image= has a default: it can draw from text
    text_only = Text2Image()
    built = build_pipelines(text_only, _fake_diffusers(no_link, no_link, no_link))
    assert built["text2image"] is text_only
    assert built["inpaint"] == "Text2Image.__call__ does not name image=, mask_image="


def test_calls_are_serialised_and_failures_explained():
    entered, release = threading.Event(), threading.Event()
    pipe = Text2Image(entered=entered, release=release)
    a = adapter({"text2image": pipe})
    threads = [threading.Thread(target=a.generate, args=(req(seed=i),)) for i in range(4)]
    for t in threads:
        t.start()
    assert entered.wait(10)
    release.set()
    for t in threads:
        t.join()
    assert len(pipe.calls) == 4 and not pipe.overlap
    failing = adapter({"text2image": Text2Image(fail=True)})
    with pytest.raises(GenerationError) as info:
        failing.generate(req())
    assert "RuntimeError: CUDA out of memory second line" in str(info.value)
    assert "\n" not in str(info.value)


def test_cancel_stops_before_and_during_a_generation():
    cancel = threading.Event()
    a = adapter(cancel=cancel)
    assert a.call_arguments(req())["callback_on_step_end"] is not None
    cancel.set()
    with pytest.raises(GenerationCancelled):
        a.generate(req())  # refused before the call
    with pytest.raises(GenerationCancelled):
        a.pipelines["text2image"](**a.call_arguments(req()))  # the step callback stops a running one
    assert not a.pipelines["text2image"].calls
