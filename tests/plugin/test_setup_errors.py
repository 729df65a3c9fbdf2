"""Red means the model: setup errors, time-outs and queues are not disobedience.

For every network adapter: an answer that says the request itself is
invalid (a 401 here) is a :class:`SetupError` with the server's reason, and a
server that does not answer in time is an error (``unjudged``), never a
failure. The runner stops a run whose first samples all end in the same
setup error; job polling holds the budget back while a job is queued and
notices a job that vanished; the default ``--violin-max-calls`` applies to
adapters that bill.
"""

from __future__ import annotations

import json
import re
import threading

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import numpy as np
import pytest

import pytest_violin.models.http  # noqa: F401  (see tests/conftest.py)
from _servers import FaultServer, Reply
from _processes import run_hanging_model
from pytest_violin.errors import (GenerationCrashed, GenerationError, GenerationRefused, GenerationUnjudged,
                                  ServerCrashed, SetupError)
from pytest_violin.execution.runner import SETUP_AFTER, Runner
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models._transport.client import HttpClient
from pytest_violin.models._transport.client import VANISHED_POLLS, JobStates, poll_job
from pytest_violin.models._transport.retries import is_loopback
from pytest_violin.pytest_plugin._planning import adapter_bills
from pytest_violin.suite import load_suite

KEY = "sk-setup-test-3f9a1c"

