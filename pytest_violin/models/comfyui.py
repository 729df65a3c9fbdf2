"""``comfyui:URL`` with ``--violin-workflow=FILE``: a ComfyUI server.

The workflow is exported from ComfyUI in the **API format** ("Export
(API)"): a JSON object of nodes ``{"3": {"class_type": ..., "inputs": ...}}``.
String values hold placeholders (:data:`PLACEHOLDERS`): ``{prompt}``,
``{seed}``, ``{width}``, ``{height}``, ``{image}`` and ``{mask}`` (plus
``{sample_id}``, ``{task}``, ``{repeat}`` and ``{size}``). A string that is
exactly one placeholder keeps the value's type (``"{seed}"`` becomes an
integer); ``{{`` and ``}}`` are literal braces.

One sample:

1. each input image the workflow uses is uploaded with
   ``POST {URL}/upload/image`` (multipart ``image``, ``type=input``,
   ``overwrite=true``, a name derived from the pixels); ``{image}`` and
   ``{mask}`` become the names the server answers (for ``LoadImage``);
2. ``POST {URL}/prompt`` with ``{"prompt": workflow, "client_id": ...}``
   queues it and answers ``prompt_id``;
3. ``GET {URL}/history/{prompt_id}`` is polled (empty until the prompt
   ends) with :func:`~pytest_violin.models.transport.jobs.poll_job`;
4. the first image of the outputs (``type`` ``output`` first) is downloaded
   with ``GET {URL}/view?filename=...&subfolder=...&type=...``.

A history entry whose ``status.status_str`` is ``error`` is a failure (the
server's exception message is shown); a finished prompt without any image
output is a refusal (no image in the answer). On Ctrl-C the prompt is taken
off the queue (``POST /queue`` with ``delete``) and, only when ``GET /queue``
lists it as running, interrupted (``POST /interrupt`` with the
``prompt_id``: servers that ignore it stop whatever runs, so it is not sent
for a prompt that is not running).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from ..errors import GenerationCancelled, GenerationError, GenerationRefused, ModelSpecError
from ..imaging import encode_png
from ..redaction import redact, redact_url
from .http import RequestTemplate
from .replicate import first_wait
from .request import GenerationRequest
from .transport.client import HttpClient, client_from_options
from .transport.credentials import check_url
from .transport.decode import image_from_response, load_json
from .transport.jobs import JobStates, poll_job

__all__ = ["PLACEHOLDERS", "ComfyUIAdapter", "Workflow", "create"]

#: Placeholders a workflow may use.
PLACEHOLDERS = ("prompt", "seed", "width", "height", "image", "mask", "sample_id", "task", "repeat", "size")

#: ``{image}`` and ``{mask}`` are the request's first and second input images.
_IMAGE_SLOTS = {"image": 0, "mask": 1}

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")

#: Seconds before the first poll of the history (a ``Retry-After`` on the
#: ``/prompt`` answer wins) and the cap of the backoff between polls.
FIRST_WAIT, MAX_WAIT = 0.2, 2.0

#: Seconds a cancel request may take while the run stops.
CANCEL_TIMEOUT = 3.0

#: Bytes of the ``GET /queue`` answer read while cancelling.
QUEUE_BYTES = 2**20

#: Largest workflow file read, in bytes.
MAX_WORKFLOW_BYTES = 4 * 2**20


class Workflow:
    """A ComfyUI API-format workflow with placeholders.

    Parameters
    ----------
    body : dict
        The parsed workflow.
    source : str
        Where it came from, for messages.

    Raises
    ------
    ModelSpecError
        For a workflow in the UI format, one that is not a JSON object of
        nodes, an unknown placeholder or a workflow without ``{prompt}``.
    """

    def __init__(self, body: Any, source: str = "workflow"):
        self.source = source
        if isinstance(body, dict) and "nodes" in body and "links" in body:
            raise ModelSpecError(
                f"{source} is in ComfyUI's UI format (it has 'nodes' and 'links'); accepted: the API "
                "format, from the menu Workflow > Export (API)")
        if not isinstance(body, dict) or not body or not all(
                isinstance(node, dict) and "class_type" in node for node in body.values()):
            raise ModelSpecError(
                f"{source} is not a ComfyUI workflow in the API format; accepted: a JSON object of "
                'nodes such as {"3": {"class_type": "KSampler", "inputs": {...}}}')
        self.used: set[str] = set()
        translated = self._translate(body, "$")
        if "prompt" not in self.used:
            raise ModelSpecError(f"{source} has no {{prompt}} placeholder: every sample would get the same image")
        self.template = RequestTemplate(translated, source=source)
        self.digest = self.template.digest
        self.slots = sorted(_IMAGE_SLOTS[name] for name in self.used & set(_IMAGE_SLOTS))

    @classmethod
    def from_file(cls, path: Path) -> "Workflow":
        """Load a workflow file (UTF-8 JSON, at most :data:`MAX_WORKFLOW_BYTES`)."""
        path = Path(path)
        shown = f"workflow {str(path)!r}"
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_WORKFLOW_BYTES + 1)
        except FileNotFoundError:
            raise ModelSpecError(f"{shown} does not exist") from None
        except OSError as exc:
            raise ModelSpecError(f"{shown} could not be read ({exc.strerror or exc})") from None
        if len(data) > MAX_WORKFLOW_BYTES:
            raise ModelSpecError(f"{shown} is larger than {MAX_WORKFLOW_BYTES} bytes; accepted: a workflow file")
        try:
            body = load_json(data)  # nesting bounded
        except UnicodeDecodeError:
            raise ModelSpecError(f"{shown} is not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise ModelSpecError(
                f"{shown} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
        return cls(body, source=shown)

    def _translate(self, node: Any, where: str) -> Any:
        """Rewrite ``{image}`` / ``{mask}`` as ``{images[N]}``; check every name."""
        if isinstance(node, dict):
            return {k: self._translate(v, f"{where}.{k}") for k, v in node.items()}
        if isinstance(node, list):
            return [self._translate(v, f"{where}[{i}]") for i, v in enumerate(node)]
        if not isinstance(node, str):
            return node

        def sub(match: re.Match) -> str:
            name = match.group(1)
            if name is None:
                return match.group(0)
            if name not in PLACEHOLDERS:
                raise ModelSpecError(
                    f"{self.source}: unknown placeholder {{{name}}} at {where}; accepted: "
                    + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS) + "; write {{ and }} for literal braces")
            self.used.add(name)
            if name in _IMAGE_SLOTS:
                return f"{{images[{_IMAGE_SLOTS[name]}]}}"
            return match.group(0)

        return _TOKEN.sub(sub, node)

    def render(self, request: GenerationRequest, names: list) -> Any:
        """The workflow for ``request``; ``names``: the uploaded input images."""
        return self.template.render(request, list(names))


def _history_state(prompt_id: str):
    def state_of(body) -> str:
        entry = body.get(prompt_id)
        if not isinstance(entry, dict):
            return "pending"
        status = entry.get("status") if isinstance(entry.get("status"), dict) else {}
        text = str(status.get("status_str") or "").lower()
        if text == "error":
            return "error"
        if text == "success" or status.get("completed") or (not status and entry.get("outputs")):
            return "success"
        return "running"

    def message_of(body) -> str:
        entry = body.get(prompt_id) or {}
        status = entry.get("status") if isinstance(entry, dict) and isinstance(entry.get("status"), dict) else {}
        for message in status.get("messages") or ():
            if (isinstance(message, (list, tuple)) and len(message) == 2 and message[0] == "execution_error"
                    and isinstance(message[1], dict)):
                info = message[1]
                node = info.get("node_type") or info.get("node_id") or "?"
                return f"{node}: {info.get('exception_message') or info.get('exception_type') or 'error'}"
        return ""

    return JobStates(done={"success"}, failed={"error"}, state_of=state_of, message_of=message_of)


def pick_output(entry: dict) -> dict | None:
    """The first image of a history entry's outputs, ``type`` ``output`` first."""
    found = []
    outputs = entry.get("outputs") if isinstance(entry.get("outputs"), dict) else {}
    for node_output in outputs.values():
        images = node_output.get("images") if isinstance(node_output, dict) else None
        for image in images or ():
            if isinstance(image, dict) and isinstance(image.get("filename"), str) and image["filename"]:
                found.append(image)
    found.sort(key=lambda image: image.get("type") != "output")
    return found[0] if found else None


