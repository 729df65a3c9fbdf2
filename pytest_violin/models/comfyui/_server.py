"""What the ComfyUI server says and what is left on it: answers, image nodes, housekeeping.

The answers' shapes were recorded from a real ComfyUI 0.3.64 server; the test fake (tests/_comfyui_fake.py)
answers with the same bodies. What the code relies on: a workflow that fails validation is a 400 with
``node_errors``; ``GET /history/ID`` is ``{}`` until the prompt ends, then holds ``outputs`` and ``status``
(``error`` with ``execution_interrupted`` or ``execution_error``); ``GET /queue`` lists ``queue_running`` and
``queue_pending``; the deletes and ``/interrupt`` answer an empty 200, and a history entry is written in the
step that takes a prompt out of ``queue_running``, never for one deleted from ``queue_pending``.

Which nodes put images in the history (:func:`image_output_classes`): an *output node* one of whose inputs
takes an ``IMAGE`` or a ``MASK``, as ``GET /object_info/CLASS`` says; a server that cannot tell leaves the
core classes (:data:`~.workflow.IMAGE_OUTPUTS`).

Housekeeping (:class:`Ledger`): every prompt is taken off the server when its sample ends, whatever the
outcome (deleted from the queue, interrupted, its history entry deleted once it exists; an entry still to come
stays on the ledger for a later sample's end or :meth:`Ledger.close`). Best effort and bounded: each request
once, each group within one deadline the transport's watchdog enforces; a failure never fails the sample.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from contextlib import suppress
from urllib.parse import quote

from ...errors import GenerationCancelled
from ...redaction import redact
from .._transport.bounds import Attempt, WATCHDOG, state as _transport_state


#: Longest validation reason kept (every node error, then "... and N more").
MAX_REASON_CHARS = 4000


def _text(value) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def validation_reason(body) -> str | None:
    """The reason of a ``POST /prompt`` 400 answer, every node error in full; None if not one.

    ``node 4 (CheckpointLoaderSimple) input ckpt_name: Value not in list: ckpt_name:
    'v1-5-pruned-emaonly.safetensors' not in []``, one per error, joined with ``; ``.
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

    ``node 3 (KSampler): torch.OutOfMemoryError: CUDA error: out of memory``: the node, its class, the
    exception's type and message (ComfyUI adds advice after the message, such as its out-of-memory tips: kept,
    on the one line).
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


#: Seconds one of these requests may take (each is also bounded by its group's deadline).
CANCEL_TIMEOUT = 3.0

#: Seconds a sample's end may wait for its interrupted prompt to leave the queue before its history entry is
#: deleted; past it, a later sample or the run's end deletes it.
FORGET_DEADLINE = 4.0

#: Seconds the run's end may wait for the prompts still queued or running to leave the queue.
CLOSE_DEADLINE = 5.0

#: Bytes of a ``GET /queue`` answer read here.
QUEUE_BYTES = 2**20

#: Seconds between two looks at the queue while waiting for a prompt to leave it.
QUEUE_LOOK = 0.1


def bounded(seconds: float, steps, what: str, *, each: float = CANCEL_TIMEOUT) -> None:
    """Run ``steps(limit)`` within ``seconds``; ``limit()`` is the ``timeout=`` of each request
    (at most ``each`` seconds).

    ``limit()`` raises :class:`~pytest_violin.errors.GenerationCancelled` once the deadline passed; the
    watchdog shuts down a socket still open then.
    """
    attempt = Attempt(time.monotonic() + seconds, None)
    outer = getattr(_transport_state, "attempt", None)
    _transport_state.attempt = attempt  # the watchdog sees these requests' sockets
    WATCHDOG.add(attempt)

    def limit():
        left = attempt.deadline - time.monotonic()
        if left <= 0 or attempt.fired:
            raise GenerationCancelled(f"comfyui: {what} passed its deadline of {seconds:g} s")
        return (min(each, left), min(each, left))

    try:
        steps(limit)
    finally:
        attempt.finish()
        WATCHDOG.remove(attempt)
        _transport_state.attempt = outer


