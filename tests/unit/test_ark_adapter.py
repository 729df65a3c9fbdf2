"""ark:MODEL against a local server that follows ModelArk's images/generations API.

The fake server checks what the public docs say a Seedream request looks
like (``POST /api/v3/images/generations``, ``Authorization: Bearer``,
``model``, ``prompt``, ``size`` as ``WxH`` inside the model's pixel range,
``response_format`` ``b64_json``, ``seed``, ``watermark``, reference images
in ``image`` as base64 data URIs) and answers like the API: ``data[0].b64_json``,
an ``error`` body with a ``code`` (``InputTextSensitiveContentDetected`` ...),
or a per-image ``data[0].error``.
"""

from __future__ import annotations

import base64
import json
import re

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests

from pytest_violin.errors import GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.imaging import encode_png
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models.ark import size_for
from pytest_violin.suite import load_suite

from _servers import FaultServer, Reply, png_bytes, sample_key, secret_forms, solid

KEY = "ark-test-key-3b9e51c07d2a46f8"
MODEL = "seedream-4-0-250828"
IMG = solid(16, 16, (10, 200, 10))
#: total pixels of ``size`` for Seedream 4.0 in the docs: [1280x720, 4096x4096]
RANGE_4_0 = (1280 * 720, 4096 * 4096)

requests.Session().close()  # the HTTP stack is imported before pytester snapshots sys.modules


def req(images=(), width=512, height=512, prompt="a pure green image"):
    return GenerationRequest(prompt=prompt, width=width, height=height, seed=42,
                             sample_id="color/v1/green/t01", task="color", images=tuple(images))


def opts(tmp_path, **kw):
    return AdapterOptions(rootdir=tmp_path, retries=kw.pop("retries", 0), **kw)


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("ARK_API_KEY", KEY)
    monkeypatch.delenv("ARK_BASE_URL", raising=False)
    return monkeypatch


# ------------------------------------------------------------------ the fake API


def b64_answer(image):
    return {"model": MODEL, "created": 1757469561,
            "data": [{"b64_json": base64.b64encode(png_bytes(image)).decode(), "size": "2048x2048"}],
            "usage": {"generated_images": 1, "output_tokens": 16384, "total_tokens": 16384}}


def ark_error(status, code, message):
    return Reply(status, {"error": {"code": code, "message": f"{message} Request ID: 0217xyz",
                                    "param": "", "type": "BadRequest"}})


def data_uri_png(uri: str) -> bytes:
    head, _, data = uri.partition(",")
    assert head == "data:image/png;base64"
    return base64.b64decode(data)


def check_request(rec) -> dict | Reply:
    """The JSON body of a well-formed request, or the error the API would give."""
    if rec.method != "POST" or rec.path != "/api/v3/images/generations":
        return ark_error(404, "NotFound", f"no such path {rec.path}")
    if rec.headers.get("Authorization") != f"Bearer {KEY}":
        return ark_error(401, "AuthenticationError", "The API key in the request is missing or invalid.")
    body = rec.json()
    match = re.fullmatch(r"(\d+)x(\d+)", body.get("size", ""))
    if not match or not RANGE_4_0[0] <= int(match[1]) * int(match[2]) <= RANGE_4_0[1]:
        return ark_error(400, "InvalidParameter", f"size {body.get('size')!r} is out of range")
    if body.get("response_format") != "b64_json" or body.get("watermark") is not False:
        return ark_error(400, "InvalidParameter", "unexpected response_format or watermark")
    if not isinstance(body.get("seed"), int) or body.get("model") != MODEL:
        return ark_error(400, "InvalidParameter", "bad seed or model")
    images = body.get("image", [])
    for uri in [images] if isinstance(images, str) else images:
        assert data_uri_png(uri).startswith(b"\x89PNG")
    return body


# ------------------------------------------------------------------ unit tests


def test_request_shape_and_b64_answer(tmp_path, env):
    with FaultServer([Reply.json(b64_answer(IMG))]) as server:
        env.setenv("ARK_BASE_URL", server.url + "/api/v3")
        adapter = resolve_model(f"ark:{MODEL}", opts(tmp_path))
        image = adapter.generate(req(width=1024, height=512))
        adapter.close()
    assert image.shape == (16, 16, 3) and tuple(image[0, 0]) == (10, 200, 10)
    body = check_request(server.requests[0])
    assert body == {"model": MODEL, "prompt": "a pure green image", "size": size_for(MODEL, 1024, 512),
                    "response_format": "b64_json", "seed": 42, "watermark": False}
    w, h = map(int, body["size"].split("x"))
    assert abs(w / h - 2) < 0.01
    assert KEY not in adapter.identity and MODEL in adapter.identity


