"""Finding and decoding the image in an HTTP answer, and explaining answers that hold none.

* :func:`image_from_response`: raw image bytes (by ``Content-Type`` or
  signature), or JSON with base64, a ``data:`` URI or an
  http(s) URL at a known place (:data:`DEFAULT_IMAGE_PATHS`) or at a
  response path (:func:`parse_response_path`).
* :func:`server_message` and :func:`truncate` (from :mod:`.text`) and
  :func:`load_json` (from :mod:`.jsonload`, nesting bounded) are importable
  from here too.

Every failure is a :class:`~pytest_violin.errors.GenerationError` with a
one-line, redacted reason.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from typing import Any, Callable
from urllib.parse import unquote_to_bytes

import numpy as np

from ...errors import GenerationError, InvalidImageError, ModelSpecError
from ...imaging import MAX_PIXELS, decode_image
from ...redaction import redact, redact_url
from .jsonload import MAX_JSON_DEPTH, JsonTooDeep, json_depth_over, load_json
from .origins import UrlRefused, resolve
from .result import HttpResult
from .text import MESSAGE_LIMIT, json_message, looks_html, server_message, truncate

__all__ = [
    "DEFAULT_IMAGE_PATHS",
    "MAX_JSON_DEPTH",
    "MESSAGE_LIMIT",
    "JsonTooDeep",
    "json_depth_over",
    "load_json",
    "image_from_response",
    "parse_response_path",
    "server_message",
    "truncate",
]  # MAX_JSON_DEPTH ... load_json: from .jsonload; MESSAGE_LIMIT, server_message, truncate: from .text

#: Where a JSON answer is searched for an image when no response path is set.
DEFAULT_IMAGE_PATHS = (
    ("image",),
    ("images", 0),
    ("data", 0, "b64_json"),
    ("data", 0, "url"),
    ("url",),
    ("b64_json",),
    ("output", 0),
    ("output",),
)

_IMAGE_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",
    b"MM\x00*",
)


# ----------------------------------------------------------------------- decoding


def parse_response_path(path: str) -> tuple:
    """Split a response path such as ``data.0.b64_json`` or ``data[0].url``.

    Returns
    -------
    tuple
        Keys (str) and list indices (int).

    Raises
    ------
    ModelSpecError
        For an empty path or an empty segment.
    """
    if not isinstance(path, str) or not path.strip():
        raise ModelSpecError(f"empty response path {path!r}; example: data.0.b64_json")
    normal = re.sub(r"\[(\d+)\]", r".\1", path.strip())
    parts = normal.split(".")
    if any(not p for p in parts):
        raise ModelSpecError(
            f"response path {path!r} has an empty segment; accepted: dotted keys and "
            "indices such as data.0.b64_json or output[0]"
        )
    return tuple(int(p) if p.isdigit() else p for p in parts)


def _format_path(parts: tuple) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def _walk(obj: Any, parts: tuple) -> tuple[bool, Any, str]:
    """(found, value, where it stopped)."""
    cur = obj
    for i, part in enumerate(parts):
        if isinstance(cur, dict):
            key = str(part)
            if key not in cur:
                return False, None, _format_path(parts[: i + 1])
            cur = cur[key]
        elif isinstance(cur, list) and isinstance(part, int):
            if part >= len(cur):
                return False, None, _format_path(parts[: i + 1])
            cur = cur[part]
        else:
            return False, None, _format_path(parts[: i + 1])
    return True, cur, _format_path(parts)


def _image_error(exc: InvalidImageError) -> str:
    text = str(exc)
    return text.split(": got ", 1)[0]


def _decode(data: bytes, where: str, max_pixels: int) -> np.ndarray:
    try:
        return decode_image(data, max_pixels=max_pixels)
    except InvalidImageError as exc:
        raise _ValueFail(f"{where}: {_image_error(exc)}") from None


class _ValueFail(Exception):
    """Internal: a response that does not hold a usable image."""


_DATA_URI = re.compile(r"^data:([^,;]*)((?:;[^,;]*)*),(.*)$", re.DOTALL)
_B64_CHARS = re.compile(r"^[A-Za-z0-9+/_\-=\s]+$")


def _image_from_value(value, where, fetch, base_url, max_pixels) -> np.ndarray:
    if isinstance(value, list):
        if not value:
            raise _ValueFail(f"{where} is an empty list")
        return _image_from_value(value[0], f"{where}[0]", fetch, base_url, max_pixels)
    if not isinstance(value, str):
        raise _ValueFail(f"{where} is a JSON {type(value).__name__}, not an image string")
    text = value.strip()
    if not text:
        raise _ValueFail(f"{where} is an empty string")
    match = _DATA_URI.match(text) if text.startswith("data:") else None
    if match:
        params = match.group(2).lower()
        payload = match.group(3)
        if ";base64" in params:
            data = _b64(payload, f"{where} (data URI)")
        else:
            data = unquote_to_bytes(payload)
        return _decode(data, f"{where} (data URI)", max_pixels)
    relative = text.startswith("/") and bool(base_url) and not _is_b64_image(text)
    if text.startswith(("http://", "https://")) or relative:
        if fetch is None:
            raise _ValueFail(f"{where} is a URL but URLs cannot be fetched here")
        try:  # judged as the server wrote it (transport/origins.py), surrounding whitespace included
            url = resolve(value, base_url or None, what="image URL")
        except UrlRefused as exc:
            raise _ValueFail(f"{where}: {exc.reason}") from None
        return _decode(fetch(url), f"image downloaded from {redact_url(url)}", max_pixels)
    if _B64_CHARS.match(text[:4096]):
        return _decode(_b64(text, where), where, max_pixels)
    raise _ValueFail(
        f"{where} is a string that is neither base64 image data, a data: URI nor an "
        f"http(s) URL (starts with {_head(text)!r})"
    )


_WHITESPACE = re.compile(r"\s")
_URLSAFE = str.maketrans("-_", "+/")


def _head(text: str, limit: int = 40) -> str:
    """The start of ``text`` for a message: redacted first, then cut."""
    return truncate(redact(text[:4 * limit]), limit)


def _b64(text: str, where: str) -> bytes:
    """Decode standard or URL-safe base64, copying the text only when it must.

    Answers near the size limit hold tens of megabytes of base64: whitespace
    and URL-safe characters are handled only when present.
    """
    if _WHITESPACE.search(text):
        text = "".join(text.split())
    if "-" in text or "_" in text:
        text = text.translate(_URLSAFE)
    if len(text) % 4:
        text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _ValueFail(f"{where} is not valid base64") from None


def _is_b64_image(text: str) -> bool:
    """Whether ``text`` is base64 whose bytes start like an image.

    Base64 JPEG data starts with ``/9j/`` (``FF D8 FF``), which must not be
    taken for a relative URL.
    """
    head = "".join(text[:64].split())[:16]
    if len(head) < 8 or not _B64_CHARS.match(head):
        return False
    try:
        data = base64.b64decode(head.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return False
    return _is_image_bytes(data, "")


def _is_image_bytes(body: bytes, content_type: str) -> bool:
    if content_type.startswith("image/"):
        return True
    if body.startswith(_IMAGE_MAGIC):
        return True
    return body[:4] == b"RIFF" and body[8:12] == b"WEBP"


def image_from_response(
    result: HttpResult,
    *,
    response_path: str | tuple | None = None,
    fetch: Callable[[str], bytes] | None = None,
    max_pixels: int = MAX_PIXELS,
) -> np.ndarray:
    """Find and decode the image in a successful HTTP response.

    Parameters
    ----------
    result : HttpResult
        The response.
    response_path : str or tuple, optional
        Where the image is in a JSON body (``data.0.b64_json``,
        ``output.0``). Without it, raw image bodies are decoded and JSON is
        searched at :data:`DEFAULT_IMAGE_PATHS`.
    fetch : callable, optional
        ``fetch(url) -> bytes`` for answers that hold a URL.
    max_pixels : int
        Pixel limit.

    Returns
    -------
    numpy.ndarray
        RGB uint8 (any size: the scorer resizes).

    Raises
    ------
    GenerationError
        One line: what the body was instead of an image, with the status and
        attempts of ``result``.
    """
    try:
        return _image_from_response(result, response_path, fetch, max_pixels)
    except _ValueFail as exc:
        raise GenerationError(
            truncate(redact(str(exc)), 2 * MESSAGE_LIMIT + 120),
            attempts=result.attempts,
            status=result.status,
        ) from None
    except GenerationError as exc:  # a failed image download
        raise GenerationError(exc.reason, attempts=result.attempts, status=exc.status) from None


def _image_from_response(result: HttpResult, response_path, fetch, max_pixels) -> np.ndarray:
    body = result.content
    ctype = result.content_type
    origin = f"response from {redact_url(result.url)} (HTTP {result.status}"
    origin += f", {ctype})" if ctype else ")"
    if not body:
        raise _ValueFail(f"{origin} has an empty body (0 bytes), not an image")
    if _is_image_bytes(body, ctype):
        return _decode(body, origin, max_pixels)
    if looks_html(body, ctype):
        raise _ValueFail(
            f"{origin} is an HTML page, not an image: {server_message(body, ctype)}"
        )
    # Only JSON fields can hold base64 (or a URL): a text body is never
    # decoded as base64, and is not parsed unless it starts like JSON.
    obj = None
    if body[:256].lstrip()[:1] in (b"{", b"[", b'"'):
        try:
            obj = load_json(body)
        except JsonTooDeep as exc:  # the model's failure: an answer that is not an image
            raise _ValueFail(f"{origin} is {exc}, not an image ({len(body)} bytes)") from None
        except ValueError:
            obj = None
    if obj is None:
        head = body[:4096].decode("utf-8", "replace").strip()
        raise _ValueFail(
            f"{origin} is neither an image nor JSON ({len(body)} bytes starting with "
            f"{_head(head)!r})"
        ) from None
    kwargs = dict(fetch=fetch, base_url=result.url, max_pixels=max_pixels)
    if response_path is not None:
        parts = parse_response_path(response_path) if isinstance(response_path, str) else tuple(response_path)
        found, value, stop = _walk(obj, parts)
        if not found:
            raise _ValueFail(
                f"{origin}: JSON has no {stop!r} (response path {_format_path(parts)!r}; "
                f"{_json_summary(obj)})"
            )
        return _image_from_value(value, _format_path(parts), **kwargs)
    for parts in DEFAULT_IMAGE_PATHS:
        found, value, _ = _walk(obj, parts)
        if found and value not in (None, "", []):
            return _image_from_value(value, _format_path(parts), **kwargs)
    accepted = ", ".join(_format_path(p) for p in DEFAULT_IMAGE_PATHS[:5])
    message = json_message(obj) if isinstance(obj, (dict, list)) else None
    said = f"; server said: {truncate(redact(message))}" if message else ""
    raise _ValueFail(
        f"{origin}: JSON without an image ({_json_summary(obj)}; looked at {accepted}; "
        f"set --violin-response-path){said}"
    )


def _json_summary(obj: Any) -> str:
    if isinstance(obj, dict):
        keys = list(itertools.islice(obj, 8))  # not list(obj): an answer may hold millions of keys
        more = ", ..." if len(obj) > 8 else ""
        return "top-level keys: " + ", ".join(repr(k) for k in keys) + more
    if isinstance(obj, list):
        return f"a list of {len(obj)} item{'s' if len(obj) != 1 else ''}"
    return f"a JSON {type(obj).__name__}"
