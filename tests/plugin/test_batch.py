"""--violin-batch against a fake of the OpenAI Batch API over real sockets (tests/_batch_fakes.py).

Outcomes and metrics equal a synchronous run of the same answers; one
upload, one create and one download for 200 samples; a run killed with
SIGKILL during the wait is collected by the next one without a second
create; an expired batch's completed answers are scored and the rest end as
errors that the next run submits again; the failures of the batch itself
each say so on one line.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests
from _batch_fakes import FakeOpenAI, b64_answer, error_body
from _servers import secret_forms, solid

from pytest_violin.suite import load_suite

KEY = "sk-batch-test-5f0c2e9d7a1b4c36"
#: The checkout the subprocesses import pytest_violin from.
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
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


@pytest.mark.slow  # 200 samples, twice: CI's e2e step (the default run's batch tests use a few)
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
    meta = json.loads((pytester.path / "report" / "results.json").read_text())["metadata"]
    assert meta["price"] == 0.02 and meta["generations"] == completed
    assert meta["batch"]["completed"] == completed and meta["batch"]["pending"] == []
    # nothing pending: the record and the answers file are gone; no key anywhere
    assert list(pytester.path.rglob("violin-batches")) and not list(pytester.path.rglob("violin-batches/*.json*"))
    texts = [out, result.stderr.str()] + [p.read_text("latin-1") for p in pytester.path.rglob("*")
                                          if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".html")]
    assert not [f for t in texts for f in secret_forms(KEY) if f in t]


def _records(path: Path) -> list:
    out = []
    for f in path.rglob("violin-batches/*.json"):
        out.extend(json.loads(f.read_text())["batches"])
    return out


@pytest.mark.slow  # whole sessions in processes: CI's e2e step
def test_kill_9_during_the_wait_then_the_same_command_collects_without_a_second_create(pytester, tmp_path):
    table = _expected(("color", "shape"), 30)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        fake.release.clear()  # the batch stays in_progress until released
        env = dict(os.environ, OPENAI_API_KEY=KEY, OPENAI_BASE_URL=fake.url,
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        args = [sys.executable, "-m", "pytest", *_args("--violin-batch", limit=30)]
        log = open(pytester.path / "first.log", "wb")
        proc = subprocess.Popen(args, cwd=pytester.path, env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                                            signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # killed once the batch is recorded with its id
                records = _records(pytester.path) if (pytester.path / ".pytest_cache").exists() else []
                if records and records[0].get("id") and fake.count("GET /batches/{id}") >= 2:
                    break
                assert proc.poll() is None, "the run ended before it was killed"
                time.sleep(0.05)
            else:
                pytest.fail("the batch was never recorded with its id: "
                            + (pytester.path / "first.log").read_text()[-3000:])
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert fake.count("POST /batches") == 1
        fake.release.set()
        result = subprocess.run(args, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=300)
        assert fake.count("POST /batches") == 1, result.stdout[-3000:]  # collected, not submitted again
        assert fake.count("POST /files") == 1
        assert fake.count("POST /images/generations") == 0
    samples = _samples(pytester.path)
    assert len(samples) == 30
    assert all(r["outcome"] in ("passed", "failed", "refused") for r in samples.values()), \
        {k: r.get("error") for k, r in samples.items() if r["outcome"] == "error"}
    assert "nothing is submitted again" in result.stdout
    assert not _records(pytester.path)


def test_a_wait_that_ends_leaves_the_batch_running_says_so_and_exits_8_then_the_same_command_collects(
        pytester, monkeypatch):
    table = _expected(("color",), 12)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        _env(monkeypatch, fake)
        fake.release.clear()
        first = pytester.runpytest(*_args("--violin-batch", "--violin-batch-wait=1s", tasks="color", limit=12))
        out = first.stdout.str()
        assert first.ret == 8, out[-3000:]
        assert "PENDING: 12 requests still running in 1 batch (batch_000001)" in out
        assert "run the same command again" in out
        pending = _samples(pytester.path)
        assert {r["outcome"] for r in pending.values()} == {"error"}
        assert all("pending in batch batch_000001" in r["error"] for r in pending.values())
        assert _records(pytester.path)[0]["id"] == "batch_000001"
        meta = json.loads((pytester.path / "report" / "results.json").read_text())["metadata"]
        assert [(p["id"], p["requests"], len(p["samples"])) for p in meta["batch"]["pending"]] == [
            ("batch_000001", 12, 12)]
        assert meta["batch"]["service"] == "OpenAI Batch API" and "ended" in meta["batch"]["stopped"]
        fake.release.set()
        second = pytester.runpytest(*_args("--violin-batch", tasks="color", limit=12))
        assert fake.count("POST /batches") == 1
        assert second.ret in (0, 1) and "PENDING" not in second.stdout.str()
    assert {r["outcome"] for r in _samples(pytester.path).values()} <= {"passed", "failed", "refused"}


def test_an_expired_batch_scores_what_completed_and_the_rest_is_submitted_again(pytester, monkeypatch):
    table = _expected(("color",), 20)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        _env(monkeypatch, fake)
        fake.expire_after = 0.6
        first = pytester.runpytest(*_args("--violin-batch", tasks="color", limit=20))
        out = first.stdout.str()
        samples = _samples(pytester.path)
        errors = {k: r for k, r in samples.items() if r["outcome"] == "error"}
        assert len(errors) == 8, out[-3000:]
        assert all("not run" in r["error"] and "batch_expired" in r["error"] for r in errors.values())
        assert "batch_000001 ended expired with " in out and "; 8 requests unanswered end as errors" in out
        meta = json.loads((pytester.path / "report" / "results.json").read_text())["metadata"]
        made = sum(1 for r in samples.values() if r.get("metrics"))  # the answers with an image
        assert meta["generations"] == meta["batch"]["completed"] == made  # the bill: what completed, once
        assert sum(len(r["requests"]) for r in _records(pytester.path)) == 0  # collected; the 8 dropped
        fake.expire_after = None
        second = pytester.runpytest(*_args("--violin-batch", tasks="color", limit=20))
        assert fake.count("POST /batches") == 2
        # the 8 never run, and the answers without an image (never cached, as in a synchronous run)
        unanswered = 8 + sum(1 for k, r in samples.items() if k not in errors and not r.get("metrics"))
        assert f"{unanswered} to submit" in second.stdout.str()
    assert all(r["outcome"] != "error" for r in _samples(pytester.path).values())


@pytest.mark.parametrize("fault, words", [
    ("reject_line", "not run: batch batch_000001 ended failed: invalid_value"),
    ("cancel_elsewhere", "not run: batch_cancelled"),
    ("drop_output_lines", "completed without an answer for this request"),
    ("create_429", "not submitted to the OpenAI Batch API: "),
    ("drop_uploads", "not submitted to the OpenAI Batch API: "),
])
def test_each_failure_of_the_batch_itself_ends_as_errors_that_say_why(pytester, monkeypatch, fault, words):
    table = _expected(("color",), 10)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        _env(monkeypatch, fake)
        setattr(fake, fault, {"reject_line": 1, "cancel_elsewhere": 0.5, "drop_output_lines": 2,
                              "create_429": 10, "drop_uploads": 10}[fault])
        result = pytester.runpytest(*_args("--violin-batch", tasks="color", limit=10))
        out = result.stdout.str()
        assert fake.count("POST /images/generations") == 0
    samples = _samples(pytester.path)
    assert len(samples) == 10, out[-3000:]
    errors = [r for r in samples.values() if r["outcome"] == "error"]
    assert errors and all(words in r["error"] for r in errors), [r.get("error") for r in errors][:3]
    assert result.ret == 1
    scored = [r for r in samples.values() if r["outcome"] != "error"]
    expect_scored = {"reject_line": 0, "cancel_elsewhere": 5, "drop_output_lines": None, "create_429": 0,
                     "drop_uploads": 0}[fault]
    if expect_scored is not None:
        assert len(scored) == expect_scored
    assert not [r for r in _records(pytester.path) if r["requests"]]  # nothing left to collect: resubmitted next


def _truthful(table):
    return lambda body: (200, b64_answer(table[body["prompt"]]))


def test_a_custom_id_answered_twice_ends_its_request_as_an_error_naming_it(pytester, monkeypatch):
    table = _expected(("color",), 6)
    with FakeOpenAI(KEY, _truthful(table)) as fake:
        _env(monkeypatch, fake)
        fake.second_answer = (200, b64_answer(solid(64, 64, (128, 128, 128))))
        result = pytester.runpytest(*_args("--violin-batch", tasks="color", limit=6))
    samples = _samples(pytester.path)
    errors = [r for r in samples.values() if r["outcome"] == "error"]
    (duplicate,) = fake.duplicated
    assert len(errors) == 1 and duplicate in errors[0]["error"], result.stdout.str()[-3000:]
    assert [r["outcome"] for r in samples.values()].count("passed") == len(samples) - 1


def test_the_bill_counts_at_most_the_requests_a_batch_holds_whatever_the_provider_claims(pytester, monkeypatch):
    table = _expected(("color",), 6)
    with FakeOpenAI(KEY, _truthful(table)) as fake:
        _env(monkeypatch, fake)
        fake.claimed_completed = 5 * 10**14  # $20 trillion at $0.04
        result = pytester.runpytest(*_args("--violin-batch", "--violin-price=0.04", tasks="color", limit=6))
    meta = json.loads((pytester.path / "report" / "results.json").read_text())["metadata"]
    assert meta["batch"]["completed"] == meta["generations"] == 6, result.stdout.str()[-3000:]
    assert meta["estimated_cost"] == pytest.approx(6 * 0.02)
    assert "$0.12 at the batch price" in result.stdout.str()


#: What a terminal obeys: C0 controls but tab and newline, DEL, C1 controls.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
EVIL = "\x1b[2J\x1b]0;owned\x07"


def _strings(obj):
    """Every string in a JSON value."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _strings(value)


