"""Reading what an answer says: bounded JSON, one-line messages, :class:`HttpResult`, the image.

* :func:`load_json`: a few kilobytes of ``[[[[...`` make Python's parser raise :class:`RecursionError`, so the
  nesting is measured first, linearly (:func:`json_depth_over`); long answers are parsed in the process's one
  large-work thread (:func:`pytest_violin.imaging.bounds.run_large`).
* :func:`truncate`, :func:`server_message`: text from outside on one short, redacted line.
* :func:`image_from_response`: raw image bytes, or JSON with base64, a ``data:`` URI or an http(s) URL at a
  known place (:data:`DEFAULT_IMAGE_PATHS`) or a response path (:func:`parse_response_path`); every failure a
  :class:`~pytest_violin.errors.GenerationError` with a redacted reason.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import unquote_to_bytes

import numpy as np

from ...errors import GenerationError, InvalidImageError, ModelSpecError, ViolinError
from ...imaging import MAX_PIXELS, decode_image
from ...imaging._bounds import LARGE_WORK_BYTES, run_large
from ...redaction import redact, redact_url
from .origins import UrlRefused, resolve


#: Deepest nesting of arrays and objects read from an answer; real image APIs nest a handful of levels, and
#: Python's parser raises RecursionError (not a ValueError) somewhere past a thousand.
MAX_JSON_DEPTH = 64

#: Answers longer than this are parsed in the process's one large-work thread: a few megabytes of JSON can
#: make hundreds of megabytes of objects, and what one thread frees stays in its own allocator arena
#: (:func:`pytest_violin.imaging.bounds.run_large`).
LARGE_JSON_BYTES = 4 * 2**20


class JsonTooDeep(ViolinError, ValueError):
    """An answer's JSON nests deeper than :data:`MAX_JSON_DEPTH` (a ``ValueError``, like bad JSON)."""


# a JSON string, escapes included: brackets inside strings do not nest
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_DEPTH_CHUNK = 1 << 20


