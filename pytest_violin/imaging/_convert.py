"""Images in and out: :func:`as_rgb8`, :func:`decode_image` and which reader they use; PNG out; resizing.

:func:`as_rgb8` checks the reader (``reader=`` or the process-wide choice of
:func:`set_reader`) and hands the object to
:func:`~._readers.read_pillow` or :func:`~._readers.read_opencv`. The pytest
plugin sets ``"opencv"`` for a run of profile ``violin`` and restores the
previous reader when the run ends. What adapters send to image APIs
(:func:`encode_png`, base64 PNG text and ``data:`` URIs) is read first with
the current reader, then written by OpenCV.
"""

from __future__ import annotations

import base64
import threading

import cv2
import numpy as np

from ..errors import ImageSizeMismatchError, InvalidImageError
from ._bounds import MAX_DECODED_BYTES, MAX_PIXELS
from ._readers import read_opencv as _read_opencv
from ._readers import read_pillow as _read_pillow

#: How :func:`as_rgb8` reads pixels: ``"pillow"`` (this package's own
#: choices) or ``"opencv"`` (``cv2.imread``, as the Violin reference scripts
#: read answer and ground-truth files).
READERS = ("pillow", "opencv")
_READER = ["pillow"]
_READER_LOCK = threading.Lock()


def _check_reader(reader) -> str:
    if reader not in READERS:
        raise InvalidImageError(f"unknown image reader {reader!r}; accepted: {', '.join(READERS)}")
    return reader


def current_reader() -> str:
    """The process-wide default reader of :func:`as_rgb8` (``"pillow"`` or ``"opencv"``)."""
    return _READER[0]


def set_reader(reader: str) -> str:
    """Set the process-wide default reader of :func:`as_rgb8`; return the previous one.

    The pytest plugin sets ``"opencv"`` for a run of profile ``violin``
    (every adapter's answer, replayed files and ground-truth files are then
    read as the reference reads them) and restores the previous reader
    when the run ends. Process-wide on purpose: adapters decode in the
    runner's threads.
    """
    _check_reader(reader)
    with _READER_LOCK:
        previous, _READER[0] = _READER[0], reader
    return previous


class RGB8(np.ndarray):
    """An ``(H, W, 3)`` uint8 image that :func:`as_rgb8` already accepted where it entered
    (the runner marks every generated image so): :func:`as_rgb8` returns it as it is, so the
    layers inside (a sample's score, the metrics, the diagnosis) never read it again. An
    array derived from it (a slice, another dtype) is checked again unless it is still a
    C-contiguous ``(H, W, 3)`` uint8 within the pixel cap (what the check would accept as is)."""

    @classmethod
    def trusted(cls, image: np.ndarray) -> "RGB8":
        """Mark an array :func:`as_rgb8` returned (no copy)."""
        return image.view(cls)


def _trusted(obj, max_pixels: int) -> bool:
    return (type(obj) is RGB8 and obj.dtype == np.uint8 and obj.ndim == 3 and obj.shape[2] == 3
            and obj.flags.c_contiguous and obj.shape[0] * obj.shape[1] <= max_pixels)