def test_a_providers_words_with_escape_codes_reach_the_terminal_and_the_report_escaped(pytester, monkeypatch):
    from pytest_violin.models.batch._openai import OpenAIBatch

    table = _expected(("color",), 3)
    monkeypatch.setattr(OpenAIBatch, "name", f"OpenAI{EVIL} Batch API")
    with FakeOpenAI(KEY, _truthful(table)) as fake:
        _env(monkeypatch, fake)
        fake.release.clear()
        fake.id_prefix = f"batch{EVIL}_"
        result = pytester.runpytest(*_args("--violin-batch", "--violin-batch-wait=0", "--violin-price=0.04",
                                           tasks="color", limit=3))
    assert result.ret == 8
    section = json.loads((pytester.path / "report" / "results.json").read_text())["metadata"]["batch"]
    shown = [result.stdout.str(), result.stderr.str(), *_strings(section)]
    assert not [t for t in shown if RAW_CONTROL.search(t)]
    assert section["pending"] and "OpenAI" in section["service"]


def test_batch_list_shows_a_records_words_escaped(pytester, monkeypatch, capsys):
    from pytest_violin.__main__ import main
    from pytest_violin.execution._batch_store import SUBMITTED, BatchRecord, BatchStore

    store = BatchStore(pytester.path / ".pytest_cache" / "violin-batches", f"openai:{MODEL}{EVIL}")
    store.add(BatchRecord(tag=f"violin-{EVIL}", group=f"/v1/images/generations{EVIL}", requests={"c": "k"},
                          id=f"batch{EVIL}", state=SUBMITTED, provider_state=f"in_progress{EVIL}"))
    monkeypatch.chdir(pytester.path)
    capsys.readouterr()
    assert main(["batch", "list"]) == 0
    listed = capsys.readouterr().out
    assert "1 requests" in listed and not RAW_CONTROL.search(listed)


