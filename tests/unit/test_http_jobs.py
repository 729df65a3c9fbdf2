"""The generic http adapter against job APIs: submit, poll, fetch, options only."""

from __future__ import annotations

import base64
import itertools
import json
import threading

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests

from pytest_violin.errors import GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.suite import load_suite

from _servers import FaultServer, Reply, png_bytes, solid

requests.Session().close()  # the HTTP stack is imported before pytester snapshots sys.modules

KEY = "jobs-key-5f3a9c1e7b2d"
JOB_OPTIONS = {"poll_url_path": "urls.get", "status_path": "state", "done_values": "succeeded",
               "failed_values": "failed,canceled", "refused_values": "moderated"}


def req(prompt="a pure red image", sample_id="color/v1/x/1"):
    return GenerationRequest(prompt=prompt, width=8, height=8, seed=1, sample_id=sample_id, task="color")


def opts(tmp_path, **extra):
    return AdapterOptions(rootdir=tmp_path, retries=1, timeout=10, headers=(("Authorization", f"Bearer {KEY}"),),
                          response_path="output.0", extra={**JOB_OPTIONS, **extra})


class JobApi:
    """A Replicate-like job API: ``POST /submit`` -> ``{"id", "urls": {"get"}}``; ``GET /jobs/ID``.

    ``plan[prompt]`` picks a job's fate: ``None`` (succeeds after one
    "processing" answer), ``"slow"`` (three), ``"failed"``, ``"moderated"``,
    ``"429"`` (the first submit is answered 429), ``"foreign"`` (the status
    URL is on ``other``, another origin).
    """

    def __init__(self, plan=None, image=None, status_base=""):
        self.plan = plan or {}
        self.image = image or {}
        self.status_base = status_base
        self.jobs: dict[str, dict] = {}
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.seen_429: set = set()

    def handler(self, rec):
        if rec.headers.get("Authorization") != f"Bearer {KEY}":
            return Reply.json({"detail": "Unauthenticated"}, status=401)
        if rec.method == "POST" and rec.path == "/submit":
            body = rec.json()
            fate = self.plan.get(body["sample_id"])
            with self.lock:
                if fate == "429" and body["sample_id"] not in self.seen_429:
                    self.seen_429.add(body["sample_id"])
                    return Reply.json({"detail": "Request was throttled."}, status=429,
                                      headers={"Retry-After": "0"})
                job_id = f"p{next(self.ids)}"
                self.jobs[job_id] = {"fate": fate, "polls": 0, "sample_id": body["sample_id"]}
            base = self.status_base or ""
            return Reply.json({"id": job_id, "state": "starting", "urls": {"get": f"{base}/jobs/{job_id}"}},
                              status=201, headers={"Retry-After": "0.01"})
        return self.status(rec.path.rsplit("/", 1)[-1])

    def status(self, job_id):
        with self.lock:
            job = self.jobs.get(job_id)
            if job is None:
                return Reply.json({"detail": "Not found."}, status=404)
            job["polls"] += 1
            polls, fate = job["polls"], job["fate"]
        if polls <= (3 if fate == "slow" else 1):
            return Reply.json({"id": job_id, "state": "processing"}, headers={"Retry-After": "0.01"})
        if fate == "failed":
            return Reply.json({"id": job_id, "state": "failed", "error": "CUDA out of memory"})
        if fate == "moderated":
            return Reply.json({"id": job_id, "state": "moderated", "error": "flagged as sensitive"})
        image = self.image.get(job["sample_id"], solid(8, 8))
        data = "data:image/png;base64," + base64.b64encode(png_bytes(image)).decode()
        return Reply.json({"id": job_id, "state": "succeeded", "output": [data]})


def make(tmp_path, server, **extra):
    return resolve_model(server.url + "/submit", opts(tmp_path, **extra))


def test_job_succeeds_after_polling(tmp_path):
    api = JobApi()
    with FaultServer(handler=api.handler) as server:
        adapter = make(tmp_path, server)
        image = adapter.generate(req())
        adapter.close()
    assert image.shape == (8, 8, 3)
    assert [(r.method, r.path) for r in server.requests] == [("POST", "/submit"), ("GET", "/jobs/p1"),
                                                            ("GET", "/jobs/p1")]


@pytest.mark.parametrize("fate, error, needle", [("failed", GenerationError, "CUDA out of memory"),
                                                 ("moderated", GenerationRefused, "flagged as sensitive")])
def test_failed_and_refused_states(tmp_path, fate, error, needle):
    api = JobApi(plan={"color/v1/x/1": fate})
    with FaultServer(handler=api.handler) as server:
        adapter = make(tmp_path, server)
        with pytest.raises(error) as info:
            adapter.generate(req())
        adapter.close()
    assert needle in str(info.value) and fate in str(info.value)
    assert len([r for r in server.requests if r.method == "POST"]) == 1  # never re-submitted