def test_reference_images_are_data_uris_in_order(tmp_path, env):
    source, mask = solid(8, 8, (1, 2, 3)), solid(8, 8, (255, 255, 255))
    with FaultServer([Reply.json(b64_answer(IMG)), Reply.json(b64_answer(IMG))]) as server:
        env.setenv("ARK_BASE_URL", server.url + "/api/v3")
        adapter = resolve_model(f"ark:{MODEL}", opts(tmp_path))
        adapter.generate(req(images=(source, mask)))
        adapter.generate(req(images=(source,)))
    two, one = (check_request(r) for r in server.requests)
    assert [data_uri_png(u) for u in two["image"]] == [png_bytes(source), png_bytes(mask)]
    assert data_uri_png(one["image"]) == png_bytes(source)


def test_url_answer_is_downloaded_without_the_key(tmp_path, env):
    with FaultServer() as files, FaultServer() as api:
        files.handler = lambda rec: Reply.png(IMG)
        api.handler = lambda rec: Reply.json({"data": [{"url": f"{files.url}/out.jpeg?X-Tos-Signature=abc"}]})
        env.setenv("ARK_BASE_URL", api.url + "/api/v3")
        resolve_model(f"ark:{MODEL}", opts(tmp_path)).generate(req())
    assert api.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert "Authorization" not in files.requests[0].headers


@pytest.mark.parametrize("reply", [
    ark_error(400, "InputTextSensitiveContentDetected",
              "The request failed because the input text may contain sensitive information."),
    ark_error(400, "InputImageSensitiveContentDetected",
              "The request failed because the input image may contain sensitive information."),
    Reply.json({"model": MODEL, "created": 1, "data": [{"error": {
        "code": "OutputImageSensitiveContentDetected",
        "message": "The request failed because the output image may contain sensitive information."}}]}),
])
def test_content_safety_answers_are_refusals_never_retried(tmp_path, env, reply):
    with FaultServer(default=reply) as server:
        env.setenv("ARK_BASE_URL", server.url + "/api/v3")
        adapter = resolve_model(f"ark:{MODEL}", opts(tmp_path, retries=3))
        with pytest.raises(GenerationRefused, match="SensitiveContentDetected"):
            adapter.generate(req())
    assert len(server.requests) == 1


@pytest.mark.parametrize("model, images, needle", [
    ("doubao-seedream-3-0-t2i-250415", 1, "at most 0 input images"),
    ("doubao-seededit-3-0-i2i-250628", 2, "at most 1 input image,"),
])
def test_inputs_a_model_cannot_take_fail_the_sample_without_a_call(tmp_path, env, model, images, needle):
    with FaultServer() as server:
        env.setenv("ARK_BASE_URL", server.url + "/api/v3")
        adapter = resolve_model(f"ark:{model}", opts(tmp_path))
        with pytest.raises(GenerationError, match=needle) as info:
            adapter.generate(req(images=[IMG] * images))
    assert "\n" not in str(info.value) and not server.requests


@pytest.mark.parametrize("model, w, h, size", [
    ("seedream-4-0-250828", 512, 512, "960x960"),
    ("doubao-seedream-3-0-t2i-250415", 512, 512, "512x512"),
    ("doubao-seedream-3-0-t2i-250415", 4096, 4096, "2048x2048"),
    ("seedream-4-5-251128", 512, 512, "1920x1920"),
    ("seedream-5-0-260128", 1024, 512, "2716x1358"),
    ("my-endpoint-ep-2025", 640, 480, "640x480"),
])
def test_size_is_scaled_into_the_model_range(model, w, h, size):
    assert size_for(model, w, h) == size


def test_size_parameter_overrides_and_extra_fields_are_sent(tmp_path, env):
    with FaultServer([Reply.json(b64_answer(IMG))]) as server:
        env.setenv("ARK_BASE_URL", server.url + "/api/v3")
        resolve_model(f"ark:{MODEL}?size=2k&guidance_scale=5.5", opts(tmp_path)).generate(req())
    body = server.requests[0].json()
    assert body["size"] == "2K" and body["guidance_scale"] == 5.5


def test_seed_off_leaves_the_seed_out(tmp_path, env):
    with FaultServer([Reply.json(b64_answer(IMG))]) as server:
        env.setenv("ARK_BASE_URL", server.url + "/api/v3")
        adapter = resolve_model(f"ark:{MODEL}?seed=off", opts(tmp_path))
        adapter.generate(req())
    assert "seed" not in server.requests[0].json() and "seed=off" in adapter.identity