class ComfyUIAdapter:
    """Adapter for a ComfyUI server (see the module docstring).

    Parameters
    ----------
    base_url : str
        The server, without trailing slash and credentials.
    client : HttpClient
    workflow : Workflow
    """

    cacheable = True
    #: calls a network service: --violin-max-calls defaults to 2000 (see docs/plugin.md)
    network = True

    def __init__(self, base_url: str, client: HttpClient, workflow: Workflow):
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.workflow = workflow
        self.client_id = uuid.uuid4().hex
        self.identity = f"comfyui:{redact_url(self.base_url)} workflow={workflow.digest}"

    def upload(self, request: GenerationRequest) -> list:
        """Upload the input images the workflow uses; their names on the server (None: missing)."""
        names: list = [None] * (max(self.workflow.slots) + 1 if self.workflow.slots else 0)
        if not self.workflow.slots:
            return names
        images = request.images
        missing = [slot for slot in self.workflow.slots if slot >= len(images)]
        if missing:
            raise ModelSpecError(
                f"comfyui: the workflow uses {{{'image' if 0 in missing else 'mask'}}} but sample "
                f"{request.sample_id!r} has {len(images)} input image(s); use a text-to-image workflow for "
                "tasks without input images (color, shape) and one with {image} and {mask} for the mask task")
        digest = request.inputs_digest()[:20]
        for slot in self.workflow.slots:
            files = {"image": (f"violin-{digest}-{slot}.png", encode_png(images[slot]), "image/png")}
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
        """Queue ``workflow``; return its ``prompt_id`` and the wait before the first poll."""
        answer = self.client.post_json(f"{self.base_url}/prompt",
                                       {"prompt": workflow, "client_id": self.client_id}, what="POST /prompt")
        info = _json_object(answer.content, "the /prompt answer")
        prompt_id = info.get("prompt_id")
        if not isinstance(prompt_id, str) or not prompt_id:
            errors = info.get("node_errors") or info.get("error")
            raise GenerationError(redact(f"comfyui: the prompt was not queued: {str(errors)[:300]}"
                                         if errors else "comfyui: the /prompt answer has no prompt_id"),
                                  status=answer.status)
        return prompt_id, first_wait(answer, FIRST_WAIT, MAX_WAIT)

    def _canceller(self, prompt_id: str):
        done = threading.Event()

        def cancel() -> None:
            # the client refuses requests once the run is cancelled: these go
            # through the session, bounded by CANCEL_TIMEOUT, once
            if done.is_set():
                return
            done.set()
            limit = (CANCEL_TIMEOUT, CANCEL_TIMEOUT)
            session = self.client.session
            session.post(f"{self.base_url}/queue", json={"delete": [prompt_id]}, timeout=limit)
            # /interrupt stops whatever runs now on servers that ignore the
            # prompt_id: send it only while this prompt is the running one
            answer = session.get(f"{self.base_url}/queue", timeout=limit, stream=True)
            try:
                queue = json.loads(answer.raw.read(QUEUE_BYTES, decode_content=True)) if answer.ok else {}
            finally:
                answer.close()
            if prompt_id in _running_ids(queue):
                session.post(f"{self.base_url}/interrupt", json={"prompt_id": prompt_id}, timeout=limit)

        return cancel

    def generate(self, request: GenerationRequest):
        """Upload, queue, poll the history, download the first output image."""
        with self.client.sample():
            names = self.upload(request)
            prompt_id, wait = self.queue(self.workflow.render(request, names))
            cancel = self._canceller(prompt_id)
            try:
                history = poll_job(self.client, f"{self.base_url}/history/{quote(prompt_id, safe='')}",
                                   _history_state(prompt_id), what="ComfyUI prompt", first_wait=wait,
                                   max_wait=MAX_WAIT, cancel_job=cancel)
            except GenerationCancelled:
                try:
                    cancel()
                except Exception:  # best effort: the run is stopping anyway
                    pass
                raise
            image = pick_output(history.get(prompt_id) or {})
            if image is None:
                raise GenerationRefused("ComfyUI prompt finished without an image output (no image in answer)")
            query = urlencode({"filename": image["filename"], "subfolder": str(image.get("subfolder") or ""),
                               "type": str(image.get("type") or "output")})
            result = self.client.request("GET", f"{self.base_url}/view?{query}", what="GET /view")
            return image_from_response(result)

    def close(self) -> None:
        """Close the session."""
        self.client.close()

    def __repr__(self) -> str:
        return f"ComfyUIAdapter({self.identity!r})"