def as_rgb8(obj, *, max_pixels: int = MAX_PIXELS, max_bytes: int = MAX_DECODED_BYTES,
            reader: str | None = None) -> np.ndarray:
    """Turn an image-like object into a C-contiguous ``(H, W, 3)`` uint8 RGB array.

    Parameters
    ----------
    obj : array_like, PIL.Image.Image, bytes, str or os.PathLike
        * numpy array: gray ``(H, W)`` or ``(H, W, 1)``, RGB ``(H, W, 3)``
          or RGBA ``(H, W, 4)``; dtype ``uint8``, ``uint16`` (rescaled),
          ``bool`` (0/255) or floating point in ``[0, 1]``; a uint8 RGB array
          is returned without a copy;
        * a PIL image of any mode;
        * encoded image bytes (PNG, JPEG, WebP, ...);
        * a path to an image file (a regular, non-empty file: directories,
          FIFOs, devices and ``/proc`` files are refused).
    max_pixels : int, optional
        Largest accepted ``width * height``.
    max_bytes : int, optional
        Largest accepted decoded size of encoded and PIL images, from the
        header (:func:`decoded_size`); arrays are bounded by ``max_pixels`` only.
    reader : {"pillow", "opencv"}, optional
        Default :func:`current_reader`: ``"pillow"`` unless a run of profile
        ``violin`` set ``"opencv"``. ``"pillow"`` composites alpha over black (a
        transparent pixel is a black pixel), rounds 16-bit values
        (``v * 255 / 65535``) and applies the EXIF orientation. ``"opencv"``
        reads as the Violin reference scripts do, ``cv2.imread(path)``: alpha
        dropped, 16 bits truncated to the high byte, CMYK and palettes
        converted by OpenCV's codecs, EXIF orientation applied (an array or
        PIL image as it reads back from a PNG). The same header checks come
        first in both.

    The conversion works in blocks of rows: besides the result it allocates
    only a few megabytes, whatever the input's dtype and mode. Decodes of
    encoded images share a process-wide budget (:data:`DECODE_BUDGET_BYTES`):
    when threads decode large images at once, the later ones wait.

    Anything else, empty images, NaN or out-of-range floats, undecodable bytes,
    missing or special files and images over ``max_pixels`` or ``max_bytes``
    are an :class:`~pytest_violin.errors.InvalidImageError` (a ``ValueError``)
    that names what was received and what is accepted, never the bytes of a
    file, and chains no other exception.

    Examples
    --------
    >>> import numpy as np
    >>> as_rgb8(np.zeros((2, 3), dtype=np.uint8)).shape
    (2, 3, 3)
    """
    if _trusted(obj, max_pixels):
        return obj
    chosen = reader or _READER[0]
    if chosen != "pillow":
        _check_reader(chosen)
        return _read_opencv(obj, max_pixels, max_bytes)
    return _read_pillow(obj, max_pixels, max_bytes)


def decode_image(data: bytes, *, max_pixels: int = MAX_PIXELS,
                 max_bytes: int = MAX_DECODED_BYTES) -> np.ndarray:
    """Decode PNG, JPEG, WebP (or any format Pillow reads) bytes to ``(H, W, 3)`` uint8 RGB.

    The header is read first and the pixel count and decoded size checked
    against ``max_pixels`` and ``max_bytes`` before any pixel is decoded, so a
    decompression bomb is refused cheaply; zero bytes, bytes that are not an
    image and truncated data are an :class:`~pytest_violin.errors.InvalidImageError` too.
    """
    return as_rgb8(bytes(data), max_pixels=max_pixels, max_bytes=max_bytes)


def encode_png(image, *, compression: int = 1) -> bytes:
    """The PNG file content of an image (anything :func:`as_rgb8` accepts); ``compression`` is
    the zlib level 0-9 (the default 1 favours speed).
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


def resize_rgb8(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 image resized to ``width`` x ``height`` (``image`` itself when it has that size).

    Area averaging when shrinking (no aliasing), bilinear when enlarging.
    """
    h, w = image.shape[:2]
    if (w, h) == (width, height):
        return image
    interp = cv2.INTER_AREA if (width < w and height < h) else cv2.INTER_LINEAR
    return cv2.resize(image, (int(width), int(height)), interpolation=interp)


def check_same_size(image: np.ndarray, expected: np.ndarray) -> None:
    """Raise :class:`ImageSizeMismatchError` unless both arrays have the same first two dimensions."""
    if image.shape[:2] != expected.shape[:2]:
        raise ImageSizeMismatchError(
            f"image shape {tuple(image.shape)} does not match expected shape "
            f"{tuple(expected.shape)}; both images must have the same height and width"
        )
