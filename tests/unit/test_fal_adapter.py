"""``fal:APP`` against a local fake of fal.ai's queue.

The fake follows fal's documented queue API (docs.fal.ai, "Queue"):
``POST /{app}`` with ``Authorization: Key ...`` answers ``{"request_id",
"status_url", "response_url", "cancel_url"}``; ``GET .../status`` answers
``IN_QUEUE`` / ``IN_PROGRESS`` (HTTP 202) then ``COMPLETED`` (200);
``GET .../requests/{id}`` answers the model's output (``images[0].url`` on
a media host: a second server, another origin) or a model error
(``{"detail": [{"loc", "msg", "type"}]}``); ``PUT .../cancel`` cancels.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest

import pytest_violin.models.fal  # noqa: F401  imported before pytester snapshots sys.modules
from _servers import FaultServer, Reply, solid
from pytest_violin.errors import GenerationCancelled, GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.imaging import decode_image
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model

KEY = "fal-test-key-0b5e2c8d71:a9f3c6e1d0b74f25"
SECRET = KEY.partition(":")[2]
IMG = solid(16, 16, (30, 40, 220))
APP = "fal-ai/flux/dev"


def lower(headers) -> dict:
    return {k.lower(): v for k, v in headers.items()}


class FakeFal:
    """fal's queue: requests whose fate ``kind_of(body)`` decides.

    Kinds: ``ok``, ``slow`` (IN_QUEUE, IN_PROGRESS twice, then COMPLETED),
    ``429`` (the first submit is throttled), ``nsfw`` (the output flags
    ``has_nsfw_concepts``), ``policy`` (a 422 ``content_policy_violation``
    result), ``failed`` (a 500 result: the runner crashed), ``pending``
    (never finishes).
    """

    def __init__(self, kind_of=lambda body: "ok", image_of=lambda body: IMG, url_base=None):
        self.kind_of = kind_of
        self.image_of = image_of
        self.url_base = url_base
        self.jobs: dict[str, dict] = {}
        self.throttled: set = set()
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.polled = threading.Event()
        self.cancelled = threading.Event()
        self.api = FaultServer(handler=self.handle)
        self.media = FaultServer(handler=self.deliver)

    def __enter__(self):
        self.api.start()
        self.media.start()
        return self

    def __exit__(self, *exc):
        self.api.stop()
        self.media.stop()

    def handle(self, rec):
        path = rec.path.partition("?")[0]
        if lower(rec.headers).get("authorization") != f"Key {KEY}":
            return Reply(401, {"detail": "Unauthorized"})
        owner_app = "/".join(APP.split("/")[:2])
        if rec.method == "POST" and path == f"/{APP}":
            body = rec.json()
            kind = self.kind_of(body)
            with self.lock:
                if kind == "429" and body["seed"] not in self.throttled:
                    self.throttled.add(body["seed"])
                    return Reply(429, {"detail": "Rate limit exceeded"}, headers={"Retry-After": "0"})
                rid = f"req-{next(self.ids)}"
                self.jobs[rid] = {"kind": kind, "body": body, "polls": 0}
            own = f"{self.url_base or self.api.url}/{owner_app}/requests/{rid}"
            return Reply.json({"request_id": rid, "status_url": f"{own}/status", "response_url": own,
                               "cancel_url": f"{own}/cancel", "queue_position": 0},
                              headers={"Retry-After": "0"})
        prefix = f"/{owner_app}/requests/"
        if not path.startswith(prefix):
            return Reply(404, {"detail": "Not Found"})
        rid, _, rest = path[len(prefix):].partition("/")
        with self.lock:
            state = self.jobs.get(rid)
        if state is None:
            return Reply(404, {"detail": "Request not found"})
        if rec.method == "PUT" and rest == "cancel":
            self.cancelled.set()
            return Reply(202, {"status": "CANCELLATION_REQUESTED"})
        if rec.method == "GET" and rest == "status":
            self.polled.set()
            with self.lock:
                state["polls"] += 1
                polls = state["polls"]
            hint = {"Retry-After": "0"}
            if state["kind"] == "pending" or (state["kind"] == "slow" and polls <= 3):
                status = "IN_QUEUE" if polls == 1 else "IN_PROGRESS"
                return Reply.json({"status": status, "queue_position": 0}, status=202, headers=hint)
            return Reply.json({"status": "COMPLETED", "response_url": f"{self.api.url}{prefix}{rid}"},
                              headers=hint)
        if rec.method == "GET" and rest == "":
            kind = state["kind"]
            if kind == "policy":
                return Reply(422, {"detail": [{"loc": ["body", "prompt"], "type": "content_policy_violation",
                                               "msg": "The content could not be processed because it "
                                                      "contained material flagged by a content checker.",
                                               "url": "https://docs.fal.ai/errors#content_policy_violation"}]},
                             headers={"X-Fal-Retryable": "false"})
            if kind == "failed":
                return Reply(500, {"detail": f"runner crashed (you sent Key {KEY}, secret {SECRET})",
                                   "error_type": "runner_server_error"},
                             headers={"X-Fal-Retryable": "false"})
            return Reply.json({"images": [{"url": f"{self.media.url}/files/{rid}.png", "width": 16,
                                           "height": 16, "content_type": "image/png"}],
                               "seed": state["body"]["seed"], "has_nsfw_concepts": [kind == "nsfw"],
                               "prompt": state["body"]["prompt"]})
        return Reply(405, {"detail": "Method Not Allowed"})

    def deliver(self, rec):
        rid = rec.path.rsplit("/", 1)[1].removesuffix(".png")
        with self.lock:
            body = self.jobs[rid]["body"]
        return Reply.png(self.image_of(body))


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("FAL_KEY", KEY)
    monkeypatch.delenv("FAL_BASE_URL", raising=False)
    return monkeypatch


def adapter(fake, env, spec=f"fal:{APP}", **kw):
    env.setenv("FAL_BASE_URL", fake.api.url)
    return resolve_model(spec, AdapterOptions(retries=2, **kw))


def req(images=(), prompt="a solid blue image", seed=7, width=512, height=384):
    return GenerationRequest(prompt=prompt, width=width, height=height, seed=seed,
                             sample_id="color/v1/blue/t01", task="color", images=tuple(images))


def test_submit_poll_read_and_download_without_the_key(env):
    with FakeFal(kind_of=lambda body: "slow") as fake:
        model = adapter(fake, env)
        image = model.generate(req())
        model.close()
    assert image.shape == (16, 16, 3) and tuple(image[0, 0]) == (30, 40, 220)
    submit = fake.api.requests[0]
    assert submit.method == "POST" and submit.path == f"/{APP}"
    assert submit.json() == {"prompt": "a solid blue image", "seed": 7, "num_images": 1,
                             "image_size": {"width": 512, "height": 384}, "output_format": "png"}
    statuses = [r for r in fake.api.requests if r.path.endswith("/status")]
    assert len(statuses) == 4
    assert [r.path for r in fake.api.requests if r.method == "GET" and not r.path.endswith("/status")] == [
        "/fal-ai/flux/requests/req-1"]
    (download,) = fake.media.requests
    assert "authorization" not in lower(download.headers)
    assert KEY not in model.identity and model.identity.startswith(f"fal:{APP}@")


def test_input_images_as_data_uris(env):
    mask = solid(8, 8, (255, 255, 255))
    with FakeFal() as fake:
        body = adapter(fake, env, "fal:fal-ai/flux-pro/kontext").body_for(req(images=(IMG, mask)))
        body2 = adapter(fake, env, "fal:fal-ai/flux-2/edit").body_for(req(images=(IMG, mask)))
        body3 = adapter(fake, env, "fal:fal-ai/x/y?image_field=reference_images").body_for(req(images=(IMG,)))
    head, _, data = body["image_url"].partition(",")
    assert head == "data:image/png;base64" and decode_image(base64.b64decode(data)).shape == (16, 16, 3)
    assert len(body2["image_urls"]) == 2 and body2["image_urls"][1].startswith("data:image/png;base64,")
    assert len(body3["reference_images"]) == 1


@pytest.mark.parametrize("kind, error, needle", [  # nsfw and a failed job: tests/unit/test_adapter_contract.py
    ("policy", GenerationRefused, "flagged by a content checker"),
])
def test_refusals_and_failures(env, kind, error, needle):
    with FakeFal(kind_of=lambda body: kind) as fake:
        with pytest.raises(error, match=needle) as info:
            adapter(fake, env).generate(req())
    if error is GenerationError:
        assert not isinstance(info.value, GenerationRefused)
    assert KEY not in str(info.value) and SECRET not in str(info.value)
    assert len([r for r in fake.api.requests if r.method == "POST"]) == 1


def test_urls_on_another_host_never_get_the_key(env):
    with FaultServer(default=Reply(500, "stolen")) as thief:
        with FakeFal(url_base=thief.url) as fake:
            adapter(fake, env).generate(req())
    assert thief.requests == []
    assert any(r.path == "/fal-ai/flux/requests/req-1/status" for r in fake.api.requests)


def test_interrupt_cancels_the_queued_request(env):
    cancel = threading.Event()
    with FakeFal(kind_of=lambda body: "pending") as fake:
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
        assert fake.cancelled.wait(10)
    assert isinstance(outcome.get("error"), GenerationCancelled)
    (put,) = [r for r in fake.api.requests if r.method == "PUT"]
    assert put.path == "/fal-ai/flux/requests/req-1/cancel"
    assert lower(put.headers)["authorization"] == f"Key {KEY}"


def test_bad_specs(env):
    for spec in ("fal:", "fal:flux", "fal:a/../b c"):
        with pytest.raises(ModelSpecError, match="bad app id"):
            resolve_model(spec, AdapterOptions())
    with pytest.raises(ModelSpecError, match="image_field"):
        resolve_model(f"fal:{APP}?image_field=a.b", AdapterOptions())


# ------------------------------------------------------------------ end to end


@pytest.mark.slow  # seconds; bfl's run of the same shape (a job service) is the default run's
def test_end_to_end_run_with_refusal_failure_slow_job_and_429(pytester, monkeypatch):
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", tasks=["color", "shape", "mask"], limit=20)
    by_seed = {GenerationRequest.from_sample(s).seed: s for s in samples}
    ids = [s.id for s in samples]
    fates = {ids[3]: "nsfw", ids[8]: "failed", ids[15]: "slow", ids[0]: "429"}
    kind_of = {seed: fates.get(s.id, "ok") for seed, s in by_seed.items()}
    expected = {seed: s.expected() for seed, s in by_seed.items()}
    with FakeFal(kind_of=lambda body: kind_of[body["seed"]],
                 image_of=lambda body: expected[body["seed"]]) as fake:
        monkeypatch.setenv("FAL_KEY", KEY)
        monkeypatch.setenv("FAL_BASE_URL", fake.api.url)
        result = pytester.runpytest(f"--violin-model=fal:{APP}", "--violin-tasks=color,shape,mask",
                                    "--violin-limit=20", "--violin-report=rep", "--violin-concurrency=4",
                                    "--junitxml=junit.xml", "-p", "no:randomly", "-rA")
    results = json.loads((pytester.path / "rep" / "results.json").read_text())
    outcome = {r["sample_id"]: r["outcome"] for r in results["samples"]}
    assert len(outcome) == 20
    assert outcome[ids[3]] == "refused" and outcome[ids[8]] == "failed"
    assert outcome[ids[15]] == "passed" and outcome[ids[0]] == "passed"
    assert list(outcome.values()).count("passed") == 18, outcome
    submits = [r.json() for r in fake.api.requests if r.method == "POST"]
    assert len(submits) == 21 and len(fake.throttled) == 1
    masks = [s for s in samples if s.task == "mask"]
    assert masks and sum("image_url" in body for body in submits) == len(masks)
    assert all("authorization" not in lower(r.headers) for r in fake.media.requests)
    texts = [result.stdout.str(), result.stderr.str(), (pytester.path / "junit.xml").read_text()]
    texts += [p.read_text(errors="replace") for p in (pytester.path / "rep").rglob("*") if p.is_file()]
    assert "runner crashed" in "".join(texts)
    assert not any(KEY in text or SECRET in text for text in texts)