WORKFLOW = {"6": {"class_type": "CLIPTextEncode", "inputs": {"text": "{prompt}"}},
            "9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "violin"}}}

#: adapter -> (spec, environment variable of the base URL, path suffix, key variable)
ADAPTERS = {
    "http": ("{url}/generate", None, "", None),
    "openai": ("openai:gpt-image-1", "OPENAI_BASE_URL", "/v1", "OPENAI_API_KEY"),
    "gemini": ("gemini:gemini-2.5-flash-image", "GEMINI_BASE_URL", "/v1beta", "GEMINI_API_KEY"),
    "ark": ("ark:seedream-4-0-250828", "ARK_BASE_URL", "/api/v3", "ARK_API_KEY"),
    "bfl": ("bfl:flux-2-pro", "BFL_BASE_URL", "/v1", "BFL_API_KEY"),
    "fal": ("fal:fal-ai/flux/dev", "FAL_BASE_URL", "", "FAL_KEY"),
    "replicate": ("replicate:black-forest-labs/flux-schnell", "REPLICATE_BASE_URL", "/v1", "REPLICATE_API_TOKEN"),
    "a1111": ("a1111:{url}", None, "", None),
    "comfyui": ("comfyui:{url}", None, "", None),
}


@pytest.fixture(scope="module")
def sample():
    return load_suite("violin", tasks=["color"], limit=1)[0]


def _adapter(name, server, monkeypatch, tmp_path, **kw):
    spec, env, suffix, key = ADAPTERS[name]
    if env:
        monkeypatch.setenv(env, server.url + suffix)
    if key:
        monkeypatch.setenv(key, KEY)
    extra = {}
    if name == "comfyui":
        (tmp_path / "workflow.json").write_text(json.dumps(WORKFLOW))
        extra["workflow"] = str(tmp_path / "workflow.json")
    opts = AdapterOptions(rootdir=tmp_path, retries=2, extra=extra, **kw)
    return resolve_model(spec.format(url=server.url), opts)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_rejected_key_is_a_setup_error_with_the_servers_reason(name, sample, monkeypatch, tmp_path):
    answer = {"error": {"message": "Incorrect API key provided: sk-****", "type": "invalid_request_error",
                        "code": "invalid_api_key"}}
    with FaultServer(default=Reply.json(answer, status=401)) as server:
        adapter = _adapter(name, server, monkeypatch, tmp_path)
        with pytest.raises(SetupError) as info:
            adapter.generate(GenerationRequest.from_sample(sample))
        adapter.close()
    assert info.value.status == 401 and info.value.unjudged
    assert "Incorrect API key provided" in str(info.value) and KEY not in str(info.value)
    # the request itself is invalid: never retried (comfyui: its node list is asked at creation)
    assert len([r for r in server.requests if not r.path.startswith("/object_info/")]) == 1


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_server_that_does_not_answer_in_time_is_an_error(name, sample, monkeypatch, tmp_path):
    # the server holds every request until the test is over (its delay is waited on the server's
    # stop event): no answer ever comes, however loaded the machine, and the client gives up
    with FaultServer(default=Reply.json({}, delay=3600)) as server:
        adapter = _adapter(name, server, monkeypatch, tmp_path, timeout=0.2)
        with pytest.raises(GenerationError) as info:
            adapter.generate(GenerationRequest.from_sample(sample))
        adapter.close()
        for _ in range(500):  # a loaded machine may give up before the server's thread logs the request
            if server.requests:
                break
            threading.Event().wait(0.02)
        received = len(server.requests)
    error = info.value
    assert received >= 1 and error.status is None  # the request arrived, no answer came back
    assert error.unjudged and not isinstance(error, (SetupError, GenerationRefused))
    # which time-out ends it depends on the load: the attempt's own, or the sample's budget
    # (2 x the timeout) spent before a retry could start; both are a time-out, never a verdict
    assert "timed out" in str(error) or "no time left in the sample's budget" in str(error)


def test_a_safety_400_stays_the_samples_refusal(sample, monkeypatch, tmp_path):
    refusal = {"error": {"message": "Your request was rejected by the safety system.",
                         "type": "image_generation_user_error", "code": "moderation_blocked"}}
    with FaultServer(default=Reply.json(refusal, status=400)) as server:
        adapter = _adapter("openai", server, monkeypatch, tmp_path)
        with pytest.raises(GenerationRefused) as info:
            adapter.generate(GenerationRequest.from_sample(sample))
    assert not info.value.unjudged and not isinstance(info.value, SetupError)


# -- the runner: setup errors stop the run, and are errors -------------------------------
class _Model:
    cacheable = False

    def __init__(self, plan):
        self.plan = plan  # sample id -> exception to raise (else the expected image)
        self.calls = 0
        self.lock = threading.Lock()

    def generate(self, request):
        with self.lock:
            self.calls += 1
        error = self.plan(request.sample_id)
        if error is not None:
            raise error
        return np.zeros((request.height, request.width, 3), np.uint8)


@pytest.fixture(scope="module")
def many():
    return load_suite("violin", tasks=["color"], limit=40)


def _consume(runner, samples):
    runner.plan(samples)
    out = []
    for s in samples:
        out.append(runner.get(s))
        if runner.setup_stop:
            break
    runner.close()
    return out


def test_the_same_setup_error_in_the_first_samples_stops_the_runner(many):
    model = _Model(lambda sid: SetupError("comfyui: the server refused the workflow: node 4 ckpt_name", status=400))
    runner = Runner(model, concurrency=1)
    results = _consume(runner, many)
    assert runner.setup_stop == (f"setup error after {SETUP_AFTER} samples: comfyui: the server refused the "
                                 "workflow: node 4 ckpt_name")
    assert all(isinstance(g.error, SetupError) and g.error.unjudged for g in results)
    assert model.calls <= SETUP_AFTER + runner.window


@pytest.mark.parametrize("error", [
    ServerCrashed("ComfyUI prompt error: node 3 (KSampler): torch.OutOfMemoryError: CUDA out of memory"),
    GenerationCrashed("KeyError: 'steps'; traceback (most recent call last): glue.py:9 in generate"),
], ids=["server", "python"])
def test_the_same_crash_in_the_first_samples_stops_the_runner(many, error):
    model = _Model(lambda sid: type(error)(error.reason))
    runner = Runner(model, concurrency=1)
    results = _consume(runner, many)
    assert runner.setup_stop == (f"the same error in the first {SETUP_AFTER} samples, before any image: "
                                 f"{error.reason}")
    assert model.calls <= SETUP_AFTER + runner.window
    # a server's crash is an error; a python: model's stays its failure (no image)
    assert all(g.error is not None and g.error.unjudged is error.unjudged for g in results[:SETUP_AFTER])


def test_a_setup_error_and_a_crash_alike_in_words_are_two_causes(many):
    flip = iter(range(10**6))
    model = _Model(lambda sid: (SetupError if next(flip) % 2 else GenerationCrashed)("HTTP 400: bad request"))
    runner = Runner(model, concurrency=1)
    _consume(runner, many)
    assert runner.setup_stop is None


def test_a_call_refused_before_any_request_is_no_generation(many, monkeypatch, tmp_path):
    from pytest_violin.execution.usage import CallCounter, CountingAdapter

    with FaultServer(default=Reply.json({}, status=500)) as server:
        adapter = _adapter("comfyui", server, monkeypatch, tmp_path)
        counter = CallCounter()
        mask = load_suite("violin", tasks=["mask"], limit=1)[0]  # the workflow has no {image}: refused
        runner = Runner(CountingAdapter(adapter, counter), concurrency=1)
        generation = runner.generate_now(mask)
        runner.close()
        adapter.close()
        sent = [r for r in server.requests if "/object_info/" not in r.path]
    assert isinstance(generation.error, SetupError) and sent == []
    assert generation.attempts == 0 and counter.snapshot()["calls"] == 0


@pytest.mark.parametrize("kind", ["image first", "reasons differ", "failure between"])
def test_setup_errors_after_an_image_or_unlike_each_other_stop_nothing(many, kind):
    first = many[0].id

    def plan(sid):
        if kind == "image first" and sid == first:
            return None
        if kind == "reasons differ":
            return SetupError(f"HTTP 400: prompt of {sid} too long", status=400)
        if kind == "failure between" and many.index(next(s for s in many if s.id == sid)) % 3 == 0:
            return GenerationError("HTTP 500: the model crashed", status=500)
        return SetupError("HTTP 400: bad request", status=400)

    runner = Runner(_Model(plan), concurrency=1)
    results = _consume(runner, many)
    assert runner.setup_stop is None and len(results) == len(many)


# -- job polling: queue time is not generation time ----------------------------------------
def _job_server(states):
    """A status URL answering ``{"status": s}`` for each of ``states`` in turn (the last one after)."""
    answers = list(states)
    lock = threading.Lock()

    def handle(rec):
        with lock:
            state = answers.pop(0) if len(answers) > 1 else answers[0]
        return Reply.json({"status": state}, headers={"Retry-After": "0.05"})

    return FaultServer(handler=handle)


QUEUED = JobStates(done=frozenset({"COMPLETED"}), queued=frozenset({"IN_QUEUE"}),
                   vanished=frozenset({"NOT_FOUND"}))


def test_a_queued_job_keeps_its_budget_until_it_runs():
    # budget 2 x 0.15 s; 12 polls at 0.05 s in the queue (0.6 s), then 2 running: done
    with _job_server(["IN_QUEUE"] * 12 + ["IN_PROGRESS"] * 2 + ["COMPLETED"]) as server:
        client = HttpClient(timeout=0.15)
        with client.sample():
            status = poll_job(client, server.url + "/status", QUEUED, first_wait=0.05, max_wait=0.05)
    assert status == {"status": "COMPLETED"}


def test_a_running_job_over_its_budget_and_a_job_queued_forever_are_errors():
    # a 0.6 s timeout: each poll keeps time to spare on a loaded machine (the budget is two of them)
    with _job_server(["IN_PROGRESS"]) as server:
        client = HttpClient(timeout=0.6)
        with client.sample(), pytest.raises(GenerationUnjudged, match=r"within 1.2 s of running"):
            poll_job(client, server.url + "/status", QUEUED, first_wait=0.05, max_wait=0.05)
    with _job_server(["IN_QUEUE"]) as server:
        client = HttpClient(timeout=0.6)
        with client.sample(), pytest.raises(GenerationUnjudged, match=r"overall wait limit of 1 s"):
            poll_job(client, server.url + "/status", QUEUED, first_wait=0.05, max_wait=0.05, wait_limit=1)


def test_a_vanished_job_is_an_error_within_a_few_polls():
    with _job_server(["IN_QUEUE", "NOT_FOUND"]) as server:
        client = HttpClient(timeout=5)
        with client.sample(), pytest.raises(GenerationUnjudged, match=r"vanished.*'not_found' in 3 polls"):
            poll_job(client, server.url + "/status", QUEUED, first_wait=0.05, max_wait=0.05)
        assert len(server.requests) == 1 + VANISHED_POLLS


# -- who bills -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, bills", [("openai", True), ("gemini", True), ("ark", True), ("bfl", True),
                                         ("fal", True), ("replicate", True), ("a1111", False),
                                         ("comfyui", False), ("http", False)])
