"""The ``comfyui:`` adapter: upload, queue, poll, download (see the package docstring)."""

from __future__ import annotations

import threading
import uuid
from typing import Any
from urllib.parse import quote, urlencode

import numpy as np

from ...errors import GenerationCancelled, GenerationError, GenerationUnjudged, SetupError
from ...imaging import as_rgb8, encode_png
from ...redaction import redact, redact_url
from ..request import GenerationRequest, NetworkAdapter
from ..replicate import first_wait
from .._transport.client import HttpClient, JobStates, cancel_quietly, poll_job
from .._transport.answers import image_from_response, load_json
from ._server import (CANCEL_TIMEOUT, FORGET_DEADLINE, Ledger, digest, execution_message, history_state,
                      image_outputs, queue_position, validation_reason, workflow_files)
from .workflow import LOADER_FOLDERS, Workflow

__all__ = ["CANCEL_DEADLINE", "CANCEL_TIMEOUT", "FIRST_WAIT", "MAX_WAIT", "MASK_MODES", "ComfyUIAdapter"]

#: Seconds before the first poll of the history (a ``Retry-After`` on the ``/prompt`` answer wins) and the cap
#: of the backoff between polls.
FIRST_WAIT, MAX_WAIT = 0.2, 2.0

#: Seconds the whole cancel of a prompt may take: its ``POST /queue`` delete, the ``GET /queue`` look and the
#: ``/interrupt``, together. A deadline, not a per-read time-out: the transport's watchdog shuts the socket
#: down when it passes, so a server that never answers, or trickles a byte a second, cannot hold a stopping
#: run; the steps not reached by then are skipped.
CANCEL_DEADLINE = 4.0

#: ``?mask=``: ``rgb`` uploads the mask as an RGB image (white = keep); ``alpha`` as an RGBA image whose alpha
#: is the mask, so ``LoadImage``'s MASK output is 1 where the sample asks for a change (1 - alpha).
MASK_MODES = ("rgb", "alpha")

STATES = JobStates(done=frozenset({"success", "interrupted"}), broken=frozenset({"error"}),
                   queued=frozenset({"pending"}), vanished=frozenset({"vanished"}),
                   state_of=history_state, message_of=execution_message)


def _json_object(content: bytes, what: str) -> dict:
    try:
        value = load_json(content)  # nesting bounded
    except (UnicodeDecodeError, ValueError):
        raise GenerationError(f"comfyui: {what} is not JSON") from None
    if not isinstance(value, dict):
        raise GenerationError(f"comfyui: {what} is not a JSON object")
    return value