def test_batch_list_and_cancel_show_and_cancel_only_what_this_project_submitted(pytester, monkeypatch, capsys):
    from pytest_violin.__main__ import main

    table = _expected(("color",), 6)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        _env(monkeypatch, fake)
        fake.release.clear()
        first = pytester.runpytest(*_args("--violin-batch", "--violin-batch-wait=0", tasks="color", limit=6))
        assert first.ret == 8
        monkeypatch.chdir(pytester.path)
        capsys.readouterr()
        assert main(["batch", "list"]) == 0
        listed = capsys.readouterr().out
        assert "batch_000001" in listed and "6 requests" in listed
        assert main(["batch", "list", "--model", f"openai:{MODEL}?seed=off"]) == 0
        assert "now batch_000001: in_progress" in capsys.readouterr().out
        with pytest.raises(SystemExit) as exited:  # a usage error, as argparse's own
            main(["batch", "cancel", "batch_999999", "--model", f"openai:{MODEL}?seed=off"])
        assert exited.value.code == 4
        assert "not a batch this project submitted" in capsys.readouterr().err
        assert fake.count("POST /batches/{id}/cancel") == 0
        assert main(["batch", "cancel", "--model", f"openai:{MODEL}?seed=off"]) == 0
        assert "cancel asked: batch_000001: cancelling" in capsys.readouterr().out
        assert fake.count("POST /batches/{id}/cancel") == 1
        records = [p.read_text() for p in pytester.path.rglob("violin-batches/*.json")]
        assert records and not [f for t in records for f in secret_forms(KEY) if f in t]


