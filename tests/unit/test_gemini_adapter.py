"""gemini:MODEL against a local server that follows the Gemini API's generateContent.

The fake server checks what the public docs say a request looks like (path
``/v1beta/models/{model}:generateContent``, the ``x-goog-api-key`` header,
``contents[].parts`` with the prompt and ``inlineData`` images,
``generationConfig.responseModalities`` with ``IMAGE`` and an accepted
``imageConfig.aspectRatio``) and answers like the API: an ``inlineData``
image part, a ``promptFeedback.blockReason``, a ``finishReason`` such as
``IMAGE_SAFETY``, text only, or a Google error body.
"""

from __future__ import annotations

import base64
import json

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests

from pytest_violin.errors import GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.imaging import encode_png
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models import gemini as gemini_module
from pytest_violin.models.gemini import nearest_aspect_ratio, read_answer
from pytest_violin.suite import load_suite

from _servers import FaultServer, Reply, png_bytes, sample_key, secret_forms, solid

KEY = "gm-test-key-7d41c09a2b5e83f6"
MODEL = "gemini-2.5-flash-image"
IMG = solid(16, 16, (200, 10, 10))
#: imageConfig.aspectRatio values in the Gemini API image generation docs.
DOC_RATIOS = {"1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"}

requests.Session().close()  # the HTTP stack is imported before pytester snapshots sys.modules


def req(images=(), width=512, height=512, prompt="a pure red image"):
    return GenerationRequest(prompt=prompt, width=width, height=height, seed=42,
                             sample_id="color/v1/red/t01", task="color", images=tuple(images))


def opts(tmp_path, **kw):
    return AdapterOptions(rootdir=tmp_path, retries=kw.pop("retries", 0), **kw)


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_BASE_URL", raising=False)
    return monkeypatch


# ------------------------------------------------------------------ the fake API


def image_answer(image, text="Here is the image."):
    data = base64.b64encode(png_bytes(image)).decode()
    return {
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": text}, {"inlineData": {"mimeType": "image/png", "data": data}}]},
            "finishReason": "STOP", "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1290},
        "modelVersion": MODEL,
    }


def google_error(code, status, message):
    return Reply(code, {"error": {"code": code, "message": message, "status": status}})


def check_request(rec) -> str | Reply:
    """The prompt of a well-formed request, or the error the API would give."""
    if rec.method != "POST" or rec.path != f"/v1beta/models/{MODEL}:generateContent":
        return google_error(404, "NOT_FOUND", f"no such method {rec.path}")
    if rec.headers.get("x-goog-api-key") != KEY:
        return google_error(403, "PERMISSION_DENIED", "API key not valid. Please pass a valid API key.")
    body = rec.json()
    parts = body["contents"][0]["parts"]
    config = body["generationConfig"]
    if "IMAGE" not in config["responseModalities"] or config["imageConfig"]["aspectRatio"] not in DOC_RATIOS:
        return google_error(400, "INVALID_ARGUMENT", "bad generationConfig")
    for part in parts[1:]:
        inline = part["inlineData"]
        assert inline["mimeType"] == "image/png"
        assert base64.b64decode(inline["data"]).startswith(b"\x89PNG")
    return parts[0]["text"]


# ------------------------------------------------------------------ unit tests


def test_request_shape_and_inline_image_answer(tmp_path, env):
    with FaultServer([Reply.json(image_answer(IMG))]) as server:
        env.setenv("GEMINI_BASE_URL", server.url + "/v1beta")
        adapter = resolve_model(f"gemini:{MODEL}", opts(tmp_path))
        image = adapter.generate(req(width=640, height=480))
        adapter.close()
    assert image.shape == (16, 16, 3) and tuple(image[0, 0]) == (200, 10, 10)
    (rec,) = server.requests
    assert check_request(rec) == "a pure red image"
    body = rec.json()
    assert body["generationConfig"] == {"responseModalities": ["TEXT", "IMAGE"],
                                        "imageConfig": {"aspectRatio": "4:3"}}
    assert "Authorization" not in rec.headers and KEY not in rec.path
    assert KEY not in adapter.identity and MODEL in adapter.identity


def test_input_images_follow_the_prompt_in_order(tmp_path, env):
    source, mask = solid(8, 8, (1, 2, 3)), solid(8, 8, (255, 255, 255))
    with FaultServer([Reply.json(image_answer(IMG))]) as server:
        env.setenv("GEMINI_BASE_URL", server.url + "/v1beta")
        adapter = resolve_model(f"gemini:models/{MODEL}?image_size=2k&modalities=image", opts(tmp_path))
        adapter.generate(req(images=(source, mask)))
    parts = server.requests[0].json()["contents"][0]["parts"]
    assert [list(p) for p in parts] == [["text"], ["inlineData"], ["inlineData"]]
    sent = [base64.b64decode(p["inlineData"]["data"]) for p in parts[1:]]
    assert sent == [png_bytes(source), png_bytes(mask)]
    config = server.requests[0].json()["generationConfig"]
    assert config == {"responseModalities": ["IMAGE"], "imageConfig": {"aspectRatio": "1:1", "imageSize": "2K"}}


