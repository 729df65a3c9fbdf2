"""``gemini:MODEL``: Gemini image models (Nano-Banana) through the Gemini API (docs/models.md).

``POST {base}/models/{MODEL}:generateContent`` with the prompt and the input images as ``inlineData`` parts
(the mask as the second image: the API has no mask field), the key in ``x-goog-api-key`` (``GEMINI_API_KEY``
or ``GOOGLE_API_KEY``), the size as the nearest accepted aspect ratio (:data:`ASPECT_RATIOS`). The image is
the last ``image/*`` part of the first candidate that is not a thought; without one, a blocked prompt, a
safety finish (:data:`REFUSAL_FINISH_REASONS`) or a text-only answer is a refusal, anything else a failure.
``?image_size=2K``, ``?modalities=image``.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from urllib.parse import quote

from ..errors import GenerationError, GenerationRefused, InvalidImageError, ModelSpecError
from ..imaging import decode_image, png_base64
from ..redaction import redact, redact_url
from .registry import check_model_name, format_params, split_params
from .request import GenerationRequest, NetworkAdapter
from ._transport.client import HttpClient, client_from_options
from ._transport.origins import provider_endpoint
from ._transport.answers import load_json, truncate

__all__ = ["ASPECT_RATIOS", "DEFAULT_BASE_URL", "GeminiAdapter", "REFUSAL_BLOCK_REASONS", "REFUSAL_FINISH_REASONS",
           "create", "nearest_aspect_ratio", "read_answer"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

#: Aspect ratios ``imageConfig.aspectRatio`` accepts (Gemini API image generation docs).
ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")

#: ``candidates[].finishReason`` values that mean the model declined to draw.
REFUSAL_FINISH_REASONS = frozenset({
    "SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "IMAGE_PROHIBITED_CONTENT", "BLOCKLIST",
    "SPII", "RECITATION", "IMAGE_RECITATION", "NO_IMAGE",
})

#: Every ``promptFeedback.blockReason`` is a refusal; these are the documented ones.
REFUSAL_BLOCK_REASONS = frozenset({
    "SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "IMAGE_SAFETY",
})

IMAGE_SIZES = ("1K", "2K", "4K")
MODALITIES = {"image": ["IMAGE"], "text,image": ["TEXT", "IMAGE"], "image,text": ["TEXT", "IMAGE"]}
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ACCEPTED_PARAMS = "image_size=1K|2K|4K, modalities=image|text,image"


def nearest_aspect_ratio(width: int, height: int) -> str:
    """The accepted aspect ratio closest to ``width`` / ``height`` (log scale).

    Examples
    --------
    >>> nearest_aspect_ratio(512, 512)
    '1:1'
    >>> nearest_aspect_ratio(640, 480)
    '4:3'
    """
    target = math.log(width / height)

    def distance(ratio: str) -> float:
        w, h = ratio.split(":")
        return abs(math.log(int(w) / int(h)) - target)

    return min(ASPECT_RATIOS, key=distance)


def _parts_of(candidate: dict) -> list:
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def _inline(part) -> dict | None:
    if not isinstance(part, dict):
        return None
    data = part.get("inlineData", part.get("inline_data"))
    return data if isinstance(data, dict) else None


def read_answer(obj, *, max_pixels: int | None = None, where: str = "gemini answer"):
    """The image in a ``generateContent`` answer (RGB uint8), or the reason there is none.

    Raises :class:`GenerationRefused` for a blocked prompt, a safety ``finishReason`` or text without an
    image; :class:`GenerationError` for any other answer without a usable image.
    """
    if not isinstance(obj, dict):
        raise GenerationError(f"{where} is a JSON {type(obj).__name__}, not an object with 'candidates'")
    feedback = obj.get("promptFeedback")
    block = feedback.get("blockReason") if isinstance(feedback, dict) else None
    candidates = obj.get("candidates")
    if block:
        raise GenerationRefused(f"{where}: the prompt was blocked (promptFeedback.blockReason={block})")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        raise GenerationError(f"{where} has no candidates (keys: {', '.join(sorted(obj)[:8]) or 'none'})")
    candidate = candidates[0]
    finish = candidate.get("finishReason")
    texts, final, drafts = [], None, 0
    for part in _parts_of(candidate):
        inline = _inline(part)
        if inline is not None:
            mime = str(inline.get("mimeType", inline.get("mime_type", "")))
            if not mime.startswith("image/"):
                continue
            if part.get("thought"):  # a thinking model's draft, not the answer
                drafts += 1
            else:
                final = inline  # the last image outside the thoughts is the answer
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    if final is not None:
        return _decode_inline(final.get("data"), where, max_pixels)
    if drafts:
        raise GenerationError(f"{where}: only {drafts} draft (thought) image(s), no final image "
                              f"(finishReason={finish})")
    said = f"; the model said: {truncate(redact(' '.join(texts)), 160)!r}" if texts else ""
    if finish in REFUSAL_FINISH_REASONS:
        raise GenerationRefused(f"{where}: no image, finishReason={finish}{said}")
    if texts and finish in (None, "STOP", "FINISH_REASON_UNSPECIFIED"):
        raise GenerationRefused(f"{where}: text but no image{said}")
    raise GenerationError(f"{where}: no image part (finishReason={finish}){said}")


def _decode_inline(data, where: str, max_pixels: int | None):
    if not isinstance(data, str) or not data:
        raise GenerationError(f"{where}: inlineData.data is not a base64 string")
    try:
        raw = base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        raise GenerationError(f"{where}: inlineData.data is not valid base64") from None
    try:
        kwargs = {"max_pixels": max_pixels} if max_pixels else {}
        return decode_image(raw, **kwargs)
    except InvalidImageError as exc:
        raise GenerationError(f"{where}: inlineData is not a usable image ({truncate(str(exc), 160)})") from None


class GeminiAdapter(NetworkAdapter):
    """Adapter for Gemini image models (``models/`` taken off the model name)."""

    def __init__(self, model: str, base_url: str, client: HttpClient, params: dict | None = None):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.params = dict(params or {})
        self.url = f"{self.base_url}/models/{quote(model, safe='.-_')}:generateContent"
        self.identity = f"gemini:{model}@{redact_url(self.base_url)}{format_params(self.params)}"

    def body(self, request: GenerationRequest) -> dict:
        """The ``generateContent`` JSON body for ``request``."""
        parts: list = [{"text": request.prompt}]
        for image in request.images:
            parts.append({"inlineData": {
                "mimeType": "image/png",
                "data": png_base64(image),
            }})
        image_config = {"aspectRatio": nearest_aspect_ratio(int(request.width), int(request.height))}
        if "image_size" in self.params:
            image_config["imageSize"] = self.params["image_size"]
        modalities = MODALITIES[self.params.get("modalities", "text,image")]
        return {
            "contents": [{"role": "user", "parts": parts}],
            "generationConfig": {"responseModalities": list(modalities), "imageConfig": image_config},
        }

    def batch_api(self):
        """The Gemini API's Batch Mode with this adapter's key and base (``--violin-batch``; see .batch._gemini)."""
        from .batch._gemini import GeminiBatch

        return GeminiBatch(self, read_answer)

    def generate(self, request: GenerationRequest):
        """Generate (or edit, with the request's input images) one image."""
        with self.client.sample():
            result = self.client.post_json(self.url, self.body(request), what="POST")
            try:
                obj = load_json(result.content)  # nesting bounded
            except ValueError:
                raise GenerationError(
                    f"gemini answer from {redact_url(result.url)} is not JSON "
                    f"({len(result.content)} bytes, {result.content_type or 'no Content-Type'})",
                    attempts=result.attempts, status=result.status,
                ) from None
            try:
                return read_answer(obj)
            except GenerationError as exc:
                counted = exc.remade(attempts=result.attempts, status=result.status)
                raise counted from None


def _check_params(params: dict) -> dict:
    out = {}
    for name, value in params.items():
        text = str(value).strip()
        if name == "image_size" and text.upper() in IMAGE_SIZES:
            out[name] = text.upper()
        elif name == "modalities" and text.lower().replace(" ", "") in MODALITIES:
            out[name] = text.lower().replace(" ", "")
        else:
            raise ModelSpecError(f"gemini: parameter {name}={value!r} is not accepted; accepted: {_ACCEPTED_PARAMS}")
    return out


def create(target: str, options) -> GeminiAdapter:
    """Factory for ``gemini:MODEL[?image_size=2K&modalities=image]``."""
    model, params = split_params((target or "").strip(), what="gemini")
    model = check_model_name(model.removeprefix("models/"), _MODEL_NAME, what="gemini",
                             example="gemini:gemini-2.5-flash-image (letters, digits, '.', '-', '_')")
    params = _check_params(params)
    key, base, auth = provider_endpoint("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "GEMINI_BASE_URL",
                                        DEFAULT_BASE_URL, what="Gemini API key")
    client = client_from_options(options, auth=auth, headers={"x-goog-api-key": key}, origins=(base,))
    return GeminiAdapter(model, base, client, params)
