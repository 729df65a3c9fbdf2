"""Small data-URI thumbnails for the HTML report.

For each sample the report shows three thumbnails: the expected image, the generated image and a heat map of
their difference. They are computed on the process that scored the sample (an xdist worker), encoded as tiny
PNG or JPEG data URIs, and travel to the controller in ``SampleResult.extra``.
"""

from __future__ import annotations

import base64

import cv2
import numpy as np

from ..imaging import as_rgb8, resize_rgb8
from ..errors import InternalError, InvalidArgumentError

__all__ = ["HEATMAP_TICKS", "THUMBNAIL_SIZE", "thumbnail", "diff_heatmap", "data_uri", "heatmap_position",
           "heatmap_scale", "encode_image", "make_thumbnails"]

#: Longest side of a thumbnail, in pixels.
THUMBNAIL_SIZE = 96

_CHANNEL_MEAN = np.full((1, 3), 1.0 / 3.0)
_SQRT_LUT = np.rint(np.sqrt(np.arange(256) / 255.0) * 255.0).astype(np.uint8)


def _target(h: int, w: int, size: int) -> tuple[int, int]:
    """``(width, height)`` with the longest side at most ``size``, aspect kept."""
    scale = min(1.0, size / max(h, w))
    return max(1, round(w * scale)), max(1, round(h * scale))


def _shrink(rgb: np.ndarray, size: int) -> np.ndarray:
    """Fast shrink so the longest side is ``size``: bilinear to twice the
    target, then area averaging (cheap, and no worse than a plain area
    resize at this size)."""
    h, w = rgb.shape[:2]
    tw, th = _target(h, w, size)
    if (tw, th) == (w, h):
        return rgb
    if w > 4 * tw and h > 4 * th:
        rgb = cv2.resize(rgb, (2 * tw, 2 * th), interpolation=cv2.INTER_LINEAR)
    return cv2.resize(rgb, (tw, th), interpolation=cv2.INTER_AREA)


def thumbnail(image, size: int = THUMBNAIL_SIZE) -> np.ndarray:
    """``image`` (anything :func:`~pytest_violin.imaging.as_rgb8` accepts) shrunk so that its
    longest side is at most ``size`` pixels, the aspect ratio kept."""
    if int(size) < 1:
        raise InvalidArgumentError(f"thumbnail size must be >= 1, got {size!r}")
    return _shrink(as_rgb8(image), int(size))


def diff_heatmap(image, expected, size: int = THUMBNAIL_SIZE) -> np.ndarray:
    """RGB heat map of ``|image - expected|`` at thumbnail size (*inferno*: black identical,
    yellow a full-range difference).

    ``image`` is first resized to the expected size (as scoring does); the difference is taken at twice the
    thumbnail resolution (a full-resolution one costs more than the rest of the report), averaged over the
    channels and put on a square-root scale, so that small deviations stay visible (10/255 is already a fifth
    of the way up).
    """
    exp = as_rgb8(expected)
    gen = resize_rgb8(as_rgb8(image), exp.shape[1], exp.shape[0])
    work = 2 * int(size)
    diff = cv2.absdiff(_shrink(gen, work), _shrink(exp, work))
    gray = cv2.transform(diff, _CHANNEL_MEAN)  # uint8 mean of the three channels
    tw, th = _target(exp.shape[0], exp.shape[1], int(size))
    small = cv2.resize(gray, (tw, th), interpolation=cv2.INTER_AREA)
    colored = cv2.applyColorMap(cv2.LUT(small, _SQRT_LUT), cv2.COLORMAP_INFERNO)
    return np.ascontiguousarray(colored[:, :, ::-1])


#: Differences (levels of 255, mean of the channels) marked on the heat map's scale.
HEATMAP_TICKS = (0, 4, 16, 64, 128, 255)


def heatmap_scale(stops: int = 16) -> list[tuple[float, str]]:
    """``(position, "#rrggbb")`` of ``stops`` colours along :func:`diff_heatmap`'s legend bar,
    from 0 (identical) to 1 (a difference of 255); a difference ``d`` sits at ``sqrt(d / 255)``."""
    n = max(2, int(stops))
    positions = np.linspace(0.0, 1.0, n)
    levels = np.rint(positions * 255.0).astype(np.uint8).reshape(1, n)
    bgr = cv2.applyColorMap(levels, cv2.COLORMAP_INFERNO)[0]
    return [(float(p), "#%02x%02x%02x" % (int(c[2]), int(c[1]), int(c[0]))) for p, c in zip(positions, bgr)]


def heatmap_position(difference: float) -> float:
    """Where a difference of ``difference`` levels (0-255) sits on the scale (0-1)."""
    return float(np.sqrt(min(max(float(difference), 0.0), 255.0) / 255.0))


def _flat(rgb: np.ndarray, limit: float = 0.08) -> bool:
    """True for images made of flat areas: at most ``limit`` of the
    horizontally adjacent pixel pairs differ (synthetic ground truths and
    clean outputs; noise and photographs differ almost everywhere)."""
    flat = rgb.astype(np.uint32)
    packed = ((flat[:, :, 0] << 16) | (flat[:, :, 1] << 8) | flat[:, :, 2]).ravel()
    if packed.size < 2:
        return True
    return np.count_nonzero(packed[1:] != packed[:-1]) <= limit * (packed.size - 1)


def data_uri(image, *, quality: int = 80) -> str:
    """A small image as a PNG ``data:`` URI when it is made of flat areas (ground truths,
    clean outputs: lossless, a few hundred bytes), else JPEG (``quality``; a few kB)."""
    data, mime = encode_image(image, quality=quality)
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def encode_image(image, *, quality: int = 80) -> tuple[bytes, str]:
    """``(bytes, mime type)``: PNG for images of flat areas, JPEG (``quality``) for the rest,
    as :func:`data_uri` chooses (also used for the images attached to pytest-html and Allure)."""
    rgb = as_rgb8(image)
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    if _flat(rgb):
        ok, buf = cv2.imencode(".png", bgr, [cv2.IMWRITE_PNG_COMPRESSION, 3])
        mime = "image/png"
    else:
        ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
        mime = "image/jpeg"
    if not ok:  # pragma: no cover - OpenCV fails only on invalid input
        raise InternalError("image could not be encoded")
    return buf.tobytes(), mime


def make_thumbnails(expected, generated, *, size: int = THUMBNAIL_SIZE, inputs=()) -> dict:
    """Data URIs of one sample's ``source`` and ``mask`` (its ``inputs``: the mask task),
    ``expected``, ``generated`` and ``diff`` thumbnails, where they exist.

    ``expected`` None skips the expected and difference thumbnails (the plugin does so for passing samples,
    whose difference is near black: no second render of the ground truth); ``generated`` is None when
    generation failed.
    """
    out = {}
    for name, image in zip(("source", "mask"), inputs or ()):
        out[name] = data_uri(_shrink(as_rgb8(image), size))
    exp = None if expected is None else as_rgb8(expected)
    if exp is not None:
        out["expected"] = data_uri(_shrink(exp, size))
    if generated is not None:
        gen = as_rgb8(generated)
        out["generated"] = data_uri(_shrink(gen, size))
        if exp is not None:
            out["diff"] = data_uri(diff_heatmap(gen, exp, size))
    return out
