"""Text from outside on one short, redacted line: :func:`truncate` and :func:`server_message`.

The bottom of the transport: the client's failure reasons, the answer
decoder and the adapters cut the text they show here, so every module
above imports it (none of it imports them).
"""

from __future__ import annotations

import re
from typing import Any

from ...redaction import redact
from .jsonload import JsonTooDeep, load_json

__all__ = ["MESSAGE_LIMIT", "looks_html", "json_message", "server_message", "truncate"]

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
                    return f"{found} [{code}]" if isinstance(code, str) and code else found
    return None


def server_message(content: bytes, content_type: str = "", limit: int = MESSAGE_LIMIT) -> str:
    """The server's error message in a response body, on one short line.

    JSON ``error`` / ``message`` / ``detail`` fields are preferred; an HTML
    page is described by its title; plain text is taken as is. The result
    is redacted and truncated to ``limit`` characters.
    """
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
