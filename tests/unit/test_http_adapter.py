"""The generic http(s):// adapter against a real server on 127.0.0.1."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.models._transport.answers import parse_response_path
from pytest_violin.models._transport.client import HttpClient
from pytest_violin.models._transport.retries import RetryPolicy
from pytest_violin.errors import GenerationError, ModelSpecError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models.http import HttpAdapter, RequestTemplate

from _servers import FaultServer, Reply, png_bytes, solid

#: Every character UTF-8 can encode (all but the surrogates): what st.text() draws by default,
#: without its per-codec table, which costs a fresh clone (no .hypothesis/) 3-6 s per process.
UTF8_CHARS = st.characters(exclude_categories=("Cs",))

GOLD = (217, 180, 81)


def request(task="color", images=(), width=16, height=12, prompt="a pure #D9B451 image"):
    return GenerationRequest(
        prompt=prompt, width=width, height=height, seed=1234, sample_id="color/v1/gold/t01",
        task=task, images=tuple(images),
    )


def b64(image) -> str:
    return base64.b64encode(png_bytes(image)).decode()


def options(tmp_path, **kw):
    kw.setdefault("retries", 0)
    return AdapterOptions(rootdir=tmp_path, **kw)


def test_plugin_protocol_raw_png(tmp_path):
    image = solid(16, 12, GOLD)
    with FaultServer([Reply.png(image)]) as server:
        adapter = resolve_model(server.url + "/generate", options(tmp_path))
        try:
            out = adapter.generate(request())
        finally:
            adapter.close()
    assert np.array_equal(out, image)
    sent = server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/generate")
    assert sent.headers["Content-Type"] == "application/json"
    assert sent.json() == {
        "prompt": "a pure #D9B451 image", "width": 16, "height": 12, "seed": 1234,
        "sample_id": "color/v1/gold/t01", "task": "color", "images": [],
    }
    assert adapter.identity == server.url + "/generate"
    assert adapter.cacheable is True


def test_input_images_are_sent_as_base64_png(tmp_path):
    source = solid(8, 8, (10, 200, 30))
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[:, :4] = 255
    with FaultServer([Reply.png(source)]) as server:
        adapter = resolve_model(server.url, options(tmp_path))
        adapter.generate(request(task="mask", images=(source, mask), width=8, height=8))
        adapter.close()
    sent = server.requests[0].json()
    decoded = [np.asarray(resolve_png(s)) for s in sent["images"]]
    assert np.array_equal(decoded[0], source) and np.array_equal(decoded[1], mask)


def resolve_png(text):
    from pytest_violin.imaging import decode_image

    return decode_image(base64.b64decode(text))


@pytest.mark.parametrize(
    "body_of",
    [
        lambda img, url: {"image": b64(img)},
        lambda img, url: {"images": [b64(img)]},
        lambda img, url: {"data": [{"b64_json": b64(img)}]},
        lambda img, url: {"data": [{"url": url + "/files/out.png"}]},
        lambda img, url: {"url": url + "/files/out.png"},
        lambda img, url: {"url": "/files/out.png"},
        lambda img, url: {"image": "data:image/png;base64," + b64(img)},
    ],
    ids=["image", "images0", "data0_b64", "data0_url", "url", "relative_url", "data_uri"],
)
def test_json_answers_at_every_documented_place(tmp_path, body_of):
    image = solid(6, 5, (1, 2, 3))
    with FaultServer(routes={"/files/out.png": Reply.png(image)}) as server:
        server.push(Reply.json(body_of(image, server.url)))
        adapter = resolve_model(server.url + "/gen", options(tmp_path))
        out = adapter.generate(request())
        adapter.close()
    assert np.array_equal(out, image)


@pytest.mark.parametrize("where", ["image", "output0"])
def test_base64_jpeg_is_not_taken_for_a_relative_url(tmp_path, where):
    """Base64 JPEG starts with "/9j/": it is image data, not a path to fetch."""
    import io

    from PIL import Image

    image = solid(8, 8, (0, 0, 0))
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="JPEG", quality=95)
    data = base64.b64encode(buf.getvalue()).decode()
    assert data.startswith("/9j/")
    body = {"image": data} if where == "image" else {"output": [data]}
    with FaultServer([Reply.json(body)]) as server:
        adapter = resolve_model(server.url + "/gen", options(tmp_path))
        out = adapter.generate(request(width=8, height=8))
        adapter.close()
    assert out.shape == (8, 8, 3) and int(out.max()) <= 8  # JPEG of black: black
    assert [r.method for r in server.requests] == ["POST"]  # nothing fetched


def test_relative_url_that_looks_like_base64_is_still_fetched(tmp_path):
    image = solid(3, 3, (4, 5, 6))
    with FaultServer(routes={"/outputs/abcd1234": Reply.png(image)}) as server:
        server.push(Reply.json({"url": "/outputs/abcd1234"}))
        adapter = resolve_model(server.url + "/gen", options(tmp_path))
        out = adapter.generate(request())
        adapter.close()
    assert np.array_equal(out, image)
    assert [r.path for r in server.requests] == ["/gen", "/outputs/abcd1234"]


def test_hugging_face_style_template_with_raw_bytes_back(tmp_path):
    template = tmp_path / "hf.json"
    template.write_text(json.dumps({
        "inputs": "{prompt}",
        "parameters": {"width": "{width}", "height": "{height}", "seed": "{seed}",
                       "negative_prompt": "blurry", "label": "{task}-{width}x{height} {{raw}}"},
    }))
    image = solid(16, 12, GOLD)
    with FaultServer([Reply.png(image, content_type="image/png")]) as server:
        adapter = resolve_model(server.url + "/hf", options(tmp_path, request_template="hf.json"))
        out = adapter.generate(request())
        adapter.close()
    assert np.array_equal(out, image)
    assert server.requests[0].json() == {
        "inputs": "a pure #D9B451 image",
        "parameters": {"width": 16, "height": 12, "seed": 1234, "negative_prompt": "blurry",
                       "label": "color-16x12 {raw}"},
    }
    assert "template=" in adapter.identity


def test_result_png_service_with_response_path(tmp_path):
    template = tmp_path / "t.json"
    template.write_text('{"text": "{prompt}", "init": "{images[0]}", "all": "{images}", "size": "{size}"}')
    image = solid(4, 4, (9, 9, 9))
    with FaultServer([Reply.json({"result": {"png": b64(image)}})] * 2) as server:
        adapter = resolve_model(
            server.url, options(tmp_path, request_template=template, response_path="result.png")
        )
        out = adapter.generate(request(width=4, height=4))
        src = solid(4, 4, (1, 1, 1))
        adapter.generate(request(task="mask", images=(src,), width=4, height=4))
        adapter.close()
    assert np.array_equal(out, image)
    first, second = (r.json() for r in server.requests)
    assert first == {"text": "a pure #D9B451 image", "init": None, "all": [], "size": "4x4"}
    assert second["init"] == second["all"][0]
    assert np.array_equal(resolve_png(second["init"]), src)


def test_wrong_size_rgba_and_gray_answers_come_back_as_rgb(tmp_path):
    rgba = np.zeros((3, 5, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[..., 3] = 255
    rgba[0, 0, 3] = 0  # transparent -> black
    gray = np.full((7, 2), 90, np.uint8)
    with FaultServer([Reply.png(rgba), Reply.png(gray)]) as server:
        adapter = resolve_model(server.url, options(tmp_path))
        a = adapter.generate(request())  # asked for 16x12, got 5x3: returned as is
        b = adapter.generate(request())
        adapter.close()
    assert a.shape == (3, 5, 3) and a.dtype == np.uint8
    assert tuple(a[0, 0]) == (0, 0, 0) and tuple(a[1, 1]) == (200, 0, 0)
    assert b.shape == (7, 2, 3) and (b == 90).all()


def test_configured_headers_are_sent_and_win_over_url_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("VIOLIN_TEST_TOKEN", "tok-abcdef123456")
    image = solid(2, 2)
    with FaultServer([Reply.png(image)]) as server:
        url = server.url.replace("http://", "http://alice:pa%3Ass@") + "/g"
        adapter = resolve_model(
            url, options(tmp_path, headers=(("Authorization", "Bearer ${VIOLIN_TEST_TOKEN}"), "X-Team: team-violin-qa"))
        )
        adapter.generate(request())
        adapter.close()
    headers = server.requests[0].headers
    assert headers["Authorization"] == "Bearer tok-abcdef123456"
    assert headers["X-Team"] == "team-violin-qa"
    assert headers["User-Agent"].startswith("pytest-violin/")
    assert "alice" not in adapter.identity and "pa:ss" not in adapter.identity
    assert adapter.identity == server.url + "/g"


def test_basic_auth_from_url(tmp_path):
    with FaultServer([Reply.png(solid(2, 2))]) as server:
        url = server.url.replace("http://", "http://bob:s3cret-pw@")
        adapter = resolve_model(url, options(tmp_path))
        adapter.generate(request())
        adapter.close()
    expected = "Basic " + base64.b64encode(b"bob:s3cret-pw").decode()
    assert server.requests[0].headers["Authorization"] == expected


@pytest.mark.parametrize(
    "spec, kw, needle",
    [
        ("http://", {}, "with a host"),
        ("http:///path", {}, "with a host"),
        ("http://127.0.0.1:99999/x", {}, "malformed"),
        ("http://127.0.0.1/x", {"request_template": "missing.json"}, "does not exist"),
        ("http://127.0.0.1/x", {"response_path": "data..0"}, "empty segment"),
        ("http://127.0.0.1/x", {"headers": ("NoColonHere",)}, "Name: value"),
        ("http://127.0.0.1/x", {"headers": ("Bad Name: v",)}, "invalid HTTP header name"),
        ("http://127.0.0.1/x", {"headers": ("X-Key: ${VIOLIN_SURELY_UNSET_VAR}",)},
         "VIOLIN_SURELY_UNSET_VAR"),
        ("http://127.0.0.1/x", {"timeout": 0}, "timeout"),
        ("http://127.0.0.1/x", {"retries": -1}, "retries"),
        ("http://127.0.0.1/x", {"concurrency": 0}, "concurrency"),
    ],
)
def test_factory_rejects_bad_targets_and_options(tmp_path, spec, kw, needle):
    kw.setdefault("retries", 0)
    with pytest.raises(ModelSpecError, match=needle.replace("$", r"\$")):
        resolve_model(spec, AdapterOptions(rootdir=tmp_path, **kw))


@pytest.mark.parametrize(
    "text, needle",
    [
        ('{"a": "{prompt}", ', "not valid JSON"),
        ('{"a": "{negative}"}', "unknown placeholder {negative}"),
        ('{"a": "{Prompt}"}', "unknown placeholder"),
        ('{"a": "x {images} y"}', "whole string value"),
        ('{"a": "{width[0]}"}', "cannot be indexed"),
    ],
)
def test_bad_templates_are_usage_errors(tmp_path, text, needle):
    (tmp_path / "t.json").write_text(text)
    with pytest.raises(ModelSpecError, match=needle.replace("{", r"\{").replace("}", r"\}")):
        resolve_model("http://127.0.0.1/x", options(tmp_path, request_template="t.json"))


@settings(max_examples=40, deadline=None)
@given(prompt=st.text(UTF8_CHARS, max_size=40), w=st.integers(1, 4096), h=st.integers(1, 4096),
       seed=st.integers(0, 2**31 - 1))
def test_template_placeholders_keep_types_and_text(prompt, w, h, seed):
    tpl = RequestTemplate({"p": "{prompt}", "w": "{width}", "mixed": "{width}x{height}:{seed}",
                           "n": [1, None, True], "lit": "{{prompt}}"})
    req = GenerationRequest(prompt=prompt, width=w, height=h, seed=seed, sample_id="s", task="color")
    body = tpl.render(req)
    assert body == {"p": prompt, "w": w, "mixed": f"{w}x{h}:{seed}", "n": [1, None, True],
                    "lit": "{prompt}"}
    # the rendered body is always JSON-serialisable and survives a round trip
    assert json.loads(json.dumps(body)) == body


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 20),
                          st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True, alphabet=UTF8_CHARS)),
                min_size=1, max_size=5))
def test_response_path_round_trip(parts):
    dotted = ".".join(str(p) for p in parts)
    assert parse_response_path(dotted) == tuple(parts)


def test_response_path_brackets_and_missing_key(tmp_path):
    assert parse_response_path("data[0].b64_json") == ("data", 0, "b64_json")
    with FaultServer([Reply.json({"result": {"jpg": "x"}})]) as server:
        adapter = resolve_model(server.url, options(tmp_path, response_path="result.png"))
        with pytest.raises(GenerationError, match=r"JSON has no 'result.png'.*'result'") as info:
            adapter.generate(request())
        adapter.close()
    assert info.value.status == 200 and info.value.attempts == 1


def test_closed_adapter_refuses_to_send(tmp_path):
    adapter = HttpAdapter("http://127.0.0.1:9/x", HttpClient(policy=RetryPolicy(retries=0)))
    adapter.close()
    with pytest.raises(GenerationError, match="closed"):
        adapter.generate(request())