def json_depth_over(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``data`` (JSON text) nests arrays and objects deeper than ``limit``.

    Linear and bounded in memory: answers whose brackets cannot reach the limit (base64 images have none) are
    let through after a count; others are scanned, strings blanked, a chunk at a time.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    if b'"' in data:
        data = _JSON_STRING.sub(b'""', data)
    view = np.frombuffer(data, dtype=np.uint8)
    depth = 0
    for start in range(0, len(view), _DEPTH_CHUNK):
        chunk = view[start:start + _DEPTH_CHUNK]
        step = ((chunk == 0x5B) | (chunk == 0x7B)).astype(np.int32) - ((chunk == 0x5D) | (chunk == 0x7D))
        running = np.cumsum(step) + depth
        if running.size and int(running.max()) > limit:
            return True
        depth = int(running[-1]) if running.size else depth
    return False


def load_json(data, *, limit: int = MAX_JSON_DEPTH):
    """``json.loads`` for answers, nesting bounded: :class:`JsonTooDeep` (a ``ValueError``, like bad JSON)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
    if len(data) > LARGE_JSON_BYTES:  # in the one large-work thread: see imaging.bounds._LargeWork
        return run_large(LARGE_WORK_BYTES, _load, data, limit)
    return _load(data, limit)


def _load(data, limit: int):
    if json_depth_over(data, limit):
        raise JsonTooDeep(f"JSON nested deeper than {limit} levels")
    try:
        return json.loads(data)
    except RecursionError:  # a limit set above what this interpreter's parser can take
        raise JsonTooDeep("JSON nested deeper than this interpreter's parser can read") from None


#: Server messages in failure reasons are cut to this many characters.
MESSAGE_LIMIT = 200


def truncate(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Collapse whitespace to single spaces and cut ``text`` to ``limit`` chars."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: max(limit - 3, 0)].rstrip() + "..."
    return text


def looks_html(body: bytes, content_type: str) -> bool:
    """Whether an answer is an HTML page (by its type or its first bytes)."""
    if content_type in ("text/html", "application/xhtml+xml"):
        return True
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))


def _html_title(text: str) -> str:
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    if match and match.group(1).strip():
        return match.group(1).strip()
    match = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.IGNORECASE | re.DOTALL)
    if match:
        return re.sub(r"<[^>]+>", "", match.group(1)).strip()
    return ""


def json_message(obj: Any, depth: int = 0) -> str | None:
    """The message in a JSON error answer (``error``, ``message``, ``detail``, ...), or None."""
    if depth > 4:
        return None
    if isinstance(obj, str):
        return obj or None
    if isinstance(obj, list):
        for item in obj[:3]:
            found = json_message(item, depth + 1)
            if found:
                return found
        return None
    if isinstance(obj, dict):
        for key in ("error", "message", "detail", "errors", "msg", "reason", "title", "description"):
            if key in obj:
                found = json_message(obj[key], depth + 1)
                if found:
                    code = obj.get("code") if key == "message" else None
                    if key == "error" and found.isidentifier():
                        return _named_error(found, obj, depth)
                    return f"{found} [{code}]" if isinstance(code, str) and code else found
    return None


def _named_error(name: str, obj: dict, depth: int) -> str:
    # an exception's class beside its words, as the A1111 web UI answers every failure:
    # {"error": "OutOfMemoryError", "detail": "", "body": "", "errors": "CUDA out of memory. ..."}
    for key in ("errors", "detail", "message"):
        words = json_message(obj.get(key), depth + 1)
        if words and words != name:
            return f"{name}: {words}"
    return name


def server_message(content: bytes, content_type: str = "", limit: int = MESSAGE_LIMIT) -> str:
    """The server's error message on one redacted line: a JSON message, an HTML page's title, or the text."""
    if not content:
        return "empty body"
    text = content[:65536].decode("utf-8", "replace")
    if looks_html(content, content_type):
        title = _html_title(text)
        return truncate(redact(f"HTML page{': ' + title if title else ''}"), limit)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            obj = load_json(stripped)
        except JsonTooDeep as exc:
            return truncate(f"{exc} (not shown)", limit)
        except ValueError:
            obj = None
        if obj is not None:
            found = json_message(obj)
            if found:
                return truncate(redact(found), limit)
    return truncate(redact(stripped), limit)


@dataclass
class HttpResult:
    """A successful (2xx) exchange: case-insensitive headers, the decompressed body, the final URL, the attempts."""

    status: int
    headers: Mapping[str, str]
    content: bytes
    url: str
    attempts: int = 1
    elapsed: float = field(default=0.0)

    @property
    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()


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
    """Keys and list indices of ``data.0.b64_json`` or ``data[0].url``; :class:`ModelSpecError` when empty."""
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


def _decode(data: bytes, where: str, max_pixels: int) -> np.ndarray:
    try:
        return decode_image(data, max_pixels=max_pixels)
    except InvalidImageError as exc:
        raise _ValueFail(f"{where}: {str(exc).split(': got ', 1)[0]}") from None


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
        try:  # judged as the server wrote it (_transport/origins.py), surrounding whitespace included
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

    Answers near the size limit hold tens of megabytes of base64: whitespace and URL-safe characters are
    handled only when present.
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

    Base64 JPEG data starts with ``/9j/`` (``FF D8 FF``), which must not be taken for a relative URL.
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
    """The image (RGB uint8) in a successful answer: raw bytes, or JSON at ``response_path`` (else
    :data:`DEFAULT_IMAGE_PATHS`) holding base64, a data URI or a URL (``fetch``-ed).

    Raises :class:`GenerationError`: one line saying what the body was instead, with its status and attempts.
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
    # Only JSON fields can hold base64 (or a URL): a text body is never decoded as base64, and is not parsed
    # unless it starts like JSON.
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