def _rgba_png(mask) -> bytes:
    """An RGBA PNG of ``mask`` whose alpha is the mask's gray level (white = opaque = keep)."""
    import cv2

    rgb = as_rgb8(mask)
    gray = rgb.mean(axis=2).round().astype(np.uint8)
    ok, buf = cv2.imencode(".png", np.dstack([rgb[:, :, ::-1], gray]), [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:  # pragma: no cover - OpenCV only fails on invalid input
        raise GenerationError("comfyui: the mask could not be encoded as PNG")
    return buf.tobytes()


class ComfyUIAdapter(NetworkAdapter):
    """Adapter for a ComfyUI server; ``mask``: ``rgb`` or ``alpha`` (:data:`MASK_MODES`); ``keep_history``:
    leave each prompt in the server's history (default: delete it when its sample ends).
    """

    #: a server of one's own: no default --violin-max-calls (execution.usage.adapter_bills)
    bills = False

    def __init__(self, base_url: str, client: HttpClient, workflow: Workflow, *, mask: str = "rgb",
                 keep_history: bool = False):
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.workflow = workflow
        self.mask = mask
        self.keep_history = bool(keep_history)
        self.client_id = uuid.uuid4().hex
        identity = f"comfyui:{redact_url(self.base_url)} workflow={workflow.digest}"
        if workflow.output is not None:
            identity += f" output={workflow.output}"
        if mask != "rgb":
            identity += f" mask={mask}"
        self.identity = identity
        self._server: list = []
        self._server_lock = threading.Lock()
        self.ledger = Ledger(self.base_url, client.session, keep=self.keep_history)
        self._live: set = set()  # prompts whose sample is in flight
        self._live_lock = threading.Lock()
        self._warned_queue = False
        self._notices: list = []

    # -- what the server runs (the cache key) -------------------------------------------
    def cache_identity(self) -> str | None:
        """The identity plus a digest of the server's versions (``GET /system_stats``) and of each model file
        its loaders name (``GET /experiment/models/{folder}``: a swapped checkpoint is a cache miss); None (no
        cache) when the server cannot tell.
        """
        with self._server_lock:
            if not self._server:
                try:
                    self._server.append(f"{self.identity} server={self._server_digest()}")
                except (GenerationError, ValueError, TypeError, KeyError):
                    self._server.append(None)
            return self._server[0]

    def _get_json(self, path: str, what: str):
        answer = self.client.request("GET", f"{self.base_url}{path}", what=what)
        try:
            return load_json(answer.content)  # nesting bounded
        except (UnicodeDecodeError, ValueError):
            raise GenerationError(f"comfyui: the {what} answer is not JSON") from None

    def _server_digest(self) -> str:
        stats = self._get_json("/system_stats", "GET /system_stats")
        system = stats.get("system") if isinstance(stats, dict) else None
        if not isinstance(system, dict):
            raise GenerationError("comfyui: the /system_stats answer has no 'system'")
        facts: dict[str, Any] = {k: system.get(k) for k in ("comfyui_version", "pytorch_version")}
        names = workflow_files(self.workflow.body)
        for loader in self.workflow.loaders:
            folder = LOADER_FOLDERS.get(loader)
            if folder is None:
                facts[loader] = digest(
                    self._get_json(f"/object_info/{quote(loader, safe='')}", "GET /object_info"))
                continue
            if f"folder:{folder}" in facts:
                continue
            files = self._get_json(f"/experiment/models/{quote(folder, safe='')}", "GET /experiment/models")
            facts[f"folder:{folder}"] = sorted(
                [str(f.get("name")), f.get("size"), f.get("modified")] for f in files or ()
                if isinstance(f, dict) and f.get("name") in names)
        return digest(facts)

    # -- one sample ----------------------------------------------------------------------
    def upload(self, request: GenerationRequest) -> list:
        """Upload the input images the workflow uses; their names on the server.

        Raises :class:`SetupError`: (the same message for every sample of the task, so a run of them stops
        early) A sample with input images the workflow has no placeholder for (a text-to-image workflow on
        mask samples would ignore them), or a workflow that needs more input images than the sample has.
        """
        images = request.images
        missing = self.workflow.missing_placeholders(len(images))
        if missing:
            raise SetupError(
                f"comfyui: {request.task} samples have {len(images)} input image(s) but "
                f"{self.workflow.source} has no " + " and no ".join(f"{{{m}}}" for m in missing)
                + " placeholder: its answer would ignore them; use a workflow whose LoadImage nodes read "
                "{image} and {mask} for the mask task, or narrow the run (--violin-tasks=color,shape)")
        names: list = [None] * (max(self.workflow.slots) + 1 if self.workflow.slots else 0)
        too_few = [slot for slot in self.workflow.slots if slot >= len(images)]
        if too_few:
            raise SetupError(
                f"comfyui: {self.workflow.source} uses {{{'image' if 0 in too_few else 'mask'}}} but "
                f"{request.task} samples have {len(images)} input image(s); use a text-to-image workflow for "
                "tasks without input images (color, shape) and one with {image} and {mask} for the mask task")
        key = request.inputs_digest()[:20]
        for slot in self.workflow.slots:
            alpha = slot == 1 and self.mask == "alpha"
            data = _rgba_png(images[slot]) if alpha else encode_png(images[slot])
            files = {"image": (f"violin-{key}-{slot}{'a' if alpha else ''}.png", data, "image/png")}
            answer = self.client.request("POST", f"{self.base_url}/upload/image", what="image upload",
                                         data={"type": "input", "overwrite": "true"}, files=files)
            info = _json_object(answer.content, "the /upload/image answer")
            name = info.get("name")
            if not isinstance(name, str) or not name:
                raise GenerationError("comfyui: the /upload/image answer has no 'name'", status=answer.status)
            subfolder = info.get("subfolder") if isinstance(info.get("subfolder"), str) else ""
            names[slot] = f"{subfolder}/{name}" if subfolder else name
        return names

    def queue(self, workflow: Any) -> tuple[str, float]:
        """Queue ``workflow``; return its ``prompt_id`` and the wait before the first poll.

        Raises :class:`SetupError`: the server refused the workflow (400): every node error in the message.
        """
        try:
            answer = self.client.post_json(f"{self.base_url}/prompt",
                                           {"prompt": workflow, "client_id": self.client_id}, what="POST /prompt")
        except SetupError as exc:
            try:
                body = load_json(getattr(exc, "body", b"") or b"null")
            except (UnicodeDecodeError, ValueError):
                body = None
            reason = validation_reason(body)
            if reason is None:
                raise
            raise SetupError(f"comfyui: the server refused the workflow (HTTP {exc.status}): {reason}",
                             attempts=exc.attempts, status=exc.status) from None
        info = _json_object(answer.content, "the /prompt answer")
        prompt_id = info.get("prompt_id")
        if not isinstance(prompt_id, str) or not prompt_id:
            reason = validation_reason(info)
            raise SetupError(f"comfyui: the prompt was not queued: {reason}" if reason
                             else "comfyui: the /prompt answer has no prompt_id", status=answer.status)
        return prompt_id, first_wait(answer, FIRST_WAIT, MAX_WAIT)

    def _fetch(self, prompt_id: str, seen: list):
        """One poll: the history entry (noted in ``seen``), else where the prompt is in the queue."""
        history = f"{self.base_url}/history/{quote(prompt_id, safe='')}"

        def fetch():
            answer = self.client.request("GET", history, what="ComfyUI history")
            body = _json_object(answer.content, "the /history answer")
            if isinstance(body.get(prompt_id), dict):
                seen.append(True)
                return {"history": body[prompt_id]}, answer
            return {"queue": self._queue_position(prompt_id)}, answer

        return history, fetch

    def _queue_position(self, prompt_id: str) -> str:
        """``running``, ``pending``, ``absent``, or ``unknown`` on a server without ``GET /queue``."""
        if not self.ledger.no_queue:
            try:
                queue = self.client.request("GET", f"{self.base_url}/queue", what="ComfyUI queue")
            except GenerationError as exc:
                if exc.status not in (404, 405):
                    raise
                self.ledger.no_queue = True
            else:
                return queue_position(_json_object(queue.content, "the /queue answer"), prompt_id)
        with self._live_lock:
            if not self._warned_queue:
                self._warned_queue = True
                self._notices.append(
                    f"comfyui: {redact_url(self.base_url)} has no GET /queue (HTTP 404): time spent waiting in its "
                    "queue counts against each sample's budget (2 x --violin-timeout, from the submit), a prompt "
                    "deleted by another client is seen only at its time-out, and a timed-out prompt is deleted "
                    "from the queue but not interrupted")
        return "unknown"

    def take_notices(self) -> list:
        """What the user should be told once (a server without ``GET /queue``), not yet taken.

        Found in a generation thread; the plugin warns from the test's thread (a
        :class:`~pytest_violin.errors.ViolinWarning`), where pytest records it.
        """
        with self._live_lock:
            taken, self._notices = self._notices, []
        return taken

    def _canceller(self, prompt_id: str):
        done = threading.Event()

        def cancel() -> None:
            # the client refuses requests once the run is cancelled: these go through the session, once, all
            # of them within CANCEL_DEADLINE
            if not done.is_set():
                done.set()
                self.ledger.cancel(prompt_id, CANCEL_DEADLINE)

        return cancel

    def pick_output(self, entry: dict) -> dict:
        """The scored image of a history entry (``?output=`` or the one image output).

        Raises :class:`SetupError`: no image at all, none from the chosen node, or images from several nodes
        and no ``?output=`` (listing them).
        """
        found = image_outputs(entry)
        chosen = self.workflow.output
        if chosen is not None:
            if chosen not in found:
                raise SetupError(
                    f"comfyui: output node {chosen} produced no image; nodes with images: "
                    + (", ".join(sorted(found)) or "none") + " (choose with ?output=NODE_ID)")
            images = found[chosen]
        elif len(found) > 1:
            raise SetupError(
                f"comfyui: the workflow produced images in {len(found)} output nodes ("
                + ", ".join(sorted(found)) + "): which is scored would depend on the server's execution "
                "order; choose one with comfyui:URL?output=NODE_ID")
        elif not found:
            raise SetupError("comfyui: the prompt finished without an image output: the workflow needs a "
                             "SaveImage or PreviewImage node fed by the generated image")
        else:
            images = next(iter(found.values()))
        return sorted(images, key=lambda image: image.get("type") != "output")[0]

    def generate(self, request: GenerationRequest):
        """Upload, queue, poll the history (and queue), download the scored output image.

        Whatever the outcome, the prompt leaves the server when the sample ends
        (:meth:`._server.Ledger.forget`; not with ``?history=keep``).
        """
        prompt: dict = {}
        try:
            with self.client.sample():
                return self._generate(request, prompt)
        finally:
            if "id" in prompt:
                with self._live_lock:
                    self._live.discard(prompt["id"])
                self.ledger.forget(prompt["id"], ended=prompt.get("ended", False),
                                   wait=prompt.get("wait", FORGET_DEADLINE))

    def _generate(self, request: GenerationRequest, prompt: dict):
        names = self.upload(request)
        prompt_id, wait = self.queue(self.workflow.render(request, names))
        with self._live_lock:
            self._live.add(prompt_id)
        prompt["id"] = prompt_id
        cancel = self._canceller(prompt_id)
        seen: list = []
        url, fetch = self._fetch(prompt_id, seen)
        try:
            status = poll_job(self.client, url, STATES, what="ComfyUI prompt", first_wait=wait,
                              max_wait=MAX_WAIT, cancel_job=cancel, fetch=fetch)
        except GenerationCancelled:
            prompt["wait"] = 0.0  # the run stops: its end (close) waits for the interrupt to land
            cancel_quietly(cancel)
            raise
        finally:
            prompt["ended"] = bool(seen)  # its history entry exists: the prompt left the queue
        entry = status.get("history") or {}
        if history_state(status) == "interrupted":
            raise GenerationUnjudged(redact(f"comfyui: the prompt was {execution_message(status)}"))
        image = self.pick_output(entry)
        query = urlencode({"filename": image["filename"], "subfolder": str(image.get("subfolder") or ""),
                           "type": str(image.get("type") or "output")})
        result = self.client.request("GET", f"{self.base_url}/view?{query}", what="GET /view")
        return image_from_response(result)

    def close(self) -> None:
        """Take this run's prompts off the server (those still in flight are cancelled after an
        interrupt), delete the history entries still left, then close the session."""
        with self._live_lock:
            live = sorted(self._live)
        try:
            self.ledger.close(live, cancel=self.client.cancel.is_set())
        finally:
            super().close()
