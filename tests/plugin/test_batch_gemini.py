"""--violin-batch with gemini: against a fake of the Gemini API's Batch Mode (tests/_batch_fakes_gemini.py)."""

from __future__ import annotations

import base64
import hashlib
import json

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests

from pytest_violin.suite import load_suite

from _batch_fakes_gemini import FakeGemini
from _servers import png_bytes, secret_forms, solid

KEY = "gm-batch-key-0c4e7b21d95a3f68"
MODEL = "gemini-2.5-flash-image"

requests.Session().close()  # the HTTP stack is imported before pytester snapshots sys.modules


def _image(image) -> dict:
    data = base64.b64encode(png_bytes(image)).decode()
    return {"candidates": [{"content": {"role": "model", "parts": [
        {"inlineData": {"mimeType": "image/png", "data": data}}]}, "finishReason": "STOP", "index": 0}]}


def make_answer(table):
    def answer(request):
        prompt = request["contents"][0]["parts"][0]["text"]
        kind = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 10
        if kind == 0:
            return 200, {"promptFeedback": {"blockReason": "SAFETY"}}
        if kind == 1:
            return 200, _image(solid(64, 64, (128, 128, 128)))
        if kind == 2:
            return 500, {"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}
        return 200, _image(table[prompt])

    return answer


@pytest.mark.slow  # 200 samples, twice: CI's e2e step (the default run's batch tests use a few)
def test_200_samples_in_the_fewest_batches_with_outcomes_equal_to_a_synchronous_run(pytester, monkeypatch):
    table = {}
    for s in load_suite("violin", tasks=("color", "shape"), limit=200):
        table.setdefault(s.prompt, s.expected())
    args = (f"--violin-model=gemini:{MODEL}", "--violin-tasks=color,shape", "--violin-limit=200",
            "--violin-retries=0", "--violin-timeout=30", "--violin-report=report", "-p", "no:randomly",
            "--violin-max-calls=none")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)

    def samples():
        doc = json.loads((pytester.path / "report" / "results.json").read_text())
        return {r["sample_id"]: r for r in doc["samples"]}

    with FakeGemini(KEY, make_answer(table)) as fake:
        monkeypatch.setenv("GEMINI_BASE_URL", fake.url)
        pytester.runpytest(*args, "--violin-no-cache")
        sync = samples()
    with FakeGemini(KEY, make_answer(table), polls=2) as fake:
        monkeypatch.setenv("GEMINI_BASE_URL", fake.url)
        result = pytester.runpytest(*args, "--violin-batch", "--violin-price=0.039")
        out = result.stdout.str()
        assert fake.count("POST :generateContent") == 0, out[-3000:]
        assert fake.count("POST :batchGenerateContent") == 2  # 100 requests a batch: the answers come inline
        assert all(size < 20 * 1000 * 1000 for size in fake.sizes)
    batch = samples()
    assert set(batch) == set(sync) and len(batch) == 200
    for sid, rec in sync.items():
        assert (batch[sid]["outcome"], batch[sid].get("metrics")) == (rec["outcome"], rec.get("metrics")), sid
    assert {"passed", "failed", "refused"} <= {r["outcome"] for r in batch.values()}
    assert "Gemini Batch Mode completed" in out and "50% off" in out
    texts = [out] + [p.read_text("latin-1") for p in pytester.path.rglob("*")
                     if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".html")]
    assert not [f for t in texts for f in secret_forms(KEY) if f in t]


def _color_batch(monkeypatch, limit: int):
    """``(prompt -> expected image, the run's arguments)`` of a batch run of the color task, the key set."""
    table = {}
    for s in load_suite("violin", tasks=("color",), limit=limit):
        table.setdefault(s.prompt, s.expected())
    args = (f"--violin-model=gemini:{MODEL}", "--violin-tasks=color", f"--violin-limit={limit}",
            "--violin-retries=0", "--violin-report=report", "-p", "no:randomly", "--violin-max-calls=none",
            "--violin-batch")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    return table, args


def test_an_expired_gemini_batch_ends_in_errors_and_the_next_run_submits_it_again(pytester, monkeypatch):
    table, args = _color_batch(monkeypatch, 10)
    with FakeGemini(KEY, make_answer(table)) as fake:
        monkeypatch.setenv("GEMINI_BASE_URL", fake.url)
        fake.end_state = "BATCH_STATE_EXPIRED"
        first = pytester.runpytest(*args)
        doc = json.loads((pytester.path / "report" / "results.json").read_text())
        errors = [r for r in doc["samples"] if r["outcome"] == "error"]
        assert len(errors) == 10 and all("not run: batch batches/b0001 ended BATCH_STATE_EXPIRED" in r["error"]
                                        for r in errors), first.stdout.str()[-2000:]
        fake.end_state = "BATCH_STATE_SUCCEEDED"
        pytester.runpytest(*args)
        assert fake.count("POST :batchGenerateContent") == 2
        assert fake.count("POST :generateContent") == 0
    doc = json.loads((pytester.path / "report" / "results.json").read_text())
    assert all(r["outcome"] != "error" for r in doc["samples"])


def test_a_key_answered_twice_ends_its_request_as_an_error_naming_it(pytester, monkeypatch):
    table, args = _color_batch(monkeypatch, 6)
    with FakeGemini(KEY, lambda request: (200, _image(table[request["contents"][0]["parts"][0]["text"]]))) as fake:
        monkeypatch.setenv("GEMINI_BASE_URL", fake.url)
        fake.second_answer = _image(solid(64, 64, (128, 128, 128)))
        result = pytester.runpytest(*args)
    samples = json.loads((pytester.path / "report" / "results.json").read_text())["samples"]
    errors = [r for r in samples if r["outcome"] == "error"]
    (duplicate,) = fake.duplicated
    assert len(errors) == 1 and duplicate in errors[0]["error"], result.stdout.str()[-3000:]
    assert [r["outcome"] for r in samples].count("passed") == len(samples) - 1
