"""Where a batch run's answers are and how they reach the runner (internal to the batch driver).

A collected batch's answers are a file beside its record (one JSON object
a line, the provider's own lines with every registered secret masked,
:class:`RedactedLines`); :func:`index_answers` finds each
request's line without decoding an image, :func:`read_answer` decodes one
line when its test needs it (so a 7,745-image batch is never held in
memory), and :class:`BatchAnswers` is the adapter the runner calls in a
batch run. :func:`wave_size` is the sequential gate's wave.
"""

from __future__ import annotations

import json
import re

from ..errors import GenerationError, GenerationUnjudged
from ..redaction import redact
from ..report.text import printable

__all__ = ["MIN_WAVE", "WAVE_SHARES", "BatchAnswers", "RedactedLines", "bar", "duration_text", "index_answers",
           "pack", "read_answer", "wave_size"]

#: Sequential waves: after wave k, this share of the run's requests was submitted (the last wave
#: takes what the gate still wants): a clear regression is decided on the first tenth, in one
#: batch; a run the gate cannot decide early ends in four batches, not dozens of 24 h waits.
WAVE_SHARES = (0.10, 0.25, 0.50, 1.0)
#: A wave holds at least this many requests.
MIN_WAVE = 20


def wave_size(total: int, waves_done: int, submitted: int) -> int:
    """Requests in the next sequential wave (:data:`WAVE_SHARES` of ``total``, at least :data:`MIN_WAVE`).

    Examples
    --------
    >>> [wave_size(2345, k, s) for k, s in ((0, 0), (1, 235), (2, 587), (3, 1173))]
    [235, 352, 586, 1172]
    """
    share = WAVE_SHARES[min(int(waves_done), len(WAVE_SHARES) - 1)]
    return max(MIN_WAVE, -(-int(total * share * 1000) // 1000) - int(submitted))


class Ready:
    """Where an answer is: a line of a collected batch's answers file."""

    __slots__ = ("length", "offset", "path")

    def __init__(self, path, offset, length):
        self.path, self.offset, self.length = path, offset, length


def pack(items: list, limits) -> list:
    """``items`` (``(key, custom_id, line)``) cut into batches within ``limits``, in order."""
    chunks, chunk, size = [], [], 0
    for item in items:
        length = len(item[2]) + 1
        if chunk and (len(chunk) >= limits.max_requests or size + length > limits.max_bytes):
            chunks.append(chunk)
            chunk, size = [], 0
        chunk.append(item)
        size += length
    return chunks + ([chunk] if chunk else [])


#: A run of base64 this long is an image (a key is far shorter and sits in a message between other
#: characters): written as it came, so masking a six-character run that happens to start a key never breaks
#: an image.
_PAYLOAD = re.compile(rb"[A-Za-z0-9+/=]{1024,}")


def _redacted(line: bytes) -> bytes:
    out, pos = [], 0
    for match in _PAYLOAD.finditer(line):
        out += [redact(line[pos:match.start()].decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"),
                match.group()]
        pos = match.end()
    out.append(redact(line[pos:].decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
    return b"".join(out)


class RedactedLines:
    """The sink a batch's answers are downloaded to: each line reaches ``fh`` with every registered secret
    masked (:func:`~pytest_violin.redaction.redact`), so a provider that echoes the key leaves no copy on disk.

    A line is held until its end comes; one over ``max_line_bytes`` is dropped whole (its request stays
    unanswered, as :func:`index_answers` would have it). ``tell``, ``seek`` and ``truncate`` work at line ends
    (where a download starts over).
    """

    def __init__(self, fh, max_line_bytes: int):
        self.fh, self.limit = fh, int(max_line_bytes)
        self._held: list = []
        self._size = 0
        self._dropping = False

    def write(self, data) -> int:
        data = bytes(data)
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end + 1]
            start += len(piece)
            if not self._dropping:
                self._held.append(piece)
                self._size += len(piece)
                if self._size > self.limit + 1:
                    self._held, self._size, self._dropping = [], 0, True
            if end >= 0:
                self._end_line()
        return len(data)

    def _end_line(self) -> None:
        if self._held:
            self.fh.write(_redacted(b"".join(self._held)))
        self._held, self._size, self._dropping = [], 0, False

    def close(self) -> None:
        """Write the last line when it has no line break."""
        self._end_line()
        self.fh.flush()

    def flush(self) -> None:
        self.fh.flush()

    def tell(self) -> int:
        return self.fh.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        self._held, self._size, self._dropping = [], 0, False
        return self.fh.seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        self._held, self._size, self._dropping = [], 0, False
        return self.fh.truncate(size)


def index_answers(path, max_answer_bytes: int) -> dict:
    """``custom_id -> Ready`` of every answer line of ``path`` (a line over ``max_answer_bytes``
    or one that is not a JSON object with a ``custom_id`` is skipped: its request stays unanswered).

    A ``custom_id`` on more than one line maps to a :class:`~pytest_violin.errors.GenerationUnjudged`
    that names it: nothing tells which line answers the request, so none is used.
    """
    index, seen = {}, {}
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
                seen[custom_id] = seen.get(custom_id, 0) + 1
                index.setdefault(custom_id, Ready(path, start, length))
    for custom_id, count in seen.items():
        if count > 1:
            index[custom_id] = GenerationUnjudged(
                f"the batch answered custom_id {printable(redact(custom_id[:80]))!r} {count} times; none of "
                f"its answers is used (one request, one answer accepted)")
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
        key = self._key_of(request)
        if not self._driver.knows(key):  # not planned (a test's own request): made synchronously
            return self._adapter.generate(request)
        return self._driver.answer(key)

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
