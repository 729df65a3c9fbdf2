"""``comfyui:URL`` with ``--violin-workflow=FILE``: a ComfyUI server.

The workflow (:mod:`.workflow`) is exported in ComfyUI's API format, with
``{prompt}``, ``{seed}``, ``{width}``, ``{height}``, ``{image}``, ``{mask}``
... placeholders. Spec parameters: ``?output=NODE_ID`` (or a node's
``_meta.title``) chooses the scored image (required when the workflow has
several image outputs), ``?mask=rgb|alpha`` how the mask is uploaded
(:data:`~.adapter.MASK_MODES`), ``?history=keep`` leaves the prompts in the
server's history.

One sample:

1. each input image the workflow uses is uploaded with
   ``POST {URL}/upload/image`` (multipart ``image``, ``type=input``,
   ``overwrite=true``, a name derived from the pixels, so a second run
   overwrites the same files); ``{image}`` and ``{mask}`` become the names
   the server answers (for ``LoadImage``). A sample with input images and a
   workflow without the placeholder for them is a setup error;
2. ``POST {URL}/prompt`` with ``{"prompt": workflow, "client_id": ...}``
   queues it and answers ``prompt_id``; a 400 (the workflow fails
   validation: a checkpoint that is not there, a wrong input type) is a
   :class:`~pytest_violin.errors.SetupError` naming every node error;
3. ``GET {URL}/history/{prompt_id}`` is polled (empty until the prompt
   ends) with :func:`~pytest_violin.models.transport.jobs.poll_job`; while it
   is empty, ``GET {URL}/queue`` says whether the prompt waits
   (``queue_pending``: the sample's time budget has not started), runs, or
   vanished (deleted by another client, a restarted server: an error after a
   few polls). A server without ``GET /queue`` (404: a proxy, a hosted API)
   gets one warning, and its prompts count as running from the submit;
4. the chosen output's image is downloaded with ``GET {URL}/view?filename=
   ...&subfolder=...&type=...``;
5. whatever the outcome, the prompt leaves the server when the sample ends
   (:mod:`.housekeeping`): still queued, it is deleted from the queue;
   running (a time-out), interrupted; its history entry is deleted
   (``POST /history`` with ``delete``) once it exists. ComfyUI has no route
   that deletes uploaded inputs or saved outputs: ``SaveImage`` files stay in
   the server's output folder (use ``PreviewImage``, whose files go to the
   temp folder ComfyUI empties at each start; see docs/models.md).

Before the first prompt, the spec is checked against the server: which of
the workflow's nodes put images in the history comes from ``GET
/object_info/CLASS`` (:mod:`.nodes`; a server that cannot tell leaves the
core classes, with a :class:`~pytest_violin.errors.ViolinWarning`), so
several image outputs without ``?output=`` are a usage error; so is a
``{mask}`` read through ``LoadImage``'s MASK output without ``?mask=alpha``
(an RGB upload has no alpha: that mask is empty).

A history entry whose ``status.status_str`` is ``error`` with an
``execution_error`` (an exception inside a node: CUDA out of memory, a model file
missing at run time) is a :class:`~pytest_violin.errors.ServerCrashed`: an
error, never a score, its line naming the node, its class and the exception
(the same crash on the first samples stops the run, as a setup error does);
one interrupted by someone else is an error; a finished prompt without an
image is a setup error. On Ctrl-C the prompt is taken off the queue
(``POST /queue`` with ``delete``) and, only when ``GET /queue`` lists it as
running, interrupted (``POST /interrupt`` with the ``prompt_id``), all of it
within :data:`~.adapter.CANCEL_DEADLINE` seconds.

The cache key includes what the server reports of the models the workflow
loads and of its version (:meth:`~.adapter.ComfyUIAdapter.cache_identity`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ...errors import ModelSpecError, ViolinWarning
from .._params import split_params
from .._transport.client import client_from_options
from .._transport.origins import check_url
from .adapter import MASK_MODES, ComfyUIAdapter
from .nodes import image_output_classes
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
