"""Which of a workflow's nodes put images in the history: asked of the server's own node list.

A node's images reach the history entry when it is an *output node* that
shows them (``SaveImage``, ``PreviewImage``, ``MaskPreview``, a custom
node's preview). ``GET /object_info/CLASS`` describes each class the
workflow uses; a class is an image output when the server says
``output_node: true`` and one of its inputs takes an ``IMAGE`` or a ``MASK``
(:func:`shows_images`). A server that cannot tell (no answer, no such route,
an answer that is not a node description) leaves the core classes
(:data:`~.workflow.IMAGE_OUTPUTS`), and the caller says so.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from ...redaction import redact
from .housekeeping import bounded

__all__ = ["IMAGE_TYPES", "NODE_INFO_BYTES", "NODE_INFO_DEADLINE", "image_output_classes", "shows_images"]

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

    One ``GET /object_info/CLASS`` per class, through ``session``, each within
    ``timeout`` seconds (``--violin-timeout``), all within
    :data:`NODE_INFO_DEADLINE` seconds. A class the server does not know
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
