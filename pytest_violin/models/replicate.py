"""``replicate:OWNER/NAME[:VERSION]``: models hosted on Replicate (docs/models.md, "Replicate").

A prediction is created (``POST .../models/OWNER/NAME/predictions``, or ``POST .../predictions`` with a pinned
``version``; ``?wait=N`` sends ``Prefer: wait=N``), then ``urls.get`` is polled until ``succeeded``,
``failed`` or ``canceled`` and the first ``output`` fetched (without the token on another host); Ctrl-C
cancels through ``urls.cancel``. The ``input`` object comes from ``--violin-replicate-input=FILE`` with the
placeholders of :class:`~pytest_violin.models.http.RequestTemplate` (a key whose image is missing is left
out); default :data:`DEFAULT_INPUT`. No output, or an error naming a safety filter (:data:`REFUSAL_WORDS`), is
a refusal.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from ..errors import GenerationCancelled, GenerationError, GenerationRefused, ModelSpecError
from ..imaging import png_data_uri
from ..redaction import redact, redact_url
from .registry import format_params, split_params
from .request import GenerationRequest, NetworkAdapter
from .http import RequestTemplate
from ._transport.client import HttpClient, JobStates, cancel_quietly, client_from_options, poll_job
from ._transport.answers import HttpResult, image_from_response, load_json
from ._transport.origins import origin_or_none, provider_endpoint, shown
from ._transport.retries import parse_retry_after

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_INPUT", "REFUSAL_WORDS", "ReplicateAdapter", "create",
           "parse_target"]

DEFAULT_BASE_URL = "https://api.replicate.com/v1"

#: The ``input`` object without ``--violin-replicate-input``: the names most image models on Replicate use
#: (``image`` and ``mask`` only for editing tasks).
DEFAULT_INPUT = {
    "prompt": "{prompt}",
    "seed": "{seed}",
    "width": "{width}",
    "height": "{height}",
    "image": "{images[0]}",
    "mask": "{images[1]}",
}

#: A failed prediction whose error mentions one of these is a refusal.
REFUSAL_WORDS = re.compile(r"nsfw|safety|moderat|flagged|sensitive content|content policy", re.I)

_OWNER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_VERSION = re.compile(r"^[A-Za-z0-9]{1,128}$")

#: Seconds before the first poll (a ``Retry-After`` on the create answer wins) and the cap of the backoff
#: between polls.
FIRST_WAIT, MAX_WAIT = 0.5, 5.0

#: Seconds a cancel request may take while the run stops.
CANCEL_TIMEOUT = 3.0

#: Terminal states of a prediction; all end the polling, :meth:`ReplicateAdapter.generate` reads them (a
#: failure may be a refusal, told by its error message).
TERMINAL = frozenset({"succeeded", "failed", "canceled"})
FAILED = frozenset({"failed", "canceled"})

#: ``starting``: waiting for (or booting) a machine: the sample's budget starts after it (_transport/client.py)
STATES = JobStates(done=TERMINAL, queued=frozenset({"starting"}))


def parse_target(target: str) -> tuple[str, str | None]:
    """Split ``OWNER/NAME[:VERSION]`` into ``(owner/name, version or None)``.

    Raises :class:`ModelSpecError`: when the target is not of that form.
    """
    model, _, version = (target or "").strip().partition(":")
    if not _OWNER_NAME.match(model) or (version and not _VERSION.match(version)) or (_ and not version):
        raise ModelSpecError(
            f"replicate: model {target!r} is not of the form OWNER/NAME or OWNER/NAME:VERSION "
            "(such as replicate:black-forest-labs/flux-schnell)"
        )
    return model, version or None


def first_wait(answer: HttpResult, default: float, cap: float) -> float:
    """Seconds before the first poll: the submit answer's ``Retry-After``
    (within ``[0.01, cap]``), else ``default``."""
    hint = parse_retry_after(answer.headers.get("Retry-After"))
    return default if hint is None else min(max(hint, 0.01), cap)


def _drop_missing(node):
    if isinstance(node, dict):
        return {k: _drop_missing(v) for k, v in node.items() if v is not None}
    return node


class ReplicateAdapter(NetworkAdapter):
    """Adapter for Replicate predictions; ``wait``: seconds of ``Prefer: wait``, None for asynchronous."""

    def __init__(self, model: str, version: str | None, base_url: str, client: HttpClient, *,
                 template: RequestTemplate, wait: int | None = None):
        self.model = model
        self.version = version
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.template = template
        self.wait = wait
        params = {"wait": wait} if wait else {}
        name = f"{model}:{version}" if version else model
        self.identity = (f"replicate:{name}@{redact_url(self.base_url)}{format_params(params)}"
                         f" input={template.digest}")

    def create_url(self) -> str:
        """Where predictions are created."""
        if self.version:
            return f"{self.base_url}/predictions"
        return f"{self.base_url}/models/{self.model}/predictions"

    def body(self, request: GenerationRequest) -> dict:
        """The JSON body that creates the prediction for ``request``."""
        images = [png_data_uri(img) for img in request.images] if self.template._uses_images() else []
        body = {"input": _drop_missing(self.template.render(request, images))}
        if self.version:
            body["version"] = self.version
        return body

    def _create(self, request: GenerationRequest) -> tuple[dict, float]:
        data = json.dumps(self.body(request), separators=(",", ":")).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.wait:
            headers["Prefer"] = f"wait={self.wait}"
        answer = self.client.request("POST", self.create_url(), what="prediction create",
                                     data=data, headers=headers)
        try:
            prediction = load_json(answer.content)  # nesting bounded
        except (UnicodeDecodeError, ValueError):
            raise GenerationError("replicate: the create answer is not JSON",
                                  status=answer.status, attempts=answer.attempts) from None
        if not isinstance(prediction, dict):
            raise GenerationError("replicate: the create answer is not a JSON object",
                                  status=answer.status, attempts=answer.attempts)
        return prediction, first_wait(answer, FIRST_WAIT, MAX_WAIT)

    def _own_url(self, prediction: dict, name: str) -> str | None:
        """``urls[name]`` of ``prediction`` when on the API's own origin (the token goes with it), else refused."""
        urls = prediction.get("urls")
        url = urls.get(name) if isinstance(urls, dict) else None
        if not isinstance(url, str) or not url:
            return None
        if origin_or_none(url) is None or origin_or_none(url) != origin_or_none(self.base_url):
            raise GenerationError(
                f"replicate: urls.{name} '{shown(url)}' is not on the API's host "
                f"{redact_url(self.base_url)!r}; the token is sent only there")
        return url

    def _canceller(self, prediction: dict):
        try:
            url = self._own_url(prediction, "cancel")
        except GenerationError:
            url = None
        done = threading.Event()

        def cancel() -> None:
            # the client refuses requests once the run is cancelled: this one goes through the session,
            # bounded by CANCEL_TIMEOUT, once
            if not url or done.is_set():
                return
            done.set()
            self.client.session.post(url, timeout=(CANCEL_TIMEOUT, CANCEL_TIMEOUT))

        return cancel

    def generate(self, request: GenerationRequest):
        """Create a prediction, wait for it, fetch its first output."""
        with self.client.sample():
            prediction, wait = self._create(request)
            cancel = self._canceller(prediction)
            state = str(prediction.get("status") or "").lower()
            try:
                if state not in TERMINAL:
                    url = self._own_url(prediction, "get")
                    if url is None:
                        raise GenerationError(
                            f"replicate: prediction in state {state or '(none)'!r} has no urls.get to poll")
                    prediction = poll_job(self.client, url, STATES, what="Replicate prediction",
                                          first_wait=wait, max_wait=MAX_WAIT, cancel_job=cancel)
            except GenerationCancelled:
                cancel_quietly(cancel)
                raise
            return self._image(prediction)

    def _image(self, prediction: dict):
        state = str(prediction.get("status") or "").lower()
        error = str(prediction.get("error") or "")
        if state in FAILED:
            text = redact(f"Replicate prediction {state}" + (f": {error[:300]}" if error else ""))
            raise (GenerationRefused if REFUSAL_WORDS.search(error) else GenerationError)(text)
        output = prediction.get("output")
        if isinstance(output, list):
            output = next((item for item in output if item), None)
        if output is None or output == "":
            raise GenerationRefused("Replicate prediction succeeded without output (no image in answer)")
        if not isinstance(output, str):
            raise GenerationError(
                f"replicate: output is a {type(output).__name__}; accepted: a URL or a list of URLs")
        carrier = HttpResult(status=200, headers={"Content-Type": "application/json"},
                             content=json.dumps({"output": output}).encode("utf-8"),
                             url=self.base_url + "/")
        return image_from_response(carrier, response_path="output", fetch=self.client.fetch)


