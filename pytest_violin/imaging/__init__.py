"""Image input and output at the edges of the package.

:func:`as_rgb8` is the one place where anything image-like becomes an ``(H, W, 3)`` ``uint8`` RGB array; every
metric, sample and adapter goes through it, so the accepted inputs and the error messages are the same
everywhere. :mod:`._bounds` (internal) holds the pixel and decoded-byte caps, the header checks, the shared
decode budget (``_bounds._DECODE_BUDGET``) and regular-file opening.

Two readers: :func:`read_pillow` is this package's own (``reader="pillow"``, the default): gray replicated,
alpha composited over black, 16-bit values rounded (``v * 255 / 65535``), floats in [0, 1] rounded, EXIF
orientation applied, converted in blocks of rows (:data:`_BLOCK_PIXELS`) so no full-size 32-bit or float copy
is made. :func:`read_opencv` reads as the Violin reference scripts do, ``cv2.imread`` (profile ``violin``):
alpha dropped, 16 bits truncated to the high byte, CMYK and palettes converted by OpenCV's codecs; an array as
saving it as PNG and reading it back would give. Pillow reads the header first, so the checks are the same for
both. A run of profile ``violin`` (the plugin's, :func:`~pytest_violin.evaluate`'s) reads with ``"opencv"``
(:func:`use_reader`): the choice is a context variable, so it holds for that run's threads only.
"""

from __future__ import annotations

import base64
import contextvars
import io
import math
import os
from pathlib import Path

import cv2
import numpy as np
from PIL import ExifTags, Image, ImageOps

from ..errors import ImageSizeMismatchError, InvalidImageError
from ._bounds import (_DECODE_ERRORS, ACCEPTED_INPUTS, DECODE_BUDGET_BYTES, MAX_DECODED_BYTES, MAX_PIXELS,
                      _check_array, _check_bytes, _check_pixels, _fail, _open_checked, _open_regular, _reason,
                      _working_bytes, decoded_size, file_kind, probe_image_file, run_budgeted)

__all__ = ["RGB8", "MAX_PIXELS", "png_base64", "png_data_uri", "MAX_DECODED_BYTES", "DECODE_BUDGET_BYTES",
           "ACCEPTED_INPUTS", "as_rgb8", "decoded_size", "file_kind", "probe_image_file", "encode_png",
           "decode_image", "resize_rgb8", "check_same_size", "READERS", "reader_for", "current_reader",
           "use_reader", "restore_reader"]

#: Conversions work on blocks of rows of about this many pixels, so no full-size intermediate copy (32-bit or
#: float) is ever made.
_BLOCK_PIXELS = 1 << 18


