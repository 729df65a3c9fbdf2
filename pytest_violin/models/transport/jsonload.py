"""JSON read from an answer, with its nesting bounded: :func:`load_json`.

Answers come from outside: a few kilobytes of ``[[[[...`` make Python's
parser raise :class:`RecursionError` (not a ``ValueError``), so the depth is
measured first, linearly and a chunk at a time (:func:`json_depth_over`).
:func:`pytest_violin._fs.load_json_text` does the same for option files
(text read whole, the depth reported); answers are bytes up to
``max_answer_bytes`` and only need a yes/no with an early way out for
answers without brackets (base64 images).
"""

from __future__ import annotations

import json
import re

import numpy as np

from ...errors import ViolinError
from ...imaging._bounds import LARGE_WORK_BYTES, run_large

__all__ = ["MAX_JSON_DEPTH", "JsonTooDeep", "json_depth_over", "load_json"]

#: Deepest nesting of arrays and objects read from an answer; real image APIs
#: nest a handful of levels, and Python's parser raises RecursionError (not a
#: ValueError) somewhere past a thousand.
MAX_JSON_DEPTH = 64

#: Answers longer than this are parsed in the process's one large-work thread: a
#: few megabytes of JSON can make hundreds of megabytes of objects, and what one
#: thread frees stays in its own allocator arena (:func:`pytest_violin.imaging._bounds.run_large`).
LARGE_JSON_BYTES = 4 * 2**20


class JsonTooDeep(ViolinError, ValueError):
    """An answer's JSON nests deeper than :data:`MAX_JSON_DEPTH` (a ``ValueError``, like bad JSON)."""


# a JSON string, escapes included: brackets inside strings do not nest
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_DEPTH_CHUNK = 1 << 20


def json_depth_over(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``data`` (JSON text) nests arrays and objects deeper than ``limit``.

    Linear and bounded in memory: answers whose brackets cannot reach the
    limit (base64 images have none) are let through after a count; others
    are scanned, strings blanked, a chunk at a time.
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
    """``json.loads`` for answers: nesting bounded by ``limit``.

    Raises
    ------
    JsonTooDeep
        When the text nests deeper (a ``ValueError``: callers that treat bad
        JSON as "not an image" treat this one the same).
    ValueError
        For text that is not JSON (``UnicodeDecodeError`` included).
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
    if len(data) > LARGE_JSON_BYTES:  # in the one large-work thread: see imaging._bounds._LargeWork
        return run_large(LARGE_WORK_BYTES, _load, data, limit)
    return _load(data, limit)


def _load(data, limit: int):
    if json_depth_over(data, limit):
        raise JsonTooDeep(f"JSON nested deeper than {limit} levels")
    try:
        return json.loads(data)
    except RecursionError:  # a limit set above what this interpreter's parser can take
        raise JsonTooDeep("JSON nested deeper than this interpreter's parser can read") from None