def test_the_budget_applies_before_submission_at_the_batch_price(pytester, monkeypatch):
    table = _expected(("color",), 10)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        _env(monkeypatch, fake)
        base = (f"--violin-model=openai:{MODEL}?seed=off", "--violin-tasks=color", "--violin-limit=10",
                "--violin-retries=0", "-p", "no:randomly")
        capped = pytester.runpytest(*base, "--violin-batch", "--violin-max-calls=5")
        assert capped.ret == 4 and "--violin-max-calls=5" in capped.stderr.str()
        dear = pytester.runpytest(*base, "--violin-price=0.04", "--violin-max-cost=0.25")
        assert dear.ret == 4  # synchronously: $0.40
        discounted = pytester.runpytest(*base, "--violin-batch", "--violin-price=0.04", "--violin-max-cost=0.25",
                                        "--violin-batch-discount=0.25")
        assert discounted.ret == 4 and "$0.03 per image" in discounted.stderr.str()  # $0.30
        assert fake.count("POST /files") == fake.count("POST /batches") == 0  # nothing was submitted
        cheap = pytester.runpytest(*base, "--violin-batch", "--violin-price=0.04", "--violin-max-cost=0.25")
        out = cheap.stdout.str()
        assert cheap.ret in (0, 1) and fake.count("POST /batches") == 1
        assert "estimated cost $0.20 at $0.02 per image" in out
        assert "the OpenAI Batch API's price: 50% off --violin-price=$0.04" in out