def test_only_adapters_that_bill_get_the_default_call_limit(name, bills, monkeypatch, tmp_path):
    server = type("Local", (), {"url": "http://127.0.0.1:9"})()
    adapter = _adapter(name, server, monkeypatch, tmp_path)
    assert adapter_bills(adapter) is bills and adapter_bills(adapter, price=0.01) is True
    adapter.close()


@pytest.mark.parametrize("url, loopback", [("http://127.0.0.1:8188", True), ("http://localhost/x", True),
                                           ("http://[::1]:80/", True), ("https://api.example.com", False),
                                           ("http://10.0.0.5:8188", False), ("http://127.example.com", False)])
def test_loopback_urls(url, loopback):
    assert is_loopback(url) is loopback


def test_the_plan_line_says_which_call_limit_applies(pytester):
    # the self-hosted line: tests/unit/test_comfyui_adapter.py (the full suite against one's own server)
    paid = pytester.runpytest("--violin-model=http://gen.example.invalid/generate", "-p", "no:cacheprovider")
    assert paid.ret == pytest.ExitCode.USAGE_ERROR
    paid.stdout.fnmatch_lines(["violin plan: adapter http://gen.example.invalid/generate "
                               "(bills: at most 2000 calls by default), suite *"])
    given = pytester.runpytest("--violin-model=oracle", "--violin-limit=2", "--violin-max-calls=5")
    given.stdout.fnmatch_lines(["violin plan: adapter oracle (at most 5 calls (--violin-max-calls)), suite *"])


