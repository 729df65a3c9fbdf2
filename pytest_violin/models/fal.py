"""``fal:APP``: models on fal.ai through its queue, submit, poll, fetch (docs/models.md).

Submit ``POST {base}/{APP}`` with ``Authorization: Key $FAL_KEY`` (input images as data URIs in ``image_urls``
for FLUX.2 apps, ``image_url`` for others, ``?image_field=NAME`` to choose), poll ``status_url`` until
``COMPLETED``, read ``response_url`` and download ``images[0].url`` without the key. ``has_nsfw_concepts`` or
a ``content_policy_violation`` error is a refusal; Ctrl-C sends ``PUT cancel_url`` once. URLs from an answer
get the key only on the base URL's origin or an ``https`` host under ``fal.run``; others are rebuilt from the
base, the app and the request id.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from ..errors import GenerationError, GenerationRefused, ModelSpecError
from ..imaging import png_data_uri
from ..redaction import redact, redact_url, register_secret
from .registry import format_params, split_params
from .request import GenerationRequest, NetworkAdapter
from .bfl import first_wait_of, json_answer
from ._transport.client import HttpClient, JobStates, client_from_options, poll_job
from ._transport.origins import Origins, check_path_id, provider_endpoint
from ._transport.answers import image_from_response

__all__ = ["DEFAULT_BASE_URL", "STATES", "FalAdapter", "create"]

DEFAULT_BASE_URL = "https://queue.fal.run"

#: How queue status answers are read (https://docs.fal.ai/documentation/model-apis/inference/queue).
STATES = JobStates(
    done=frozenset({"COMPLETED"}),
    failed=frozenset({"FAILED", "ERROR", "CANCELED", "CANCELLED"}),
    # waiting for a runner: the sample's budget starts when it leaves the queue (_transport/client.py)
    queued=frozenset({"IN_QUEUE"}),
    state_of=lambda body: str(body.get("status", "")),
    message_of=lambda body: str(body.get("error") or body.get("detail") or ""),
)

_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_APP = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$")
_CANCEL_TIMEOUT = 5.0
_REFUSAL_TYPES = ("content_policy_violation",)
#: A 422 result whose message says one of these is a refusal (the client keeps only the message of an error
#: answer, not its ``type``).
_REFUSAL_WORDS = ("content_policy", "content policy", "flagged", "nsfw", "safety checker")


def _trusted(url, base: str) -> bool:
    # one rule (_transport/origins.py): the base's origin or an https host under fal.run
    return isinstance(url, str) and url in Origins((base,), domains=("fal.run",))


def _refusal_of(body: dict) -> str | None:
    """The reason when a result (or status) body is a refusal, else None."""
    flags = body.get("has_nsfw_concepts")
    if isinstance(flags, list) and flags and flags[0] is True:
        return "the safety checker flagged the image (has_nsfw_concepts)"
    if body.get("error_type") in _REFUSAL_TYPES:
        return str(body.get("error") or body.get("error_type"))
    detail = body.get("detail")
    if isinstance(detail, list):
        for item in detail:
            if isinstance(item, dict) and item.get("type") in _REFUSAL_TYPES:
                return str(item.get("msg") or item.get("type"))
    return None


class FalAdapter(NetworkAdapter):
    """Adapter for fal.ai's queue; ``app`` is ``owner/name[/path]``, ``image_field`` where input images go."""

    def __init__(self, app: str, base_url: str, client: HttpClient, *, image_field: str | None = None,
                 params: dict | None = None):
        self.app = app
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.image_field = image_field or ("image_urls" if "flux-2" in app else "image_url")
        self.params = dict(params or {})
        self.identity = f"fal:{app}@{redact_url(self.base_url)}{format_params(self.params)}"

    def body_for(self, request: GenerationRequest) -> dict:
        """The JSON input submitted for ``request``."""
        body = {
            "prompt": request.prompt,
            "seed": int(request.seed),
            "image_size": {"width": int(request.width), "height": int(request.height)},
            "num_images": 1,
            "output_format": "png",
        }
        images = [png_data_uri(img) for img in (request.images or ())]
        if images:
            body[self.image_field] = images if self.image_field.endswith("s") else images[0]
        body.update(self.params)
        return body

    def job_urls(self, answer: dict) -> tuple[str, str, str]:
        """``(status_url, response_url, cancel_url)`` of a submit answer."""
        rid = answer.get("request_id")
        if not isinstance(rid, str) or not _ID.match(rid):
            raise GenerationError(f"fal submit answer has no usable 'request_id' (got {str(rid)[:40]!r})")
        owner_app = "/".join(self.app.split("/")[:2])
        own = f"{self.base_url}/{owner_app}/requests/{quote(rid, safe='')}"
        urls = []
        for name, fallback in (("status_url", f"{own}/status"), ("response_url", own),
                               ("cancel_url", f"{own}/cancel")):
            value = answer.get(name)
            urls.append(value if _trusted(value, self.base_url) else fallback)
        return tuple(urls)

    def _cancel(self, cancel_url: str) -> None:
        # the client starts no request once the run is cancelled: one direct PUT
        self.client.session.request("PUT", cancel_url, timeout=(_CANCEL_TIMEOUT, _CANCEL_TIMEOUT))

    def generate(self, request: GenerationRequest):
        """Submit one request, poll it, read the result, download the image."""
        with self.client.sample():
            submitted = self.client.post_json(f"{self.base_url}/{self.app}", self.body_for(request),
                                              what="fal submit")
            status_url, response_url, cancel_url = self.job_urls(json_answer(submitted, what="fal submit"))
            status = poll_job(self.client, status_url, STATES, what="fal request",
                              first_wait=first_wait_of(submitted),
                              cancel_job=lambda: self._cancel(cancel_url))
            reason = _refusal_of(status)
            if reason:
                raise GenerationRefused(redact(f"fal request refused: {reason}"[:400]))
            if status.get("error"):
                raise GenerationError(redact(f"fal request failed: {str(status['error'])[:300]}"))
            try:
                result = self.client.request("GET", response_url, what="fal result")
            except GenerationError as exc:
                if exc.status == 422 and any(w in str(exc).lower() for w in _REFUSAL_WORDS):
                    raise GenerationRefused(str(exc)) from None
                raise
            body = json_answer(result, what="fal result")
            reason = _refusal_of(body)
            if reason:
                raise GenerationRefused(redact(f"fal request refused: {reason}"[:400]))
            return image_from_response(result, response_path="images.0.url", fetch=self.client.fetch)


