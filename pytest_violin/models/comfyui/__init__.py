"""``comfyui:URL`` with ``--violin-workflow=FILE``: a ComfyUI server (docs/models.md, "ComfyUI").

The workflow (:mod:`.workflow`, API format with ``{prompt}``, ``{seed}``, ``{image}``, ``{mask}``
... placeholders) is checked against the server before the first prompt: which nodes put images in
the history comes from ``GET /object_info`` (:mod:`._server`), so several image outputs without
``?output=NODE`` are a usage error, and so is a ``{mask}`` read through ``LoadImage``'s MASK output
without ``?mask=alpha``. One sample uploads its input images, queues the prompt (a 400 is a setup
error naming every node error), polls its history with the queue telling waiting from running from
vanished (:mod:`.adapter`), downloads the chosen output, and leaves nothing in the queue or history
(:mod:`._server`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ...errors import ModelSpecError, ViolinWarning
from ..registry import split_params
from .._transport.client import client_from_options
from .._transport.origins import check_url
from .adapter import MASK_MODES, ComfyUIAdapter
from ._server import image_output_classes
from .workflow import IMAGE_OUTPUTS, PLACEHOLDERS, Workflow

__all__ = ["PLACEHOLDERS", "ComfyUIAdapter", "Workflow", "create"]


def create(target: str, options) -> ComfyUIAdapter:
    """Factory for ``comfyui:URL[?output=NODE&mask=rgb|alpha&history=keep]`` (with ``--violin-workflow=FILE``).

    Raises :class:`ModelSpecError`: for a URL without host, a missing ``--violin-workflow``, an invalid
    workflow file, an unknown parameter or value, several image outputs and no ``?output=``, a ``{mask}`` read
    through ``LoadImage``'s MASK output without ``?mask=alpha``.
    """
    target = (target or "").strip()
    if not target:
        raise ModelSpecError("comfyui: no server URL given; accepted: comfyui:URL such as "
                             "comfyui:http://127.0.0.1:8188")
    if "://" not in target:
        target = f"http://{target}"
    target, params = split_params(target, what="comfyui")
    output = params.pop("output", None)
    mask = str(params.pop("mask", "rgb")).strip().lower()
    if mask not in MASK_MODES:
        raise ModelSpecError(f"comfyui: mask={mask!r} is not accepted; accepted: "
                             + ", ".join(f"mask={m}" for m in MASK_MODES))
    history = str(params.pop("history", "delete")).strip().lower()
    if history not in ("keep", "delete"):
        raise ModelSpecError(f"comfyui: history={history!r} is not accepted; accepted: history=keep, "
                             "history=delete")
    if params:
        raise ModelSpecError(f"comfyui: unknown parameter {sorted(params)[0]!r}; accepted: output=NODE_ID "
                             "(or a node title), mask=rgb|alpha, history=keep|delete")
    base, auth = check_url(target, what="comfyui URL")
    extra = getattr(options, "extra", None) or {}
    path = extra.get("workflow")
    if not path:
        raise ModelSpecError("comfyui: no workflow given; accepted: --violin-workflow=FILE, a workflow "
                             "exported in ComfyUI's API format with {prompt} and the other placeholders")
    path = Path(path)
    if not path.is_absolute():
        path = Path(options.rootdir) / path
    client = client_from_options(options, auth=auth, origins=(base,))

    def image_classes(classes):
        found, why = image_output_classes(client.session, base, classes, timeout=client.timeout)
        if found is None:
            warnings.warn(ViolinWarning(
                f"comfyui: the server's node list could not be read ({why}): the image outputs of "
                f"{path.name} are taken to be the core ones ({', '.join(sorted(IMAGE_OUTPUTS))}); a node "
                "of another class that shows images makes every sample a setup error"), stacklevel=3)
        return found

    try:
        workflow = Workflow.from_file(path, output=None if output is None else str(output),
                                      image_classes=image_classes)
        readers = workflow.masks_read_from_alpha()
        if readers and mask != "alpha":
            raise ModelSpecError(
                f"comfyui: {workflow.source} reads {{mask}} through the MASK output of LoadImage node "
                f"{', '.join(readers)}, which is 1 - alpha of the file, but mask={mask} uploads the mask "
                "without alpha: that MASK would be empty and every answer the unchanged source; accepted: "
                "comfyui:URL?mask=alpha (the mask in the alpha channel), or read the mask's IMAGE output "
                "(ImageToMask, channel red)")
    except BaseException:
        client.close()
        raise
    return ComfyUIAdapter(base, client, workflow, mask=mask, keep_history=history == "keep")
