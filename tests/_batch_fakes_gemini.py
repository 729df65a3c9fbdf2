"""A fake of the Gemini API's Batch Mode (and of generateContent), over real sockets.

As the Batch Mode guide and the API reference document it (docs/models.md,
"Batch"): ``POST /v1beta/models/{model}:batchGenerateContent`` with
``{"batch": {"display_name", "input_config": {"requests": {"requests":
[{"request", "metadata": {"key"}}]}}}}`` answers an operation named
``batches/...`` in ``BATCH_STATE_PENDING``; ``GET /v1beta/batches/{id}``
moves it to ``BATCH_STATE_RUNNING`` then ``BATCH_STATE_SUCCEEDED`` with
``batchStats`` (int64 as strings) and the answers in
``response.inlinedResponses.inlinedResponses`` (``{"response", "metadata"}``
or ``{"error", "metadata"}``); ``:cancel``; ``GET /v1beta/batches`` lists
them (``operations``). The key must come as ``x-goog-api-key``.

``answer(request) -> (http status, GenerateContentResponse or a Google error)``
serves both the batch and the synchronous ``:generateContent``.
"""

from __future__ import annotations


from _servers import Reply, RoutedFake

TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main."


class FakeGemini(RoutedFake):
    PREFIX = "/v1beta"

    def __init__(self, key: str, answer, *, polls: int = 1):
        super().__init__()
        self.key, self.answer, self.polls = key, answer, polls
        self.batches: dict[str, dict] = {}
        self.sizes: list = []
        self.end_state = "BATCH_STATE_SUCCEEDED"  # or _EXPIRED: "will not have any results" (the guide)
        self.second_answer = None  # GenerateContentResponse: a second answer for the first request's key
        self.duplicated: list = []  # the keys answered twice

    def handle(self, rec) -> Reply:
        path = rec.path.split("?", 1)[0].removeprefix("/v1beta/")
        if path.startswith("models/") and path.endswith(":batchGenerateContent"):
            route = "POST :batchGenerateContent"
        elif path.startswith("models/") and path.endswith(":generateContent"):
            route = "POST :generateContent"
        elif path.startswith("batches/") and path.endswith(":cancel"):
            route = "POST :cancel"
        elif path.startswith("batches/"):
            route = "GET batches/{id}"
        else:
            route = f"{rec.method} {path}"
        with self.lock:
            self.calls[route] += 1
        if rec.headers.get("x-goog-api-key") != self.key:
            return Reply.json({"error": {"code": 403, "message": "API key not valid.", "status": "PERMISSION_DENIED"}},
                              status=403)
        if route == "POST :generateContent":
            status, body = self.answer(rec.json())
            return Reply.json(body, status=status)
        if route == "POST :batchGenerateContent":
            return self._create(rec, path)
        if route == "GET batches/{id}":
            return self._get(path)
        if route == "POST :cancel":
            with self.lock:
                batch = self.batches.get(path.removesuffix(":cancel"))
                if batch is not None and batch["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
                    batch["state"] = "BATCH_STATE_CANCELLED"
            return Reply.json({})
        if route == "GET batches":
            with self.lock:
                return Reply.json({"operations": [self._operation(b) for b in self.batches.values()]})
        return Reply.json({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}, status=404)

    def _create(self, rec, path) -> Reply:
        self.sizes.append(len(rec.body))
        batch = rec.json().get("batch") or {}
        items = (((batch.get("input_config") or {}).get("requests") or {}).get("requests"))
        if not batch.get("display_name") or not isinstance(items, list) or not all(
                isinstance(i.get("request", {}).get("contents"), list) and i.get("metadata", {}).get("key")
                for i in items):
            return Reply.json({"error": {"code": 400, "message": "Invalid batch.", "status": "INVALID_ARGUMENT"}},
                              status=400)
        with self.lock:
            name = f"batches/b{len(self.batches) + 1:04d}"
            self.batches[name] = {"name": name, "model": path.split(":")[0], "displayName": batch["display_name"],
                                  "state": "BATCH_STATE_PENDING", "items": items, "polls": 0, "responses": None}
            return Reply.json(self._operation(self.batches[name]))

    def _operation(self, batch) -> dict:
        items = batch["items"]
        done = batch["state"] in ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_CANCELLED", "BATCH_STATE_FAILED",
                                  "BATCH_STATE_EXPIRED")
        answered = batch["responses"] or []
        ok = sum(1 for r in answered if "response" in r)
        meta = {"@type": TYPE + "GenerateContentBatch", "model": batch["model"], "displayName": batch["displayName"],
                "name": batch["name"], "createTime": "2026-12-02T00:00:00Z", "state": batch["state"],
                "batchStats": {"requestCount": str(len(items)), "successfulRequestCount": str(ok),
                               "failedRequestCount": str(len(answered) - ok),
                               "pendingRequestCount": str(len(items) - len(answered))}}
        op = {"name": batch["name"], "metadata": meta}
        if done:
            op["done"] = True
            op["response"] = {"@type": TYPE + "GenerateContentBatchOutput",
                              "inlinedResponses": {"inlinedResponses": answered}}
        return op

    def _get(self, path) -> Reply:
        with self.lock:
            batch = self.batches.get(path)
            if batch is None:
                return Reply.json({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}, status=404)
            batch["polls"] += 1
            if batch["state"] == "BATCH_STATE_PENDING":
                batch["state"] = "BATCH_STATE_RUNNING"
            elif batch["state"] == "BATCH_STATE_RUNNING" and batch["polls"] > self.polls:
                out = []
                for item in batch["items"]:
                    status, body = self.answer(item["request"])
                    entry = {"metadata": {"key": item["metadata"]["key"]}}
                    if status == 200:
                        entry["response"] = body
                    else:
                        entry["error"] = {"code": 13, "message": body["error"]["message"], "status": "INTERNAL"}
                    out.append(entry)
                if self.end_state == "BATCH_STATE_EXPIRED":
                    out = []
                if self.second_answer is not None and out:
                    out.append({"metadata": dict(out[0]["metadata"]), "response": self.second_answer})
                    self.duplicated.append(out[0]["metadata"]["key"])
                batch["responses"] = out
                batch["state"] = self.end_state
            return Reply.json(self._operation(batch))