def test_thought_images_are_drafts_the_final_image_is_the_answer():
    def part(rgb, thought=False):
        data = base64.b64encode(png_bytes(solid(4, 4, rgb))).decode()
        return {"inlineData": {"mimeType": "image/png", "data": data}, **({"thought": True} if thought else {})}

    answer = {"candidates": [{"content": {"parts": [
        {"text": "planning", "thought": True}, part((1, 1, 1), True), part((2, 2, 2), True),
        part((3, 3, 3))]}, "finishReason": "STOP"}]}
    assert tuple(read_answer(answer)[0, 0]) == (3, 3, 3)
    drafts_only = {"candidates": [{"content": {"parts": [part((1, 1, 1), True)]}, "finishReason": "STOP"}]}
    with pytest.raises(GenerationError, match="draft") as info:
        read_answer(drafts_only)
    assert not isinstance(info.value, GenerationRefused)


@pytest.mark.parametrize("answer, needle", [
    ({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}, "blockReason=PROHIBITED_CONTENT"),
    ({"candidates": [{"finishReason": "IMAGE_SAFETY", "index": 0}]}, "finishReason=IMAGE_SAFETY"),
    ({"candidates": [{"content": {"parts": [{"text": "I can't draw that."}]}, "finishReason": "STOP"}]},
     "text but no image"),
    ({"candidates": [{"content": {"parts": [{"text": "no"}]}, "finishReason": "NO_IMAGE"}]},
     "finishReason=NO_IMAGE"),
])
def test_refusals_are_refused_once_and_never_retried(tmp_path, env, answer, needle):
    with FaultServer(default=Reply.json(answer)) as server:
        env.setenv("GEMINI_BASE_URL", server.url + "/v1beta")
        adapter = resolve_model(f"gemini:{MODEL}", opts(tmp_path, retries=3))
        with pytest.raises(GenerationRefused, match=needle):
            adapter.generate(req())
    assert len(server.requests) == 1


class CategoryBlocked(GenerationRefused):
    """A reader's own refusal, whose constructor takes other arguments than GenerationError's."""

    def __init__(self, category):
        super().__init__(f"blocked: {category}")
        self.category = category


def test_an_answer_error_of_a_subclass_with_its_own_constructor_keeps_its_class_and_fields(tmp_path, env,
                                                                                             monkeypatch):
    def refuse(obj):
        raise CategoryBlocked("weapons")

    monkeypatch.setattr(gemini_module, "read_answer", refuse)
    with FaultServer([Reply.json(image_answer(IMG))]) as server:
        env.setenv("GEMINI_BASE_URL", server.url + "/v1beta")
        adapter = resolve_model(f"gemini:{MODEL}", opts(tmp_path))
        with pytest.raises(CategoryBlocked) as info:
            adapter.generate(req())
        adapter.close()
    error = info.value
    assert (error.category, error.reason, error.attempts, error.status) == ("weapons", "blocked: weapons", 1, 200)
    assert str(error) == "blocked: weapons (after 1 attempt)"


@pytest.mark.parametrize("answer, needle", [
    ({"candidates": [{"content": {"parts": [{"text": "cut"}]}, "finishReason": "MAX_TOKENS"}]}, "MAX_TOKENS"),
    ({"candidates": []}, "no candidates"),
    ({"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "@@"}}]}}]},
     "not valid base64"),
    ({"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "image/png",
                                                            "data": base64.b64encode(b"nope").decode()}}]}}]},
     "not a usable image"),
])
def test_other_answers_without_an_image_are_failures_not_refusals(answer, needle):
    with pytest.raises(GenerationError, match=needle) as info:
        read_answer(answer)
    assert not isinstance(info.value, GenerationRefused)


def test_google_api_key_is_the_fallback_and_both_are_secrets(tmp_path, monkeypatch):
    from pytest_violin.redaction import redact

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "google-fallback-key-55aa11")
    with FaultServer([Reply.json(image_answer(IMG))]) as server:
        monkeypatch.setenv("GEMINI_BASE_URL", server.url + "/v1beta")
        resolve_model(f"gemini:{MODEL}", opts(tmp_path)).generate(req())
    assert server.requests[0].headers["x-goog-api-key"] == "google-fallback-key-55aa11"
    assert "google-fallback-key-55aa11" not in redact("key google-fallback-key-55aa11")

