"""Images out: PNG bytes (:func:`encode_png`), base64 PNG text and ``data:`` URIs.

What adapters send to image APIs. Anything :func:`pytest_violin.imaging.as_rgb8`
accepts is read first (with the current reader), then written by OpenCV.
"""

from __future__ import annotations

import base64

import cv2

from ..errors import InvalidImageError
from .decode import as_rgb8


def encode_png(image, *, compression: int = 1) -> bytes:
    """Encode an image (anything :func:`as_rgb8` accepts) as PNG bytes.

    Parameters
    ----------
    image : image-like
        The image.
    compression : int, optional
        zlib level 0-9; the default 1 favours speed.

    Returns
    -------
    bytes
        The PNG file content.
    """
    rgb = as_rgb8(image)
    ok, buf = cv2.imencode(".png", rgb[:, :, ::-1], [cv2.IMWRITE_PNG_COMPRESSION, int(compression)])
    if not ok:  # pragma: no cover - OpenCV only fails on invalid input
        raise InvalidImageError("PNG encoding failed")
    return buf.tobytes()


def png_base64(image) -> str:
    """An image (anything :func:`as_rgb8` accepts) as base64 PNG text, as image APIs take inputs."""
    return base64.b64encode(encode_png(image)).decode("ascii")


def png_data_uri(image) -> str:
    """An image as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + png_base64(image)
