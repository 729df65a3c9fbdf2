"""--violin-batch against a fake of the OpenAI Batch API over real sockets (tests/_batch_fakes.py).

Outcomes and metrics equal a synchronous run of the same answers; one
upload, one create and one download for 200 samples; a run killed with
SIGKILL during the wait is collected by the next one without a second
create; an expired batch's completed answers are scored and the rest end as
errors that the next run submits again; the failures of the batch itself
each say so on one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests

from pytest_violin.suite import load_suite

from _batch_fakes import FakeOpenAI, b64_answer, error_body
from _servers import secret_forms, solid

KEY = "sk-batch-test-5f0c2e9d7a1b4c36"
MODEL = "gpt-image-1"

requests.Session().close()  # the HTTP stack is imported before pytester snapshots sys.modules

_EXPECTED: dict = {}


def _expected(tasks, limit):
    key = (tasks, limit)
    if key not in _EXPECTED:
        table = {}
        for s in load_suite("violin", tasks=tasks, limit=limit):
            table.setdefault(s.prompt, s.expected())
        _EXPECTED[key] = table
    return _EXPECTED[key]


def make_answer(table):
    """The model: refuses a tenth of the prompts, draws gray for a tenth, errors for a tenth."""

    def answer(body):
        prompt = body["prompt"]
        kind = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 10
        if kind == 0:
            return error_body(400, "Your request was rejected by our safety system.", "moderation_blocked")
        if kind == 1:
            return 200, b64_answer(solid(64, 64, (128, 128, 128)))
        if kind == 2:
            return error_body(500, "The server had an error while processing your request.", None, "server_error")
        return 200, b64_answer(table[prompt])

    return answer


def _args(*extra, limit=40, tasks="color,shape"):
    return (f"--violin-model=openai:{MODEL}?seed=off", f"--violin-tasks={tasks}", f"--violin-limit={limit}",
            "--violin-retries=0", "--violin-timeout=30", "--violin-report=report", "-p", "no:randomly",
            "--violin-max-calls=none", *extra)


def _env(monkeypatch, fake):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)


def _samples(path: Path) -> dict:
    doc = json.loads((path / "report" / "results.json").read_text())
    return {r["sample_id"]: r for r in doc["samples"]}


def test_200_samples_one_upload_one_create_one_download_and_outcomes_equal_a_synchronous_run(
        pytester, monkeypatch):
    table = _expected(("color", "shape"), 200)
    answer = make_answer(table)
    with FakeOpenAI(KEY, answer) as fake:
        _env(monkeypatch, fake)
        sync = pytester.runpytest(*_args("--violin-no-cache", limit=200))
        sync_samples = _samples(pytester.path)
        assert fake.count("POST /images/generations") == 200
    with FakeOpenAI(KEY, answer, polls=2) as fake:
        _env(monkeypatch, fake)
        result = pytester.runpytest(*_args("--violin-batch", "--violin-price=0.04", limit=200))
        out = result.stdout.str()
        assert fake.count("POST /images/generations") == 0, out[-3000:]
        assert fake.count("POST /files") == 1
        assert fake.count("POST /batches") == 1
        assert fake.count("GET /batches/{id}") >= 3  # validating, in_progress x2, completed
        assert fake.count("GET /files/{id}/content") == 2  # the output file and the error file
    batch_samples = _samples(pytester.path)
    assert len(batch_samples) == 200 and set(batch_samples) == set(sync_samples)
    for sid, rec in sync_samples.items():
        other = batch_samples[sid]
        assert (other["outcome"], other.get("metrics")) == (rec["outcome"], rec.get("metrics")), sid
    outcomes = {r["outcome"] for r in batch_samples.values()}
    assert {"passed", "failed", "refused"} <= outcomes
    assert sync.ret == result.ret == 1
    # the cost line: what the provider completed at the batch price, the discount named
    completed = sum(1 for r in batch_samples.values() if r["outcome"] in ("passed",)) + sum(
        1 for r in batch_samples.values() if r["outcome"] == "failed" and r.get("metrics"))
    assert f"completed {completed} requests" in out
    assert "$0.02 per image" in out and "50% off" in out
    # nothing pending: the record and the answers file are gone; no key anywhere
    assert not list((pytester.path / ".pytest_cache" / "violin-batches").glob("*.json*"))
    texts = [out, result.stderr.str()] + [p.read_text("latin-1") for p in pytester.path.rglob("*")
                                          if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".html")]
    assert not [f for t in texts for f in secret_forms(KEY) if f in t]