def _load_template(path) -> RequestTemplate:
    template = RequestTemplate.from_file(Path(path), what="--violin-replicate-input")
    if not isinstance(template.body, dict):
        raise ModelSpecError(
            f"{template.source}: the replicate input must be a JSON object, got {type(template.body).__name__}")
    return template


def create(target: str, options) -> ReplicateAdapter:
    """Factory for ``replicate:OWNER/NAME[:VERSION][?wait=N]``."""
    spec, params = split_params((target or "").strip(), what="replicate")
    model, version = parse_target(spec)
    wait = params.pop("wait", None)
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, int) or not 1 <= wait <= 60):
        raise ModelSpecError(f"replicate: wait={wait!r} is not accepted; accepted: an integer from 1 to 60 seconds")
    timeout = float(getattr(options, "timeout", 120.0))
    if wait is not None and wait >= timeout:
        raise ModelSpecError(f"replicate: wait={wait} holds the request {wait} s, not shorter than "
                             f"--violin-timeout={timeout:g}; accepted: a wait below the timeout")
    if params:
        raise ModelSpecError(f"replicate: unknown parameter(s) {', '.join(sorted(params))}; accepted: wait")
    extra = getattr(options, "extra", None) or {}
    path = extra.get("replicate_input")
    if path:
        path = Path(path)
        if not path.is_absolute():
            path = Path(options.rootdir) / path
        template = _load_template(path)
    else:
        template = RequestTemplate(DEFAULT_INPUT, source="replicate default input")
    key, base, auth = provider_endpoint("replicate", ("REPLICATE_API_TOKEN",), "REPLICATE_BASE_URL",
                                        DEFAULT_BASE_URL, what="API token")
    client = client_from_options(options, auth=auth, headers={"Authorization": f"Bearer {key}"},
                                 origins=(base,))
    return ReplicateAdapter(model, version, base, client, template=template, wait=wait)