def create(target: str, options) -> FalAdapter:
    """Factory for ``fal:OWNER/APP[/PATH][?image_field=NAME&name=value...]``."""
    app, params = split_params((target or "").strip().rstrip("/"), what="fal")
    if not _APP.match(app or ""):
        raise ModelSpecError(f"fal: bad app id {app!r}; accepted: fal:OWNER/APP[/PATH] such as "
                             "fal:fal-ai/flux/dev or fal:fal-ai/flux-2/edit")
    check_path_id(app, what="fal: app id", accepted="fal:OWNER/APP[/PATH] such as fal:fal-ai/flux/dev, "
                  "segments of letters, digits, '.', '_', '-', none of them '.' or '..'")
    image_field = params.pop("image_field", None)
    if image_field is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", str(image_field)):
        raise ModelSpecError(f"fal: image_field must be a JSON field name, got {image_field!r}")
    key, base, auth = provider_endpoint("fal", ("FAL_KEY",), "FAL_BASE_URL", DEFAULT_BASE_URL)
    register_secret(key.partition(":")[2])  # fal keys are KEY_ID:KEY_SECRET; the secret alone too
    client = client_from_options(options, auth=auth, headers={"Authorization": f"Key {key}"},
                                 origins=(base,), domains=("fal.run",))
    return FalAdapter(app, base, client, image_field=image_field, params=params)
