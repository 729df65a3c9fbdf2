"""A ComfyUI server on 127.0.0.1 that answers like the real one, for adapter tests and benchmarks.

Every answer shape below was recorded from a real ComfyUI 0.3.64 server
(CPU only, core nodes, ``python main.py --cpu``) on 2026-12-01 and copied
here (values shortened where marked): the 400 body of a workflow that fails
validation (``node_errors`` with ``type``, ``message``, ``details``,
``extra_info.input_name``, ``dependent_outputs``, ``class_type``),
``/queue`` (``queue_running`` / ``queue_pending`` items ``[number,
prompt_id, workflow, extra_data, outputs]``), ``/history/<id>`` (``{}`` while
the prompt waits or runs), ``/prompt``, ``/upload/image``, ``/system_stats``,
``/object_info/<class>``, ``/experiment/models/<folder>``, ``POST /history``
(``delete``), ``POST /queue`` (``delete``) and ``/interrupt`` (empty 200
answers). Like the real server it runs one prompt at a time, in order.

``GET /object_info/<class>`` answers the node descriptions recorded from
that server (:data:`NODES`, input lists shortened; ``{}`` for a class it
does not know), and validation finds a workflow's outputs the same way (the
classes with ``output_node: true``). An execution error's history entry is the
recorded one (``ImageToMask`` asked for the alpha channel of an RGB image:
``exception_message`` ending in a newline, ``exception_type``, ``traceback``
as a list of lines, ``current_inputs``, ``current_outputs``, ``meta`` empty).

``plan`` maps a sample id to a behaviour (``default`` for the others): ``fail``
(an execution error), ``rate`` (one 429 from a gateway first), ``hang`` (runs
until interrupted), ``queued`` (never leaves the queue), ``vanish`` (deleted
from the queue by another client right after it was queued) and
``interrupt`` (interrupted by another client while it runs).
``interrupt_seconds`` is how long an interrupt takes to land (the real server
checks for it between sampler steps): the prompt stays in ``queue_running``,
without a history entry, until then; ``interrupt_lands`` (an event) holds it
there until the test sets the event instead. ``missing`` names routes answered with
aiohttp's 404 (``/queue``: a proxy or a hosted API without it).

``stall_cancel`` makes the server never finish its answer to the cancel
requests (``POST /queue`` and ``/interrupt``): ``"silent"`` sends nothing,
``"trickle"`` sends the headers and then a byte every 0.2 s for ever (each
read is quick, so no per-read time-out fires). ``stalled`` is set when one
begins; :meth:`FakeComfyUI.stop` ends them.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from _servers import QuietServer, png_bytes

__all__ = ["FakeComfyUI", "SYSTEM_STATS", "TEXT_WORKFLOW"]

#: ``GET /system_stats`` (recorded; ram figures and argv as they were).
SYSTEM_STATS = {
    "system": {"os": "posix", "ram_total": 25324732416, "ram_free": 24201289728, "comfyui_version": "0.3.64",
               "required_frontend_version": "1.27.10", "installed_templates_version": "0.1.95",
               "required_templates_version": "0.1.95", "python_version": "3.11.7 (main) [GCC 12.2.0]",
               "pytorch_version": "2.13.0+cpu", "embedded_python": False,
               "argv": ["main.py", "--cpu", "--listen", "127.0.0.1", "--port", "8188"]},
    "devices": [{"name": "cpu", "type": "cpu", "index": None, "vram_total": 25324732416,
                 "vram_free": 23766679552, "torch_vram_total": 25324732416, "torch_vram_free": 23766679552}],
}

#: A text-to-image workflow of core nodes, with the placeholders the adapter fills.
TEXT_WORKFLOW = {
    "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "model.safetensors"}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"width": "{width}", "height": "{height}", "batch_size": 1}},
    "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "{prompt}", "clip": ["4", 1]}},
    "3": {"class_type": "KSampler", "inputs": {"seed": "{seed}", "steps": 4, "cfg": 1.0, "model": ["4", 0],
                                               "positive": ["6", 0], "latent_image": ["5", 0]}},
    "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["4", 2]}},
    "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "violin_{sample_id}"},
          "_meta": {"title": "Save Image"}},
}

#: Loader class -> (model folder, input naming the file).
LOADERS = {"CheckpointLoaderSimple": ("checkpoints", "ckpt_name"), "VAELoader": ("vae", "vae_name"),
           "LoraLoader": ("loras", "lora_name")}

_TOOLTIP = {"tooltip": "The name of the checkpoint (model) to load."}

#: ``GET /object_info/<class>`` of ComfyUI 0.3.64 (recorded; tooltips, defaults and long
#: choice lists left out): inputs, outputs, whether it is an output node.
NODES = {
    "CheckpointLoaderSimple": {"input": {"required": {"ckpt_name": [[]]}}, "output": ["MODEL", "CLIP", "VAE"], "output_node": False, "python_module": "nodes", "category": "loaders", "display_name": "Load Checkpoint"},  # noqa: E501
    "EmptyLatentImage": {"input": {"required": {"width": ["INT"], "height": ["INT"], "batch_size": ["INT"]}}, "output": ["LATENT"], "output_node": False, "python_module": "nodes", "category": "latent", "display_name": "Empty Latent Image"},  # noqa: E501
    "CLIPTextEncode": {"input": {"required": {"text": ["STRING"], "clip": ["CLIP"]}}, "output": ["CONDITIONING"], "output_node": False, "python_module": "nodes", "category": "conditioning", "display_name": "CLIP Text Encode (Prompt)"},  # noqa: E501
    "KSampler": {"input": {"required": {"model": ["MODEL"], "seed": ["INT"], "steps": ["INT"], "cfg": ["FLOAT"], "sampler_name": [["euler", "euler_cfg_pp", "euler_ancestral"]], "scheduler": [["simple", "sgm_uniform", "karras"]], "positive": ["CONDITIONING"], "negative": ["CONDITIONING"], "latent_image": ["LATENT"], "denoise": ["FLOAT"]}}, "output": ["LATENT"], "output_node": False, "python_module": "nodes", "category": "sampling", "display_name": "KSampler"},  # noqa: E501
    "VAEDecode": {"input": {"required": {"samples": ["LATENT"], "vae": ["VAE"]}}, "output": ["IMAGE"], "output_node": False, "python_module": "nodes", "category": "latent", "display_name": "VAE Decode"},  # noqa: E501
    "SaveImage": {"input": {"required": {"images": ["IMAGE"], "filename_prefix": ["STRING"]}, "hidden": {"prompt": "PROMPT", "extra_pnginfo": "EXTRA_PNGINFO"}}, "output": [], "output_node": True, "python_module": "nodes", "category": "image", "display_name": "Save Image"},  # noqa: E501
    "PreviewImage": {"input": {"required": {"images": ["IMAGE"]}, "hidden": {"prompt": "PROMPT", "extra_pnginfo": "EXTRA_PNGINFO"}}, "output": [], "output_node": True, "python_module": "nodes", "category": "image", "display_name": "Preview Image"},  # noqa: E501
    "MaskPreview": {"input": {"required": {"mask": ["MASK"]}, "hidden": {"prompt": "PROMPT", "extra_pnginfo": "EXTRA_PNGINFO"}}, "output": [], "output_node": True, "python_module": "comfy_extras.nodes_mask", "category": "mask", "display_name": "MaskPreview"},  # noqa: E501
    "LoadImage": {"input": {"required": {"image": [["example.png"]]}}, "output": ["IMAGE", "MASK"], "output_node": False, "python_module": "nodes", "category": "image", "display_name": "Load Image"},  # noqa: E501
    "ImageToMask": {"input": {"required": {"image": ["IMAGE"], "channel": [["red", "green", "blue", "alpha"]]}}, "output": ["MASK"], "output_node": False, "python_module": "comfy_extras.nodes_mask", "category": "mask", "display_name": "Convert Image to Mask"},  # noqa: E501
    "InvertMask": {"input": {"required": {"mask": ["MASK"]}}, "output": ["MASK"], "output_node": False, "python_module": "comfy_extras.nodes_mask", "category": "mask", "display_name": "InvertMask"},  # noqa: E501
    "ImageCompositeMasked": {"input": {"required": {"destination": ["IMAGE"], "source": ["IMAGE"], "x": ["INT"], "y": ["INT"], "resize_source": ["BOOLEAN"]}, "optional": {"mask": ["MASK"]}}, "output": ["IMAGE"], "output_node": False, "python_module": "comfy_extras.nodes_mask", "category": "image", "display_name": "ImageCompositeMasked"},  # noqa: E501
    "PreviewAny": {"input": {"required": {"source": ["*"]}}, "output": [], "output_node": True, "python_module": "comfy_extras.nodes_preview_any", "category": "utils", "display_name": "Preview Any"},  # noqa: E501
}

#: Classes whose images the fake writes to the temp folder (``type: temp``), as the real server does.
TEMP_OUTPUTS = ("PreviewImage", "MaskPreview")


def node_info(cls: str, models: dict) -> dict:
    """``GET /object_info/<cls>`` as the real server answers it (``{}`` for an unknown class)."""
    if cls not in NODES:
        return {}
    info = json.loads(json.dumps(NODES[cls]))
    if cls in LOADERS:
        folder, name = LOADERS[cls]
        info["input"]["required"][name] = [sorted(models.get(folder, {})), _TOOLTIP]
    order = {group: list(inputs) for group, inputs in info["input"].items()}
    outputs = info["output"]
    return {cls: {"input": info["input"], "input_order": order, "output": outputs,
                  "output_is_list": [False] * len(outputs), "output_name": outputs, "name": cls,
                  "display_name": info["display_name"], "description": "",
                  "python_module": info["python_module"], "category": info["category"],
                  "output_node": info["output_node"]}}


def output_nodes(workflow: dict) -> list:
    """The workflow's output nodes, as the real server's validation finds them."""
    return [n for n, node in workflow.items() if NODES.get(node["class_type"], {}).get("output_node")]


def _validation_400(node_errors: dict) -> dict:
    """The recorded 400 body of ``POST /prompt`` for a workflow that fails validation."""
    return {"error": {"type": "prompt_outputs_failed_validation", "message": "Prompt outputs failed validation",
                      "details": "", "extra_info": {}},
            "node_errors": node_errors}


def _node_error(class_type: str, outputs: list, *errors) -> dict:
    return {"errors": list(errors), "dependent_outputs": outputs, "class_type": class_type}




class FakeComfyUI:
    """See the module docstring.

    Parameters
    ----------
    samples : dict
        Sample id -> sample: a finished prompt's image is the sample's
        expected image (the sample id is read from a ``violin_<id>`` input).
    plan : dict, optional
        Sample id -> behaviour.
    auth : str, optional
        The ``Authorization`` header every request must carry.
    models : dict, optional
        Folder -> {file name: (size, modified)}; the checkpoints a
        ``CheckpointLoaderSimple`` may name (default one, ``model.safetensors``).
    job_seconds : float
        How long each prompt runs (one at a time).
    stall_cancel : str, optional
        ``"silent"`` or ``"trickle"``: the cancel requests are never answered
        in full (see the module docstring).
    default : str
        The behaviour of samples ``plan`` does not name.
    interrupt_seconds : float
        How long an interrupt takes to land.
    interrupt_lands : threading.Event, optional
        Set by the test when an interrupt may land (then ``interrupt_seconds`` is not used).
    missing : tuple of str
        Path prefixes answered 404 (``"/queue"``, ``"/object_info"``).
    """

    def __init__(self, samples: dict, plan: dict | None = None, auth: str | None = None,
                 models: dict | None = None, job_seconds: float = 0.0, stall_cancel: str | None = None,
                 default: str = "ok", interrupt_seconds: float = 0.0, missing: tuple = (),
                 interrupt_lands: threading.Event | None = None):
        self.samples = samples
        self.plan = dict(plan or {})
        self.default = default
        self.interrupt_seconds = float(interrupt_seconds)
        self.interrupt_lands = interrupt_lands
        self.missing = tuple(missing)
        self.auth = auth
        self.models = models if models is not None else {
            "checkpoints": {"model.safetensors": (2132625894, 1764547200.0)}}
        self.job_seconds = float(job_seconds)
        self.uploads: dict[str, bytes] = {}
        self.prompts: dict[str, dict] = {}
        self.pending: list[str] = []
        self.running: str | None = None
        self.history: dict[str, dict] = {}
        self.queued: list[dict] = []
        self.rated: set = set()
        self.deleted: list = []
        self.history_deleted: list = []
        self.interrupted: list = []
        self.requests: list[tuple[str, str]] = []
        self.number = 0
        self.polled = threading.Event()
        self.interrupt_seen = threading.Event()
        self.stall_cancel = stall_cancel
        self.stalled = threading.Event()
        self._released = threading.Event()
        self._wake = threading.Condition()
        self._stop = False
        self.lock = threading.RLock()
        self.server = QuietServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        threading.Thread(target=self._worker, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self._released.set()
        with self._wake:
            self._stop = True
            self._wake.notify_all()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- the execution thread: one prompt at a time, in order ----------------------------
    def _worker(self) -> None:
        while True:
            with self._wake:
                while not self._stop and not any(self.prompts[p]["kind"] != "queued" for p in self.pending):
                    self._wake.wait(0.5)
                if self._stop:
                    return
                pid = next(p for p in self.pending if self.prompts[p]["kind"] != "queued")
                self.pending.remove(pid)
                self.running = pid
            p = self.prompts[pid]
            seconds = 10**6 if p["kind"] in ("hang", "interrupt") else self.job_seconds
            with self._wake:
                end = time.monotonic() + seconds
                while not self._stop and not p.get("cancelled") and time.monotonic() < end:
                    self._wake.wait(min(0.05, max(0.0, end - time.monotonic())))
                if p.get("cancelled"):  # the interrupt lands at the next step: still running until then
                    landed = time.monotonic() + self.interrupt_seconds
                    while not self._stop and not self._interrupt_landed(landed):
                        self._wake.wait(0.02)
                self.running = None
                if self._stop:
                    return
                self.history[pid] = self.entry(pid, interrupted=bool(p.get("cancelled")))

    def _interrupt_landed(self, at: float) -> bool:
        if self.interrupt_lands is not None:
            return self.interrupt_lands.is_set()
        return time.monotonic() >= at

    def entry(self, pid: str, interrupted: bool = False) -> dict:
        """A history entry as the real server writes it when a prompt ends."""
        p = self.prompts[pid]
        ts = int(time.time() * 1000)
        messages = [["execution_start", {"prompt_id": pid, "timestamp": ts}],
                    ["execution_cached", {"nodes": [], "prompt_id": pid, "timestamp": ts}]]
        head = [p["number"], pid, p["workflow"], {"client_id": p["client_id"]}, p["outputs"]]
        if interrupted:
            messages.append(["execution_interrupted", {"prompt_id": pid, "node_id": p["outputs"][0],
                                                       "node_type": "SaveImage", "executed": [], "timestamp": ts}])
            return {"prompt": head, "outputs": {}, "status": {"status_str": "error", "completed": False,
                                                              "messages": messages}, "meta": {}}
        if p["kind"] == "fail":
            workflow = p["workflow"]
            node = next((n for n in workflow if workflow[n]["class_type"] == "ImageToMask"),
                        next((n for n in workflow if workflow[n]["class_type"] == "KSampler"), next(iter(workflow))))
            if workflow[node]["class_type"] == "ImageToMask":  # recorded: the alpha of an RGB image
                kind, text, where = "IndexError", "index 3 is out of bounds for dimension 3 with size 3\n", (
                    '  File "/srv/ComfyUI/comfy_extras/nodes_mask.py", line 137, in image_to_mask\n'
                    '    mask = image[:, :, :, channels.index(channel)]\n')
            else:  # an out-of-memory error: execution.py adds its tips after the message
                kind, text, where = "torch.OutOfMemoryError", (
                    "CUDA out of memory. Tried to allocate 2.00 GiB\nThis error means you ran out of memory on "
                    "your GPU.\n\nTIPS: If the workflow worked before you might have accidentally set the "
                    "batch_size to a large number."), '  File "/srv/ComfyUI/comfy/samplers.py", line 1040\n'
            messages.append(["execution_error", {
                "prompt_id": pid, "node_id": node, "node_type": workflow[node]["class_type"], "executed": [],
                "exception_message": text, "exception_type": kind,
                "traceback": ['  File "/srv/ComfyUI/execution.py", line 277, in process_inputs\n    result = '
                              'f(**inputs)\n             ^^^^^^^^^^^\n', where],
                "current_inputs": {"image": ["tensor([[[[0.7843, 0.7843, 0.7843], ...]]])"]},
                "current_outputs": list(p["outputs"]), "timestamp": ts}])
            return {"prompt": head, "outputs": {}, "status": {"status_str": "error", "completed": False,
                                                              "messages": messages}, "meta": {}}
        outputs = {}
        order = list(p["outputs"])
        random.shuffle(order)  # the real order follows the server's per-process hash seed
        for node_id in order:
            kind = "temp" if p["workflow"][node_id]["class_type"] in TEMP_OUTPUTS else "output"
            name = f"violin_{pid}_{node_id}_00001_.png" if kind == "output" else f"ComfyUI_temp_{pid}_{node_id}_.png"
            outputs[node_id] = {"images": [{"filename": name, "subfolder": "", "type": kind}]}
        messages.append(["execution_success", {"prompt_id": pid, "timestamp": ts}])
        return {"prompt": head, "outputs": outputs,
                "status": {"status_str": "success", "completed": True, "messages": messages},
                "meta": {n: {"node_id": n, "display_node": n, "parent_node": None, "real_node_id": n}
                         for n in outputs}}

    # -- validation as the real server does it -------------------------------------------
    def validate(self, workflow: dict) -> dict:
        """``node_errors`` for ``workflow`` (empty when it is valid)."""
        outputs = output_nodes(workflow)
        errors = {}
        for nid, node in workflow.items():
            cls, inputs = node["class_type"], node.get("inputs", {})
            if cls in LOADERS:
                folder, name = LOADERS[cls]
                choices = sorted(self.models.get(folder, {}))
                value = inputs.get(name)
                if value not in choices:
                    errors[nid] = _node_error(cls, outputs, {
                        "type": "value_not_in_list", "message": "Value not in list",
                        "details": f"{name}: '{value}' not in {choices}",
                        "extra_info": {"input_name": name, "input_config": [choices, _TOOLTIP],
                                       "received_value": value}})
            elif cls == "LoadImage" and inputs.get("image") not in self.uploads:
                errors[nid] = _node_error(cls, outputs, {
                    "type": "custom_validation_failed", "message": "Custom validation failed for node",
                    "details": f"image - Invalid image file: {inputs.get('image')}",
                    "extra_info": {"input_name": "image"}})
            elif cls == "KSampler" and not isinstance(inputs.get("seed"), int):
                errors[nid] = _node_error(cls, outputs, {
                    "type": "invalid_input_type", "message": "Failed to convert an input value to a INT value",
                    "details": f"seed, {inputs.get('seed')}, invalid literal for int() with base 10: "
                               f"'{inputs.get('seed')}'",
                    "extra_info": {"input_name": "seed", "input_config": ["INT", {"default": 0, "min": 0}],
                                   "received_value": inputs.get("seed"),
                                   "exception_message": "invalid literal for int() with base 10"}})
            elif cls == "EmptyLatentImage":
                width = inputs.get("width")
                if width is None:
                    errors[nid] = _node_error(cls, outputs, {
                        "type": "required_input_missing", "message": "Required input is missing",
                        "details": "width", "extra_info": {"input_name": "width"}})
                elif isinstance(width, int) and width > 16384:
                    errors[nid] = _node_error(cls, outputs, {
                        "type": "value_bigger_than_max", "message": f"Value {width} bigger than max of 16384",
                        "details": "width", "extra_info": {"input_name": "width", "input_config": [
                            "INT", {"default": 512, "min": 16, "max": 16384, "step": 8}], "received_value": width}})
        return errors

    def _sid(self, workflow: dict) -> str | None:
        for node in workflow.values():
            for value in node.get("inputs", {}).values():
                if isinstance(value, str) and value.startswith("violin_"):
                    return value.removeprefix("violin_")
        return None

    # -- HTTP ------------------------------------------------------------------------------
    def _handler(self):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, status, obj=None, body=None, ctype="application/json; charset=utf-8", headers=()):
                data = json.dumps(obj).encode() if body is None else body
                self.send_response(status)
                if ctype is not None:
                    self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_GET(self):
                owner.route(self, "GET")

            def do_POST(self):
                owner.route(self, "POST")

        return Handler

    def route(self, h, method):
        path = urlsplit(h.path).path
        with self.lock:
            self.requests.append((method, path))
        if self.auth and h.headers.get("Authorization") != self.auth:
            return h.send(401, body=b"401: Unauthorized", ctype="text/plain; charset=utf-8")
        if method == "GET" and path.startswith(self.missing or ("\0",)):
            return h.send(404, body=b"404: Not Found", ctype="text/plain; charset=utf-8")
        if method == "GET" and path == "/system_stats":
            return h.send(200, SYSTEM_STATS)
        if method == "GET" and path.startswith("/object_info/"):
            return h.send(200, node_info(unquote(path.rsplit("/", 1)[1]), self.models))
        if method == "GET" and path.startswith("/experiment/models/"):
            folder = unquote(path.rsplit("/", 1)[1])
            if folder not in ("checkpoints", "vae", "loras", "diffusion_models", "text_encoders"):
                return h.send(404, body=b"", ctype=None)
            return h.send(200, [{"name": n, "pathIndex": 0, "modified": m, "created": m, "size": s}
                                for n, (s, m) in sorted(self.models.get(folder, {}).items())])
        if method == "POST" and path == "/upload/image":
            msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(
                b"Content-Type: " + h.headers["Content-Type"].encode() + b"\r\n\r\n" + h.body())
            fields = {part.get_param("name", header="content-disposition"): part for part in msg.iter_parts()}
            if "image" not in fields:
                return h.send(400, body=b"", ctype=None)
            image = fields["image"]
            name = image.get_filename()
            with self.lock:
                self.uploads[name] = image.get_payload(decode=True)
            kind = fields["type"].get_content().strip() if "type" in fields else "input"
            return h.send(200, {"name": name, "subfolder": "", "type": kind})
        if method == "POST" and path == "/prompt":
            return self._post_prompt(h)
        if method == "GET" and path.startswith("/history/"):
            pid = path.rsplit("/", 1)[1]
            with self.lock:
                body = {pid: self.history[pid]} if pid in self.history else {}
            self.polled.set()
            return h.send(200, body)
        if method == "POST" and path == "/history":
            with self.lock:
                for pid in json.loads(h.body()).get("delete", []):
                    self.history_deleted.append(pid)
                    self.history.pop(pid, None)
            return h.send(200, body=b"", ctype=None)
        if method == "GET" and path == "/view":
            query = {k: v[0] for k, v in parse_qs(urlsplit(h.path).query, keep_blank_values=True).items()}
            pid = next((p for p in self.prompts if p in query.get("filename", "")), None)
            if pid is None or query.get("subfolder") != "":
                return h.send(404, body=b"", ctype=None)
            sample = self.samples[self.prompts[pid]["sid"]]
            return h.send(200, body=png_bytes(sample.expected()), ctype="image/png")
        if method == "GET" and path == "/queue":
            with self.lock:
                item = lambda p: [self.prompts[p]["number"], p, self.prompts[p]["workflow"],  # noqa: E731
                                  {"client_id": self.prompts[p]["client_id"]}, self.prompts[p]["outputs"]]
                body = {"queue_running": [item(self.running)] if self.running else [],
                        "queue_pending": [item(p) for p in self.pending]}
            return h.send(200, body)
        if self.stall_cancel and method == "POST" and path in ("/queue", "/interrupt"):
            return self._stall(h)
        if method == "POST" and path == "/queue":
            with self._wake:
                for pid in json.loads(h.body()).get("delete", []):
                    self.deleted.append(pid)
                    if pid in self.pending:
                        self.pending.remove(pid)
            return h.send(200, body=b"", ctype=None)
        if method == "POST" and path == "/interrupt":
            pid = json.loads(h.body() or b"{}").get("prompt_id")
            with self._wake:
                self.interrupted.append(pid)
                if self.running and pid in (None, self.running):
                    self.prompts[self.running]["cancelled"] = True
                self._wake.notify_all()
            self.interrupt_seen.set()
            return h.send(200, body=b"", ctype=None)
        return h.send(404, body=b"404: Not Found", ctype="text/plain; charset=utf-8")

    def _stall(self, h) -> None:
        """Never finish the answer (``stall_cancel``), until :meth:`stop`."""
        self.stalled.set()
        if self.stall_cancel == "trickle":
            h.send_response(200)
            h.send_header("Content-Length", str(10**6))
            h.end_headers()
            while not self._released.wait(0.2):
                try:
                    h.wfile.write(b" ")
                    h.wfile.flush()
                except OSError:  # the client gave up
                    return
        else:
            self._released.wait()
        h.close_connection = True

    def _post_prompt(self, h):
        payload = json.loads(h.body())
        if "prompt" not in payload:
            return h.send(400, {"error": {"type": "no_prompt", "message": "No prompt provided",
                                          "details": "No prompt provided", "extra_info": {}}, "node_errors": {}})
        workflow = payload["prompt"]
        sid = self._sid(workflow)
        kind = self.plan.get(sid, self.default)
        with self._wake:
            self.queued.append(payload)
            if kind == "rate" and sid not in self.rated:
                self.rated.add(sid)
                return h.send(429, {"error": "too many requests"}, headers=[("Retry-After", "0")])
            errors = self.validate(workflow)
            if errors:
                return h.send(400, _validation_400(errors))
            outputs = output_nodes(workflow)
            if not outputs:
                return h.send(400, {"error": {"type": "prompt_no_outputs", "message": "Prompt has no outputs",
                                              "details": "", "extra_info": {}}, "node_errors": {}})
            pid = str(uuid.uuid4())
            self.number += 1
            self.prompts[pid] = {"workflow": workflow, "kind": kind, "sid": sid, "number": self.number,
                                 "client_id": payload.get("client_id"), "outputs": outputs}
            if kind != "vanish":  # 'vanish': another client deleted it from the queue at once
                self.pending.append(pid)
            self._wake.notify_all()
        if kind == "interrupt":
            threading.Thread(target=self._interrupt_when_running, args=(pid,), daemon=True).start()
        return h.send(200, {"prompt_id": pid, "number": self.number, "node_errors": {}})

    def _interrupt_when_running(self, pid: str) -> None:
        with self._wake:  # another client presses "cancel" in the web UI once it runs
            while self.running != pid and not self._stop:
                self._wake.wait(0.05)
            self.prompts[pid]["cancelled"] = True
            self._wake.notify_all()


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
    """The adapter's history polls 4 times as often: a test of a prompt that runs or vanishes waits
    tenths of a second, not seconds. A shorter wait between polls moves no deadline."""
    from pytest_violin.models.comfyui import adapter

    monkeypatch.setattr(adapter, "FIRST_WAIT", adapter.FIRST_WAIT / 4)
    monkeypatch.setattr(adapter, "MAX_WAIT", adapter.MAX_WAIT / 4)