@pytest.mark.parametrize("spec, needle", [
    ("ark:", "model name"),
    ("ark: x y", "model name"),
    (f"ark:{MODEL}?size=huge", "size"),
    (f"ark:{MODEL}?response_format=url", "response_format"),
    (f"ark:{MODEL}?image=x", "image"),
    (f"ark:{MODEL}?seed=7", "seed"),
])
def test_bad_specs_are_usage_errors(tmp_path, env, spec, needle):
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model(spec, opts(tmp_path))


# ------------------------------------------------------------------ end to end


def test_end_to_end_20_samples_with_refusal_failure_slow_and_429(pytester, monkeypatch):
    samples = load_suite("violin", tasks=("color", "shape", "mask"), limit=20)
    keys = {s.id: sample_key(s.prompt, [encode_png(img) for img in s.inputs]) for s in samples}
    expected = {keys[s.id]: s.expected() for s in samples}
    text_ids = [s.id for s in samples if not s.inputs]
    mask_ids = [s.id for s in samples if s.task == "mask"]
    assert len(samples) == 20 and len(mask_ids) >= 3 and len(set(keys.values())) == 20
    plan_ids = {text_ids[0]: "input_refused", mask_ids[0]: "output_refused", text_ids[1]: "fail",
                mask_ids[1]: "slow", text_ids[2]: "429"}
    plan = {keys[i]: kind for i, kind in plan_ids.items()}
    seen_429 = set()

    def handler(rec):
        body = check_request(rec)
        if isinstance(body, Reply):
            return body
        images = body.get("image", [])
        images = [images] if isinstance(images, str) else images
        key = sample_key(body["prompt"], [data_uri_png(u) for u in images])
        kind = plan.get(key)
        if kind == "input_refused":
            return ark_error(400, "InputTextSensitiveContentDetected",
                             "The request failed because the input text may contain sensitive information.")
        if kind == "output_refused":
            return Reply.json({"model": MODEL, "created": 1, "data": [{"error": {
                "code": "OutputImageSensitiveContentDetected",
                "message": "The request failed because the output image may contain sensitive information."}}]})
        if kind == "fail":
            return ark_error(500, "InternalServiceError", f"The service encountered an unexpected internal error; key {KEY}")
        if kind == "429" and key not in seen_429:
            seen_429.add(key)
            return Reply(429, {"error": {"code": "RateLimitExceeded.EndpointRPMExceeded",
                                         "message": "Request Per Minute exceeded", "type": "TooManyRequests"}},
                         headers={"Retry-After": "0"})
        if key not in expected:
            return ark_error(400, "InvalidParameter", "unknown request")
        return Reply.json(b64_answer(expected[key]), delay=0.3 if kind == "slow" else 0.0)

    with FaultServer(handler=handler) as server:
        monkeypatch.setenv("ARK_API_KEY", KEY)
        monkeypatch.setenv("ARK_BASE_URL", server.url + "/api/v3")
        result = pytester.runpytest(
            f"--violin-model=ark:{MODEL}", "--violin-tasks=color,shape,mask", "--violin-limit=20",
            "--violin-retries=1", "--violin-timeout=20", "--violin-concurrency=4",
            "--violin-report=report", "--junitxml=junit.xml", "-p", "no:randomly", "-p", "no:cacheprovider",
            "-rA",
        )
    doc = json.loads((pytester.path / "report" / "results.json").read_text())
    outcomes = {rec["sample_id"]: rec["outcome"] for rec in doc["samples"]}
    assert set(outcomes) == set(keys), result.stdout.str()[-3000:]
    want = {i: {"input_refused": "refused", "output_refused": "refused", "fail": "failed"}.get(kind, "passed")
            for i, kind in plan_ids.items()}
    assert {i: outcomes[i] for i in plan_ids} == want
    assert all(outcomes[i] == "passed" for i in keys if i not in plan_ids), outcomes
    assert doc["metadata"]["refused"] == 2
    assert len(server.requests) == 22  # 20 samples, one retry after the 429, one after the 500
    texts = [result.stdout.str(), result.stderr.str()]
    texts += [p.read_text("latin-1") for p in pytester.path.rglob("*") if p.is_file()]
    assert any("unexpected internal error" in t for t in texts)
    leaks = [f for t in texts for f in secret_forms(KEY) if f in t]
    assert not leaks
