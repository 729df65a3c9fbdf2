"""``ark:MODEL``: Seedream (and SeedEdit) through BytePlus ModelArk / Volcengine Ark (docs/models.md).

``POST {base}/images/generations`` with ``response_format: b64_json`` and ``watermark: false``; input images
go as data URIs in ``image`` (the mask as the second reference image: Ark has no mask field). Content-safety
codes (HTTP 400, or a per-image ``data[0].error``) are refusals. Sizes outside a model's pixel range
(:data:`PIXEL_RANGES`) are scaled to the nearest inside, keeping the aspect ratio; a model taking fewer input
images than a sample has (:func:`max_input_images`) fails that sample with one line. Other suffix parameters
are sent as typed extra fields; ``?seed=off`` leaves the seed out.
"""

from __future__ import annotations

import json
import math
import re

from ..errors import GenerationError, GenerationRefused, ModelSpecError
from ..imaging import png_data_uri
from ..redaction import redact_url
from .registry import check_model_name, format_params, parse_switch, split_params
from .request import GenerationRequest, NetworkAdapter
from ._transport.client import HttpClient, client_from_options
from ._transport.origins import provider_endpoint
from ._transport.answers import image_from_response, load_json, server_message, truncate

__all__ = ["DEFAULT_BASE_URL", "VOLCENGINE_BASE_URL", "PIXEL_RANGES", "ArkAdapter", "create", "is_refusal_code",
           "max_input_images", "size_for"]

DEFAULT_BASE_URL = "https://ark.ap-southeast.bytepluses.com/api/v3"
VOLCENGINE_BASE_URL = "https://ark.cn-beijing.volces.com/api/v3"

#: (model-name pattern, (least, most) total pixels of ``size``), first match wins.
PIXEL_RANGES = (
    (re.compile(r"seedream-5-0"), (2560 * 1440, 10404496)),
    (re.compile(r"seedream-4-5"), (2560 * 1440, 4096 * 4096)),
    (re.compile(r"seedream-4-0"), (1280 * 720, 4096 * 4096)),
    (re.compile(r"seedream-3-0|seededit-3-0"), (512 * 512, 2048 * 2048)),
)

#: Error codes of Ark's content-safety checks (input text/image, output image).
_REFUSAL_CODE = re.compile(r"SensitiveContentDetected|RiskDetection", re.IGNORECASE)
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")
_SIZE = re.compile(r"^(\d{2,5})x(\d{2,5})$")
_SHORTHAND = ("1K", "2K", "3K", "4K")
_FIXED = ("model", "prompt", "image", "response_format")


def is_refusal_code(text: str) -> bool:
    """Whether an Ark error code or message names a content-safety refusal."""
    return bool(_REFUSAL_CODE.search(text or ""))


def max_input_images(model: str) -> int:
    """How many input images ``model`` takes: 0 for text-to-image models
    (``...-t2i-...``), 1 for SeedEdit, 14 for the others (Seedream 4 and later).
    """
    low = model.lower()
    if "t2i" in low:
        return 0
    if "seededit" in low:
        return 1
    return 14


def size_for(model: str, width: int, height: int) -> str:
    """The ``size`` sent for a ``width`` x ``height`` request.

    Scaled, keeping the aspect ratio, into the model's range of total pixels (:data:`PIXEL_RANGES`); unknown
    models get the requested size.

    Examples
    --------
    >>> size_for("seedream-4-0-250828", 512, 512)
    '960x960'
    >>> size_for("doubao-seedream-3-0-t2i-250415", 512, 512)
    '512x512'
    """
    w, h = int(width), int(height)
    low = model.lower()
    for pattern, (least, most) in PIXEL_RANGES:
        if pattern.search(low):
            area = w * h
            if area < least:
                scale = math.sqrt(least / area)
                w, h = math.ceil(w * scale), math.ceil(h * scale)
                while w * h < least:  # ceil of a float product may still fall one short
                    w, h = w + 1, h + 1
            elif area > most:
                scale = math.sqrt(most / area)
                w, h = max(1, math.floor(w * scale)), max(1, math.floor(h * scale))
            break
    return f"{w}x{h}"


