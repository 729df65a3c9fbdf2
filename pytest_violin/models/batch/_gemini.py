"""The Gemini API's Batch Mode for ``gemini:`` (docs/models.md, "Batch", with the sources).

* ``POST {base}/models/{MODEL}:batchGenerateContent`` with
  ``{"batch": {"display_name": TAG, "input_config": {"requests": {"requests":
  [{"request": GenerateContentRequest, "metadata": {"key": CUSTOM_ID}}]}}}}``
  (inline requests: at most 20 MB a batch); the answer is an operation whose
  ``name`` is the batch (``batches/...``).
* ``GET {base}/batches/{id}``: ``metadata.state`` (``BATCH_STATE_PENDING``,
  ``_RUNNING``, ``_SUCCEEDED``, ``_FAILED``, ``_CANCELLED``, ``_EXPIRED``;
  the SDKs' ``JOB_STATE_*`` names are read alike), ``metadata.batchStats``
  (``requestCount``, ``successfulRequestCount``, ``failedRequestCount``,
  ``pendingRequestCount``; int64 values as JSON strings) and, once done,
  ``response.inlinedResponses.inlinedResponses``: ``{"response":
  GenerateContentResponse, "metadata": {"key"}}`` or ``{"error": Status,
  "metadata"}`` each, read with the synchronous path's rules (a blocked
  prompt or a safety ``finishReason`` is a refusal).
* ``POST {base}/batches/{id}:cancel``; ``GET {base}/batches`` lists them.
* The answers come back inside the batch's own JSON: a batch holds at most
  :data:`MAX_REQUESTS` requests so that JSON stays bounded
  (:data:`MAX_OPERATION_BYTES`). Price: half the standard price.
"""

from __future__ import annotations

import json
import tempfile
from urllib.parse import quote

from ...errors import GenerationError, GenerationUnjudged, SetupError
from ...redaction import redact
from .._transport.answers import load_json, truncate
from . import CANCELLED, COMPLETED, EXPIRED, FAILED, PENDING, BatchLimits, BatchStatus
from ._http import create_once, get_json, post_json, stream_to

__all__ = ["GeminiBatch", "LIMITS", "MAX_OPERATION_BYTES", "MAX_REQUESTS", "STATES"]

#: Requests a batch holds: its answers (images, base64) come back in one JSON object.
MAX_REQUESTS = 100
#: The largest batch object read once done (its inline answers included).
MAX_OPERATION_BYTES = 1 << 30
#: Inline requests: 20 MB a batch (the Batch Mode guide).
LIMITS = BatchLimits(max_requests=MAX_REQUESTS, max_bytes=20 * 1000 * 1000)
STATES = {}
for _prefix in ("BATCH_STATE_", "JOB_STATE_"):
    STATES.update({_prefix + "PENDING": PENDING, _prefix + "RUNNING": PENDING, _prefix + "QUEUED": PENDING,
                   _prefix + "CANCELLING": PENDING, _prefix + "SUCCEEDED": COMPLETED,
                   _prefix + "FAILED": FAILED, _prefix + "CANCELLED": CANCELLED, _prefix + "EXPIRED": EXPIRED})


