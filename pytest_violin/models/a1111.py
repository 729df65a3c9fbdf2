"""``a1111:URL``: AUTOMATIC1111 / SD.Next web UI API (docs/models.md).

``txt2img`` for text-only samples, ``img2img`` with the first input as ``init_images`` otherwise; the mask
task sends the mask with ``inpainting_mask_invert: 1`` (A1111 repaints white, the task changes the black part;
``?mask=off`` leaves it to the prompt). ``user:password@`` in the URL becomes Basic auth, registered as a
secret. Other ``?name=value`` parameters are added to every body, typed.
"""

from __future__ import annotations


from ._transport.origins import check_url
from ._transport.answers import image_from_response
from ._transport.client import HttpClient, client_from_options
from ..errors import ModelSpecError
from ..imaging import png_base64
from ..redaction import redact_url
from .registry import format_params, parse_switch, split_params
from .request import GenerationRequest, NetworkAdapter

__all__ = ["A1111Adapter", "create"]


class A1111Adapter(NetworkAdapter):
    """Adapter for the A1111 / SD.Next API; ``send_mask``: send the mask of two-input samples as ``mask``."""

    #: a server of one's own: no default --violin-max-calls (execution.usage.adapter_bills)
    bills = False

    def __init__(self, base_url: str, client: HttpClient, *, params: dict | None = None,
                 send_mask: bool = True):
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.params = dict(params or {})
        self.send_mask = bool(send_mask)
        shown = dict(self.params)
        if not self.send_mask:
            shown["mask"] = "off"
        self.identity = f"a1111:{redact_url(self.base_url)}{format_params(shown)}"

    def body(self, request: GenerationRequest) -> tuple[str, dict]:
        """``(endpoint path, JSON body)`` for ``request``."""
        body = {
            "prompt": request.prompt,
            "negative_prompt": "",
            "width": int(request.width),
            "height": int(request.height),
            "seed": int(request.seed),
            "batch_size": 1,
            "n_iter": 1,
            "send_images": True,
            "save_images": False,
        }
        path = "/sdapi/v1/txt2img"
        if request.images:
            path = "/sdapi/v1/img2img"
            body["init_images"] = [png_base64(request.images[0])]
            if self.send_mask and request.task == "mask" and len(request.images) >= 2:
                body["mask"] = png_base64(request.images[1])
                body["inpainting_mask_invert"] = 1
        body.update(self.params)
        return path, body

    def generate(self, request: GenerationRequest):
        """Run txt2img or img2img; return ``images[0]``."""
        path, body = self.body(request)
        with self.client.sample():
            result = self.client.post_json(self.base_url + path, body, what="POST")
            return image_from_response(result, response_path=("images", 0), fetch=self.client.fetch)


def create(target: str, options) -> A1111Adapter:
    """Factory for ``a1111:http://[user:password@]host:port[?name=value...]``.

    Raises :class:`ModelSpecError`: for a missing or non-http(s) URL, or malformed parameters.
    """
    target = (target or "").strip()
    if not target:
        raise ModelSpecError("a1111: no URL given; accepted: a1111:http://127.0.0.1:7860")
    url, params = split_params(target, what="a1111")
    url, auth = check_url(url, what="a1111 URL")
    send_mask = parse_switch(params.pop("mask", True), name="mask", what="a1111", allowed=())
    client = client_from_options(options, auth=auth, origins=(url,))
    return A1111Adapter(url, client, params=params, send_mask=send_mask)
