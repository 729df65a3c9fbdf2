"""``comfyui:URL`` with ``--violin-workflow`` against a local server that follows ComfyUI's routes.

The fake follows the documented server routes (see
/work/notes/issue-15-replicate-comfyui.md): ``POST /upload/image``
(multipart ``image``, ``type``, ``overwrite``; answers ``name``,
``subfolder``, ``type``), ``POST /prompt`` (``{"prompt": workflow,
"client_id"}``; answers ``prompt_id``, ``number``, ``node_errors``, or 400
with ``error`` and ``node_errors``), ``GET /history/{prompt_id}`` (``{}``
until the prompt ends, then ``outputs`` and ``status`` with ``status_str``
and ``messages``), ``GET /view?filename&subfolder&type``, ``POST /queue``
(``delete``) and ``POST /interrupt``.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests  # noqa: F401  same reason

from _servers import png_bytes
from pytest_violin.errors import GenerationCancelled, GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.models.comfyui import Workflow
from pytest_violin.models.registry import AdapterOptions, resolve_model
from pytest_violin.models.request import GenerationRequest
from pytest_violin.suite import load_suite

TASKS = "color,shape,mask"
LIMIT = 20
PASSWORD = "cfy-e2e-plant-8e21b7d4c9"

TEXT_WORKFLOW = {
    "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "model.safetensors"}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": "{width}", "height": "{height}", "batch_size": 1}},
    "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "{prompt}", "clip": ["4", 1]}},
    "3": {"class_type": "KSampler", "inputs": {"seed": "{seed}", "steps": 4, "cfg": 1.0, "model": ["4", 0],
                                               "positive": ["6", 0], "latent_image": ["5", 0]}},
    "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["4", 2]}},
    "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "violin_{sample_id}"}},
}

EDIT_WORKFLOW = {
    **TEXT_WORKFLOW,
    "10": {"class_type": "LoadImage", "inputs": {"image": "{image}"}},
    "11": {"class_type": "LoadImage", "inputs": {"image": "{mask}"}},
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeComfyUI:
    """ComfyUI's HTTP routes; ``plan`` maps a sample id to ``refuse`` (no
    image output), ``fail`` (execution error), ``slow``, ``rate`` (one 429
    from a gateway first), ``hang`` (runs until interrupted) or ``queued``
    (waits in the queue: never listed as running)."""

    def __init__(self, samples: dict, plan: dict | None = None, auth: str | None = None):
        self.samples = samples
        self.plan = dict(plan or {})
        self.auth = auth
        self.uploads: dict[str, bytes] = {}
        self.prompts: dict[str, dict] = {}
        self.queued: list[dict] = []
        self.rated: set = set()
        self.deleted: list = []
        self.interrupted: list = []
        self.polled = threading.Event()
        self.interrupt_seen = threading.Event()
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
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

            def body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_GET(self):
                owner.route(self, "GET")

            def do_POST(self):
                owner.route(self, "POST")

        return Handler

    def entry(self, pid: str) -> dict:
        p = self.prompts[pid]
        messages = [["execution_start", {"prompt_id": pid}]]
        if p["kind"] == "fail":
            messages.append(["execution_error", {"prompt_id": pid, "node_id": "3", "node_type": "KSampler",
                                                 "exception_message": "CUDA error: out of memory",
                                                 "exception_type": "torch.OutOfMemoryError"}])
            return {"prompt": [0, pid, p["workflow"], {}, ["9"]], "outputs": {},
                    "status": {"status_str": "error", "completed": False, "messages": messages}}
        outputs = {} if p["kind"] == "refuse" else {"9": {"images": [
            {"filename": f"violin_{pid}_00001_.png", "subfolder": "", "type": "output"}]}}
        messages.append(["execution_success", {"prompt_id": pid}])
        return {"prompt": [0, pid, p["workflow"], {}, ["9"]], "outputs": outputs,
                "status": {"status_str": "success", "completed": True, "messages": messages}}

    def route(self, h, method):
        if self.auth and h.headers.get("Authorization") != self.auth:
            return h.send(401, body=b"401: Unauthorized", ctype="text/plain")
        url = urlsplit(h.path)
        path = url.path
        if method == "POST" and path == "/upload/image":
            msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(
                b"Content-Type: " + h.headers["Content-Type"].encode() + b"\r\n\r\n" + h.body())
            fields = {part.get_param("name", header="content-disposition"): part for part in msg.iter_parts()}
            image = fields["image"]
            name = image.get_filename()
            with self.lock:
                self.uploads[name] = image.get_payload(decode=True)
            kind = fields["type"].get_content().strip() if "type" in fields else "input"
            return h.send(200, {"name": name, "subfolder": "", "type": kind})
        if method == "POST" and path == "/prompt":
            payload = json.loads(h.body())
            workflow = payload["prompt"]
            sid = workflow["9"]["inputs"]["filename_prefix"].removeprefix("violin_")
            kind = self.plan.get(sid, "ok")
            with self.lock:
                self.queued.append(payload)
                if kind == "rate" and sid not in self.rated:
                    self.rated.add(sid)
                    return h.send(429, {"error": "too many requests"}, headers=[("Retry-After", "0")])
                missing = {nid: node for nid, node in workflow.items() if node["class_type"] == "LoadImage"
                           and node["inputs"]["image"] not in self.uploads}
                if missing or not isinstance(workflow["3"]["inputs"]["seed"], int):
                    return h.send(400, {"error": {"type": "prompt_outputs_failed_validation",
                                                  "message": "Prompt outputs failed validation", "details": ""},
                                        "node_errors": {nid: {"errors": [{"message": "Invalid image file"}]}
                                                        for nid in missing}})
                pid = str(uuid.uuid4())
                self.prompts[pid] = {"workflow": workflow, "kind": kind, "sid": sid,
                                     "polls": {"slow": 4, "hang": 10**9, "queued": 10**9}.get(kind, 1)}
            return h.send(200, {"prompt_id": pid, "number": len(self.queued), "node_errors": {}},
                          headers=[("Retry-After", "0.01")])
        if method == "GET" and path.startswith("/history/"):
            pid = path.rsplit("/", 1)[1]
            with self.lock:
                p = self.prompts.get(pid)
                done = False
                if p is not None and not p.get("cancelled"):
                    p["polls"] -= 1
                    done = p["polls"] <= 0
                body = {pid: self.entry(pid)} if done else {}
            self.polled.set()
            return h.send(200, body, headers=[("Retry-After", "0.01")])
        if method == "GET" and path == "/view":
            query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            pid = query["filename"].split("_")[1]
            assert query["type"] == "output" and query["subfolder"] == ""
            sample = self.samples[self.prompts[pid]["sid"]]
            return h.send(200, body=png_bytes(sample.expected()), ctype="image/png")
        if method == "GET" and path == "/queue":
            with self.lock:
                running = [[i, pid, {}, {}, ["9"]] for i, (pid, p) in enumerate(self.prompts.items())
                           if p["kind"] == "hang" and not p.get("cancelled")]
            return h.send(200, {"queue_running": running, "queue_pending": []})
        if method == "POST" and path == "/queue":
            with self.lock:
                self.deleted.extend(json.loads(h.body()).get("delete", []))
            return h.send(200, body=b"", ctype="text/plain")
        if method == "POST" and path == "/interrupt":
            pid = json.loads(h.body() or b"{}").get("prompt_id")
            with self.lock:
                self.interrupted.append(pid)
                if pid in self.prompts:
                    self.prompts[pid]["cancelled"] = True
            self.interrupt_seen.set()
            return h.send(200, body=b"", ctype="text/plain")
        return h.send(404, body=b"404: Not Found", ctype="text/plain")


@pytest.fixture(scope="module")
def samples():
    return {s.id: s for s in load_suite("violin", tasks=TASKS.split(","), limit=LIMIT)}


def _adapter(tmp_path, fake, workflow=TEXT_WORKFLOW, **kw):
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(workflow))
    opts = AdapterOptions(rootdir=tmp_path, timeout=10.0, extra={"workflow": str(path)}, **kw)
    return resolve_model(f"comfyui:{fake.url}", opts)


def _pick(samples, task, n=0):
    return [s for s in samples.values() if s.task == task][n]


def test_edit_workflow_uploads_inputs_queues_polls_and_views(tmp_path, samples):
    fake = FakeComfyUI(samples)
    try:
        adapter = _adapter(tmp_path, fake, EDIT_WORKFLOW)
        sample = _pick(samples, "mask")
        image = adapter.generate(GenerationRequest.from_sample(sample))
        assert image.shape == sample.expected().shape
        assert len(fake.uploads) == 2 and all(data.startswith(b"\x89PNG") for data in fake.uploads.values())
        sent = fake.queued[0]["prompt"]
        assert sent["6"]["inputs"]["text"] == sample.prompt
        assert isinstance(sent["3"]["inputs"]["seed"], int) and sent["5"]["inputs"]["width"] == sample.width
        assert {sent["10"]["inputs"]["image"], sent["11"]["inputs"]["image"]} == set(fake.uploads)
        assert fake.queued[0]["client_id"] == adapter.client_id
    finally:
        fake.stop()


def test_edit_workflow_on_a_sample_without_inputs_says_why(tmp_path, samples):
    fake = FakeComfyUI(samples)
    try:
        adapter = _adapter(tmp_path, fake, EDIT_WORKFLOW)
        with pytest.raises(ModelSpecError, match=r"\{image\}.*text-to-image workflow"):
            adapter.generate(GenerationRequest.from_sample(_pick(samples, "color")))
        assert fake.queued == []
    finally:
        fake.stop()


def test_execution_error_fails_and_no_image_output_is_a_refusal(tmp_path, samples):
    fail, refuse = _pick(samples, "shape", 0), _pick(samples, "shape", 1)
    fake = FakeComfyUI(samples, {fail.id: "fail", refuse.id: "refuse"})
    try:
        adapter = _adapter(tmp_path, fake)
        with pytest.raises(GenerationError, match="KSampler: CUDA error: out of memory") as info:
            adapter.generate(GenerationRequest.from_sample(fail))
        assert not isinstance(info.value, GenerationRefused)
        with pytest.raises(GenerationRefused, match="no image"):
            adapter.generate(GenerationRequest.from_sample(refuse))
        assert len(fake.queued) == 2
    finally:
        fake.stop()


def test_validation_error_is_a_failure_with_the_servers_message(tmp_path, samples):
    fake = FakeComfyUI(samples)
    try:
        adapter = _adapter(tmp_path, fake, {**TEXT_WORKFLOW, "12": {"class_type": "LoadImage",
                                                                      "inputs": {"image": "absent.png"}}})
        with pytest.raises(GenerationError, match="400.*Prompt outputs failed validation"):
            adapter.generate(GenerationRequest.from_sample(_pick(samples, "color")))
    finally:
        fake.stop()


@pytest.mark.parametrize("kind", ["hang", "queued"])
def test_interrupt_deletes_the_prompt_and_interrupts_it_only_while_it_runs(tmp_path, samples, kind):
    sample = _pick(samples, "color")
    fake = FakeComfyUI(samples, {sample.id: kind})
    cancel = threading.Event()
    try:
        adapter = _adapter(tmp_path, fake, cancel=cancel)
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
        pid = next(iter(fake.prompts))  # the cancel requests are made before generate() raises
        assert fake.deleted == [pid] and fake.interrupted == ([pid] if kind == "hang" else [])
    finally:
        fake.stop()


@pytest.mark.parametrize("body, needle", [
    ({"nodes": [], "links": []}, "UI format"),
    ([1, 2], "API format"),
    ({"1": {"inputs": {}}}, "API format"),
    ({"1": {"class_type": "X", "inputs": {"t": "{colour}"}}}, "colour"),
    ({"1": {"class_type": "X", "inputs": {"t": "fixed"}}}, r"\{prompt\}"),
])
def test_bad_workflows(body, needle):
    with pytest.raises(ModelSpecError, match=needle):
        Workflow(body)


def test_literal_braces_and_typed_placeholders():
    wf = Workflow({"1": {"class_type": "X", "inputs": {"t": "{{a|b}} {prompt}", "s": "{seed}"}}})
    request = GenerationRequest(prompt="p", width=8, height=8, seed=7, sample_id="s", task="color")
    assert wf.render(request, []) == {"1": {"class_type": "X", "inputs": {"t": "{a|b} p", "s": 7}}}


def test_spec_errors(tmp_path):
    with pytest.raises(ModelSpecError, match="--violin-workflow"):
        resolve_model("comfyui:http://127.0.0.1:8188", AdapterOptions(rootdir=tmp_path))
    with pytest.raises(ModelSpecError, match="does not exist"):
        resolve_model("comfyui:127.0.0.1:8188", AdapterOptions(rootdir=tmp_path, extra={"workflow": "no.json"}))
    with pytest.raises(ModelSpecError, match="URL"):
        resolve_model("comfyui:", AdapterOptions(rootdir=tmp_path))


def test_end_to_end_twenty_samples(pytester, samples):
    ids = sorted(samples)
    by_task = {t: [i for i in ids if samples[i].task == t] for t in ("color", "shape", "mask")}
    plan = {by_task["shape"][0]: "refuse", by_task["color"][0]: "fail",
            by_task["mask"][0]: "slow", by_task["color"][1]: "rate"}
    fake = FakeComfyUI(samples, plan, auth="Basic dmlvbGluOmNmeS1lMmUtcGxhbnQtOGUyMWI3ZDRjOQ==")
    try:
        pytester.makefile(".json", workflow=json.dumps(TEXT_WORKFLOW))
        url = fake.url.replace("://", f"://violin:{PASSWORD}@")
        result = pytester.runpytest(
            f"--violin-model=comfyui:{url}", f"--violin-tasks={TASKS}", f"--violin-limit={LIMIT}",
            "--violin-workflow=workflow.json", "--violin-report=rep", "--junitxml=j.xml",
            "--violin-no-cache", "-p", "no:randomly", "-rA")
        results = json.loads((pytester.path / "rep" / "results.json").read_text())
        outcome = {r["sample_id"]: r["outcome"] for r in results["samples"]}
        assert len(outcome) == LIMIT and set(outcome) == set(ids)
        kinds = {kind: sid for sid, kind in plan.items()}
        assert outcome[kinds["refuse"]] == "refused" and outcome[kinds["fail"]] == "failed"
        assert outcome[kinds["slow"]] == "passed" and outcome[kinds["rate"]] == "passed"
        assert sum(v == "passed" for v in outcome.values()) == LIMIT - 2
        assert len(fake.rated) == 1
        texts = [result.stdout.str(), result.stderr.str(), (pytester.path / "j.xml").read_text()]
        texts += [p.read_text(errors="replace") for p in Path(pytester.path / "rep").rglob("*") if p.is_file()]
        assert all(PASSWORD not in text for text in texts)
    finally:
        fake.stop()


def test_bad_workflow_is_a_usage_error(pytester):
    pytester.makefile(".json", workflow=json.dumps({"nodes": [], "links": []}))
    result = pytester.runpytest("--violin-model=comfyui:http://127.0.0.1:9", "--violin-limit=1",
                                "--violin-workflow=workflow.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "API format" in result.stderr.str() + result.stdout.str()
