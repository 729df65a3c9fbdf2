"""The OpenAI Batch API for ``openai:`` (docs/models.md, "Batch", with the sources).

* Input: a JSONL file, one ``{"custom_id", "method": "POST", "url", "body"}``
  a line, uploaded with ``POST /v1/files`` (multipart, ``purpose=batch``).
  ``url`` is ``/v1/images/generations`` (the body the synchronous path sends)
  or ``/v1/images/edits`` (a JSON body: the input images as ``images``
  ``[{"image_url": "data:image/png;base64,..."}]``); one batch holds one
  endpoint.
* ``POST /v1/batches`` ``{"input_file_id", "endpoint", "completion_window":
  "24h", "metadata": {"violin_batch": TAG}}``; ``GET /v1/batches/{id}``
  (``status``: validating, failed, in_progress, finalizing, completed,
  expired, cancelling, cancelled; ``request_counts``: total, completed,
  failed); ``GET /v1/files/{id}/content`` for ``output_file_id`` and
  ``error_file_id``; ``POST /v1/batches/{id}/cancel``; ``GET /v1/batches``.
* An answer line: ``{"custom_id", "response": {"status_code", "body"},
  "error"}``. A 200 body is read as the synchronous answer is; an error
  status is the synchronous path's error for that status (a
  ``moderation_blocked`` 400 is a refusal); ``error`` without a response (a
  request the batch never ran: ``batch_expired``, ``batch_cancelled``) is no
  answer at all.
* Limits: 50,000 requests and 200 MB of input a batch. Price: half the
  synchronous price.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from ...errors import GenerationError, GenerationRefused, GenerationUnjudged
from ...imaging import png_base64
from ...redaction import redact
from .._transport.answers import HttpResult, image_from_response, json_message, truncate
from .._transport.retries import error_class, refusal_or
from . import CANCELLED, COMPLETED, EXPIRED, FAILED, PENDING, BatchLimits, BatchStatus
from ._http import create_once, get_json, post_json, stream_to

__all__ = ["COMPLETION_WINDOW", "ENDPOINTS", "LIMITS", "STATES", "OpenAIBatch"]

#: The only completion window the API accepts.
COMPLETION_WINDOW = "24h"
#: The endpoints a line may name (one per batch).
ENDPOINTS = ("/v1/images/generations", "/v1/images/edits")
#: 50,000 requests, 200 MB of input file a batch.
LIMITS = BatchLimits(max_requests=50_000, max_bytes=200 * 1000 * 1000)
#: The API's ``status`` words -> the protocol's states.
STATES = {
    "validating": PENDING, "in_progress": PENDING, "finalizing": PENDING, "cancelling": PENDING,
    "completed": COMPLETED, "failed": FAILED, "expired": EXPIRED, "cancelled": CANCELLED,
}
#: Error codes of a request the batch never ran.
NOT_RUN_CODES = ("batch_expired", "batch_cancelled")
_TAG_KEY = "violin_batch"
#: How many of the account's newest batches :meth:`OpenAIBatch.find` looks through.
FIND_DEPTH = 1000


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class OpenAIBatch:
    """The Batch API of one :class:`~pytest_violin.models.openai.OpenAIAdapter` (its client and key) and
    its refusal rule (``refusal(GenerationError) -> bool``)."""

    name = "OpenAI Batch API"
    discount = 0.5
    limits = LIMITS

    def __init__(self, adapter, refusal):
        self.adapter = adapter
        self.refusal = refusal  # the adapter's rule: which error answer is a refusal of the prompt
        self.client = adapter.client
        self.base = adapter.base_url

    # -- input ------------------------------------------------------------------------
    def encode(self, custom_id: str, request) -> tuple[str, bytes]:
        body = self.adapter.generation_body(request)
        if request.images:
            body["images"] = [{"image_url": f"data:image/png;base64,{png_base64(img)}"}
                              for img in request.images]
            url = ENDPOINTS[1]
        else:
            url = ENDPOINTS[0]
        line = {"custom_id": custom_id, "method": "POST", "url": url, "body": body}
        return url, json.dumps(line, separators=(",", ":")).encode("utf-8")

    def submit(self, group: str, lines: list, *, tag: str) -> str:
        data = b"\n".join(lines) + b"\n"
        upload = self.client.request(
            "POST", f"{self.base}/files", what="batch input upload", data={"purpose": "batch"},
            files=[("file", ("violin-batch.jsonl", data, "application/jsonl"))])
        del data  # the JSONL never touches the disk: it lives as long as its upload
        file_id = _text_field(upload, "id", "batch input upload")
        created = self._create({"input_file_id": file_id, "endpoint": group, "completion_window": COMPLETION_WINDOW,
                                "metadata": {_TAG_KEY: tag}}, tag)
        batch_id = created.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise GenerationError("batch create: the answer has no batch id")
        return batch_id

    def _create(self, body: dict, tag: str) -> dict:
        made, found = create_once(self.client, lambda once: post_json(once, f"{self.base}/batches", body,
                                                                      "batch create"), lambda: self.find(tag))
        return made if found is None else {"id": found}

    # -- state ------------------------------------------------------------------------
    def status(self, batch_id: str) -> BatchStatus:
        return self._status(get_json(self.client, self._url(batch_id), "batch status"))

    def _url(self, batch_id: str) -> str:
        return f"{self.base}/batches/{quote(str(batch_id), safe='')}"

    def _status(self, obj: dict) -> BatchStatus:
        word = str(obj.get("status") or "")
        state = STATES.get(word)
        if state is None:
            raise GenerationError(f"batch status: unknown status {truncate(repr(word), 40)}; accepted: "
                                  f"{', '.join(STATES)}")
        counts = obj.get("request_counts") if isinstance(obj.get("request_counts"), dict) else {}
        reason = None
        errors = obj.get("errors")
        if isinstance(errors, dict) and isinstance(errors.get("data"), list) and errors["data"]:
            first = errors["data"][0]
            if isinstance(first, dict):
                line = f" (line {first['line']})" if isinstance(first.get("line"), int) else ""
                reason = truncate(redact(f"{first.get('code') or 'error'}: {first.get('message') or ''}{line}"))
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        created = obj.get("created_at")
        return BatchStatus(
            id=str(obj.get("id") or ""), state=state, provider_state=word, total=_count(counts.get("total")),
            completed=_count(counts.get("completed")), failed=_count(counts.get("failed")), reason=reason,
            tag=meta.get(_TAG_KEY) if isinstance(meta.get(_TAG_KEY), str) else None,
            created=float(created) if isinstance(created, (int, float)) else None,
            files=tuple(f for f in (obj.get("output_file_id"), obj.get("error_file_id"))
                        if isinstance(f, str) and f))

    def find(self, tag: str) -> str | None:
        for status in self.list(limit=FIND_DEPTH):
            if status.tag == tag:
                return status.id
        return None

    def list(self, limit: int = 100) -> list:
        """The newest ``limit`` batches, newest first (pages of 100, ``after`` the last id)."""
        out, after = [], ""
        while len(out) < limit:
            page = min(100, limit - len(out))
            obj = get_json(self.client, f"{self.base}/batches?limit={page}{after}", "batch list")
            data = [item for item in obj.get("data") or () if isinstance(item, dict)] \
                if isinstance(obj.get("data"), list) else []
            for item in data:
                try:
                    out.append(self._status(item))
                except GenerationError:
                    continue
            last = data[-1].get("id") if data else None
            if obj.get("has_more") is not True or not isinstance(last, str) or not data:
                break
            after = f"&after={quote(last, safe='')}"
        return out

    def cancel(self, batch_id: str) -> BatchStatus:
        return self._status(post_json(self.client, f"{self._url(batch_id)}/cancel", {}, "batch cancel"))

    # -- answers ----------------------------------------------------------------------
    def download(self, status: BatchStatus, sink, *, max_bytes: int) -> None:
        written = 0
        for file_id in status.files:
            written += stream_to(self.client, f"{self.base}/files/{quote(file_id, safe='')}/content",
                                 _Appending(sink, sink.tell()), max_bytes=max_bytes - written,
                                 what="batch output download")
            sink.write(b"\n")  # the next file starts on a line of its own
            written += 1

    def answer(self, record: dict):
        custom_id = str(record.get("custom_id") or "")
        response = record.get("response") if isinstance(record.get("response"), dict) else None
        error = record.get("error") if isinstance(record.get("error"), dict) else None
        if response is None:
            code = str((error or {}).get("code") or "error")
            message = truncate(redact(str((error or {}).get("message") or "")))
            if code in NOT_RUN_CODES:
                return custom_id, GenerationUnjudged(f"not run: {code}: {message}; submitted again by the next run")
            return custom_id, GenerationUnjudged(f"the batch gave no answer: {code}: {message}")
        status = response.get("status_code")
        status = status if isinstance(status, int) and not isinstance(status, bool) else 0
        body = response.get("body")
        content = json.dumps(body, separators=(",", ":")).encode("utf-8")
        if 200 <= status < 300:
            result = HttpResult(status=status, headers={"Content-Type": "application/json"}, content=content,
                                url=f"{self.base}/images")
            try:
                return custom_id, image_from_response(result, fetch=self.client.fetch)
            except GenerationError as exc:
                return custom_id, exc
        message = json_message(body) if body is not None else None
        code = ""
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            code = str(body["error"].get("code") or "")
        reason = truncate(redact(f"HTTP {status}: {code + ': ' if code else ''}{message or 'no message'}"))
        exc = error_class(status)(reason, attempts=1, status=status)
        refused = refusal_or(exc, self.refusal)
        return custom_id, refused if isinstance(refused, GenerationRefused) else exc


class _Appending:
    """A sink that keeps what an earlier file wrote (each download truncates only its own part)."""

    def __init__(self, sink, start: int):
        self.sink, self.start = sink, start

    def seek(self, _offset):
        self.sink.seek(self.start)

    def truncate(self):
        self.sink.truncate(self.start)

    def write(self, data):
        self.sink.write(data)

    def flush(self):
        self.sink.flush()


def _text_field(result, name: str, what: str) -> str:
    from ._http import json_of

    value = json_of(result, what).get(name)
    if not isinstance(value, str) or not value:
        raise GenerationError(f"{what}: the answer has no {name!r}")
    return value
