"""The opencv reader: images read as the Violin reference scripts read them, ``cv2.imread``.

Used under profile ``violin`` (``reader="opencv"`` of
:func:`pytest_violin.imaging.as_rgb8`): encoded data is decoded by
``cv2.imdecode(..., IMREAD_COLOR)`` (alpha dropped, 16 bits truncated to the
high byte, CMYK and palettes converted by OpenCV's codecs, EXIF orientation
applied); an array has its alpha dropped and 16-bit values truncated (what
saving it as PNG and reading it back with ``cv2.imread`` gives); a PIL image
of a mode PNG can hold is read as that PNG. Pillow reads the header first,
so the checks of :mod:`pytest_violin.imaging.bounds` are the same for both
readers.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .bounds import (_DECODE_ERRORS, _check_array, _check_bytes, _check_pixels, _fail, run_budgeted,
                     _open_checked, _open_regular, _reason)
from .pillow_reader import _array_to_rgb8, _convert_blocks, _pil_to_rgb8


def _cv_array(arr: np.ndarray, original, max_pixels: int) -> np.ndarray:
    """An array as ``cv2.imread`` would read it back from a PNG: alpha dropped, 16 bits truncated."""
    arr = _check_array(arr, original, max_pixels)
    if arr.ndim == 3 and arr.shape[2] == 4:
        arr = arr[:, :, :3]
    if arr.dtype == np.uint16:
        height, width = arr.shape[:2]
        return _convert_blocks(height, width, lambda r0, r1: (arr[r0:r1] >> 8).astype(np.uint8),
                               np.dtype(np.uint8), original)
    return _array_to_rgb8(arr, original, max_pixels)


#: PIL modes a PNG holds as they are: such an image is read as its PNG.
_PNG_MODES = ("1", "L", "LA", "P", "RGB", "RGBA", "I;16", "I;16B", "I;16L", "I")


def _cv_decode(data, original, max_pixels: int, max_bytes: int) -> np.ndarray:
    """Decode encoded bytes with ``cv2.imdecode(IMREAD_COLOR)`` after Pillow's header checks."""
    with _open_checked(io.BytesIO(data), original, max_pixels, max_bytes) as img:
        width, height = img.size
    return run_budgeted(width * height * 7, _cv_rgb8, data, original)


def _cv_rgb8(data, original) -> np.ndarray:
    try:
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    except cv2.error:
        bgr = None
    if bgr is None or bgr.ndim != 3 or bgr.shape[2] != 3:
        raise _fail(original, "OpenCV cannot decode this image (cv2.imread, which the "
                              "reference scripts read files with, returns None for it)")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB, dst=bgr)  # in place: no second full-size copy


def read(obj, max_pixels: int, max_bytes: int) -> np.ndarray:
    """``obj`` (anything :func:`pytest_violin.imaging.as_rgb8` accepts) read as ``cv2.imread`` reads it."""
    if isinstance(obj, np.ndarray):
        return _cv_array(obj, obj, max_pixels)
    if isinstance(obj, Image.Image):
        width, height = obj.size
        _check_pixels(obj, height, width, max_pixels)
        _check_bytes(obj, obj, max_bytes)
        if obj.mode not in _PNG_MODES:
            return _pil_to_rgb8(obj, obj, max_pixels, max_bytes)
        buf = io.BytesIO()
        try:
            obj.save(buf, format="PNG", compress_level=1)
        except _DECODE_ERRORS as exc:
            raise _fail(obj, f"image could not be encoded as PNG ({_reason(exc)})") from None
        return _cv_decode(buf.getvalue(), obj, max_pixels, max_bytes)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        if len(obj) == 0:
            raise _fail(obj, "zero bytes of image data")
        return _cv_decode(bytes(obj), obj, max_pixels, max_bytes)
    if isinstance(obj, (str, os.PathLike)):
        with _open_regular(Path(obj), obj) as fh:
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise _fail(obj, f"file is larger than {max_bytes} bytes, the decoded-size limit")
        return _cv_decode(data, obj, max_pixels, max_bytes)
    raise _fail(obj, "unsupported input type")