class Ledger:
    """The prompts one adapter queued whose history entries are not yet deleted.

    * ``session``: the client's session (its credentials and watched connections).
    * ``keep``: ``?history=keep``: entries stay; prompts are still cancelled.
    """

    def __init__(self, base_url: str, session, *, keep: bool = False):
        self.base_url = base_url
        self.session = session
        self.keep = keep
        #: set when the server answers 404 (or 405) to ``GET /queue``: a proxy, a hosted API
        self.no_queue = False
        self._lock = threading.Lock()
        self._left: set[str] = set()  # samples ended, entries not yet deleted
        self._unsure: set[str] = set()  # deleted once without GET /queue: once more at the end

    def read_queue(self, limit):
        """``GET /queue`` as a dict; None for a server without it (or an answer that is not JSON)."""
        if self.no_queue:
            return None
        answer = self.session.get(f"{self.base_url}/queue", timeout=limit(), stream=True)
        try:
            if answer.status_code in (404, 405):
                self.no_queue = True
                return None
            if not answer.ok:
                return None
            try:
                queue = json.loads(answer.raw.read(QUEUE_BYTES, decode_content=True))
            except ValueError:
                return None
        finally:
            answer.close()
        return queue if isinstance(queue, dict) else None

    # -- one prompt ------------------------------------------------------------------------
    def cancel_steps(self, prompt_id: str, limit) -> None:
        """Delete ``prompt_id`` from the queue and interrupt it if it runs (see :meth:`cancel`)."""
        self.session.post(f"{self.base_url}/queue", json={"delete": [prompt_id]}, timeout=limit())
        # /interrupt stops whatever runs now on servers that ignore the prompt_id: send it only while this
        # prompt is the running one (a server without GET /queue cannot say: nothing is interrupted there)
        if queue_position(self.read_queue(limit), prompt_id) == "running":
            self.session.post(f"{self.base_url}/interrupt", json={"prompt_id": prompt_id}, timeout=limit())

    def cancel(self, prompt_id: str, deadline: float) -> None:
        """:meth:`cancel_steps` within ``deadline`` seconds, all of it."""
        bounded(deadline, lambda limit: self.cancel_steps(prompt_id, limit), f"the cancel of prompt {prompt_id}")

    def forget(self, prompt_id: str, *, ended: bool, wait: float = FORGET_DEADLINE) -> None:
        """``prompt_id``'s sample ended: delete its history entry, and those of earlier samples
        that are out of the queue by now; never raises.

        * ``ended``: the prompt's history entry was seen (it has left the queue).
        * ``wait``: seconds to wait for a prompt still in the queue (interrupted, not yet stopped) to leave
          it; 0: one look.
        """
        if self.keep:
            return
        with self._lock:
            self._left.add(prompt_id)
        with suppress(Exception):  # best effort: never the sample's failure
            bounded(max(wait, 0.0) + CANCEL_TIMEOUT, lambda limit: self._delete_gone(
                limit, ended={prompt_id} if ended else set(), wait=wait), "the history delete")

    def close(self, live=(), cancel: bool = False) -> None:
        """At the run's end: cancel ``live`` prompts (samples abandoned in flight) when
        ``cancel``, then delete every entry left, waiting up to :data:`CLOSE_DEADLINE`
        for prompts still in the queue; never raises."""
        live = list(live)
        with self._lock:
            if not self.keep:
                self._left.update(live)
            todo = bool(self._left or self._unsure)
        if not (todo or (cancel and live)):
            return

        def steps(limit):
            if cancel:
                for prompt_id in live:
                    self.cancel_steps(prompt_id, limit)
            if not self.keep:
                self._delete_gone(limit, ended=set(), wait=CLOSE_DEADLINE, final=True)

        with suppress(Exception):  # best effort: the run is ending anyway
            bounded(CLOSE_DEADLINE + CANCEL_TIMEOUT, steps, "the run's history delete")

    def pending(self) -> set:
        """Prompts whose entries are not yet deleted (for tests and the docs)."""
        with self._lock:
            return self._left | self._unsure

    def _delete_gone(self, limit, *, ended: set, wait: float, final: bool = False) -> None:
        end = time.monotonic() + wait
        while True:
            with self._lock:
                left = set(self._left) | (self._unsure if final else set())
            if not left:
                return
            gone = left & ended
            queue = self.read_queue(limit) if left - gone else None
            if queue is not None:
                gone |= {p for p in left - gone if queue_position(queue, p) == "absent"}
            elif left - gone:
                # without GET /queue nothing says when an interrupted prompt's entry exists: delete now, and
                # once more at the run's end
                with self._lock:
                    self._unsure |= left - gone
                    self._left -= left - gone
                if final and time.monotonic() + QUEUE_LOOK <= end:
                    time.sleep(min(1.0, max(0.0, end - time.monotonic())))  # let an interrupt land
                gone = left
            self.session.post(f"{self.base_url}/history", json={"delete": sorted(gone)}, timeout=limit())
            with self._lock:
                self._left -= gone
                if final or queue is not None:
                    self._unsure -= gone
            if not (left - gone) or time.monotonic() + QUEUE_LOOK > end:
                return
            time.sleep(QUEUE_LOOK)


