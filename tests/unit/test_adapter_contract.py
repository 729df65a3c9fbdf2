"""The contract every HTTP adapter keeps, checked against each adapter's fake service.

Whatever the service, an adapter hands back the image it was sent, pixel for
pixel; a refusal by the service's safety system is a ``GenerationRefused``,
asked once; a client error (4xx) fails at once with the server's own words and
a server error (5xx) after its retries, neither of them a refusal nor showing
the key the server echoed; an answer that never comes is a transport failure
at the sample's deadline; an answer whose image is no image fails without a
retry. Each :class:`Service` below answers as that service's documentation
says it does; what is particular to one adapter (request shapes, sizes,
options) is tested in its own ``test_<adapter>_adapter.py``.

The job services (submit, poll, fetch) keep the same contract through their
fakes, which live with their adapters' own tests: the image they made, a
moderated job as a refusal submitted once, a failed job with the service's
words and without the key, a job that never finishes ended at the sample's
deadline.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from pytest_violin.errors import GenerationError, GenerationRefused, ModelSpecError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model

from _servers import FaultServer, Reply, png_bytes, secret_forms, solid

IMG = solid(16, 16, (10, 200, 10))
NOT_AN_IMAGE = b"GIF89a? no: plain text where the picture should be"


@dataclass(frozen=True)
class Service:
    """How one adapter is reached and how its service answers."""

    name: str
    #: ``(server url) -> model spec``
    spec: Callable[[str], str]
    #: ``(server url) -> {variable: value}``: the key and the base URL the adapter reads
    env: Callable[[str], dict]
    #: ``(encoded image bytes) -> the JSON body of a successful answer``
    answer: Callable[[bytes], object]
    #: ``(HTTP status, message) -> the service's error answer``
    error: Callable[[int, str], Reply]
    #: ``(HTTP status, message given to error) -> the words the failure shows``
    shows: Callable[[int, str], tuple] = lambda status, message: (message,)
    #: the key the adapter sends, or None
    key: str | None = None
    #: the service's refusal and the words of it the error must show, or None if it has none
    refusal: Reply | None = None
    refusal_words: tuple = ()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


OPENAI_KEY = "sk-test-0123456789abcdefXYZ"
GEMINI_KEY = "gm-test-key-7d41c09a2b5e83f6"
ARK_KEY = "ark-test-key-3b9e51c07d2a46f8"

SERVICES = [
    Service(
        "openai", spec=lambda url: "openai:gpt-image-1",
        env=lambda url: {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": url + "/v1"},
        answer=lambda data: {"created": 1, "data": [{"b64_json": _b64(data)}]},
        error=lambda status, message: Reply(status, {"error": {
            "message": message, "type": "invalid_request_error", "param": None, "code": None}}),
        key=OPENAI_KEY,
        refusal=Reply(400, {"error": {"message": "Your request was rejected by the safety system.",
                                      "type": "image_generation_user_error", "code": "moderation_blocked"}}),
        refusal_words=("rejected by the safety system", "moderation_blocked"),
    ),
    Service(
        "gemini", spec=lambda url: "gemini:gemini-2.5-flash-image",
        env=lambda url: {"GEMINI_API_KEY": GEMINI_KEY, "GOOGLE_API_KEY": None,
                         "GEMINI_BASE_URL": url + "/v1beta"},
        answer=lambda data: {"candidates": [{"content": {"role": "model", "parts": [
            {"text": "Here is the image."}, {"inlineData": {"mimeType": "image/png", "data": _b64(data)}}]},
            "finishReason": "STOP", "index": 0}]},
        error=lambda status, message: Reply(status, {"error": {
            "code": status, "message": message, "status": "INVALID_ARGUMENT" if status < 500 else "INTERNAL"}}),
        key=GEMINI_KEY,
        refusal=Reply.json({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}),
        refusal_words=("PROHIBITED_CONTENT",),
    ),
    Service(
        "ark", spec=lambda url: "ark:seedream-4-0-250828",
        env=lambda url: {"ARK_API_KEY": ARK_KEY, "ARK_BASE_URL": url + "/api/v3"},
        answer=lambda data: {"model": "seedream-4-0-250828", "created": 1757469561,
                             "data": [{"b64_json": _b64(data), "size": "2048x2048"}],
                             "usage": {"generated_images": 1}},
        error=lambda status, message: Reply(status, {"error": {
            "code": "InvalidParameter" if status < 500 else "InternalServiceError",
            "message": f"{message} Request ID: 0217xyz", "param": "", "type": "BadRequest"}}),
        shows=lambda status, message: (message, "InvalidParameter" if status < 500 else "InternalServiceError"),
        key=ARK_KEY,
        refusal=Reply(400, {"error": {
            "code": "InputTextSensitiveContentDetected",
            "message": "The request failed because the input text may contain sensitive information.",
            "param": "", "type": "BadRequest"}}),
        refusal_words=("InputTextSensitiveContentDetected",),
    ),
    Service(
        "a1111", spec=lambda url: f"a1111:{url}", env=lambda url: {},
        answer=lambda data: {"images": [_b64(data)], "parameters": {}, "info": "{}"},
        # the web UI's error answer: the exception's class, then its text
        error=lambda status, message: Reply(status, {"error": "OutOfMemoryError", "detail": "", "body": "",
                                                     "errors": message}),
        shows=lambda status, message: (f"OutOfMemoryError: {message}",),
    ),
    Service(
        "http", spec=lambda url: f"{url}/generate", env=lambda url: {},
        answer=lambda data: {"image": _b64(data)},
        error=lambda status, message: Reply(status, {"error": message}),
    ),
]

REFUSING = [s for s in SERVICES if s.refusal is not None]


def _ids(services):
    return [s.name for s in services]


def _request():
    return GenerationRequest(prompt="a pure green image", width=512, height=512, seed=42,
                             sample_id="color/v1/green/t01", task="color")


def _generate(service, monkeypatch, tmp_path, script, **options):
    """``(image or GenerationError, requests)`` of one generation against ``script``."""
    options.setdefault("retries", 0)
    with FaultServer(script) as server:
        for name, value in service.env(server.url).items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        adapter = resolve_model(service.spec(server.url), AdapterOptions(rootdir=tmp_path, **options))
        try:
            try:
                return adapter.generate(_request()), server.requests
            except GenerationError as error:
                for _ in range(500 if error.transport else 0):  # a loaded machine may give up
                    if server.requests:  # before the server's thread has logged the request
                        break
                    threading.Event().wait(0.02)
                return error, server.requests
        finally:
            adapter.close()


def _shown(error: GenerationError) -> str:
    return f"{error} {error.reason}"


@pytest.mark.parametrize("service", SERVICES, ids=_ids(SERVICES))
def test_answers_the_image_it_was_sent(service, monkeypatch, tmp_path):
    out, requests = _generate(service, monkeypatch, tmp_path, [Reply.json(service.answer(png_bytes(IMG)))])
    assert isinstance(out, np.ndarray), out
    assert np.array_equal(out, IMG) and len(requests) == 1


@pytest.mark.parametrize("service", REFUSING, ids=_ids(REFUSING))
def test_a_refusal_is_a_refusal_asked_once(service, monkeypatch, tmp_path):
    error, requests = _generate(service, monkeypatch, tmp_path, [service.refusal] * 4, retries=3)
    assert isinstance(error, GenerationRefused), error
    assert all(word in str(error) for word in service.refusal_words) and len(requests) == 1
    if service.refusal.status != 200:
        assert error.status == service.refusal.status
    assert not any(form in _shown(error) for form in secret_forms(service.key))


@pytest.mark.parametrize("service", SERVICES, ids=_ids(SERVICES))
def test_a_client_error_fails_at_once_with_the_servers_words(service, monkeypatch, tmp_path):
    message = f"size is invalid for this model (you sent {service.key or 'no key'})"
    error, requests = _generate(service, monkeypatch, tmp_path, [service.error(400, message)] * 3, retries=2)
    assert isinstance(error, GenerationError) and not isinstance(error, GenerationRefused), error
    assert all(word in str(error) for word in service.shows(400, "size is invalid for this model"))
    assert error.status == 400 and len(requests) == 1 and not error.transport
    if service.key:
        assert not any(form in _shown(error) for form in secret_forms(service.key))


@pytest.mark.parametrize("service", SERVICES, ids=_ids(SERVICES))
def test_a_server_error_is_retried_then_fails_with_the_servers_words(service, monkeypatch, tmp_path):
    message = f"CUDA out of memory; key {service.key or 'none'}"
    error, requests = _generate(service, monkeypatch, tmp_path, [service.error(500, message)] * 2,
                                retries=1, extra={"backoff_base": 0.001})
    assert isinstance(error, GenerationError) and not isinstance(error, GenerationRefused), error
    assert all(word in str(error) for word in service.shows(500, "CUDA out of memory")) and "HTTP 500" in str(error)
    assert error.status == 500 and error.attempts == 2 and len(requests) == 2
    if service.key:
        assert not any(form in _shown(error) for form in secret_forms(service.key))


@pytest.mark.parametrize("service", SERVICES, ids=_ids(SERVICES))
def test_an_answer_that_never_comes_ends_at_the_deadline(service, monkeypatch, tmp_path):
    late = Reply.json(service.answer(png_bytes(IMG)), delay=5.0)
    error, requests = _generate(service, monkeypatch, tmp_path, [late], timeout=0.3)
    assert isinstance(error, GenerationError) and not isinstance(error, GenerationRefused), error
    assert error.transport and error.status is None and len(requests) == 1


@pytest.mark.parametrize("service", SERVICES, ids=_ids(SERVICES))
def test_an_image_that_is_no_image_fails_without_a_retry(service, monkeypatch, tmp_path):
    error, requests = _generate(service, monkeypatch, tmp_path,
                                [Reply.json(service.answer(NOT_AN_IMAGE))] * 3, retries=2)
    assert isinstance(error, GenerationError) and not isinstance(error, GenerationRefused), error
    assert len(requests) == 1 and error.attempts in (None, 1) and "\n" not in str(error)


#: ``(spec, variables that hold its key, what the error says)`` of every adapter that needs a key
KEYED = [
    ("openai:gpt-image-1", ("OPENAI_API_KEY",), "OPENAI_API_KEY is not set"),
    ("gemini:gemini-2.5-flash-image", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "GEMINI_API_KEY.*GOOGLE_API_KEY"),
    ("ark:seedream-4-0-250828", ("ARK_API_KEY",), "ARK_API_KEY"),
    ("fal:fal-ai/flux/dev", ("FAL_KEY",), "FAL_KEY"),
    ("bfl:flux-2-pro", ("BFL_API_KEY",), "BFL_API_KEY"),
    ("replicate:a/b", ("REPLICATE_API_TOKEN",), "REPLICATE_API_TOKEN"),
]


@pytest.mark.parametrize("spec, variables, needle", KEYED, ids=[k[0].partition(":")[0] for k in KEYED])
def test_a_missing_key_is_a_usage_error_naming_its_variables(spec, variables, needle, monkeypatch, tmp_path):
    for name in variables:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelSpecError, match=needle):
        resolve_model(spec, AdapterOptions(rootdir=tmp_path))


# ---------------------------------------------------------------- job services


@dataclass(frozen=True)
class JobService:
    """A job service's fake (a context manager whose ``kind_of(body)`` decides each job's fate)."""

    name: str
    spec: str
    fake: Callable  # (kind) -> the fake, not started
    #: ``(fake) -> {variable: value}``
    env: Callable
    secrets: tuple
    #: the fake's kinds for: a moderated job, a failed job, a job that never finishes
    refused: str
    refused_words: str
    failed: str
    failed_words: str
    image: object  # what the fake delivers for a job that ends well
    never: str = "pending"


def _fal():
    import test_fal_adapter as fal

    return JobService("fal", f"fal:{fal.APP}", lambda kind: fal.FakeFal(kind_of=lambda body: kind),
                      lambda fake: {"FAL_KEY": fal.KEY, "FAL_BASE_URL": fake.api.url}, (fal.KEY, fal.SECRET),
                      refused="nsfw", refused_words="has_nsfw_concepts", failed="failed", failed_words="runner crashed", image=fal.IMG)


def _bfl():
    import test_bfl_adapter as bfl

    return JobService("bfl", "bfl:flux-2-pro", lambda kind: bfl.FakeBfl(kind_of=lambda body: kind),
                      lambda fake: {"BFL_API_KEY": bfl.KEY, "BFL_BASE_URL": fake.api.url + "/v1"}, (bfl.KEY,),
                      refused="request-moderated", refused_words="request moderated",
                      failed="error", failed_words="GPU fell over", image=bfl.IMG)


JOB_SERVICES = {"fal": _fal, "bfl": _bfl}


@pytest.fixture(params=sorted(JOB_SERVICES))
def job_service(request):
    return JOB_SERVICES[request.param]()


def _run_job(service, kind, monkeypatch, tmp_path, **options):
    """``(image or GenerationError, submits)`` of one generation whose job ends as ``kind``."""
    options.setdefault("retries", 2)
    with service.fake(kind) as fake:
        for name, value in service.env(fake).items():
            monkeypatch.setenv(name, value)
        adapter = resolve_model(service.spec, AdapterOptions(rootdir=tmp_path, **options))
        try:
            try:
                out = adapter.generate(_request())
            except GenerationError as error:
                out = error
        finally:
            adapter.close()
    return out, [r for r in fake.api.requests if r.method == "POST"]


def test_a_job_answers_the_image_it_made(job_service, monkeypatch, tmp_path):
    out, submits = _run_job(job_service, "ok", monkeypatch, tmp_path)
    assert isinstance(out, np.ndarray), out
    assert np.array_equal(out, job_service.image) and len(submits) == 1


def test_a_moderated_job_is_a_refusal_submitted_once(job_service, monkeypatch, tmp_path):
    error, submits = _run_job(job_service, job_service.refused, monkeypatch, tmp_path)
    assert isinstance(error, GenerationRefused), error
    assert job_service.refused_words in str(error)
    assert len(submits) == 1 and not any(secret in _shown(error) for secret in job_service.secrets)


def test_a_failed_job_fails_with_the_services_words_submitted_once(job_service, monkeypatch, tmp_path):
    error, submits = _run_job(job_service, job_service.failed, monkeypatch, tmp_path)
    assert isinstance(error, GenerationError) and not isinstance(error, GenerationRefused), error
    assert job_service.failed_words in str(error)
    assert len(submits) == 1 and not any(secret in _shown(error) for secret in job_service.secrets)


def test_a_job_that_never_finishes_ends_at_the_deadline(job_service, monkeypatch, tmp_path):
    error, submits = _run_job(job_service, job_service.never, monkeypatch, tmp_path, timeout=0.5)
    assert isinstance(error, GenerationError) and not isinstance(error, GenerationRefused), error
    assert len(submits) == 1
