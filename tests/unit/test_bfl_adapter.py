"""``bfl:MODEL`` against a local fake of Black Forest Labs' API.

The fake follows BFL's documented API (docs.bfl.ai): ``POST /v1/{model}``
with the ``x-key`` header answers ``{"id", "polling_url"}``; ``GET
/v1/get_result?id=`` answers ``{"id", "status", "result"}`` with the states
``Pending``, ``Ready`` (``result.sample`` a signed URL on a delivery host),
``Error``, ``Request Moderated``, ``Content Moderated`` and ``Task not
found``. The delivery host is a second server (another origin), so the
tests see whether the key followed the image URL.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest

import pytest_violin.models.bfl  # noqa: F401  imported before pytester snapshots sys.modules
from _servers import FaultServer, Reply, png_bytes, solid
from pytest_violin.errors import GenerationCancelled, GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.imaging import decode_image
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model

KEY = "bfl-test-key-6d1f0a9c3e7b"
IMG = solid(16, 16, (20, 200, 30))


def lower(headers) -> dict:
    return {k.lower(): v for k, v in headers.items()}


class FakeBfl:
    """BFL's API: jobs whose fate ``kind_of(body)`` decides.

    Kinds: ``ok``, ``slow`` (three ``Pending`` answers first), ``429`` (the
    first submit is throttled), ``error``, ``request-moderated``,
    ``content-moderated``, ``lost`` (``Task not found``), ``pending``
    (never finishes).
    """

    def __init__(self, kind_of=lambda body: "ok", image_of=lambda body: IMG, polling_base=None):
        self.kind_of = kind_of
        self.image_of = image_of
        self.polling_base = polling_base
        self.jobs: dict[str, dict] = {}
        self.throttled: set = set()
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.polled = threading.Event()
        self.api = FaultServer(handler=self.handle)
        self.delivery = FaultServer(handler=self.deliver)

    def __enter__(self):
        self.api.start()
        self.delivery.start()
        return self

    def __exit__(self, *exc):
        self.api.stop()
        self.delivery.stop()

    def handle(self, rec):
        path, _, query = rec.path.partition("?")
        if lower(rec.headers).get("x-key") != KEY:
            return Reply(403, {"detail": "Not authenticated"})
        if rec.method == "POST" and path.startswith("/v1/"):
            body = rec.json()
            kind = self.kind_of(body)
            with self.lock:
                if kind == "429" and body["seed"] not in self.throttled:
                    self.throttled.add(body["seed"])
                    return Reply(429, {"detail": "Too many active tasks"}, headers={"Retry-After": "0"})
                job = f"job-{next(self.ids)}"
                self.jobs[job] = {"kind": kind, "body": body, "polls": 0}
            base = self.polling_base or self.api.url
            return Reply.json({"id": job, "polling_url": f"{base}/v1/get_result?id={job}"},
                              headers={"Retry-After": "0"})
        if rec.method == "GET" and path == "/v1/get_result":
            job = query.partition("id=")[2]
            self.polled.set()
            with self.lock:
                state = self.jobs.get(job)
                if state is None:
                    return Reply.json({"id": job, "status": "Task not found", "result": None})
                state["polls"] += 1
                kind, polls = state["kind"], state["polls"]
            hint = {"Retry-After": "0"}
            if kind == "pending" or (kind == "slow" and polls <= 3):
                return Reply.json({"id": job, "status": "Pending", "result": None, "progress": 0.5},
                                  headers=hint)
            if kind == "error":
                return Reply.json({"id": job, "status": "Error", "result": None,
                                   "details": f"GPU fell over (you sent x-key {KEY})"}, headers=hint)
            if kind == "request-moderated":
                return Reply.json({"id": job, "status": "Request Moderated", "result": None}, headers=hint)
            if kind == "content-moderated":
                return Reply.json({"id": job, "status": "Content Moderated", "result": None}, headers=hint)
            if kind == "lost":
                return Reply.json({"id": job, "status": "Task not found", "result": None}, headers=hint)
            return Reply.json({"id": job, "status": "Ready", "result": {
                "sample": f"{self.delivery.url}/results/{job}/sample.png?se=2026&sig=signed-{job}",
                "seed": state["body"]["seed"]}}, headers=hint)
        return Reply(404, {"detail": "Not Found"})

    def deliver(self, rec):
        job = rec.path.split("/")[2]
        with self.lock:
            body = self.jobs[job]["body"]
        return Reply.png(self.image_of(body))


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("BFL_API_KEY", KEY)
    monkeypatch.delenv("BFL_BASE_URL", raising=False)
    return monkeypatch


def adapter(fake, env, spec="bfl:flux-2-pro", **kw):
    env.setenv("BFL_BASE_URL", fake.api.url + "/v1")
    return resolve_model(spec, AdapterOptions(retries=2, **kw))


def req(images=(), prompt="a solid green image", seed=42, width=500, height=300):
    return GenerationRequest(prompt=prompt, width=width, height=height, seed=seed,
                             sample_id="color/v1/green/t01", task="color", images=tuple(images))


def test_submit_poll_and_download_without_the_key(env):
    with FakeBfl(kind_of=lambda body: "slow") as fake:
        model = adapter(fake, env)
        image = model.generate(req())
        model.close()
    assert image.shape == (16, 16, 3) and tuple(image[0, 0]) == (20, 200, 30)
    submit = fake.api.requests[0]
    assert submit.method == "POST" and submit.path == "/v1/flux-2-pro"
    body = submit.json()
    # seed, and the size as FLUX.2 takes it (multiples of 32 fit every reference's rule)
    assert body == {"prompt": "a solid green image", "seed": 42, "width": 512, "height": 288,
                    "output_format": "png"}
    polls = [r for r in fake.api.requests if r.path.startswith("/v1/get_result")]
    assert len(polls) == 4 and all(lower(r.headers)["x-key"] == KEY for r in polls)
    (download,) = fake.delivery.requests
    assert "x-key" not in lower(download.headers) and "authorization" not in lower(download.headers)
    assert KEY not in model.identity and model.identity.startswith("bfl:flux-2-pro@")


def test_flux1_sizes_and_kontext_aspect_ratio(env):
    with FakeBfl() as fake:
        body1 = adapter(fake, env, "bfl:flux-dev?steps=28").body_for(req(width=500, height=300))
        body2 = adapter(fake, env, "bfl:flux-kontext-pro").body_for(req(width=1024, height=768))
    assert (body1["width"], body1["height"], body1["steps"]) == (512, 288, 28)
    assert body2["aspect_ratio"] == "4:3" and "width" not in body2


def test_input_images_for_edit_models_and_a_clear_failure_for_others(env):
    mask = solid(8, 8, (255, 255, 255))
    with FakeBfl() as fake:
        model = adapter(fake, env, "bfl:flux-2-pro")
        model.generate(req(images=(IMG, mask)))
        body = fake.api.requests[0].json()
        assert decode_image(base64.b64decode(body["input_image"])).shape == (16, 16, 3)
        assert decode_image(base64.b64decode(body["input_image_2"])).shape[:2] == (8, 8)
        flux1 = adapter(fake, env, "bfl:flux-pro-1.1")
        with pytest.raises(GenerationError, match="takes no input image") as info:
            flux1.generate(req(images=(IMG, mask)))
        assert not isinstance(info.value, GenerationRefused)
        forced = adapter(fake, env, "bfl:flux-pro-1.1?edit=on").body_for(req(images=(IMG,)))
        assert "input_image" in forced


@pytest.mark.parametrize("kind, error, needle", [  # request-moderated, error: tests/unit/test_adapter_contract.py
    ("content-moderated", GenerationRefused, "content moderated"),
    ("lost", GenerationError, "task not found"),
])
def test_terminal_states(env, kind, error, needle):
    with FakeBfl(kind_of=lambda body: kind) as fake:
        with pytest.raises(error, match=needle) as info:
            adapter(fake, env).generate(req())
    if error is GenerationError:
        assert not isinstance(info.value, GenerationRefused)
    assert KEY not in str(info.value)
    assert len([r for r in fake.api.requests if r.method == "POST"]) == 1  # never resubmitted


def test_polling_url_on_another_host_never_gets_the_key(env):
    with FaultServer(default=Reply(500, "stolen")) as thief:
        with FakeBfl(polling_base=thief.url) as fake:
            adapter(fake, env).generate(req())
    assert thief.requests == []
    assert any(r.path.startswith("/v1/get_result?id=job-1") for r in fake.api.requests)


def test_interrupt_stops_polling(env):
    cancel = threading.Event()
    with FakeBfl(kind_of=lambda body: "pending") as fake:
        model = adapter(fake, env, cancel=cancel)
        outcome = {}

        def run():
            try:
                model.generate(req())
            except Exception as exc:  # noqa: BLE001 - the test inspects it
                outcome["error"] = exc

        worker = threading.Thread(target=run)
        worker.start()
        assert fake.polled.wait(10)
        cancel.set()
        worker.join(10)
    assert isinstance(outcome.get("error"), GenerationCancelled)


def test_bad_specs(env):
    with pytest.raises(ModelSpecError, match="bad model name"):
        resolve_model("bfl:", AdapterOptions())
    env.setenv("BFL_BASE_URL", "ftp://example.invalid")
    with pytest.raises(ModelSpecError, match="BFL_BASE_URL"):
        resolve_model("bfl:flux-2-pro", AdapterOptions())


# ------------------------------------------------------------------ end to end

E2E_ARGS = ("--violin-tasks=color,shape,mask", "--violin-limit=20")


def e2e_samples():
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", tasks=["color", "shape", "mask"], limit=20)
    return {GenerationRequest.from_sample(s).seed: s for s in samples}


def test_end_to_end_run_with_refusal_failure_slow_job_and_429(pytester, monkeypatch):
    by_seed = e2e_samples()
    ids = [s.id for s in by_seed.values()]
    fates = {ids[1]: "request-moderated", ids[6]: "error", ids[14]: "slow", ids[2]: "429"}
    kind_of = {seed: fates.get(s.id, "ok") for seed, s in by_seed.items()}
    expected = {seed: s.expected() for seed, s in by_seed.items()}
    with FakeBfl(kind_of=lambda body: kind_of[body["seed"]],
                 image_of=lambda body: expected[body["seed"]]) as fake:
        monkeypatch.setenv("BFL_API_KEY", KEY)
        monkeypatch.setenv("BFL_BASE_URL", fake.api.url + "/v1")
        result = pytester.runpytest("--violin-model=bfl:flux-2-pro", *E2E_ARGS, "--violin-report=rep",
                                    "--violin-concurrency=4", "--junitxml=junit.xml", "-p", "no:randomly",
                                    "-rA")
    results = json.loads((pytester.path / "rep" / "results.json").read_text())
    outcome = {r["sample_id"]: r["outcome"] for r in results["samples"]}
    assert len(outcome) == 20
    assert outcome[ids[1]] == "refused"
    assert outcome[ids[6]] == "failed"
    assert outcome[ids[14]] == "passed" and outcome[ids[2]] == "passed"
    assert sorted(outcome.values()).count("passed") == 18, outcome
    submits = [r.json() for r in fake.api.requests if r.method == "POST"]
    assert len(submits) == 21 and len(fake.throttled) == 1  # the 429 was retried once
    masks = [s.id for s in by_seed.values() if s.task == "mask"]
    assert masks and sum("input_image_2" in body for body in submits) == len(masks)
    assert all("x-key" not in lower(r.headers) for r in fake.delivery.requests)
    texts = [result.stdout.str(), result.stderr.str()]
    texts += [p.read_text(errors="replace") for p in (pytester.path / "rep").rglob("*") if p.is_file()]
    texts.append((pytester.path / "junit.xml").read_text())
    assert "GPU fell over" in "".join(texts)  # the failure's message arrived ...
    assert not any(KEY in text for text in texts)  # ... without the key it echoed