@pytest.mark.slow  # whole sessions in processes: CI's e2e step
def test_sequential_waves_stop_submitting_once_the_gate_decides(pytester, monkeypatch):
    table = _expected(("color", "shape"), 800)

    def worse(body):  # half the prompts answered with a gray image: clearly worse than the oracle
        if int(hashlib.sha256(body["prompt"].encode()).hexdigest(), 16) % 2:
            return 200, b64_answer(solid(64, 64, (128, 128, 128)))
        return 200, b64_answer(table[body["prompt"]])

    base = ("--violin-tasks=color,shape", "--violin-limit=800", "-p", "no:randomly", "--violin-max-calls=none")
    assert pytester.runpytest("--violin-model=oracle", *base, "--violin-save-baseline=base.json").ret == 0
    with FakeOpenAI(KEY, worse, polls=0) as fake:
        _env(monkeypatch, fake)
        result = pytester.runpytest(f"--violin-model=openai:{MODEL}?seed=off", *base, "--violin-batch",
                                    "--violin-sequential", "--violin-baseline=base.json")
        submitted = [len(lines) for lines in fake.lines.values()]
    out = result.stdout.str()
    assert result.ret == 1 and "regression" in out, out[-3000:]
    assert 1 <= len(submitted) <= 2 and submitted[0] == 80, submitted  # the first wave: a tenth
    assert sum(submitted) <= 200 and "PENDING" not in out
    assert fake.count("POST /images/generations") == 0


def test_a_record_that_does_not_parse_is_set_aside_never_trusted(tmp_path):
    from pytest_violin.execution._batch_store import BatchRecord, BatchStore

    store = BatchStore(tmp_path, "openai:gpt-image-1@https://api.openai.com/v1")
    store.add(BatchRecord(tag="violin-abc", group="/v1/images/generations", requests={"c1": "k1"}, id="batch_1",
                          state="submitted"))
    again = BatchStore(tmp_path, store.identity)
    assert [(r.id, r.requests) for r in again.load()] == [("batch_1", {"c1": "k1"})]
    assert KEY not in store.path.read_text()
    for bad in ('{"format": "pytest-violin batches", "version": 1, "adapter": "x", "batches": []}',  # another adapter
                '{"format": "pytest-violin batches", "version": 1, "adapter": "%s", "batches": [{"tag": 1}]}'
                % store.identity, "[" * 10000, "not json"):
        store.path.write_text(bad)
        assert BatchStore(tmp_path, store.identity).load() == []
        assert store.path.with_suffix(".bad").exists() and not store.path.exists()


def test_mask_samples_go_to_the_edits_endpoint_in_a_batch_of_their_own(pytester, monkeypatch):
    from pytest_violin.imaging import encode_png

    samples = load_suite("violin", tasks=("color", "mask"), limit=12)
    masks = [s for s in samples if s.task == "mask"]
    by_inputs = {tuple(hashlib.sha256(encode_png(i)).hexdigest() for i in s.inputs): s for s in masks}
    by_prompt = {s.prompt: s for s in samples if not s.inputs}
    assert masks and by_prompt

    def answer(body):
        if "images" in body:
            pngs = [base64.b64decode(i["image_url"].split(",", 1)[1]) for i in body["images"]]
            sample = by_inputs[tuple(hashlib.sha256(p).hexdigest() for p in pngs)]
        else:
            sample = by_prompt[body["prompt"]]
        return 200, b64_answer(sample.expected())

    with FakeOpenAI(KEY, answer) as fake:
        _env(monkeypatch, fake)
        result = pytester.runpytest(*_args("--violin-batch", tasks="color,mask", limit=12))
        endpoints = sorted(b["endpoint"] for b in fake.batches.values())
    assert endpoints == ["/v1/images/edits", "/v1/images/generations"], result.stdout.str()[-2000:]
    outcomes = {r["sample_id"]: r["outcome"] for r in _samples(pytester.path).values()}
    assert set(outcomes.values()) == {"passed"}, outcomes


@pytest.mark.parametrize("fault", ["lose_create_answers", "create_429"])
def test_a_create_is_never_sent_twice_for_one_batch_and_a_429_is_tried_again(pytester, monkeypatch, fault):
    table = _expected(("color",), 8)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        _env(monkeypatch, fake)
        setattr(fake, fault, 1)
        args = [a for a in _args("--violin-batch", tasks="color", limit=8) if a != "--violin-retries=0"]
        result = pytester.runpytest(*args, "--violin-retries=2")
        assert len(fake.batches) == 1, result.stdout.str()[-2000:]  # one batch, paid once
        assert fake.count("POST /batches") == (1 if fault == "lose_create_answers" else 2)
    assert all(r["outcome"] != "error" for r in _samples(pytester.path).values())


