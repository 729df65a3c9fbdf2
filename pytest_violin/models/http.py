"""``http://`` / ``https://``: any image service over HTTP (docs/models.md, "The plugin's HTTP protocol").

By default the plugin's own protocol: a JSON ``POST`` of ``prompt``, ``width``, ``height``, ``seed``,
``sample_id``, ``task`` and ``images`` (base64 PNG), answered by image bytes or JSON with the image at a known
place. Other services without code: a body template (:class:`RequestTemplate`, ``--violin-request-template``)
and a response path; job APIs with ``--violin-poll-url-path``, polled until ``--violin-done-values``
(``--violin-failed-values``, ``--violin-refused-values`` end it), a status URL on another origin polled
without credentials.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ._transport.origins import UrlRefused, check_url, resolve
from ._transport.answers import HttpResult, _walk, image_from_response, load_json, parse_response_path
from ._transport.client import HttpClient, JobStates, client_from_options, poll_job
from ._transport.retries import is_loopback, parse_retry_after
from ..errors import GenerationError, ModelSpecError
from ..imaging import png_base64
from ..redaction import redact_url
from .request import GenerationRequest, NetworkAdapter

__all__ = ["DEFAULT_DONE", "DEFAULT_FAILED", "HttpAdapter", "JobSpec", "RequestTemplate", "PLACEHOLDERS",
           "create", "encode_inputs", "request_fields"]

#: ``--violin-done-values`` by default.
DEFAULT_DONE = ("succeeded", "completed", "done", "ready")
#: ``--violin-failed-values`` by default.
DEFAULT_FAILED = ("failed", "error", "canceled", "cancelled", "aborted")
#: Wait before the first poll when the submit answer gives no ``Retry-After``.
FIRST_POLL_WAIT = 0.5
#: Longest wait between polls (the backoff's cap).
MAX_POLL_WAIT = 5.0

#: Largest request template (or --violin-replicate-input) file read, in bytes.
MAX_TEMPLATE_BYTES = 4 * 2**20

#: Placeholder names a request template may use (``{images[N]}`` too).
PLACEHOLDERS = ("prompt", "width", "height", "seed", "sample_id", "task", "repeat", "size", "images")

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_NAME = re.compile(r"^([a-z_]+)(?:\[(\d+)\])?$")


def encode_inputs(request: GenerationRequest) -> list[str]:
    """The request's input images as base64 PNG strings."""
    return [png_base64(img) for img in request.images]


def request_fields(request: GenerationRequest) -> dict:
    """The plugin protocol's scalar fields of ``request`` (JSON types)."""
    return {
        "prompt": request.prompt,
        "width": int(request.width),
        "height": int(request.height),
        "seed": int(request.seed),
        "sample_id": request.sample_id,
        "task": request.task,
    }