def test_a_python_model_raising_on_every_sample_stops_early_with_its_traceback(pytester):
    pytester.makepyfile(glue_model='''
        SETTINGS = {"cfg": 7}

        def generate(request):
            return SETTINGS["steps"]
    ''')
    result = pytester.runpytest("--violin-model=python:glue_model:generate", "--violin-tasks=color",
                                "-p", "no:cacheprovider", "--violin-concurrency=2")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert ("Interrupted: violin: the same error in the first 5 samples, before any image: KeyError: 'steps'; "
            "traceback (most recent call last): ") in out, out[-2000:]
    assert re.search(r'glue_model\.py:\d+ in generate: return SETTINGS\["steps"\]', out)
    outcomes = result.parseoutcomes()
    assert "passed" not in outcomes and outcomes.get("failed", 0) + outcomes.get("errors", 0) <= 10


#: What a python: model returns that is not an image -> the words naming it.
WRONG_ANSWERS = {
    "none": ("None", "returned None"),
    "text": ('"text"', "returned a value of type str"),
    "float-0-255": ("np.full((request.height, request.width, 3), 217.0)",
                    "returned an array of float64 with values in [0, 255]"),
}


@pytest.mark.parametrize("answer, named", WRONG_ANSWERS.values(), ids=WRONG_ANSWERS)
def test_a_python_model_returning_no_image_stops_early_as_a_raising_one_does(pytester, answer, named):
    pytester.makepyfile(wrong_model=f'''
        import numpy as np

        def generate(request):
            return {answer}
    ''')
    result = pytester.runpytest("--violin-model=python:wrong_model:generate", "--violin-tasks=color",
                                "-p", "no:cacheprovider", "--violin-concurrency=2")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert ("Interrupted: violin: the same error in the first 5 samples, before any image: "
            f"python:wrong_model:generate {named}") in out, out[-2000:]
    outcomes = result.parseoutcomes()
    assert "passed" not in outcomes and outcomes.get("failed", 0) + outcomes.get("errors", 0) <= 10


@pytest.mark.slow  # a session in its own process, waiting out its time-outs (evaluate's twin runs by default)
def test_a_hanging_python_model_is_an_error_after_violin_timeout_and_the_run_ends(pytester):
    result = run_hanging_model(pytester, "--violin-limit=2", "--violin-timeout=0.5", "-rE")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    assert result.parseoutcomes().get("errors") == 2 and "passed" not in result.parseoutcomes()
    result.stdout.fnmatch_lines(["*timed out: python:hanging_model:generate did not return within 0.5 s*"])