def test_find_looks_through_the_pages_of_the_batch_list(monkeypatch):
    from pytest_violin.models import AdapterOptions, resolve_model

    with FakeOpenAI(KEY, lambda body: (200, {})) as fake:
        _env(monkeypatch, fake)
        for n in range(250):
            fake.batches[f"batch_{n:06d}"] = {"id": f"batch_{n:06d}", "object": "batch", "status": "completed",
                                              "request_counts": {"total": 1, "completed": 1, "failed": 0},
                                              "metadata": {"violin_batch": f"violin-{n}"}}
        api = resolve_model(f"openai:{MODEL}", AdapterOptions(rootdir=Path.cwd())).batch_api()
        assert api.find("violin-3") == "batch_000003"  # the third page, newest first
        assert api.find("violin-none") is None
        assert fake.count("GET /batches") == 6


def test_an_answer_that_echoes_the_key_reaches_the_answers_file_masked_and_images_intact(monkeypatch, tmp_path):
    import threading

    from pytest_violin.errors import GenerationError
    from pytest_violin.execution._batch_store import BatchStore
    from pytest_violin.execution.batch import BatchDriver, Entry
    from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model

    drawn = solid(64, 64, (200, 10, 10))

    def answer(body):
        if body["prompt"] == "echo":  # the full key, and a cut one as providers print it
            return error_body(401, f"Incorrect API key provided: {KEY}; as typed: {KEY[:12]}****", "invalid_api_key")
        return 200, b64_answer(drawn)

    with FakeOpenAI(KEY, answer) as fake:
        _env(monkeypatch, fake)
        api = resolve_model(f"openai:{MODEL}", AdapterOptions(rootdir=tmp_path)).batch_api()
        driver = BatchDriver(api, BatchStore(tmp_path, "openai-test"), wait=60, cancel=threading.Event())
        entries = [Entry(hashlib.sha256(prompt.encode()).hexdigest(), prompt, f"{prompt}#0",
                         GenerationRequest(prompt=prompt, width=64, height=64, seed=0, sample_id=prompt,
                                           task="color"))
                   for prompt in ("echo", "draw")]
        driver.plan(entries)
        driver.start()
        with pytest.raises(GenerationError):
            driver.answer(entries[0].key)
        image = driver.answer(entries[1].key)
        (path,) = tmp_path.glob("*.jsonl")
        kept = path.read_text("latin-1")
        driver.close()
    assert fake.count("GET /files/{id}/content") == 2  # the output file and the error file, one answers file
    assert not [f for f in secret_forms(KEY) | {KEY[:12]} if f in kept]
    assert tuple(image[0, 0]) == (200, 10, 10)


