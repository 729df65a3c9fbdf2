"""a1111:URL against a local server speaking the /sdapi/v1 API."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from pytest_violin.errors import GenerationError, ModelSpecError
from pytest_violin.imaging import decode_image
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model

from _servers import FaultServer, Reply, png_bytes, solid

IMG = solid(12, 8, (0, 0, 0))


def req(images=(), task="color"):
    return GenerationRequest(prompt="top half violet, bottom half black", width=12, height=8,
                             seed=99, sample_id="color/v2/x/t01", task=task, images=tuple(images))


def answer(image, prefix=""):
    return Reply.json({"images": [prefix + base64.b64encode(png_bytes(image)).decode()],
                       "parameters": {}, "info": "{}"})


def opts(tmp_path, **kw):
    kw.setdefault("retries", 0)
    return AdapterOptions(rootdir=tmp_path, **kw)


def test_txt2img(tmp_path):
    with FaultServer([answer(IMG)]) as server:
        adapter = resolve_model(f"a1111:{server.url}", opts(tmp_path))
        out = adapter.generate(req())
        adapter.close()
    assert np.array_equal(out, IMG)
    sent = server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/sdapi/v1/txt2img")
    assert sent.json() == {
        "prompt": "top half violet, bottom half black", "negative_prompt": "", "width": 12,
        "height": 8, "seed": 99, "batch_size": 1, "n_iter": 1, "send_images": True,
        "save_images": False,
    }
    assert adapter.identity == f"a1111:{server.url}"


def test_img2img_with_mask_and_typed_params(tmp_path):
    source = solid(12, 8, (50, 60, 70))
    mask = np.full((8, 12, 3), 255, np.uint8)
    mask[:, :6] = 0
    with FaultServer([answer(IMG, prefix="data:image/png;base64,")]) as server:
        adapter = resolve_model(f"a1111:{server.url}/?steps=20&cfg_scale=7.5&sampler_name=Euler",
                                opts(tmp_path))
        out = adapter.generate(req(images=(source, mask), task="mask"))
        adapter.close()
    assert np.array_equal(out, IMG)
    sent = server.requests[0]
    assert sent.path == "/sdapi/v1/img2img"
    body = sent.json()
    assert body["steps"] == 20 and body["cfg_scale"] == 7.5 and body["sampler_name"] == "Euler"
    assert np.array_equal(decode_image(base64.b64decode(body["init_images"][0])), source)
    assert np.array_equal(decode_image(base64.b64decode(body["mask"])), mask)
    assert body["inpainting_mask_invert"] == 1
    assert adapter.identity == f"a1111:{server.url}?cfg_scale=7.5&sampler_name=Euler&steps=20"


def test_mask_can_be_switched_off(tmp_path):
    source = solid(12, 8)
    with FaultServer([answer(IMG)]) as server:
        adapter = resolve_model(f"a1111:{server.url}?mask=off", opts(tmp_path))
        adapter.generate(req(images=(source, source), task="mask"))
        adapter.close()
    body = server.requests[0].json()
    assert "mask" not in body and "inpainting_mask_invert" not in body
    assert len(body["init_images"]) == 1
    assert "mask=off" in adapter.identity


def test_basic_auth_from_url_is_sent_but_not_shown(tmp_path):
    with FaultServer([answer(IMG)]) as server:
        url = server.url.replace("http://", "http://webui:hunter2-secret@")
        adapter = resolve_model(f"a1111:{url}", opts(tmp_path))
        adapter.generate(req())
        adapter.close()
    assert server.requests[0].headers["Authorization"] == "Basic " + base64.b64encode(
        b"webui:hunter2-secret").decode()
    assert "hunter2" not in adapter.identity and "webui" not in adapter.identity


def test_answer_without_images(tmp_path):
    with FaultServer([Reply.json({"images": [], "info": "nothing"})]) as server:
        adapter = resolve_model(f"a1111:{server.url}", opts(tmp_path))
        with pytest.raises(GenerationError, match=r"images\[0\]"):
            adapter.generate(req())
        adapter.close()


@pytest.mark.parametrize("spec, needle", [
    ("a1111:", "no URL given"),
    ("a1111:localhost:7860", "not an http:// or https:// URL"),
    ("a1111:http://127.0.0.1:7860?mask=sometimes", "not a switch"),
])
def test_bad_specs(tmp_path, spec, needle):
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model(spec, opts(tmp_path))
