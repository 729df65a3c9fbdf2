"""``bfl:MODEL``: FLUX.1 / FLUX.2 through Black Forest Labs' API, submit, poll, fetch (docs/models.md).

Submit ``POST {base}/{MODEL}`` with the key in ``x-key`` (Kontext models take ``aspect_ratio``; edit-capable
models take input images as base64 in ``input_image``, ``input_image_2``, ...), poll ``polling_url`` until
``Ready``, download ``result.sample`` without the key. ``Request Moderated`` / ``Content Moderated`` are
refusals. A ``polling_url`` gets the key only on the base URL's origin or an ``https`` host under ``bfl.ai``;
any other is replaced by ``{base}/get_result?id=ID``. BFL has no cancel endpoint: an interrupted job finishes
(and is billed) on BFL's side.
"""

from __future__ import annotations

import json
import math
import re
from urllib.parse import quote

from ..errors import GenerationError, ModelSpecError
from ..imaging import png_base64
from ..redaction import redact_url
from .registry import format_params, parse_switch, split_params
from .request import GenerationRequest, NetworkAdapter
from ._transport.client import HttpClient, JobStates, client_from_options, poll_job
from ._transport.answers import HttpResult, image_from_response, load_json
from ._transport.retries import parse_retry_after
from ._transport.origins import Origins, check_path_id, provider_endpoint, same_origin as _same_origin

__all__ = ["DEFAULT_BASE_URL", "STATES", "BflAdapter", "create", "json_answer", "first_wait_of",
           "same_origin"]

DEFAULT_BASE_URL = "https://api.bfl.ai/v1"

#: Model name prefixes that accept input images.
EDIT_PREFIXES = ("flux-2-", "flux-kontext-")

#: How ``get_result`` answers are read (https://docs.bfl.ai/api_integration/errors).
STATES = JobStates(
    done=frozenset({"Ready"}),
    failed=frozenset({"Error"}),
    # a job the API no longer knows: an error after a few polls (_transport/client.py), not a failure
    vanished=frozenset({"Task not found"}),
    refused=frozenset({"Request Moderated", "Content Moderated"}),
    state_of=lambda body: str(body.get("status", "")),
    message_of=lambda body: _message(body),
)

_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
_MAX_INPUT_IMAGES = 8


def _message(body) -> str:
    for key in ("details", "detail", "error", "result"):
        value = body.get(key)
        if value:
            return value if isinstance(value, str) else json.dumps(value)[:300]
    return ""


def json_answer(result: HttpResult, *, what: str) -> dict:
    """The JSON object of a 2xx answer, or a :class:`GenerationError` saying what it was."""
    try:
        body = load_json(result.content)  # nesting bounded
    except (UnicodeDecodeError, ValueError):
        raise GenerationError(f"{what} answer is not JSON", attempts=result.attempts,
                              status=result.status) from None
    if not isinstance(body, dict):
        raise GenerationError(f"{what} answer is a JSON {type(body).__name__}, not an object",
                              attempts=result.attempts, status=result.status)
    return body


def first_wait_of(result: HttpResult, default: float = 0.5, cap: float = 5.0) -> float:
    """Seconds before the first poll: the submit answer's ``Retry-After``, else ``default``."""
    hint = parse_retry_after(result.headers.get("Retry-After"))
    if hint is None:
        return default
    return min(max(float(hint), 0.05), cap)


def same_origin(url: str, base: str) -> bool:
    """Whether ``url`` has the scheme, host and port of ``base`` (:func:`.transport.origins.same_origin`:
    a URL the parsers read differently, with user info or a backslash, is on no origin)."""
    return _same_origin(url, base)


def _multiple(value: int, step: int, low: int) -> int:
    return max(low, int(round(value / step)) * step)


def _aspect(width: int, height: int) -> str:
    d = math.gcd(int(width), int(height)) or 1
    return f"{int(width) // d}:{int(height) // d}"


