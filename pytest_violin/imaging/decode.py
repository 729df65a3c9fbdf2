"""The front door: :func:`as_rgb8`, :func:`decode_image`, and which reader they use.

:func:`as_rgb8` checks the reader (``reader=`` or the process-wide choice of
:func:`set_reader`) and hands the object to
:mod:`~pytest_violin.imaging.pillow_reader` or
:mod:`~pytest_violin.imaging.opencv_reader`. The pytest plugin sets
``"opencv"`` for a run of profile ``violin``
(:meth:`pytest_violin.pytest_plugin.state.ViolinState.use_profile_reader`) and
restores the previous reader when the run ends.
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import InvalidImageError
from .bounds import MAX_DECODED_BYTES, MAX_PIXELS
from .opencv_reader import read as _read_opencv
from .pillow_reader import read as _read_pillow

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
    """Turn an image-like object into an ``(H, W, 3)`` uint8 RGB array.

    Parameters
    ----------
    obj : array_like, PIL.Image.Image, bytes, str or os.PathLike
        * numpy array: gray ``(H, W)`` or ``(H, W, 1)``, RGB ``(H, W, 3)``
          or RGBA ``(H, W, 4)``; dtype ``uint8``, ``uint16`` (rescaled),
          ``bool`` (0/255) or floating point in ``[0, 1]``.
        * a PIL image of any mode;
        * encoded image bytes (PNG, JPEG, WebP, ...);
        * a path to an image file (a regular, non-empty file: directories,
          FIFOs, devices and ``/proc`` files are refused).

        RGBA inputs are composited over black: a transparent pixel is a
        black pixel (``reader="pillow"``; see ``reader``).
    max_pixels : int, optional
        Largest accepted ``width * height`` (default :data:`MAX_PIXELS`).
    max_bytes : int, optional
        Largest accepted decoded size of encoded and PIL images, from the
        header (default :data:`MAX_DECODED_BYTES`; see
        :func:`decoded_size`). Arrays are already in memory and are bounded
        by ``max_pixels`` only.
    reader : {"pillow", "opencv"}, optional
        How pixels are read (default: :func:`current_reader`, ``"pillow"``
        unless a run of profile ``violin`` set ``"opencv"``). ``"pillow"``:
        alpha composited over black, 16-bit values rounded
        (``v * 255 / 65535``), EXIF orientation applied. ``"opencv"``: as
        the Violin reference scripts read files, ``cv2.imread(path)``:
        encoded data is decoded by ``cv2.imdecode(..., IMREAD_COLOR)`` (alpha
        dropped, 16 bits truncated to the high byte, CMYK and palettes
        converted by OpenCV's codecs, EXIF orientation applied); an array
        has its alpha dropped and 16-bit values truncated (what saving it
        as PNG and reading it back with ``cv2.imread`` gives); a PIL image
        of a mode PNG can hold is read as that PNG. The same header checks
        (``max_pixels``, ``max_bytes``) come first in both.

    Returns
    -------
    numpy.ndarray
        C-contiguous ``uint8`` array of shape ``(H, W, 3)``. A uint8 RGB
        input is returned without a copy. The conversion works in blocks
        of rows: besides the result, it allocates only a few megabytes,
        whatever the input's dtype and mode. Decodes of encoded images
        share a process-wide budget (:data:`DECODE_BUDGET_BYTES`): when
        threads decode large images at once, the later ones wait.

    Raises
    ------
    InvalidImageError
        (a ``ValueError``) for anything else, empty images, NaN or
        out-of-range floats, undecodable bytes, missing or special files,
        and images over ``max_pixels`` or ``max_bytes``; the message names
        what was received and what is accepted, never the bytes of a
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
    """Decode PNG, JPEG, WebP (or any format Pillow reads) bytes to RGB uint8.

    The header is read first and the pixel count and decoded size checked
    before any pixel is decoded, so a decompression bomb is refused cheaply.

    Parameters
    ----------
    data : bytes
        The encoded image.
    max_pixels : int, optional
        Largest accepted width * height.
    max_bytes : int, optional
        Largest accepted decoded size (:data:`MAX_DECODED_BYTES`).

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` uint8 RGB.

    Raises
    ------
    InvalidImageError
        Zero bytes, bytes that are not an image, truncated data, or an image
        over ``max_pixels`` or ``max_bytes``.
    """
    return as_rgb8(bytes(data), max_pixels=max_pixels, max_bytes=max_bytes)
