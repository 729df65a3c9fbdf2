"""A fake of the OpenAI Batch API (and of the synchronous Images API), over real sockets.

It answers as the API reference documents (docs/models.md, "Batch", lists the
sources): ``POST /v1/files`` (multipart, ``purpose=batch``) answers a file
object; ``POST /v1/batches`` checks ``input_file_id``, ``endpoint`` and
``completion_window: "24h"`` and answers a batch object in ``validating``;
``GET /v1/batches/{id}`` moves it through ``in_progress`` to ``completed``
(or ``failed`` when a line does not validate, ``expired``, ``cancelled``),
with ``request_counts``; ``GET /v1/files/{id}/content`` serves the output
file (``{"id", "custom_id", "response": {"status_code", "request_id",
"body"}, "error": null}`` a line) and the error file (requests that never
ran: ``"response": null, "error": {"code": "batch_expired", ...}``);
``POST /v1/batches/{id}/cancel``; ``GET /v1/batches`` lists them.
Every request must carry the key as ``Authorization: Bearer``.

``answer(body) -> (status_code, json body)`` decides what the model answers
to one request body; the same function serves the synchronous
``/v1/images/generations``, so a batch run and a synchronous run can be given
the same answers.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import Counter
from email.parser import BytesParser
from email.policy import HTTP
from urllib.parse import unquote

from _servers import Reply, RoutedFake, png_bytes

ENDPOINTS = ("/v1/images/generations", "/v1/images/edits")


def b64_answer(image) -> dict:
    return {"created": 1700000000, "data": [{"b64_json": base64.b64encode(png_bytes(image)).decode()}]}


def error_body(status: int, message: str, code: str | None = None, kind: str = "invalid_request_error"):
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _multipart(rec) -> dict:
    ctype = rec.headers.get("Content-Type") or rec.headers.get("content-type") or ""
    msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + rec.body)
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True))
    return out


class FakeOpenAI(RoutedFake):
    """The stateful fake (a :class:`RoutedFake`: ``with fake: ...``).

    Parameters
    ----------
    key : str
    answer : callable
        ``answer(body) -> (status_code, body)`` for one images request.
    polls : int
        Status polls a batch answers ``in_progress`` before it finishes.
    """

    PREFIX = "/v1"

    def __init__(self, key: str, answer, *, polls: int = 1):
        super().__init__()
        self.key = key
        self.answer = answer
        self.polls = polls
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.lines: dict[str, list] = {}
        self.seen_polls: Counter = Counter()
        self.release = threading.Event()
        self.release.set()
        # faults
        self.expire_after: float | None = None  # share completed when the window ends
        self.drop_output_lines = 0
        self.create_429 = 0
        self.drop_uploads = 0
        self.cancel_elsewhere: float | None = None
        self.reject_line: int | None = None  # a line number the validation refuses
        self.lose_create_answers = 0  # creates that make the batch, then drop the connection
        self.second_answer = None  # (status, body): a second output line for the first answered request
        self.claimed_completed: int | None = None  # the finished batch's request_counts.completed, whatever ran
        self.id_prefix = "batch_"  # how the batch ids it makes start
        self.duplicated: list = []  # the custom_ids answered twice

    # -- routing ----------------------------------------------------------------------------
    def handle(self, rec) -> Reply:
        path = rec.path.split("?", 1)[0]
        route = self._route(rec.method, path)
        with self.lock:
            self.calls[route] += 1
        if rec.headers.get("Authorization") != f"Bearer {self.key}":
            return Reply.json(error_body(401, "Incorrect API key provided.", "invalid_api_key")[1], status=401)
        if route == "POST /files":
            return self._upload(rec)
        if route == "POST /batches":
            return self._create(rec)
        if route == "GET /batches":  # newest first, pages of ?limit= (1 to 100, default 20) ?after=ID
            query = dict(p.split("=", 1) for p in rec.path.partition("?")[2].split("&") if "=" in p)
            limit = int(query.get("limit", 20))
            if not 1 <= limit <= 100:
                return Reply.json(error_body(400, "limit must be between 1 and 100")[1], status=400)
            with self.lock:
                data = [self._view(b) for b in reversed(list(self.batches.values()))]
            if "after" in query:
                ids = [b["id"] for b in data]
                data = data[ids.index(query["after"]) + 1:] if query["after"] in ids else []
            page = data[:limit]
            return Reply.json({"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                               "last_id": page[-1]["id"] if page else None, "has_more": len(data) > limit})
        if route == "GET /batches/{id}":
            return self._status(unquote(path.rsplit("/", 1)[1]))
        if route == "POST /batches/{id}/cancel":
            return self._cancel(unquote(path.split("/")[-2]))
        if route == "GET /files/{id}/content":
            file_id = path.split("/")[-2]
            with self.lock:
                data = self.files.get(file_id)
            if data is None:
                return Reply.json(error_body(404, f"No such File object: {file_id}")[1], status=404)
            return Reply(200, data, content_type="application/octet-stream")
        if route in ("POST /images/generations",):
            status, body = self.answer(rec.json())
            return Reply.json(body, status=status)
        return Reply.json(error_body(404, f"Invalid URL ({rec.method} {path})")[1], status=404)

    @staticmethod
    def _route(method: str, path: str) -> str:
        parts = path.strip("/").split("/")[1:]  # without "v1"
        if parts[:1] == ["batches"] and len(parts) == 2:
            return f"{method} /batches/{{id}}"
        if parts[:1] == ["batches"] and len(parts) == 3 and parts[2] == "cancel":
            return f"{method} /batches/{{id}}/cancel"
        if parts[:1] == ["files"] and len(parts) == 3 and parts[2] == "content":
            return f"{method} /files/{{id}}/content"
        return f"{method} /{'/'.join(parts)}"

    # -- the API ------------------------------------------------------------------------------
    def _upload(self, rec) -> Reply:
        if self.drop_uploads:
            self.drop_uploads -= 1
            return Reply(drop=True)
        form = _multipart(rec)
        if (form.get("purpose") or (None, b""))[1] != b"batch" or "file" not in form:
            return Reply.json(error_body(400, "purpose must be 'batch' and a file given")[1], status=400)
        filename, data = form["file"]
        with self.lock:
            file_id = f"file-{len(self.files) + 1:06d}"
            self.files[file_id] = data
        return Reply.json({"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                           "filename": filename, "purpose": "batch"})

    def _create(self, rec) -> Reply:
        if self.create_429:
            self.create_429 -= 1
            return Reply.json(error_body(429, "Too many requests: the batch queue limit was reached.",
                                         "rate_limit_exceeded", "rate_limit_error")[1], status=429,
                              headers={"Retry-After": "0"})
        body = rec.json()
        with self.lock:
            data = self.files.get(body.get("input_file_id"))
        if data is None:
            return Reply.json(error_body(400, "input_file_id is not an uploaded file")[1], status=400)
        if body.get("endpoint") not in ENDPOINTS + ("/v1/chat/completions",):
            return Reply.json(error_body(400, f"unsupported endpoint {body.get('endpoint')!r}")[1], status=400)
        if body.get("completion_window") != "24h":
            return Reply.json(error_body(400, "completion_window must be '24h'")[1], status=400)
        errors, lines, ids = [], [], set()
        for number, raw in enumerate(data.decode("utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            line = json.loads(raw)
            if (line.get("method") != "POST" or line.get("url") != body["endpoint"] or line.get("custom_id") in ids
                    or not isinstance(line.get("body"), dict)):
                errors.append({"code": "invalid_request", "message": "line does not match the batch endpoint "
                               "or repeats a custom_id", "param": None, "line": number})
            elif number == self.reject_line:
                errors.append({"code": "invalid_value", "message": "Invalid value for 'size'.",
                               "param": "body.size", "line": number})
            ids.add(line.get("custom_id"))
            lines.append(line)
        with self.lock:
            batch_id = f"{self.id_prefix}{len(self.batches) + 1:06d}"
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                "input_file_id": body["input_file_id"], "completion_window": "24h", "status": "validating",
                "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                "in_progress_at": None, "expires_at": int(time.time()) + 86400, "completed_at": None,
                "failed_at": None, "expired_at": None, "cancelled_at": None,
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "metadata": body.get("metadata"), "_errors": errors}
            self.lines[batch_id] = lines
            view = self._view(self.batches[batch_id])
            if self.lose_create_answers:
                self.lose_create_answers -= 1
                return Reply(drop=True)
        return Reply.json(view)

    @staticmethod
    def _view(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _status(self, batch_id: str) -> Reply:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return Reply.json(error_body(404, f"No batch found with id '{batch_id}'.")[1], status=404)
            self.seen_polls[batch_id] += 1
            self._advance(batch)
            return Reply.json(self._view(batch))

    def _advance(self, batch: dict) -> None:
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return
        lines = self.lines[batch["id"]]
        if batch["status"] == "validating":
            if batch["_errors"]:
                batch.update(status="failed", failed_at=int(time.time()),
                             errors={"object": "list", "data": batch["_errors"]})
                return
            batch.update(status="in_progress", in_progress_at=int(time.time()))
            batch["request_counts"]["total"] = len(lines)
            return
        if batch["status"] == "cancelling":
            self._finish(batch, self.cancel_elsewhere or 0.0, "cancelled", "batch_cancelled",
                         "This request was cancelled before it ran.")
            return
        if self.seen_polls[batch["id"]] <= self.polls or not self.release.is_set():
            done = len(lines) // 2
            batch["request_counts"]["completed"] = done
            return
        if self.cancel_elsewhere is not None:
            self._finish(batch, self.cancel_elsewhere, "cancelled", "batch_cancelled",
                         "This request was cancelled before it ran.")
        elif self.expire_after is not None:
            self._finish(batch, self.expire_after, "expired", "batch_expired",
                         "This request could not be executed before the completion window expired.")
        else:
            self._finish(batch, 1.0, "completed", None, None)

    def _finish(self, batch: dict, share: float, status: str, code, message) -> None:
        lines = self.lines[batch["id"]]
        ran = int(round(len(lines) * share))
        out, err = [], []
        completed = failed = 0
        for n, line in enumerate(lines):
            if n >= ran:
                err.append({"id": f"batch_req_{n}", "custom_id": line["custom_id"], "response": None,
                            "error": {"code": code, "message": message}})
                continue
            status_code, body = self.answer(line["body"])
            entry = {"id": f"batch_req_{n}", "custom_id": line["custom_id"],
                     "response": {"status_code": status_code, "request_id": f"req_{n}", "body": body},
                     "error": None}
            if status_code == 200:
                completed += 1
                out.append(entry)
            else:
                failed += 1
                err.append(entry)
        if self.drop_output_lines:
            out = out[: max(0, len(out) - self.drop_output_lines)]
        if self.second_answer is not None and out:
            status_code, body = self.second_answer
            out.append({"id": f"batch_req_{len(lines)}", "custom_id": out[0]["custom_id"],
                        "response": {"status_code": status_code, "request_id": "req_again", "body": body},
                        "error": None})
            self.duplicated.append(out[0]["custom_id"])
        if self.claimed_completed is not None:
            completed = self.claimed_completed
        batch["request_counts"] = {"total": len(lines), "completed": completed, "failed": failed}
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                file_id = f"file-{len(self.files) + 1:06d}"
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[name] = file_id
        batch["status"] = status
        batch[f"{status}_at" if status != "completed" else "completed_at"] = int(time.time())

    def _cancel(self, batch_id: str) -> Reply:
        with self.lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return Reply.json(error_body(404, f"No batch found with id '{batch_id}'.")[1], status=404)
            if batch["status"] in ("validating", "in_progress"):
                batch["status"] = "cancelling"
            return Reply.json(self._view(batch))