class BflAdapter(NetworkAdapter):
    """Adapter for Black Forest Labs' API; ``edit``: whether the model takes input images (``auto``: by name)."""

    def __init__(self, model: str, base_url: str, client: HttpClient, *, edit="auto",
                 params: dict | None = None):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.edit = model.startswith(EDIT_PREFIXES) if edit == "auto" else bool(edit)
        self.params = dict(params or {})
        self.identity = f"bfl:{model}@{redact_url(self.base_url)}{format_params(self.params)}"

    def body_for(self, request: GenerationRequest) -> dict:
        """The JSON body submitted for ``request``."""
        body = {"prompt": request.prompt, "seed": int(request.seed), "output_format": "png"}
        width, height = int(request.width), int(request.height)
        if self.model.startswith("flux-kontext-"):
            body["aspect_ratio"] = _aspect(width, height)
        elif self.model.startswith("flux-2-"):  # multiples of 16 or of 32 in the references: 32 fits both
            body["width"], body["height"] = _multiple(width, 32, 64), _multiple(height, 32, 64)
        else:  # FLUX.1 [pro] / [dev]: multiples of 32
            body["width"], body["height"] = _multiple(width, 32, 256), _multiple(height, 32, 256)
        images = tuple(request.images or ())
        if images:
            if not self.edit:
                raise GenerationError(
                    f"bfl model {self.model!r} takes no input image and this sample has "
                    f"{len(images)}; use an edit-capable model (flux-2-*, flux-kontext-*) "
                    f"or bfl:{self.model}?edit=on")
            if len(images) > _MAX_INPUT_IMAGES:
                raise GenerationError(f"bfl accepts at most {_MAX_INPUT_IMAGES} input images, "
                                      f"this sample has {len(images)}")
            for i, image in enumerate(images):
                name = "input_image" if i == 0 else f"input_image_{i + 1}"
                body[name] = png_base64(image)
        body.update(self.params)
        return body

    def polling_url(self, answer: dict) -> str:
        """The status URL of a submit answer (see the module docstring)."""
        job_id = answer.get("id")
        if not isinstance(job_id, str) or not _ID.match(job_id):
            raise GenerationError(f"bfl submit answer has no usable 'id' (got {str(job_id)[:40]!r})")
        url = answer.get("polling_url")
        if isinstance(url, str) and (same_origin(url, self.base_url) or url in Origins(domains=("bfl.ai",))):
            return url
        return f"{self.base_url}/get_result?id={quote(job_id, safe='')}"

    def generate(self, request: GenerationRequest):
        """Submit one job, poll it, download the image."""
        with self.client.sample():
            submitted = self.client.post_json(f"{self.base_url}/{self.model}", self.body_for(request),
                                              what="bfl submit")
            url = self.polling_url(json_answer(submitted, what="bfl submit"))
            status = poll_job(self.client, url, STATES, what="bfl job",
                              first_wait=first_wait_of(submitted))
            done = HttpResult(status=200, headers={}, content=json.dumps(status).encode("utf-8"),
                              url=url, attempts=1, elapsed=0.0)
            return image_from_response(done, response_path="result.sample", fetch=self.client.fetch)


def create(target: str, options) -> BflAdapter:
    """Factory for ``bfl:MODEL[?edit=on|off|auto&name=value...]``."""
    model, params = split_params((target or "").strip(), what="bfl")
    if not model or "/" in model:
        raise ModelSpecError(f"bfl: bad model name {model!r}; accepted: bfl:MODEL such as "
                             "bfl:flux-2-pro, bfl:flux-dev or bfl:flux-kontext-pro")
    check_path_id(model, what="bfl: model name", segments=False,
                  accepted="bfl:MODEL such as bfl:flux-2-pro, letters, digits, '.', '_', '-'")
    edit = parse_switch(params.pop("edit", "auto"), name="edit", what="bfl")
    key, base, auth = provider_endpoint("bfl", ("BFL_API_KEY",), "BFL_BASE_URL", DEFAULT_BASE_URL)
    client = client_from_options(options, auth=auth, headers={"x-key": key}, origins=(base,),
                                 domains=("bfl.ai",))
    return BflAdapter(model, base, client, edit=edit, params=params)