class ArkAdapter(NetworkAdapter):
    """Adapter for Seedream on ModelArk / Volcengine Ark (``params['size']`` overrides the computed size)."""

    def __init__(self, model: str, base_url: str, client: HttpClient, params: dict | None = None,
                 *, send_seed: bool = True):
        self.model = model
        self.send_seed = bool(send_seed)
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.params = dict(params or {})
        self.max_images = max_input_images(model)
        shown = dict(self.params, **({} if self.send_seed else {"seed": "off"}))
        self.identity = f"ark:{model}@{redact_url(self.base_url)}{format_params(shown)}"

    def body(self, request: GenerationRequest) -> dict:
        """The ``images/generations`` JSON body for ``request``."""
        body = {
            "model": self.model,
            "prompt": request.prompt,
            "size": size_for(self.model, int(request.width), int(request.height)),
            "response_format": "b64_json",
            "seed": int(request.seed),
            "watermark": False,
        }
        if not self.send_seed:
            del body["seed"]
        if request.images:
            uris = [png_data_uri(img) for img in request.images]
            body["image"] = uris[0] if len(uris) == 1 else uris
        body.update(self.params)
        return body

    def generate(self, request: GenerationRequest):
        """Generate (or edit, with the request's input images) one image."""
        count = len(request.images)
        if count > self.max_images:
            raise GenerationError(
                f"ark:{self.model} takes at most {self.max_images} input image"
                f"{'s' if self.max_images != 1 else ''}, the sample has {count}: choose an "
                "image-to-image Seedream model (4.0 or later) for samples with input images",
                attempts=0,
            )
        url = f"{self.base_url}/images/generations"
        with self.client.sample():
            try:
                result = self.client.post_json(url, self.body(request), what="POST")
            except GenerationError as exc:
                if exc.status == 400 and is_refusal_code(exc.reason):
                    raise GenerationRefused(exc.reason, attempts=exc.attempts, status=exc.status) from None
                raise
            self._check_item_error(result)
            return image_from_response(result, fetch=self.client.fetch)

    def _check_item_error(self, result) -> None:
        try:
            obj = load_json(result.content) if result.content[:64].lstrip()[:1] == b"{" else None
        except ValueError:
            return
        data = obj.get("data") if isinstance(obj, dict) else None
        first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None
        error = first.get("error") if first else None
        if not error or first.get("b64_json") or first.get("url"):
            return
        message = server_message(json.dumps({"error": error}).encode())
        code = str(error.get("code", "")) if isinstance(error, dict) else ""
        reason = f"ark answer: no image, data[0].error: {truncate(message)}"
        if is_refusal_code(code) or is_refusal_code(message):
            raise GenerationRefused(reason, attempts=result.attempts, status=result.status)
        raise GenerationError(reason, attempts=result.attempts, status=result.status)


def _check_params(params: dict) -> dict:
    for name in _FIXED:
        if name in params:
            raise ModelSpecError(
                f"ark: parameter {name!r} is set by the plugin and cannot be given; accepted: "
                "size=WxH|1K|2K|4K, seed=on|off, watermark and other Ark image fields"
            )
    if "size" in params:
        text = str(params["size"]).strip()
        if text.upper() in _SHORTHAND:
            params["size"] = text.upper()
        elif _SIZE.match(text.lower()):
            params["size"] = text.lower()
        else:
            raise ModelSpecError(
                f"ark: size={params['size']!r} is not accepted; accepted: WxH (2048x2048) or "
                f"{', '.join(_SHORTHAND)}"
            )
    return params


def create(target: str, options) -> ArkAdapter:
    """Factory for ``ark:MODEL[?size=2K&seed=off&name=value...]``."""
    model, params = split_params((target or "").strip(), what="ark")
    check_model_name(model, _MODEL_NAME, what="ark",
                     example="ark:seedream-4-5-251128 (a model ID or an endpoint ID)")
    send_seed = parse_switch(params.pop("seed", True), name="seed", what="ark", allowed=())
    params = _check_params(params)
    key, base, auth = provider_endpoint("ark", ("ARK_API_KEY",), "ARK_BASE_URL", DEFAULT_BASE_URL,
                                        what="ModelArk API key")
    client = client_from_options(options, auth=auth, headers={"Authorization": f"Bearer {key}"},
                                 origins=(base,))
    return ArkAdapter(model, base, client, params, send_seed=send_seed)
