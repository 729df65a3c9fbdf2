"""Reading ComfyUI's answers: validation errors, history entries, the queue.

The shapes were recorded from a real ComfyUI 0.3.64 server (CPU only, core
nodes) on 2026-12-01; the test fake (tests/_comfyui_fake.py) answers with
the same bodies:

* ``POST /prompt`` with an invalid workflow: HTTP 400 ``{"error": {"type":
  "prompt_outputs_failed_validation", "message": ..., "details": ...,
  "extra_info": {}}, "node_errors": {NODE_ID: {"errors": [{"type",
  "message", "details", "extra_info": {"input_name", ...}}],
  "dependent_outputs": [...], "class_type": ...}}}``; other problems
  (``invalid_prompt``: an unknown node class; ``prompt_no_outputs``) come
  with empty ``node_errors``.
* ``GET /history/ID``: ``{}`` until the prompt ends (also while it runs or
  waits), then ``{ID: {"prompt": [...], "outputs": {NODE_ID: {"images":
  [{"filename", "subfolder", "type"}]}}, "status": {"status_str":
  "success"|"error", "completed": bool, "messages": [[event, {...}], ...]},
  "meta": {...}}}``; an interrupted prompt ends ``error`` with an
  ``execution_interrupted`` message, a failed one with ``execution_error``.
* ``GET /queue``: ``{"queue_running": [[number, ID, workflow, extra,
  outputs]], "queue_pending": [...]}``.
* ``GET /object_info/CLASS``: ``{CLASS: {"input": {"required": {NAME:
  [TYPE, {...}]}, "optional": ..., "hidden": ...}, "output": [...],
  "output_node": bool, ...}}``, ``{}`` for a class the server does not know.
* ``POST /history`` with ``{"delete": [ID, ...]}``, ``POST /queue`` with
  ``{"delete": [...]}`` and ``POST /interrupt``: an empty 200 (an absent ID
  is no error). A history entry is written when its prompt leaves
  ``queue_running`` (in the same step), never for a prompt deleted from
  ``queue_pending``.
"""

from __future__ import annotations

import hashlib
import json

from ...redaction import redact

__all__ = ["MAX_REASON_CHARS", "execution_message", "history_state", "image_outputs", "queue_position",
           "validation_reason", "workflow_files", "digest"]

#: Longest validation reason kept (every node error, then "... and N more").
MAX_REASON_CHARS = 4000


def _text(value) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def validation_reason(body) -> str | None:
    """The reason of a ``POST /prompt`` 400 answer, every node error in full; None if not one.

    ``node 4 (CheckpointLoaderSimple) input ckpt_name: Value not in list:
    ckpt_name: 'v1-5-pruned-emaonly.safetensors' not in []``, one per error,
    joined with ``; ``.
    """
    if not isinstance(body, dict) or not ("error" in body or "node_errors" in body):
        return None
    error = body.get("error")
    head = ""
    if isinstance(error, dict):
        head = _text(error.get("message") or error.get("type"))
        details = _text(error.get("details"))
        if details:
            head += f" ({details})"
    elif error:
        head = _text(error)
    parts = []
    nodes = body.get("node_errors") if isinstance(body.get("node_errors"), dict) else {}
    for node_id, node in nodes.items():
        if not isinstance(node, dict):
            continue
        where = f"node {_text(node_id)}"
        if node.get("class_type"):
            where += f" ({_text(node['class_type'])})"
        for item in node.get("errors") or ():
            if not isinstance(item, dict):
                continue
            extra = item.get("extra_info") if isinstance(item.get("extra_info"), dict) else {}
            name = _text(extra.get("input_name"))
            message = _text(item.get("message") or item.get("type") or "error")
            details = _text(item.get("details"))
            text = f"{where}{f' input {name}' if name else ''}: {message}"
            if details and details != name:
                text += f": {details}"
            parts.append(text)
    reason = "; ".join(parts) if parts else head
    if parts and head:
        reason = f"{head}: {reason}"
    if len(reason) > MAX_REASON_CHARS:
        kept, shown = [], 0
        for part in parts:
            if shown + len(part) > MAX_REASON_CHARS - 40:
                break
            kept.append(part)
            shown += len(part) + 2
        reason = f"{head}: " + "; ".join(kept) + f"; ... and {len(parts) - len(kept)} more"
    return redact(reason or "the server refused the workflow")