def test_status_url_on_another_origin_gets_no_credentials(tmp_path):
    data = base64.b64encode(png_bytes(solid(8, 8))).decode()
    with FaultServer(default=Reply.json({"state": "succeeded", "output": [data]})) as other:
        api = JobApi(status_base=other.url)
        with FaultServer(handler=api.handler) as server:
            adapter = make(tmp_path, server)
            assert adapter.generate(req()).shape == (8, 8, 3)
            adapter.close()
    assert [r.path for r in other.requests] == ["/jobs/p1"]
    assert "Authorization" not in other.requests[0].headers
    assert server.requests[0].headers["Authorization"] == f"Bearer {KEY}"


def test_submit_answer_without_status_url_names_the_path(tmp_path):
    with FaultServer(default=Reply.json({"id": "p1", "state": "starting"}, status=201)) as server:
        adapter = make(tmp_path, server)
        with pytest.raises(GenerationError, match=r"no status URL at 'urls'.*keys: id, state"):
            adapter.generate(req())
        adapter.close()


def test_submit_answer_already_done_is_not_polled(tmp_path):
    data = base64.b64encode(png_bytes(solid(8, 8))).decode()
    with FaultServer(default=Reply.json({"state": "Succeeded", "output": [data]})) as server:
        adapter = make(tmp_path, server)
        assert adapter.generate(req()).shape == (8, 8, 3)
        adapter.close()
    assert len(server.requests) == 1


@pytest.mark.parametrize("extra, needle", [
    ({"done_values": "ok", "failed_values": "OK"}, "both a done and a failed value"),
    ({"done_values": " , "}, "--violin-done-values"),
    ({"poll_url_path": "urls..get"}, "empty segment"),
])
def test_bad_job_options_are_spec_errors(tmp_path, extra, needle):
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model("http://127.0.0.1:9/submit", opts(tmp_path, **extra))


def test_job_values_without_a_poll_url_path_are_refused(tmp_path):
    options = AdapterOptions(rootdir=tmp_path, extra={"status_path": "state"})
    with pytest.raises(ModelSpecError, match="--violin-status-path needs --violin-poll-url-path"):
        resolve_model("http://127.0.0.1:9/submit", options)


# ------------------------------------------------------------------ end to end


def test_end_to_end_20_samples_with_refusal_failure_slow_and_429(pytester, monkeypatch):
    samples = load_suite("violin", tasks=("color", "shape", "mask"), limit=20)
    assert len(samples) == 20 and any(s.task == "mask" for s in samples)
    ids = [s.id for s in samples]
    mask = next(s.id for s in samples if s.task == "mask")
    others = [i for i in ids if i != mask]
    plan = {others[0]: "moderated", others[1]: "failed", mask: "slow", others[2]: "429"}
    api = JobApi(plan=plan, image={s.id: s.expected() for s in samples})
    pytester.makeini("""
        [pytest]
        violin_poll_url_path = urls.get
        violin_status_path = state
        violin_done_values = succeeded
        violin_failed_values = failed, canceled
        violin_refused_values = moderated
        violin_response_path = output.0
        violin_headers = Authorization: Bearer ${JOBS_KEY}
    """)
    with FaultServer(handler=api.handler) as server:
        monkeypatch.setenv("JOBS_KEY", KEY)
        result = pytester.runpytest(
            f"--violin-model={server.url}/submit", "--violin-tasks=color,shape,mask", "--violin-limit=20",
            "--violin-retries=1", "--violin-timeout=20", "--violin-concurrency=4", "--violin-rate=2000/s",
            "--violin-report=report", "--junitxml=junit.xml", "-p", "no:randomly", "-p", "no:cacheprovider",
            "-rA",
        )
    doc = json.loads((pytester.path / "report" / "results.json").read_text())
    outcomes = {rec["sample_id"]: rec["outcome"] for rec in doc["samples"]}
    assert set(outcomes) == set(ids), result.stdout.str()[-3000:]
    want = {i: {"moderated": "refused", "failed": "failed"}.get(kind, "passed") for i, kind in plan.items()}
    assert {i: outcomes[i] for i in plan} == want
    assert all(outcomes[i] == "passed" for i in ids if i not in plan), outcomes
    assert doc["metadata"]["refused"] == 1
    submits = [r for r in server.requests if r.method == "POST"]
    assert len(submits) == 21  # one re-submit after the 429; the failed and refused jobs are not retried
    texts = [result.stdout.str(), result.stderr.str()]
    texts += [p.read_text("latin-1") for p in pytester.path.rglob("*") if p.is_file()]
    assert any("CUDA out of memory" in t for t in texts)
    assert not [t for t in texts if KEY in t]
