"""Where a batch run's answers are and how they reach the runner (internal to the batch driver).

A collected batch's answers are a file beside its record (one JSON object
a line, the provider's own lines); :func:`index_answers` finds each
request's line without decoding an image, :func:`read_answer` decodes one
line when its test needs it (so a 7,745-image batch is never held in
memory), and :class:`BatchAnswers` is the adapter the runner calls in a
batch run. :func:`wave_size` is the sequential gate's wave.
"""

from __future__ import annotations

import json

from ..errors import GenerationError, GenerationUnjudged
from ..redaction import redact

__all__ = ["MIN_WAVE", "WAVE_FRACTION", "BatchAnswers", "bar", "duration_text", "index_answers",
           "read_answer", "wave_size"]

#: Sequential waves: a wave is this share of the samples still to decide ...
WAVE_FRACTION = 0.1
#: ... and at least this many requests.
MIN_WAVE = 20


def wave_size(remaining: int) -> int:
    """Requests in the next sequential wave: a tenth of ``remaining``, at least :data:`MIN_WAVE`."""
    return max(MIN_WAVE, -(-int(remaining) // int(1 / WAVE_FRACTION)))


class Ready:
    """Where an answer is: a line of a collected batch's answers file."""

    __slots__ = ("length", "offset", "path")

    def __init__(self, path, offset, length):
        self.path, self.offset, self.length = path, offset, length


def index_answers(path, max_answer_bytes: int) -> dict:
    """``custom_id -> Ready`` of every answer line of ``path`` (a line over ``max_answer_bytes``
    or one that is not a JSON object with a ``custom_id`` is skipped: its request stays unanswered)."""
    index = {}
    offset = 0
    with open(path, "rb") as fh:
        while True:
            line = fh.readline(max_answer_bytes + 1)
            if not line:
                break
            start, length = offset, len(line)
            offset += length
            if length > max_answer_bytes:  # skip the rest of an oversized line
                while line and not line.endswith(b"\n"):
                    line = fh.readline(max_answer_bytes + 1)
                    offset += len(line)
                continue
            text = line.strip()
            if not text:
                continue
            try:
                custom_id = json.loads(text).get("custom_id")
            except (ValueError, AttributeError, RecursionError):
                continue
            if isinstance(custom_id, str):
                index.setdefault(custom_id, Ready(path, start, length))
    return index


def read_answer(api, ready: Ready):
    """The image (or the request's error, returned) of one indexed line, by ``api.answer``."""
    try:
        with open(ready.path, "rb") as fh:
            fh.seek(ready.offset)
            data = fh.read(ready.length)
        _, out = api.answer(json.loads(data))
        return out
    except GenerationError as exc:
        return exc
    except (OSError, ValueError, RecursionError) as exc:
        return GenerationUnjudged(f"the batch answer could not be read: {type(exc).__name__}: "
                                  f"{redact(str(exc))[:200]}")


class BatchAnswers:
    """The adapter the runner calls in a batch run: ``generate`` answers from the batches.

    Every other attribute is the model adapter's own (``identity``,
    ``cacheable``, ``cache_identity`` ...), so cache keys are the synchronous
    run's.
    """

    def __init__(self, adapter, driver, key_of):
        self.__dict__["_adapter"] = adapter
        self.__dict__["_driver"] = driver
        self.__dict__["_key_of"] = key_of

    def generate(self, request):
        return self._driver.answer(self._key_of(request))

    def close(self) -> None:
        pass  # the session's adapter is closed by the session

    def __getattr__(self, name):
        if name in ("client",):  # no HTTP request is made here: the runner counts none
            raise AttributeError(name)
        return getattr(self.__dict__["_adapter"], name)


def bar(status, width: int = 20) -> str:
    total = max(1, status.total)
    done = min(width, round(width * (status.completed + status.failed) / total))
    return "[" + "#" * done + "." * (width - done) + "]"


def duration_text(seconds: float) -> str:
    seconds = float(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
