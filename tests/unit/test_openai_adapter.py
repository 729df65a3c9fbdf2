"""openai:MODEL against a local OpenAI-compatible server."""

from __future__ import annotations

import base64
import email.parser
import email.policy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.errors import ModelSpecError
from pytest_violin.imaging import decode_image
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models.openai import MODEL_SIZES, nearest_size

from _servers import FaultServer, Reply, png_bytes, solid

KEY = "sk-test-0123456789abcdefXYZ"
IMG = solid(16, 16, (200, 10, 10))


def req(images=(), width=512, height=512, task="color"):
    return GenerationRequest(prompt="a pure red image", width=width, height=height, seed=42,
                             sample_id="color/v1/red/t01", task=task, images=tuple(images))


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return monkeypatch


def b64json(image):
    return {"created": 1, "data": [{"b64_json": base64.b64encode(png_bytes(image)).decode()}]}


def opts(tmp_path, **kw):
    return AdapterOptions(rootdir=tmp_path, retries=0, **kw)


def parse_multipart(recorded):
    ctype = recorded.headers["Content-Type"]
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + recorded.body
    )
    parts = []
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts.append((name, part.get_payload(decode=True), part.get_content_type()))
    return parts


def test_generation_request_and_b64_answer(tmp_path, env):
    with FaultServer([Reply.json(b64json(IMG))]) as server:
        env.setenv("OPENAI_BASE_URL", server.url + "/v1")
        adapter = resolve_model("openai:gpt-image-1", opts(tmp_path))
        out = adapter.generate(req(width=512, height=256))
        adapter.close()
    assert np.array_equal(out, IMG)  # 16x16 back for a 512x256 request: the scorer resizes
    sent = server.requests[0]
    assert sent.path == "/v1/images/generations"
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    # a local OpenAI-compatible server gets the seed by default
    assert sent.json() == {"model": "gpt-image-1", "prompt": "a pure red image", "n": 1,
                           "size": "1536x1024", "seed": 42}
    assert adapter.identity == f"openai:gpt-image-1@{server.url}/v1"
    assert KEY not in adapter.identity


def test_url_answer_is_fetched_with_the_same_session(tmp_path, env):
    with FaultServer(routes={"/files/a.png": Reply.png(IMG)}) as server:
        server.push(Reply.json({"data": [{"url": server.url + "/files/a.png"}]}))
        env.setenv("OPENAI_BASE_URL", server.url + "/v1/")
        adapter = resolve_model("openai:dall-e-3", opts(tmp_path))
        out = adapter.generate(req(width=300, height=600))
        adapter.close()
    assert np.array_equal(out, IMG)
    assert server.requests[0].json()["size"] == "1024x1792"
    assert server.requests[1].method == "GET"
    assert server.requests[1].headers["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "suffix, extra, expect_seed",
    [("?seed=off", {}, False), ("", {"openai_seed": False}, False), ("?seed=on", {}, True), ("", {}, True)],
)
def test_seed_switch(tmp_path, env, suffix, extra, expect_seed):
    with FaultServer([Reply.json(b64json(IMG))]) as server:
        env.setenv("OPENAI_BASE_URL", server.url + "/v1")
        adapter = resolve_model("openai:my-model" + suffix, opts(tmp_path, extra=extra))
        adapter.generate(req(width=100, height=60))
        adapter.close()
    body = server.requests[0].json()
    assert ("seed" in body) is expect_seed
    assert body["size"] == "100x60"  # unknown model: the requested size


def test_public_api_gets_no_seed_by_default(tmp_path, env):
    adapter = resolve_model("openai:gpt-image-1?quality=low", opts(tmp_path))
    body = adapter.generation_body(req())
    adapter.close()
    assert "seed" not in body and body["quality"] == "low"
    assert adapter.identity == "openai:gpt-image-1@https://api.openai.com/v1?quality=low"


def test_edit_request_is_multipart_with_image_parts(tmp_path, env):
    source = solid(8, 8, (1, 2, 3))
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[:4] = 255
    with FaultServer([Reply.json(b64json(IMG))]) as server:
        env.setenv("OPENAI_BASE_URL", server.url + "/v1")
        adapter = resolve_model("openai:gpt-image-1?seed=off", opts(tmp_path))
        out = adapter.generate(req(images=(source, mask), width=8, height=8, task="mask"))
        adapter.close()
    assert np.array_equal(out, IMG)
    sent = server.requests[0]
    assert sent.path == "/v1/images/edits"
    assert sent.headers["Content-Type"].startswith("multipart/form-data")
    parts = parse_multipart(sent)
    fields = {name: payload.decode() for name, payload, ctype in parts if name != "image[]"}
    assert fields == {"model": "gpt-image-1", "prompt": "a pure red image", "n": "1", "size": "1024x1024"}
    images = [payload for name, payload, ctype in parts if name == "image[]"]
    assert [ctype for name, _, ctype in parts if name == "image[]"] == ["image/png", "image/png"]
    assert np.array_equal(decode_image(images[0]), source)
    assert np.array_equal(decode_image(images[1]), mask)

@pytest.mark.parametrize(
    "spec, base, needle",
    [
        ("openai:", None, "no model given"),
        ("openai:gpt-image-1?seed=maybe", None, "not a switch"),
        ("openai:gpt-image-1", "ftp://example", "OPENAI_BASE_URL"),
        ("openai:gpt-image-1?a=1&a=2", None, "given twice"),
    ],
)
def test_bad_specs(tmp_path, env, spec, base, needle):
    if base:
        env.setenv("OPENAI_BASE_URL", base)
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model(spec, opts(tmp_path))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(MODEL_SIZES)), st.integers(16, 4096), st.integers(16, 4096))
def test_nearest_size_is_accepted_and_keeps_orientation(model, w, h):
    size = nearest_size(model, w, h)
    assert size in MODEL_SIZES[model]
    sizes = MODEL_SIZES[model]
    if any(a > b for a, b in sizes) and any(a < b for a, b in sizes):
        # models with landscape and portrait sizes keep a clear (2:1 or more) orientation
        if w > 2 * h:
            assert size[0] > size[1]
        if h > 2 * w:
            assert size[1] > size[0]


def test_nearest_size_examples():
    assert nearest_size("gpt-image-1", 512, 512) == (1024, 1024)
    assert nearest_size("gpt-image-1", 1024, 512) == (1536, 1024)
    assert nearest_size("dall-e-2", 600, 600) == (512, 512)
    assert nearest_size("dall-e-2", 2000, 2000) == (1024, 1024)
    assert nearest_size("some-new-model", 640, 480) == (640, 480)
