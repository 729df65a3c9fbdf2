"""``openai:MODEL``: the OpenAI Images API and compatible servers (docs/models.md).

``POST {base}/images/generations`` (JSON) for text-only samples, ``POST {base}/images/edits`` (multipart,
every input image as ``image[]``) for samples with input images; the size is mapped to the nearest the model
accepts (:data:`MODEL_SIZES`). ``seed=auto`` sends the seed except to ``api.openai.com``, which rejects
unknown fields (``?seed=on``/``off``); other suffix parameters are sent as extra fields.
"""

from __future__ import annotations

import math
from urllib.parse import urlsplit

from ._transport.origins import provider_endpoint
from ._transport.answers import image_from_response
from ._transport.client import HttpClient, client_from_options
from ..errors import GenerationError, ModelSpecError
from ..imaging import encode_png
from ._transport.retries import refusal_or
from ..redaction import redact_url
from .registry import format_params, parse_switch, split_params
from .request import GenerationRequest, NetworkAdapter

__all__ = ["DEFAULT_BASE_URL", "MODEL_SIZES", "OpenAIAdapter", "create", "nearest_size"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

#: Error codes of the safety system's answers (HTTP 400): a refusal of that prompt.
REFUSAL_CODES = ("moderation_blocked", "content_policy_violation")


def is_refusal(exc: GenerationError) -> bool:
    """Whether an error answer is the safety system refusing this sample's prompt."""
    return exc.status == 400 and any(code in str(exc) for code in REFUSAL_CODES)

_GPT_IMAGE = ((1024, 1024), (1536, 1024), (1024, 1536))

#: Sizes each known model accepts, as (width, height).
MODEL_SIZES = {
    "gpt-image-1": _GPT_IMAGE,
    "gpt-image-1-mini": _GPT_IMAGE,
    "gpt-image-1.5": _GPT_IMAGE,
    "chatgpt-image-latest": _GPT_IMAGE,
    "dall-e-3": ((1024, 1024), (1792, 1024), (1024, 1792)),
    "dall-e-2": ((256, 256), (512, 512), (1024, 1024)),
}


def nearest_size(model: str, width: int, height: int) -> tuple[int, int]:
    """The accepted size nearest to ``width`` x ``height`` for ``model``.

    Nearest means the closest aspect ratio first, then the closest area (both on a log scale). Unknown models
    get the requested size.

    Examples
    --------
    >>> nearest_size("gpt-image-1", 512, 256)
    (1536, 1024)
    >>> nearest_size("dall-e-2", 300, 300)
    (256, 256)
    """
    sizes = MODEL_SIZES.get(model)
    if not sizes:
        return int(width), int(height)
    aspect = math.log(width / height)
    area = math.log(width * height)

    def distance(size):
        w, h = size
        return (round(abs(math.log(w / h) - aspect), 9), abs(math.log(w * h) - area))

    return min(sizes, key=distance)


class OpenAIAdapter(NetworkAdapter):
    """Adapter for the OpenAI Images API (sizes: :data:`MODEL_SIZES`; ``params``: extra fields)."""

    def __init__(self, model: str, base_url: str, client: HttpClient, *, send_seed: bool,
                 params: dict | None = None):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.send_seed = bool(send_seed)
        self.params = dict(params or {})
        self.identity = f"openai:{model}@{redact_url(self.base_url)}{format_params(self.params)}"

    def size_for(self, request: GenerationRequest) -> str:
        """The ``size`` field sent for ``request``."""
        w, h = nearest_size(self.model, int(request.width), int(request.height))
        return f"{w}x{h}"

    def generation_body(self, request: GenerationRequest) -> dict:
        """JSON body for ``/images/generations``."""
        body = {"model": self.model, "prompt": request.prompt, "n": 1, "size": self.size_for(request)}
        if self.send_seed:
            body["seed"] = int(request.seed)
        body.update(self.params)
        return body

    def generate(self, request: GenerationRequest):
        """Generate (or edit, with input images) one image; a 400 of the safety system is a refusal."""
        try:
            return self._generate(request)
        except GenerationError as exc:
            refused = refusal_or(exc, is_refusal)
            if refused is exc:
                raise
            raise refused from None

    def _generate(self, request: GenerationRequest):
        with self.client.sample():
            if request.images:
                fields = {k: str(v).lower() if isinstance(v, bool) else str(v)
                          for k, v in self.generation_body(request).items()}
                files = [
                    ("image[]", (f"image{i}.png", encode_png(img), "image/png"))
                    for i, img in enumerate(request.images)
                ]
                result = self.client.request(
                    "POST", f"{self.base_url}/images/edits", what="POST", data=fields, files=files
                )
            else:
                result = self.client.post_json(
                    f"{self.base_url}/images/generations", self.generation_body(request), what="POST"
                )
            return image_from_response(result, fetch=self.client.fetch)


def create(target: str, options) -> OpenAIAdapter:
    """Factory for ``openai:MODEL[?seed=on|off|auto&name=value...]``."""
    model, params = split_params((target or "").strip(), what="openai")
    if not model:
        raise ModelSpecError("openai: no model given; accepted: openai:MODEL such as openai:gpt-image-1")
    extra = getattr(options, "extra", None) or {}
    seed_mode = parse_switch(
        params.pop("seed", extra.get("openai_seed", "auto")), name="seed", what="openai"
    )
    key, base, auth = provider_endpoint("openai", ("OPENAI_API_KEY",), "OPENAI_BASE_URL", DEFAULT_BASE_URL)
    if seed_mode == "auto":
        host = (urlsplit(base).hostname or "").lower()
        send_seed = host != "api.openai.com"
    else:
        send_seed = bool(seed_mode)
    client = client_from_options(options, auth=auth, headers={"Authorization": f"Bearer {key.strip()}"},
                                 origins=(base,))
    return OpenAIAdapter(model, base, client, send_seed=send_seed, params=params)