def history_state(status: dict) -> str:
    """The state of a poll (``{"history": entry}`` or ``{"queue": position}``).

    One of success, error, interrupted, running, pending, vanished.
    """
    entry = status.get("history")
    if isinstance(entry, dict):
        info = entry.get("status") if isinstance(entry.get("status"), dict) else {}
        text = str(info.get("status_str") or "").lower()
        if text == "error":
            events = {m[0] for m in info.get("messages") or () if isinstance(m, (list, tuple)) and m}
            return "error" if "execution_error" in events or "execution_interrupted" not in events \
                else "interrupted"
        if text == "success" or info.get("completed") or (not info and entry.get("outputs")):
            return "success"
        return "running"
    # "unknown": a server without GET /queue (the prompt counts as running from its submit)
    return {"running": "running", "pending": "pending", "unknown": "running"}.get(status.get("queue"), "vanished")


def execution_message(status: dict) -> str:
    """The one line of an ``execution_error`` (or interrupt) message.

    ``node 3 (KSampler): torch.OutOfMemoryError: CUDA error: out of memory``:
    the node, its class, the exception's type and message (ComfyUI adds
    advice after the message, such as its out-of-memory tips: kept, on the one
    line).
    """
    entry = status.get("history") if isinstance(status.get("history"), dict) else {}
    info = entry.get("status") if isinstance(entry.get("status"), dict) else {}
    for message in info.get("messages") or ():
        if (isinstance(message, (list, tuple)) and len(message) == 2
                and message[0] in ("execution_error", "execution_interrupted") and isinstance(message[1], dict)):
            data = message[1]
            node = _text(data.get("node_type") or data.get("node_id") or "?")
            if message[0] == "execution_interrupted":
                return f"interrupted at {node} (another client or the web UI stopped it)"
            if data.get("node_id") is not None and data.get("node_type"):
                node = f"node {_text(data['node_id'])} ({node})"
            kind = _text(data.get("exception_type"))
            text = _text(data.get("exception_message"))
            return f"{node}: " + (f"{kind}: {text}" if kind and text else kind or text or "error")
    return ""


def queue_position(queue, prompt_id: str) -> str:
    """``running``, ``pending`` or ``absent``: where ``prompt_id`` is in a ``GET /queue`` answer."""
    if not isinstance(queue, dict):
        return "absent"
    for key, where in (("queue_running", "running"), ("queue_pending", "pending")):
        for item in queue.get(key) or ():
            if isinstance(item, (list, tuple)) and len(item) > 1 and item[1] == prompt_id:
                return where
    return "absent"


def image_outputs(entry: dict) -> dict:
    """``{node id: [image dicts]}`` of a history entry's outputs that carry images."""
    found = {}
    outputs = entry.get("outputs") if isinstance(entry.get("outputs"), dict) else {}
    for node_id, node_output in outputs.items():
        images = node_output.get("images") if isinstance(node_output, dict) else None
        kept = [image for image in images or () if isinstance(image, dict)
                and isinstance(image.get("filename"), str) and image["filename"]]
        if kept:
            found[str(node_id)] = kept
    return found


def workflow_files(body: dict) -> set:
    """Every string input value of a workflow (model file names among them)."""
    values = set()
    for node in body.values():
        inputs = node.get("inputs") if isinstance(node, dict) else None
        for value in (inputs or {}).values():
            if isinstance(value, str):
                values.add(value)
    return values


def digest(value) -> str:
    """A short SHA-256 of a JSON-able value."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]