@pytest.mark.slow  # whole sessions in processes: CI's e2e step
def test_ctrl_c_during_the_wait_leaves_the_batch_running_and_says_how_to_resume(pytester):
    table = _expected(("color",), 10)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        fake.release.clear()
        env = dict(os.environ, OPENAI_API_KEY=KEY, OPENAI_BASE_URL=fake.url,
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        args = [sys.executable, "-m", "pytest", *_args("--violin-batch", tasks="color", limit=10)]
        proc = subprocess.Popen(args, cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 60
            while fake.count("GET /batches/{id}") < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 2, out[-3000:]
        assert "PENDING: 10 requests still running in 1 batch (batch_000001)" in out
        assert "the run was interrupted" in out and "run the same command again" in out
        fake.release.set()
        again = subprocess.run(args, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=300,
                               check=False)
        assert fake.count("POST /batches") == 1 and again.returncode in (0, 1), again.stdout[-3000:]


@pytest.mark.parametrize("created", [True, False])
def test_a_batch_recorded_but_not_named_is_looked_up_by_its_tag(pytester, monkeypatch, created):
    table = _expected(("color",), 6)
    with FakeOpenAI(KEY, make_answer(table)) as fake:
        _env(monkeypatch, fake)
        fake.release.clear()
        assert pytester.runpytest(*_args("--violin-batch", "--violin-batch-wait=0", tasks="color", limit=6)).ret == 8
        # as if killed between the provider's answer to the create and the record of its id
        path = next(pytester.path.rglob("violin-batches/*.json"))
        doc = json.loads(path.read_text())
        doc["batches"][0].update(id=None, state="submitting")
        if not created:
            doc["batches"][0]["tag"] = "violin-never-created"
        path.write_text(json.dumps(doc))
        fake.release.set()
        result = pytester.runpytest(*_args("--violin-batch", tasks="color", limit=6))
        assert fake.count("POST /batches") == (1 if created else 2), result.stdout.str()[-2000:]
    assert all(r["outcome"] != "error" for r in _samples(pytester.path).values())


@pytest.mark.parametrize("args, words", [
    (("--violin-model=oracle", "--violin-batch"), "offers no batch API; accepted: openai:MODEL, gemini:MODEL"),
    ((f"--violin-model=openai:{MODEL}", "--violin-batch", "-n", "2"), "runs in one process"),
    (("--violin-model=oracle", "--violin-batch-wait=3x"), "accepted: a duration such as 90s, 30m, 2h or 1d"),
    (("--violin-model=oracle", "--violin-batch-discount=1.5"), "'1.5' is invalid; accepted: a share of the price"),
])
def test_bad_batch_options_are_usage_errors(pytester, monkeypatch, args, words):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    result = pytester.runpytest(*args, "--violin-limit=3", "-p", "no:randomly")
    assert result.ret == 4 and words in result.stderr.str()


def test_the_answers_index_skips_lines_over_the_cap_and_lines_that_are_not_answers(tmp_path):
    from pytest_violin.execution._batch_answers import index_answers

    path = tmp_path / "answers.jsonl"
    big = json.dumps({"custom_id": "big", "response": {"body": "x" * 5000}})
    path.write_text("\n".join([json.dumps({"custom_id": "a"}), big, "not json", "[1, 2]", "[" * 3000,
                                json.dumps({"custom_id": 7}), "", json.dumps({"custom_id": "b"})]) + "\n")
    index = index_answers(path, 1000)
    assert sorted(index) == ["a", "b"]
    with open(path, "rb") as fh:
        fh.seek(index["b"].offset)
        assert json.loads(fh.read(index["b"].length)) == {"custom_id": "b"}


def test_answer_lines_are_masked_whole_across_writes_keep_image_payloads_and_drop_oversized_lines(tmp_path):
    import io

    from pytest_violin.execution._batch_answers import RedactedLines
    from pytest_violin.redaction import register_secret

    secret = "Qz7vXk2Lp9Rt4WmN8s"
    register_secret(secret)
    payload = "A" * 600 + secret[:8] + "B" * 600  # base64 that happens to hold a key's start
    lines = [json.dumps({"custom_id": "a", "error": {"message": f"bad key {secret}"}}),
             json.dumps({"custom_id": "b", "body": "x" * 5000}),
             json.dumps({"custom_id": "c", "data": payload})]
    data = ("\n".join(lines) + "\n").encode()
    fh = io.BytesIO()
    sink = RedactedLines(fh, 2000)
    for start in range(0, len(data), 7):  # a line's pieces come in several writes
        sink.write(data[start:start + 7])
    sink.close()
    kept = [json.loads(line) for line in fh.getvalue().splitlines()]
    assert [k["custom_id"] for k in kept] == ["a", "c"]
    assert secret[:6] not in kept[0]["error"]["message"] and kept[1]["data"] == payload
