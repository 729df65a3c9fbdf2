"""A ComfyUI workflow in the API format, with placeholders and one scored output.

The workflow is exported from ComfyUI in the **API format** ("Export (API)"): a JSON object of nodes ``{"3":
{"class_type": ..., "inputs": ...}}``. String values hold placeholders (:data:`PLACEHOLDERS`): ``{prompt}``,
``{seed}``, ``{width}``, ``{height}``, ``{image}`` and ``{mask}`` (plus ``{sample_id}``, ``{task}``,
``{repeat}`` and ``{size}``). A string that is exactly one placeholder keeps the value's type (``"{seed}"``
becomes an integer); ``{{`` and ``}}`` are literal braces.

The scored image comes from one output node: ``output`` (``?output=`` of the spec: a node id or a node's
``_meta.title``) names it; without it the workflow must have exactly one image output node, or the spec is
refused with the list of them. Which classes are image outputs the server says (``image_classes``, from its
``/object_info``: see :mod:`._server`); without its word, the core ones (:data:`IMAGE_OUTPUTS`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from ...errors import ModelSpecError
from ..http import RequestTemplate
from ..request import GenerationRequest

__all__ = ["IMAGE_OUTPUTS", "LOADER_FOLDERS", "MAX_WORKFLOW_BYTES", "PLACEHOLDERS", "Workflow"]

#: Placeholders a workflow may use.
PLACEHOLDERS = ("prompt", "seed", "width", "height", "image", "mask", "sample_id", "task", "repeat", "size")

#: ``{image}`` and ``{mask}`` are the request's first and second input images.
IMAGE_SLOTS = {"image": 0, "mask": 1}

#: Core node classes whose history output carries ``images`` (ComfyUI 0.3.64: the output nodes with an IMAGE
#: or MASK input), for a server that cannot say.
IMAGE_OUTPUTS = frozenset({"SaveImage", "PreviewImage", "MaskPreview", "SaveAnimatedWEBP", "SaveAnimatedPNG",
                           "SaveWEBM"})

#: Core loader classes and the model folder their file inputs name (for the cache key).
LOADER_FOLDERS = {
    "CheckpointLoaderSimple": "checkpoints", "CheckpointLoader": "checkpoints",
    "ImageOnlyCheckpointLoader": "checkpoints", "unCLIPCheckpointLoader": "checkpoints",
    "UNETLoader": "diffusion_models", "VAELoader": "vae", "CLIPLoader": "text_encoders",
    "DualCLIPLoader": "text_encoders", "TripleCLIPLoader": "text_encoders", "LoraLoader": "loras",
    "LoraLoaderModelOnly": "loras", "ControlNetLoader": "controlnet", "DiffControlNetLoader": "controlnet",
    "CLIPVisionLoader": "clip_vision", "StyleModelLoader": "style_models",
    "UpscaleModelLoader": "upscale_models", "GLIGENLoader": "gligen", "HypernetworkLoader": "hypernetworks",
}

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")

#: Largest workflow file read, in bytes.
MAX_WORKFLOW_BYTES = 4 * 2**20


def _describe(node_id: str, node: dict) -> str:
    title = node.get("_meta", {}).get("title") if isinstance(node.get("_meta"), dict) else None
    return f"{node_id} ({node.get('class_type')}" + (f", title {title!r})" if title else ")")


class Workflow:
    """A ComfyUI API-format workflow with placeholders.

    * ``output``: the node id or ``_meta.title`` of the output node whose image is scored (``?output=``).
    * ``image_classes``: the node classes whose images reach the history, or a function of the workflow's
      class names returning them (None: it cannot tell); default and fallback :data:`IMAGE_OUTPUTS`.

    Raises :class:`ModelSpecError` for a UI-format workflow, one that is not a JSON object of nodes, an
    unknown placeholder, no ``{prompt}``, an ``output`` naming no node, or several image outputs and no
    ``output``.
    """

    def __init__(self, body: Any, source: str = "workflow", output: str | None = None,
                 image_classes: frozenset | Callable[[frozenset], frozenset | None] | None = None):
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
        self.body = body
        self.used: set[str] = set()
        translated = self._translate(body, "$")
        if "prompt" not in self.used:
            raise ModelSpecError(f"{source} has no {{prompt}} placeholder: every sample would get the same image")
        self.template = RequestTemplate(translated, source=source)
        self.digest = self.template.digest
        self.slots = sorted(IMAGE_SLOTS[name] for name in self.used & set(IMAGE_SLOTS))
        if callable(image_classes):
            image_classes = image_classes(frozenset(str(node["class_type"]) for node in body.values()))
        self.image_classes = IMAGE_OUTPUTS if image_classes is None else frozenset(image_classes)
        self.outputs = [str(k) for k, node in body.items() if node.get("class_type") in self.image_classes]
        self.output = self._choose(output)
        self.loaders = sorted({str(node["class_type"]) for node in body.values()
                               if "Loader" in str(node["class_type"]) or node["class_type"] in LOADER_FOLDERS})

    def _choose(self, output) -> str | None:
        listed = ", ".join(_describe(k, self.body[k]) for k in self.outputs) or "none"
        if output is None or str(output) == "":
            if len(self.outputs) > 1:
                raise ModelSpecError(
                    f"{self.source} has {len(self.outputs)} image outputs: {listed}; which one is scored "
                    "would depend on the server's execution order: choose one with comfyui:URL?output=NODE_ID "
                    "(or ?output=TITLE, a node's title)")
            return None
        output = str(output)
        if output in self.body:
            return output
        titled = [k for k, node in self.body.items()
                  if isinstance(node.get("_meta"), dict) and node["_meta"].get("title") == output]
        if len(titled) == 1:
            return str(titled[0])
        raise ModelSpecError(
            f"{self.source}: ?output={output!r} is " + ("the title of several nodes" if titled else
                                                        "no node id or title of the workflow")
            + f"; accepted: a node id or title, such as the image outputs {listed}")

    @classmethod
    def from_file(cls, path: Path, output: str | None = None, image_classes=None) -> "Workflow":
        """Load a workflow file (UTF-8 JSON, a regular file of at most :data:`MAX_WORKFLOW_BYTES`,
        nested at most :data:`pytest_violin._fs.DEFAULT_JSON_DEPTH` deep)."""
        from ..._fs import read_option_json

        path = Path(path)
        shown = f"workflow {str(path)!r}"
        body = read_option_json(path, what="--violin-workflow", limit=MAX_WORKFLOW_BYTES,
                                error=ModelSpecError)
        return cls(body, source=shown, output=output, image_classes=image_classes)

    def masks_read_from_alpha(self) -> list:
        """``LoadImage`` nodes reading ``{mask}`` whose MASK output (its second) a node uses.

        ``LoadImage``'s MASK is ``1 - alpha`` of the file, all zeros for an image without alpha: an RGB mask
        upload read that way is an empty mask.
        """
        readers = {str(k) for k, node in self.body.items() if node.get("class_type") == "LoadImage"
                   and any(isinstance(v, str) and "{mask}" in v for v in (node.get("inputs") or {}).values())}
        used = set()
        for node in self.body.values():
            for value in (node.get("inputs") or {}).values() if isinstance(node.get("inputs"), dict) else ():
                if (isinstance(value, list) and len(value) == 2 and str(value[0]) in readers
                        and value[1] == 1):
                    used.add(str(value[0]))
        return sorted(used)

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
            if name in IMAGE_SLOTS:
                return f"{{images[{IMAGE_SLOTS[name]}]}}"
            return match.group(0)

        return _TOKEN.sub(sub, node)

    def missing_placeholders(self, inputs: int) -> list:
        """Placeholders a sample with ``inputs`` input images needs that the workflow lacks."""
        return [name for name, slot in IMAGE_SLOTS.items() if slot < inputs and slot not in self.slots]

    def render(self, request: GenerationRequest, names: list) -> Any:
        """The workflow for ``request``; ``names``: the uploaded input images."""
        return self.template.render(request, list(names))