def _int(value) -> int:
    """An int64 of the API (a JSON string or a number); 0 for anything else."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, value)
    if isinstance(value, str) and value.isdigit() and len(value) < 19:
        return int(value)
    return 0


class GeminiBatch:
    """The Batch Mode of one :class:`~pytest_violin.models.gemini.GeminiAdapter` (its client and key)
    and its answer reader (``read_answer(obj) -> image``, raising the synchronous path's errors)."""

    name = "Gemini Batch Mode"
    discount = 0.5
    limits = LIMITS

    def __init__(self, adapter, read_answer):
        self.adapter = adapter
        self.read_answer = read_answer
        self.client = adapter.client
        self.base = adapter.base_url
        self._done: dict[str, dict] = {}  # batch id -> the finished batch object (its answers)

    def encode(self, custom_id: str, request) -> tuple[str, bytes]:
        item = {"request": self.adapter.body(request), "metadata": {"key": custom_id}}
        return self.adapter.model, json.dumps(item, separators=(",", ":")).encode("utf-8")

    def submit(self, group: str, lines: list, *, tag: str) -> str:
        body = (b'{"batch":{"display_name":' + json.dumps(tag).encode() + b',"input_config":{"requests":'
                b'{"requests":[' + b",".join(lines) + b"]}}}}")
        url = f"{self.base}/models/{quote(group, safe='.-_')}:batchGenerateContent"
        result, found = create_once(
            self.client, lambda once: once.request("POST", url, what="batch create", data=body,
                                                   headers={"Content-Type": "application/json"}),
            lambda: self.find(tag))
        if found is not None:
            return found
        obj = load_json(result.content)
        name = obj.get("name") if isinstance(obj, dict) else None
        if not isinstance(name, str) or not name.startswith("batches/"):
            raise GenerationError("batch create: the answer names no batch (batches/...)")
        return name

    def _url(self, batch_id: str) -> str:
        name = str(batch_id).removeprefix("batches/")
        return f"{self.base}/batches/{quote(name, safe='-_.')}"

    def status(self, batch_id: str) -> BatchStatus:
        with tempfile.TemporaryFile() as sink:  # once done, the answers are in it: never all in memory twice
            stream_to(self.client, self._url(batch_id), sink, max_bytes=MAX_OPERATION_BYTES, what="batch status")
            sink.seek(0)
            try:
                obj = json.load(sink)
            except (ValueError, RecursionError):
                raise GenerationError("batch status: the answer is not JSON") from None
        status = self._status(obj)
        if status.done:
            self._done[status.id] = obj
        return status

    def _status(self, obj) -> BatchStatus:
        if not isinstance(obj, dict):
            raise GenerationError("batch status: the answer is not a JSON object")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else obj
        word = str(meta.get("state") or "")
        state = STATES.get(word)
        if state is None:
            raise GenerationError(f"batch status: unknown state {truncate(repr(word), 40)}; accepted: "
                                  f"BATCH_STATE_* or JOB_STATE_* (PENDING, RUNNING, SUCCEEDED, FAILED, "
                                  f"CANCELLED, EXPIRED)")
        stats = meta.get("batchStats") if isinstance(meta.get("batchStats"), dict) else {}
        error = obj.get("error") if isinstance(obj.get("error"), dict) else None
        reason = truncate(redact(str(error.get("message") or error.get("status") or "error"))) if error else None
        return BatchStatus(
            id=str(obj.get("name") or meta.get("name") or ""), state=state, provider_state=word,
            total=_int(stats.get("requestCount")), completed=_int(stats.get("successfulRequestCount")),
            failed=_int(stats.get("failedRequestCount")), reason=reason,
            tag=meta.get("displayName") if isinstance(meta.get("displayName"), str) else None)

    def find(self, tag: str) -> str | None:
        for status in self.list(limit=1000):
            if status.tag == tag:
                return status.id
        return None

    def list(self, limit: int = 100) -> list:
        """The newest ``limit`` batches (pages of 100, ``pageToken`` the last ``nextPageToken``)."""
        out, token = [], ""
        while len(out) < limit:
            obj = get_json(self.client, f"{self.base}/batches?pageSize={min(100, limit - len(out))}{token}",
                           "batch list")
            items = obj.get("operations", obj.get("batches"))
            for item in items if isinstance(items, list) else []:
                try:
                    out.append(self._status(item))
                except GenerationError:
                    continue
            following = obj.get("nextPageToken")
            if not isinstance(following, str) or not following or not items:
                break
            token = f"&pageToken={quote(following, safe='')}"
        return out

    def cancel(self, batch_id: str) -> BatchStatus:
        post_json(self.client, f"{self._url(batch_id)}:cancel", {}, "batch cancel")
        return self.status(batch_id)

    def download(self, status: BatchStatus, sink, *, max_bytes: int) -> None:
        obj = self._done.pop(status.id, None)
        if obj is None:
            self.status(status.id)
            obj = self._done.pop(status.id, {})
        response = obj.get("response") if isinstance(obj.get("response"), dict) else {}
        if not response and isinstance(obj.get("metadata"), dict):  # the batch object itself
            response = obj["metadata"].get("output") if isinstance(obj["metadata"].get("output"), dict) else {}
        outer = response.get("inlinedResponses")
        items = outer.get("inlinedResponses") if isinstance(outer, dict) else outer
        written = 0
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
            line = json.dumps({"custom_id": meta.get("key"), "response": item.get("response"),
                               "error": item.get("error")}, separators=(",", ":")).encode("utf-8") + b"\n"
            written += len(line)
            if written > max_bytes:
                raise GenerationError(f"batch answers: more than {max_bytes} bytes")
            sink.write(line)

    def answer(self, record: dict):
        custom_id = str(record.get("custom_id") or "")
        error = record.get("error") if isinstance(record.get("error"), dict) else None
        if error is not None:
            code = error.get("code")
            reason = truncate(redact(f"{error.get('status') or 'error'}: {error.get('message') or ''}"))
            if code in (400, 3):  # INVALID_ARGUMENT: the request itself, as a synchronous 400
                return custom_id, SetupError(reason, attempts=1, status=400)
            if code in (4, 10, 14, 504):  # a deadline or an unavailable backend: no answer to judge
                return custom_id, GenerationUnjudged(reason)
            return custom_id, GenerationError(reason, attempts=1)
        try:
            return custom_id, self.read_answer(record.get("response"))
        except GenerationError as exc:
            return custom_id, exc
