"""``replicate:OWNER/NAME[:VERSION]`` against a local server that follows Replicate's HTTP API.

The fake follows the documented API (replicate.com/docs/reference/http):
``POST /v1/models/{owner}/{name}/predictions`` or ``POST /v1/predictions``
(with ``version``) answer 201 with a prediction object (``id``, ``status``,
``urls.get``, ``urls.cancel``); ``GET urls.get`` moves through ``starting``
/ ``processing`` to ``succeeded`` (``output``: a list of file URLs on
another host, like ``replicate.delivery``), ``failed`` (``error``) or
``canceled``; ``Prefer: wait`` holds the create request until the output is
ready; errors are JSON with ``detail``; 401 without the Bearer token.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests  # noqa: F401  same reason

from _servers import QuietServer, png_bytes
from pytest_violin.errors import GenerationCancelled, GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.models.registry import AdapterOptions, resolve_model
from pytest_violin.models.request import GenerationRequest
from pytest_violin.suite import load_suite

TOKEN = "r8_e2e-plant-4b7d91c0a2f6"
TASKS = "color,shape,mask"
LIMIT = 20
NSFW = "NSFW content detected. Try running it again, or try a different prompt."




class FakeReplicate:
    """Replicate's prediction API plus a file host on another origin.

    ``plan`` maps a sample id (sent as ``input.sample_id`` by the test's
    input file) to ``refuse``, ``fail``, ``slow``, ``rate`` (one 429 first)
    or ``hang`` (processing until cancelled).
    """

    def __init__(self, samples: dict, plan: dict | None = None):
        self.samples = samples
        self.plan = dict(plan or {})
        self.predictions: dict[str, dict] = {}
        self.creates: list[dict] = []
        self.rated: set = set()
        self.cancelled: list[str] = []
        self.file_auth: list = []
        self.polled = threading.Event()
        self.cancel_seen = threading.Event()
        self.lock = threading.Lock()
        self.api = QuietServer(("127.0.0.1", 0), self._handler("api"))
        self.files = QuietServer(("127.0.0.1", 0), self._handler("files"))
        for server in (self.api, self.files):
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.api.server_address[1]}/v1"

    @property
    def file_base(self) -> str:
        return f"http://127.0.0.1:{self.files.server_address[1]}"

    def stop(self) -> None:
        for server in (self.api, self.files):
            server.shutdown()
            server.server_close()

    def _handler(self, role):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, status, obj=None, body=None, ctype="application/json", headers=()):
                data = json.dumps(obj).encode() if body is None else body
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                owner.route(self, role, "GET")

            def do_POST(self):
                owner.route(self, role, "POST")

        return Handler

    # ------------------------------------------------------------- the API
    def prediction(self, pid: str) -> dict:
        p = self.predictions[pid]
        body = {"id": pid, "model": p["model"], "version": p.get("version"), "input": p["input"],
                "status": p["status"], "output": None, "error": None, "logs": "",
                "urls": {"get": f"{self.base}/predictions/{pid}", "cancel": f"{self.base}/predictions/{pid}/cancel"}}
        if p["status"] == "succeeded":
            body["output"] = [f"{self.file_base}/{pid}.png"]
        elif p["status"] == "failed":
            body["error"] = NSFW if p["kind"] == "refuse" else "CUDA error: out of memory"
        return body

    def route(self, h, role, method):
        if role == "files":
            with self.lock:
                self.file_auth.append(h.headers.get("Authorization"))
            pid = h.path.strip("/").removesuffix(".png")
            sample = self.samples[self.predictions[pid]["input"]["sample_id"]]
            return h.send(200, body=png_bytes(sample.expected()), ctype="image/png")
        if h.headers.get("Authorization") != f"Bearer {TOKEN}":
            return h.send(401, {"title": "Unauthenticated", "status": 401,
                                "detail": "You did not pass a valid authentication token"})
        parts = h.path.strip("/").split("/")
        if method == "POST" and (parts[1:2] == ["models"] and parts[-1] == "predictions" or parts[1:] == ["predictions"]):
            payload = json.loads(h.rfile.read(int(h.headers["Content-Length"])))
            sid = payload["input"].get("sample_id", "")
            kind = self.plan.get(sid, "ok")
            with self.lock:
                self.creates.append({"path": h.path, "body": payload, "prefer": h.headers.get("Prefer")})
                if kind == "rate" and sid not in self.rated:
                    self.rated.add(sid)
                    return h.send(429, {"title": "Request was throttled", "status": 429,
                                        "detail": "Request was throttled. Expected available in 1 second."},
                                  headers=[("Retry-After", "0")])
                pid = f"p{len(self.predictions):04d}"
                polls = {"slow": 4, "hang": 10**9}.get(kind, 1)
                self.predictions[pid] = {"model": "/".join(parts[2:4]) if parts[1] == "models" else "o/n",
                                         "version": payload.get("version"), "input": payload["input"],
                                         "status": "starting", "kind": kind, "polls": polls}
                if h.headers.get("Prefer", "").startswith("wait") and kind == "ok":
                    self.predictions[pid]["status"] = "succeeded"
                return h.send(201, self.prediction(pid), headers=[("Retry-After", "0.01")])
        if method == "GET" and parts[1] == "predictions" and len(parts) == 3:
            with self.lock:
                p = self.predictions.get(parts[2])
                if p is None:
                    return h.send(404, {"title": "Not found", "status": 404, "detail": "Not found."})
                if p["status"] in ("starting", "processing"):
                    p["polls"] -= 1
                    if p["polls"] > 0:
                        p["status"] = "processing"
                    else:
                        p["status"] = {"refuse": "failed", "fail": "failed"}.get(p["kind"], "succeeded")
                body = self.prediction(parts[2])
            self.polled.set()
            return h.send(200, body, headers=[("Retry-After", "0.01")])
        if method == "POST" and parts[1] == "predictions" and parts[-1] == "cancel":
            with self.lock:
                self.predictions[parts[2]]["status"] = "canceled"
                self.cancelled.append(parts[2])
            self.cancel_seen.set()
            return h.send(200, self.prediction(parts[2]))
        return h.send(404, {"title": "Not found", "status": 404, "detail": "Not found."})


@pytest.fixture(scope="module")
def samples():
    return {s.id: s for s in load_suite("violin", tasks=TASKS.split(","), limit=LIMIT)}


@pytest.fixture()
def env(monkeypatch):
    monkeypatch.setenv("REPLICATE_API_TOKEN", TOKEN)
    monkeypatch.delenv("REPLICATE_BASE_URL", raising=False)
    return monkeypatch


INPUT_FILE = {"prompt": "{prompt}", "seed": "{seed}", "width": "{width}", "height": "{height}",
              "image": "{images[0]}", "mask": "{images[1]}", "sample_id": "{sample_id}"}


def _adapter(tmp_path, env, fake, spec="replicate:acme/painter", **kw):
    env.setenv("REPLICATE_BASE_URL", fake.base)
    path = tmp_path / "input.json"
    path.write_text(json.dumps(INPUT_FILE))
    opts = AdapterOptions(rootdir=tmp_path, timeout=10.0, extra={"replicate_input": str(path)}, **kw)
    return resolve_model(spec, opts)


def _pick(samples, task, n=0):
    return [s for s in samples.values() if s.task == task][n]


def test_model_prediction_is_polled_and_output_fetched_without_the_token(tmp_path, env, samples):
    fake = FakeReplicate(samples)
    try:
        adapter = _adapter(tmp_path, env, fake)
        sample = _pick(samples, "mask")
        image = adapter.generate(GenerationRequest.from_sample(sample))
        assert image.shape == sample.expected().shape
        create = fake.creates[0]
        assert create["path"] == "/v1/models/acme/painter/predictions" and create["prefer"] is None
        sent = create["body"]["input"]
        assert "version" not in create["body"]
        assert sent["prompt"] == sample.prompt and isinstance(sent["seed"], int)
        assert sent["image"].startswith("data:image/png;base64,") and sent["mask"].startswith("data:image/png;")
        assert fake.file_auth == [None]  # the signed file URL is on another host
        assert TOKEN not in adapter.identity
    finally:
        fake.stop()


def test_version_pins_the_predictions_endpoint_and_text_samples_send_no_image(tmp_path, env, samples):
    fake = FakeReplicate(samples)
    try:
        adapter = _adapter(tmp_path, env, fake, spec="replicate:acme/painter:5c7d5dc6dd8b")
        adapter.generate(GenerationRequest.from_sample(_pick(samples, "color")))
        create = fake.creates[0]
        assert create["path"] == "/v1/predictions" and create["body"]["version"] == "5c7d5dc6dd8b"
        assert "image" not in create["body"]["input"] and "mask" not in create["body"]["input"]
    finally:
        fake.stop()


def test_prefer_wait_answer_needs_no_poll(tmp_path, env, samples):
    fake = FakeReplicate(samples)
    try:
        adapter = _adapter(tmp_path, env, fake, spec="replicate:acme/painter?wait=5")
        adapter.generate(GenerationRequest.from_sample(_pick(samples, "shape")))
        assert fake.creates[0]["prefer"] == "wait=5"
        assert not fake.polled.is_set()
    finally:
        fake.stop()


def test_failed_and_nsfw_predictions(tmp_path, env, samples):
    refuse, fail = _pick(samples, "color", 0), _pick(samples, "color", 1)
    fake = FakeReplicate(samples, {refuse.id: "refuse", fail.id: "fail"})
    try:
        adapter = _adapter(tmp_path, env, fake)
        with pytest.raises(GenerationRefused, match="NSFW"):
            adapter.generate(GenerationRequest.from_sample(refuse))
        with pytest.raises(GenerationError, match="out of memory") as info:
            adapter.generate(GenerationRequest.from_sample(fail))
        assert not isinstance(info.value, GenerationRefused)
        assert len(fake.creates) == 2  # never retried
    finally:
        fake.stop()


def test_interrupt_cancels_the_prediction(tmp_path, env, samples):
    sample = _pick(samples, "color")
    fake = FakeReplicate(samples, {sample.id: "hang"})
    cancel = threading.Event()
    try:
        adapter = _adapter(tmp_path, env, fake, cancel=cancel)
        raised = []

        def run():
            try:
                adapter.generate(GenerationRequest.from_sample(sample))
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                raised.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert fake.polled.wait(10)
        cancel.set()
        worker.join(10)
        assert not worker.is_alive() and isinstance(raised[0], GenerationCancelled)
        assert fake.cancel_seen.wait(10) and fake.cancelled == ["p0000"]
    finally:
        fake.stop()


def test_poll_url_on_another_host_gets_no_token(tmp_path, env, samples):
    fake = FakeReplicate(samples)
    try:
        adapter = _adapter(tmp_path, env, fake)
        with pytest.raises(GenerationError, match="not on the API's host"):
            adapter._own_url({"urls": {"get": "http://evil.example/v1/predictions/x"}}, "get")
    finally:
        fake.stop()


@pytest.mark.parametrize("spec, needle", [
    ("replicate:", "OWNER/NAME"),
    ("replicate:painter", "OWNER/NAME"),
    ("replicate:a/b:", "OWNER/NAME"),
    ("replicate:a/b:v?wait=90", "wait"),
    ("replicate:a/b?colour=1", "unknown parameter"),
])
def test_bad_specs(tmp_path, env, spec, needle):
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model(spec, AdapterOptions(rootdir=tmp_path))


def test_wait_must_be_shorter_than_the_timeout(tmp_path, env):
    with pytest.raises(ModelSpecError, match="--violin-timeout"):
        resolve_model("replicate:a/b?wait=30", AdapterOptions(rootdir=tmp_path, timeout=20.0))


def test_wrong_token_fails_with_replicates_detail_and_is_not_retried(tmp_path, env, samples):
    fake = FakeReplicate(samples)
    try:
        adapter = _adapter(tmp_path, env, fake)
        env.setenv("REPLICATE_API_TOKEN", "r8_wrong")
        wrong = _adapter(tmp_path, env, fake)
        with pytest.raises(GenerationError, match="401.*valid authentication token") as info:
            wrong.generate(GenerationRequest.from_sample(_pick(samples, "color")))
        assert info.value.attempts == 1 and fake.creates == []
        assert adapter.client is not wrong.client
    finally:
        fake.stop()

def test_input_file_must_be_an_object_with_known_placeholders(tmp_path, env):
    path = tmp_path / "input.json"
    for text, needle in (("[1]", "JSON object"), ('{"p": "{colour}"}', "colour")):
        path.write_text(text)
        with pytest.raises(ModelSpecError, match=needle):
            resolve_model("replicate:a/b", AdapterOptions(rootdir=tmp_path, extra={"replicate_input": str(path)}))


def test_end_to_end_twenty_samples(pytester, monkeypatch, samples):
    ids = sorted(samples)
    by_task = {t: [i for i in ids if samples[i].task == t] for t in ("color", "shape", "mask")}
    plan = {by_task["color"][0]: "refuse", by_task["shape"][0]: "fail",
            by_task["mask"][0]: "slow", by_task["color"][1]: "rate"}
    fake = FakeReplicate(samples, plan)
    try:
        monkeypatch.setenv("REPLICATE_API_TOKEN", TOKEN)
        monkeypatch.setenv("REPLICATE_BASE_URL", fake.base)
        pytester.makefile(".json", input=json.dumps(INPUT_FILE))
        result = pytester.runpytest(
            "--violin-model=replicate:acme/painter", f"--violin-tasks={TASKS}", f"--violin-limit={LIMIT}",
            "--violin-replicate-input=input.json", "--violin-report=rep", "--junitxml=j.xml",
            "--violin-no-cache", "-p", "no:randomly", "-rA")
        results = json.loads((pytester.path / "rep" / "results.json").read_text())
        outcome = {r["sample_id"]: r["outcome"] for r in results["samples"]}
        assert len(outcome) == LIMIT and set(outcome) == set(ids)
        assert outcome[plan_id(plan, "refuse")] == "refused"
        assert outcome[plan_id(plan, "fail")] == "failed"
        assert outcome[plan_id(plan, "slow")] == "passed" and outcome[plan_id(plan, "rate")] == "passed"
        assert sum(v == "passed" for v in outcome.values()) == LIMIT - 2
        assert len(fake.rated) == 1
        texts = [result.stdout.str(), result.stderr.str(), (pytester.path / "j.xml").read_text()]
        texts += [p.read_text(errors="replace") for p in Path(pytester.path / "rep").rglob("*") if p.is_file()]
        assert all(TOKEN not in text for text in texts)
    finally:
        fake.stop()


def plan_id(plan: dict, kind: str) -> str:
    return next(sid for sid, k in plan.items() if k == kind)


def test_missing_token_is_a_usage_error(pytester, monkeypatch):
    monkeypatch.delenv("REPLICATE_API_TOKEN", raising=False)
    result = pytester.runpytest("--violin-model=replicate:acme/painter", "--violin-limit=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "REPLICATE_API_TOKEN" in result.stderr.str() + result.stdout.str()