def _running_ids(queue) -> set:
    """Prompt ids in a ``GET /queue`` answer's ``queue_running`` (items ``[number, prompt_id, ...]``)."""
    running = queue.get("queue_running") if isinstance(queue, dict) else None
    return {item[1] for item in running or () if isinstance(item, list) and len(item) > 1
            and isinstance(item[1], str)}


def _json_object(content: bytes, what: str) -> dict:
    try:
        value = load_json(content)  # nesting bounded
    except (UnicodeDecodeError, ValueError):
        raise GenerationError(f"comfyui: {what} is not JSON") from None
    if not isinstance(value, dict):
        raise GenerationError(f"comfyui: {what} is not a JSON object")
    return value


def create(target: str, options) -> ComfyUIAdapter:
    """Factory for ``comfyui:URL`` (with ``--violin-workflow=FILE``).

    Raises
    ------
    ModelSpecError
        For a URL without host, a missing ``--violin-workflow`` or an
        invalid workflow file.
    """
    target = (target or "").strip()
    if not target:
        raise ModelSpecError("comfyui: no server URL given; accepted: comfyui:URL such as "
                             "comfyui:http://127.0.0.1:8188")
    if "://" not in target:
        target = f"http://{target}"
    base, auth = check_url(target, what="comfyui URL")
    extra = getattr(options, "extra", None) or {}
    path = extra.get("workflow")
    if not path:
        raise ModelSpecError("comfyui: no workflow given; accepted: --violin-workflow=FILE, a workflow "
                             "exported in ComfyUI's API format with {prompt} and the other placeholders")
    path = Path(path)
    if not path.is_absolute():
        path = Path(options.rootdir) / path
    workflow = Workflow.from_file(path)
    client = client_from_options(options, auth=auth, origins=(base,))
    return ComfyUIAdapter(base, client, workflow)