class RequestTemplate:
    """A JSON request body with ``{placeholder}`` fields; :class:`ModelSpecError` for a bad placeholder.

    A string that is exactly one placeholder becomes the value with its type (``"{width}"`` -> ``512``);
    inside a longer string, its text. ``{{`` and ``}}`` are literal braces. ``{images[N]}`` is the N-th input
    image as base64 PNG, ``null`` (``""`` in a longer string) when the sample has fewer, so one template
    serves text-only and editing tasks.
    """

    def __init__(self, body: Any, source: str = "request template"):
        self.body = body
        self.source = source
        self._check(body, "$")
        self.digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]

    @classmethod
    def from_file(cls, path: Path, *, what: str = "--violin-request-template") -> "RequestTemplate":
        """Load a template file (UTF-8 JSON, a regular file of at most
        :data:`MAX_TEMPLATE_BYTES`, nested at most :data:`pytest_violin._fs.DEFAULT_JSON_DEPTH`
        deep); ``what`` is the option that named it, for the messages."""
        from .._fs import read_option_json

        path = Path(path)
        body = read_option_json(path, what=what, limit=MAX_TEMPLATE_BYTES, error=ModelSpecError)
        return cls(body, source=f"{what} {str(path)!r}")

    # -- validation ---------------------------------------------------------
    def _check(self, node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                self._check(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                self._check(value, f"{where}[{i}]")
        elif isinstance(node, str):
            whole = _TOKEN.fullmatch(node)
            for match in _TOKEN.finditer(node):
                name = match.group(1)
                if name is None and match.group(0) in ("{{", "}}"):
                    continue
                parsed = _NAME.match(name or "")
                if not parsed or parsed.group(1) not in PLACEHOLDERS:
                    raise ModelSpecError(
                        f"{self.source}: unknown placeholder {{{name}}} at {where}; accepted: "
                        + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                        + ", {images[N]}; write {{ and }} for literal braces"
                    )
                if parsed.group(1) == "images" and parsed.group(2) is None and whole is None:
                    raise ModelSpecError(
                        f"{self.source}: {{images}} (a list) must be a whole string value at "
                        f"{where}; use {{images[0]}} inside text"
                    )
                if parsed.group(1) != "images" and parsed.group(2) is not None:
                    raise ModelSpecError(f"{self.source}: {{{name}}} at {where} cannot be indexed")

    # -- rendering ----------------------------------------------------------
    def render(self, request: GenerationRequest, images_b64: list[str] | None = None) -> Any:
        """The body for ``request`` (``images_b64``: pre-encoded inputs)."""
        if images_b64 is None:
            images_b64 = encode_inputs(request) if self._uses_images() else []
        values = {
            **request_fields(request),
            "repeat": int(request.repeat),
            "size": f"{int(request.width)}x{int(request.height)}",
            "images": list(images_b64),
        }
        return self._render(self.body, values)

    def _uses_images(self) -> bool:
        return "{images" in json.dumps(self.body)

    def _lookup(self, name: str, values: dict) -> Any:
        parsed = _NAME.match(name)
        key, index = parsed.group(1), parsed.group(2)
        value = values[key]
        if index is not None:
            i = int(index)
            return value[i] if i < len(value) else None
        return value

    def _render(self, node: Any, values: dict) -> Any:
        if isinstance(node, dict):
            return {k: self._render(v, values) for k, v in node.items()}
        if isinstance(node, list):
            return [self._render(v, values) for v in node]
        if not isinstance(node, str):
            return node
        whole = _TOKEN.fullmatch(node)
        if whole and whole.group(1) is not None:
            return self._lookup(whole.group(1), values)

        def sub(match: re.Match) -> str:
            if match.group(1) is None:
                return match.group(0)[0]
            value = self._lookup(match.group(1), values)
            return "" if value is None else str(value)

        return _TOKEN.sub(sub, node)


def _values(text: str | None, default: tuple, option: str) -> frozenset:
    if text is None:
        return frozenset(default)
    values = frozenset(v.strip().lower() for v in str(text).split(",") if v.strip())
    if not values:
        raise ModelSpecError(f"{option} {text!r} names no state; accepted: comma-separated states such as "
                             "succeeded,completed")
    return values


class JobSpec:
    """How the generic adapter reads a job API (the ``--violin-*`` job options); states compare case-insensitively."""

    def __init__(self, poll_url_path: str, status_path: str | None = None, done: str | None = None,
                 failed: str | None = None, refused: str | None = None):
        self.poll_url_path = parse_response_path(poll_url_path)
        self.status_path = parse_response_path(status_path or "status")
        self.states = JobStates(
            done=_values(done, DEFAULT_DONE, "--violin-done-values"),
            failed=_values(failed, DEFAULT_FAILED, "--violin-failed-values"),
            refused=_values(refused, (), "--violin-refused-values"),
            state_of=self.state_of,
            message_of=_message_of,
        )
        lists = (("done", self.states.done), ("failed", self.states.failed), ("refused", self.states.refused))
        for i, (name, values) in enumerate(lists):
            for other, others in lists[i + 1:]:
                both = sorted(values & others)
                if both:
                    raise ModelSpecError(f"job state {both[0]!r} is both a {name} and a {other} value; "
                                         "accepted: each state in one list")
        self.identity = (f"poll={poll_url_path} status={status_path or 'status'} "
                         f"done={','.join(sorted(self.states.done))}")

    def state_of(self, body) -> str:
        """The state at the status path (``""`` when missing)."""
        found, value, _ = _walk(body, self.status_path)
        return "" if not found or value is None else str(value)

    def status_url(self, submit: dict, base: str) -> str:
        """The status URL in the submit answer, made absolute against ``base``."""
        found, value, stop = _walk(submit, self.poll_url_path)
        if not found or not isinstance(value, str) or not value.strip():
            keys = ", ".join(sorted(map(str, submit))[:8]) if isinstance(submit, dict) else type(submit).__name__
            raise GenerationError(f"submit answer has no status URL at {stop!r} (--violin-poll-url-path; "
                                  f"keys: {keys})")
        try:  # one rule (_transport/origins.py): judged as written, never fetched when refused
            return resolve(value, base, what="status URL in the submit answer")
        except UrlRefused as exc:
            raise GenerationError(exc.reason) from None


def _message_of(body) -> str:
    for key in ("error", "message", "detail", "logs"):
        value = body.get(key) if isinstance(body, dict) else None
        if isinstance(value, dict):
            value = value.get("message") or json.dumps(value)[:300]
        if value:
            return str(value)
    return ""


class HttpAdapter(NetworkAdapter):
    """The generic HTTP adapter: the plugin's protocol, a body template, or a job API (:class:`JobSpec`)."""

    def __init__(self, url: str, client: HttpClient, *, template: RequestTemplate | None = None,
                 response_path: str | None = None, job: JobSpec | None = None):
        self.url = url
        #: a server on this machine costs nothing per call: no default --violin-max-calls
        self.bills = not is_loopback(url)
        self.job = job
        self.client = client
        self.template = template
        self.response_path = parse_response_path(response_path) if response_path else None
        identity = redact_url(url)
        if template is not None:
            identity += f" template={template.digest}"
        if response_path:
            identity += f" response_path={response_path}"
        if job is not None:
            identity += f" {job.identity}"
        self.identity = identity

    def build_body(self, request: GenerationRequest) -> Any:
        """The JSON body sent for ``request``."""
        if self.template is not None:
            return self.template.render(request)
        return {**request_fields(request), "images": encode_inputs(request)}

    def generate(self, request: GenerationRequest):
        """POST the request; return the answer as RGB uint8 (any size)."""
        with self.client.sample():
            result = self.client.post_json(self.url, self.build_body(request), what="POST")
            if self.job is not None:
                result = self._await_job(result)
            return image_from_response(result, response_path=self.response_path, fetch=self.client.fetch)

    def _await_job(self, submitted: HttpResult) -> HttpResult:
        """Poll the job ``submitted`` started; return its final status answer."""
        try:
            answer = load_json(submitted.content)  # nesting bounded
        except (UnicodeDecodeError, ValueError):
            raise GenerationError(f"submit answer from {redact_url(self.url)} is not JSON "
                                  f"({len(submitted.content)} bytes)", status=submitted.status) from None
        if not isinstance(answer, dict):
            raise GenerationError(f"submit answer from {redact_url(self.url)} is not a JSON object",
                                  status=submitted.status)
        if self.job.state_of(answer).lower() in self.job.states.done:
            return submitted  # finished at once (an API that waits)
        status_url = self.job.status_url(answer, submitted.url or self.url)
        first = parse_retry_after(submitted.headers.get("Retry-After"))
        first = FIRST_POLL_WAIT if first is None else min(max(first, 0.05), MAX_POLL_WAIT)
        _, final = poll_job(self.client, status_url, self.job.states, what="job", first_wait=first,
                            max_wait=MAX_POLL_WAIT, request_kwargs=self.client.anonymous(status_url),
                            with_answer=True)
        return final


def create(target: str, options) -> HttpAdapter:
    """Factory for ``http://`` and ``https://`` specs (credentials in the URL become Basic auth)."""
    url, auth = check_url(target, what="model URL")
    template = None
    if getattr(options, "request_template", None):
        path = Path(options.request_template)
        if not path.is_absolute():
            path = Path(options.rootdir) / path
        template = RequestTemplate.from_file(path)
    response_path = getattr(options, "response_path", None) or None
    if response_path:
        parse_response_path(response_path)
    extra = getattr(options, "extra", None) or {}
    job = None
    if extra.get("poll_url_path"):
        job = JobSpec(extra["poll_url_path"], extra.get("status_path"), extra.get("done_values"),
                      extra.get("failed_values"), extra.get("refused_values"))
    else:
        stray = [k for k in ("status_path", "done_values", "failed_values", "refused_values") if extra.get(k)]
        if stray:
            raise ModelSpecError(f"--violin-{stray[0].replace('_', '-')} needs --violin-poll-url-path "
                                 "(where the status URL is in the submit answer)")
    client = client_from_options(options, auth=auth, origins=(url,))
    return HttpAdapter(url, client, template=template, response_path=response_path, job=job)