@pytest.mark.parametrize("spec, needle", [
    ("gemini:", "model name"),
    ("gemini:../x", "model name"),
    (f"gemini:{MODEL}?image_size=8K", "image_size"),
    (f"gemini:{MODEL}?temperature=1", "temperature"),
])
def test_bad_specs_are_usage_errors(tmp_path, env, spec, needle):
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model(spec, opts(tmp_path))


@pytest.mark.parametrize("w, h, ratio", [(512, 512, "1:1"), (1024, 576, "16:9"), (480, 640, "3:4"),
                                         (2100, 900, "21:9"), (100, 1000, "9:16")])
def test_nearest_aspect_ratio(w, h, ratio):
    assert nearest_aspect_ratio(w, h) == ratio
    assert set(gemini_module.ASPECT_RATIOS) == DOC_RATIOS


# ------------------------------------------------------------------ end to end


@pytest.mark.slow  # seconds; ark's run of the same shape is the default run's
def test_end_to_end_20_samples_with_refusal_failure_slow_and_429(pytester, monkeypatch):
    samples = load_suite("violin", tasks=("color", "shape", "mask"), limit=20)
    keys = {s.id: sample_key(s.prompt, [encode_png(img) for img in s.inputs]) for s in samples}
    expected = {keys[s.id]: s.expected() for s in samples}
    text_ids = [s.id for s in samples if not s.inputs]
    mask_ids = [s.id for s in samples if s.task == "mask"]
    assert len(samples) == 20 and len(mask_ids) >= 2 and len(set(keys.values())) == 20
    plan_ids = {text_ids[0]: "blocked", text_ids[1]: "image_safety", text_ids[2]: "text_only",
                mask_ids[0]: "fail", mask_ids[1]: "slow", text_ids[3]: "429"}
    plan = {keys[i]: kind for i, kind in plan_ids.items()}
    seen_429 = set()

    def handler(rec):
        prompt = check_request(rec)
        if isinstance(prompt, Reply):
            return prompt
        parts = rec.json()["contents"][0]["parts"]
        key = sample_key(prompt, [base64.b64decode(p["inlineData"]["data"]) for p in parts[1:]])
        kind = plan.get(key)
        if kind == "blocked":
            return Reply.json({"promptFeedback": {"blockReason": "SAFETY"}})
        if kind == "image_safety":
            return Reply.json({"candidates": [{"finishReason": "IMAGE_SAFETY", "index": 0}]})
        if kind == "text_only":
            return Reply.json({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "Sorry, I cannot make that image."}]}, "finishReason": "STOP"}]})
        if kind == "fail":
            return google_error(500, "INTERNAL", f"An internal error has occurred; key was {KEY}")
        if kind == "429" and key not in seen_429:
            seen_429.add(key)
            return Reply(429, {"error": {"code": 429, "message": "Resource has been exhausted",
                                         "status": "RESOURCE_EXHAUSTED"}}, headers={"Retry-After": "0"})
        if key not in expected:
            return google_error(400, "INVALID_ARGUMENT", "unknown request")
        return Reply.json(image_answer(expected[key]), delay=0.3 if kind == "slow" else 0.0)

    with FaultServer(handler=handler) as server:
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        monkeypatch.setenv("GEMINI_BASE_URL", server.url + "/v1beta")
        result = pytester.runpytest(
            f"--violin-model=gemini:{MODEL}", "--violin-tasks=color,shape,mask", "--violin-limit=20",
            "--violin-retries=1", "--violin-timeout=20", "--violin-concurrency=4",
            "--violin-report=report", "--junitxml=junit.xml", "-p", "no:randomly", "-p", "no:cacheprovider",
            "-rA",
        )
    doc = json.loads((pytester.path / "report" / "results.json").read_text())
    outcomes = {rec["sample_id"]: rec["outcome"] for rec in doc["samples"]}
    assert set(outcomes) == set(keys), result.stdout.str()[-3000:]
    want = {i: {"blocked": "refused", "image_safety": "refused", "text_only": "refused",
                "fail": "failed"}.get(kind, "passed") for i, kind in plan_ids.items()}
    assert {i: outcomes[i] for i in plan_ids} == want
    assert all(outcomes[i] == "passed" for i in keys if i not in plan_ids), outcomes
    assert doc["metadata"]["refused"] == 3
    assert len(server.requests) == 22  # 20 samples, one retry after the 429, one after the 500
    texts = [result.stdout.str(), result.stderr.str()]
    texts += [p.read_text("latin-1") for p in pytester.path.rglob("*") if p.is_file()]
    assert any("internal error" in t for t in texts)  # the failure's message reached the output
    leaks = [f for t in texts for f in secret_forms(KEY) if f in t]
    assert not leaks