def _rows_per_block(width: int) -> int:
    return max(1, _BLOCK_PIXELS // max(int(width), 1))


def _row_blocks(height: int, width: int):
    step = _rows_per_block(width)
    for r0 in range(0, height, step):
        yield r0, min(r0 + step, height)


def _block_to_uint8(arr: np.ndarray) -> np.ndarray:
    """One block of a validated array as uint8, with the same arithmetic as ever."""
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8) * 255
    if arr.dtype == np.uint16:
        return ((arr.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)
    return np.rint(arr.astype(np.float64) * 255.0).astype(np.uint8)


def _composite_over_black(rgba: np.ndarray) -> np.ndarray:
    alpha = rgba[:, :, 3]
    rgb = rgba[:, :, :3]
    if (alpha == 255).all():
        return rgb
    a = alpha.astype(np.uint32)[:, :, None]
    return ((rgb.astype(np.uint32) * a + 127) // 255).astype(np.uint8)


def _store_block(out: np.ndarray, r0: int, r1: int, block: np.ndarray) -> None:
    """Write one converted (uint8) block into ``out`` (gray replicated, alpha composited)."""
    if block.ndim == 2:
        out[r0:r1] = block[:, :, None]
    elif block.shape[2] == 4:
        out[r0:r1] = _composite_over_black(block)
    else:
        out[r0:r1] = block


def _check_dtype(dtype, original) -> None:
    if not (dtype in (np.uint8, np.bool_, np.uint16) or np.issubdtype(dtype, np.floating)):
        raise _fail(original, f"unsupported dtype {dtype}")


def _check_floats(blocks, original) -> None:
    """Refuse NaN, infinities and values outside [0, 1], scanning block by block."""
    lo, hi = math.inf, -math.inf
    for block in blocks():
        if not np.isfinite(block).all():
            raise _fail(original, "array contains NaN or infinite values")
    for block in blocks():
        lo, hi = min(lo, float(block.min())), max(hi, float(block.max()))
    if lo < 0.0 or hi > 1.0:
        raise _fail(original, f"float values must lie in [0, 1], found [{lo:g}, {hi:g}]")


def _convert_blocks(height: int, width: int, get_block, dtype, original) -> np.ndarray:
    """Fill a new ``(height, width, 3)`` uint8 array from ``get_block(r0, r1)`` rows."""
    _check_dtype(dtype, original)
    if np.issubdtype(dtype, np.floating):
        _check_floats(lambda: (get_block(r0, r1) for r0, r1 in _row_blocks(height, width)),
                      original)
    out = np.empty((height, width, 3), np.uint8)
    for r0, r1 in _row_blocks(height, width):
        _store_block(out, r0, r1, _block_to_uint8(get_block(r0, r1)))
    return out


def _array_to_rgb8(arr: np.ndarray, original, max_pixels: int) -> np.ndarray:
    arr = _check_array(arr, original, max_pixels)
    if arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] == 3:
        return np.ascontiguousarray(arr)
    height, width = arr.shape[:2]
    return _convert_blocks(height, width, lambda r0, r1: arr[r0:r1], arr.dtype, original)


def _pil_block_array(img: Image.Image, original) -> np.ndarray:
    """The pixels of one (cropped) PIL image as the array its mode stands for."""
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I;16N"):
        return np.asarray(img).astype(np.uint16)
    if mode == "I":
        arr = np.asarray(img)
        if arr.size and (arr.min() < 0 or arr.max() > 65535):
            raise _fail(original, "32-bit integer image outside 0..65535")
        return arr.astype(np.uint16)
    if mode == "F":
        return np.asarray(img, dtype=np.float32)
    if mode in ("RGB", "L"):
        return np.asarray(img)
    if "A" in mode or mode == "P" and "transparency" in img.info:
        return np.asarray(img.convert("RGBA"))
    return np.asarray(img.convert("RGB"))


def _upright(img: Image.Image, owned: bool) -> Image.Image:
    """``img`` turned as its EXIF orientation says; a copy only when it must turn."""
    img.load()
    orientation = img.getexif().get(ExifTags.Base.Orientation, 1)
    if orientation not in (2, 3, 4, 5, 6, 7, 8):
        return img
    if owned:
        ImageOps.exif_transpose(img, in_place=True)
        return img
    return ImageOps.exif_transpose(img)


def _pil_to_rgb8(img: Image.Image, original, max_pixels: int, max_bytes: int, *,
                 owned: bool = False) -> np.ndarray:
    width, height = img.size
    _check_pixels(original, height, width, max_pixels)
    _check_bytes(original, img, max_bytes)
    try:
        img = _upright(img, owned)
        width, height = img.size
        first = _pil_block_array(img.crop((0, 0, width, min(height, 1))), original)
        return _convert_blocks(
            height, width,
            lambda r0, r1: _pil_block_array(img.crop((0, r0, width, r1)), original),
            first.dtype, original)
    except InvalidImageError:
        raise
    except _DECODE_ERRORS as exc:
        raise _fail(original, f"image data could not be decoded ({_reason(exc)})") from None


def _decode_stream(fh, original, max_pixels: int, max_bytes: int) -> np.ndarray:
    """Decode the image in the binary file object ``fh``.

    Takes a stream, never the bytes, so no traceback frame of this module shows the data as an argument; every
    error is one line without a chained exception.
    """
    img = _open_checked(fh, original, max_pixels, max_bytes)
    try:
        return run_budgeted(_working_bytes(img), _load_rgb8, img, original, max_pixels, max_bytes)
    finally:
        img.close()


def _load_rgb8(img: Image.Image, original, max_pixels: int, max_bytes: int) -> np.ndarray:
    try:
        img.load()
    except _DECODE_ERRORS as exc:
        raise _fail(original, f"image data is truncated or corrupt ({_reason(exc)})") from None
    return _pil_to_rgb8(img, original, max_pixels, max_bytes, owned=True)


def _open_path(path: Path, original, max_pixels: int, max_bytes: int) -> np.ndarray:
    """Decode the image file at ``path`` (see :func:`_open_regular`)."""
    with _open_regular(path, original) as fh:
        return _decode_stream(fh, original, max_pixels, max_bytes)


def read_pillow(obj, max_pixels: int, max_bytes: int) -> np.ndarray:
    """``obj`` (anything :func:`pytest_violin.imaging.as_rgb8` accepts) read by Pillow."""
    if isinstance(obj, np.ndarray):
        return _array_to_rgb8(obj, obj, max_pixels)
    if isinstance(obj, Image.Image):
        return _pil_to_rgb8(obj, obj, max_pixels, max_bytes)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        if len(obj) == 0:
            raise _fail(obj, "zero bytes of image data")
        return _decode_stream(io.BytesIO(obj), obj, max_pixels, max_bytes)
    if isinstance(obj, (str, os.PathLike)):
        return _open_path(Path(obj), obj, max_pixels, max_bytes)
    raise _fail(obj, "unsupported input type")


# ---------------------------------------------------------------- the reference's reading (cv2.imread)


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


def read_opencv(obj, max_pixels: int, max_bytes: int) -> np.ndarray:
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


#: How :func:`as_rgb8` reads pixels: ``"pillow"`` (this package's own choices) or ``"opencv"``
#: (``cv2.imread``, as the Violin reference scripts read answer and ground-truth files).
READERS = ("pillow", "opencv")

#: The reader of :func:`as_rgb8` when it is given none. A context variable, not a process-wide setting: a run
#: sets it for itself and the threads it starts run in copies of its context
#: (:func:`pytest_violin._threads.carried`), so two runs in one process, each in its own thread, read with
#: their own readers.
_READER: contextvars.ContextVar[str] = contextvars.ContextVar("pytest_violin_reader", default="pillow")


def _check_reader(reader) -> str:
    if reader not in READERS:
        raise InvalidImageError(f"unknown image reader {reader!r}; accepted: {', '.join(READERS)}")
    return reader


def reader_for(profile: str) -> str:
    """The reader a run of ``profile`` reads with: ``"opencv"`` for ``violin`` (as the reference reads
    files), ``"pillow"`` otherwise."""
    return "opencv" if profile == "violin" else "pillow"


def current_reader() -> str:
    """The reader :func:`as_rgb8` uses when given none: the running evaluation's (or pytest run's), in its
    threads; ``"pillow"`` outside a run."""
    return _READER.get()


def use_reader(reader: str) -> contextvars.Token:
    """Make ``reader`` the default of :func:`as_rgb8` in the calling context (this thread, and what it hands
    to other threads through :func:`pytest_violin._threads.carried`); give the returned token to
    :func:`restore_reader`, in the same thread, to undo it."""
    return _READER.set(_check_reader(reader))


def restore_reader(token: contextvars.Token) -> None:
    """Undo the :func:`use_reader` call that returned ``token``."""
    _READER.reset(token)


class RGB8(np.ndarray):
    """An ``(H, W, 3)`` uint8 image that :func:`as_rgb8` already accepted where it entered
    (the runner marks every generated image so): :func:`as_rgb8` returns it as it is, so the layers inside (a
    sample's score, the metrics, the diagnosis) never read it again. An array derived from it (a slice,
    another dtype) is checked again unless it is still a
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
        * numpy array: gray ``(H, W)`` or ``(H, W, 1)``, RGB ``(H, W, 3)`` or RGBA ``(H, W, 4)``; dtype
          ``uint8``, ``uint16`` (rescaled), ``bool`` (0/255) or floating point in ``[0, 1]``; a uint8 RGB
          array is returned without a copy;
        * a PIL image of any mode;
        * encoded image bytes (PNG, JPEG, WebP, ...);
        * a path to an image file (a regular, non-empty file: directories, FIFOs, devices and ``/proc`` files
          are refused).
    max_pixels : int, optional
        Largest accepted ``width * height``.
    max_bytes : int, optional
        Largest accepted decoded size of encoded and PIL images, from the header (:func:`decoded_size`);
        arrays are bounded by ``max_pixels`` only.
    reader : {"pillow", "opencv"}, optional
        Default :func:`current_reader`: ``"opencv"`` in a run of profile ``violin`` (its threads), else
        ``"pillow"``.
        ``"pillow"`` composites alpha over black (a transparent pixel is a black pixel), rounds 16-bit values
        (``v * 255 / 65535``) and applies the EXIF orientation. ``"opencv"`` reads as the Violin reference
        scripts do, ``cv2.imread(path)``: alpha dropped, 16 bits truncated to the high byte, CMYK and palettes
        converted by OpenCV's codecs, EXIF orientation applied (an array or PIL image as it reads back from a
        PNG). The same header checks come first in both.

    The conversion works in blocks of rows: besides the result it allocates only a few megabytes, whatever the
    input's dtype and mode. Decodes of encoded images share a process-wide budget
    (:data:`DECODE_BUDGET_BYTES`): when threads decode large images at once, the later ones wait.

    Anything else, empty images, NaN or out-of-range floats, undecodable bytes, missing or special files and
    images over ``max_pixels`` or ``max_bytes`` are an :class:`~pytest_violin.errors.InvalidImageError` (a
    ``ValueError``) that names what was received and what is accepted, never the bytes of a file, and chains
    no other exception.

    Examples
    --------
    >>> import numpy as np
    >>> as_rgb8(np.zeros((2, 3), dtype=np.uint8)).shape
    (2, 3, 3)
    """
    if _trusted(obj, max_pixels):
        return obj
    chosen = reader or _READER.get()
    if chosen != "pillow":
        _check_reader(chosen)
        return read_opencv(obj, max_pixels, max_bytes)
    return read_pillow(obj, max_pixels, max_bytes)


def decode_image(data: bytes, *, max_pixels: int = MAX_PIXELS,
                 max_bytes: int = MAX_DECODED_BYTES) -> np.ndarray:
    """Decode PNG, JPEG, WebP (or any format Pillow reads) bytes to ``(H, W, 3)`` uint8 RGB.

    The header is read first and the pixel count and decoded size checked against ``max_pixels`` and
    ``max_bytes`` before any pixel is decoded, so a decompression bomb is refused cheaply; zero bytes, bytes
    that are not an image and truncated data are an :class:`~pytest_violin.errors.InvalidImageError` too.
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