#: Input types whose output node shows images.
IMAGE_TYPES = frozenset({"IMAGE", "MASK"})

#: Bytes of one ``GET /object_info/CLASS`` answer read (a class with a long list of files).
NODE_INFO_BYTES = 4 * 2**20

#: Seconds all the ``/object_info`` look-ups of one workflow may take.
NODE_INFO_DEADLINE = 15.0


def _input_types(info: dict):
    inputs = info.get("input") if isinstance(info.get("input"), dict) else {}
    for group in ("required", "optional"):
        for spec in (inputs.get(group) or {}).values() if isinstance(inputs.get(group), dict) else ():
            if isinstance(spec, (list, tuple)) and spec and isinstance(spec[0], str):
                yield spec[0]


def shows_images(info) -> bool:
    """Whether one ``/object_info`` class description is an output node taking an IMAGE or a MASK."""
    return isinstance(info, dict) and info.get("output_node") is True and any(
        kind in IMAGE_TYPES for kind in _input_types(info))


def image_output_classes(session, base_url: str, classes, *,
                         timeout: float = 30.0) -> tuple[frozenset | None, str | None]:
    """``(classes that show images, None)``, or ``(None, why)`` when the server cannot tell.

    One ``GET /object_info/CLASS`` per class, through ``session``, each within ``timeout`` seconds
    (``--violin-timeout``), all within :data:`NODE_INFO_DEADLINE` seconds. A class the server does not know
    (``{}``) shows nothing: its ``POST /prompt`` is refused anyway.
    """
    found, why = set(), []

    def steps(limit):
        for cls in sorted(set(classes)):
            answer = session.get(f"{base_url}/object_info/{quote(cls, safe='')}", timeout=limit(), stream=True)
            try:
                if not answer.ok:
                    why.append(f"GET /object_info/{cls} answered HTTP {answer.status_code}")
                    return
                try:
                    body = json.loads(answer.raw.read(NODE_INFO_BYTES, decode_content=True))
                except ValueError:
                    why.append(f"GET /object_info/{cls} is not JSON (or over {NODE_INFO_BYTES} bytes)")
                    return
            finally:
                answer.close()
            if not isinstance(body, dict) or (body and not isinstance(body.get(cls), dict)):
                why.append(f"GET /object_info/{cls} is no node description")
                return
            if shows_images(body.get(cls)):
                found.add(cls)

    try:
        bounded(NODE_INFO_DEADLINE, steps, "GET /object_info", each=timeout)
    except Exception as exc:  # no answer: connection refused, the deadline
        why.append(f"GET /object_info: no answer ({type(exc).__name__})")
    if why:
        return None, redact(why[0])
    return frozenset(found), None
