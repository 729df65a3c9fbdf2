"""Image input and output at the edges of the package.

:func:`as_rgb8` is the one place where anything image-like becomes an
``(H, W, 3)`` ``uint8`` RGB array. Every metric, sample and adapter goes
through it, so the accepted inputs and the error messages are the same
everywhere.
"""

from __future__ import annotations

import base64

import io
import math
import os
import re
import stat
import struct
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

import cv2
import numpy as np
from PIL import ExifTags, Image, ImageMode, ImageOps, UnidentifiedImageError

from .errors import ImageSizeMismatchError, InvalidImageError

__all__ = [
    "MAX_PIXELS",
    "png_base64",
    "png_data_uri",
    "MAX_DECODED_BYTES",
    "DECODE_BUDGET_BYTES",
    "ACCEPTED_INPUTS",
    "as_rgb8",
    "decoded_size",
    "file_kind",
    "probe_image_file",
    "encode_png",
    "decode_image",
    "resize_rgb8",
    "check_same_size",
    "READERS",
    "set_reader",
    "current_reader",
]

#: Largest image, in pixels, that :func:`as_rgb8` accepts (64 megapixels).
#: A guard against decompression bombs in model answers.
MAX_PIXELS = 8192 * 8192

#: Largest decoded size, in bytes, of an encoded or PIL image that
#: :func:`as_rgb8` accepts: ``width * height * channels * bytes per
#: channel`` as the file's header declares it, read before any pixel is
#: decoded (:func:`decoded_size`). 256 MiB: a 64-megapixel 8-bit RGBA
#: image, or a 32-megapixel 16-bit RGBA one. The second guard against
#: decompression bombs: a 16-bit RGBA PNG of 8192 x 8192 passes
#: :data:`MAX_PIXELS` but is refused here.
MAX_DECODED_BYTES = 256 * 1024 * 1024

#: Conversions work on blocks of rows of about this many pixels, so no
#: full-size intermediate copy (32-bit or float) is ever made.
_BLOCK_PIXELS = 1 << 18

#: Working memory, in bytes, that the decodes of encoded images in
#: progress may hold together in one process (512 MiB). Each decode
#: reserves an estimate (:func:`_working_bytes`: Pillow's decoded image plus
#: the RGB result) before decoding and waits while the budget is taken:
#: many small images decode side by side, the largest ones (about 450 MiB
#: for 64-megapixel RGBA) one at a time, whatever the number of threads.
DECODE_BUDGET_BYTES = 512 * 1024 * 1024


class _Budget:
    """A process-wide byte budget shared by threads (a counting semaphore in bytes).

    A reservation larger than the whole budget is cut to it, so it runs
    alone rather than never. ``peak`` records the most ever reserved at
    once; ``waiting`` is set whenever a thread starts to wait (for tests).
    """

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.used = 0
        self.peak = 0
        self.waiting = threading.Event()
        self._cond = threading.Condition()

    @contextmanager
    def hold(self, nbytes: int):
        n = max(0, min(int(nbytes), self.capacity))
        with self._cond:
            if self.used + n > self.capacity:
                self.waiting.set()
                self._cond.wait_for(lambda: self.used + n <= self.capacity)
            self.used += n
            self.peak = max(self.peak, self.used)
        try:
            yield
        finally:
            with self._cond:
                self.used -= n
                self._cond.notify_all()


_DECODE_BUDGET = _Budget(DECODE_BUDGET_BYTES)

ACCEPTED_INPUTS = (
    "a numpy array (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) of uint8, uint16, bool "
    "or float in [0, 1]; a PIL image; encoded PNG/JPEG/WebP bytes; or a path to such a file"
)

# Everything a hostile file can make Pillow raise while identifying or
# decoding it; each becomes one InvalidImageError line.
_DECODE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, struct.error, IndexError,
                  KeyError, TypeError, ZeroDivisionError, OverflowError, MemoryError)


def _describe(obj) -> str:
    if isinstance(obj, np.ndarray):
        return f"numpy array of shape {obj.shape} and dtype {obj.dtype}"
    if isinstance(obj, (bytes, bytearray, memoryview)):
        head = bytes(obj[:16])
        return f"{len(obj)} bytes starting with {head!r}"
    if isinstance(obj, Image.Image):
        return f"PIL image of mode {obj.mode!r} and size {obj.size}"
    if isinstance(obj, (str, os.PathLike)):
        return f"path {os.fspath(obj)!r}"
    text = repr(obj)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(obj).__name__} {text}"


def _fail(obj, problem: str) -> InvalidImageError:
    """The error for ``obj``; ``problem`` alone is kept as its ``problem`` attribute."""
    exc = InvalidImageError(f"{problem}: got {_describe(obj)}; accepted: {ACCEPTED_INPUTS}")
    exc.problem = problem
    return exc


def file_kind(mode: int) -> str:
    """What a non-regular file is, from its ``st_mode``: ``"a FIFO"``, ``"a directory"``, ..."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _reason(exc: BaseException) -> str:
    """Pillow's message for ``exc``, or only its type when the message may quote data.

    Some decoders put bytes of the file into their messages (a PNG chunk
    name, a header field); a file given by path may be anything, so a
    message holding a bytes repr, control characters or more than a short
    line is replaced by the exception's type name.
    """
    text = str(exc)
    if (not text or len(text) > 120 or re.search(r"""\bb['"]""", text)
            or any(not ch.isprintable() for ch in text)):
        return type(exc).__name__
    return text


def _check_pixels(obj, height: int, width: int, max_pixels: int) -> None:
    if height <= 0 or width <= 0:
        raise _fail(obj, "empty image")
    if height * width > max_pixels:
        raise _fail(
            obj,
            f"image of {width}x{height} = {width * height} pixels is over the limit "
            f"of {max_pixels} pixels (possible decompression bomb)",
        )


def _raw_bits(img: Image.Image) -> int:
    """Bits per sample the file declares (``RGBA;16B`` -> 16), 0 when unknown."""
    bits = 0
    for tile in getattr(img, "tile", None) or ():
        args = getattr(tile, "args", None)
        if args is None and isinstance(tile, tuple) and len(tile) > 3:
            args = tile[3]
        rawmode = args if isinstance(args, str) else (
            args[0] if isinstance(args, tuple) and args and isinstance(args[0], str) else "")
        if ";" in rawmode:
            bits = max([bits] + [int(d) for d in re.findall(r"\d+", rawmode.split(";", 1)[1])])
    return bits


def decoded_size(img: Image.Image) -> int:
    """Bytes a PIL image holds decoded, from its header: ``w * h * channels * bytes/channel``.

    The bytes per channel are the larger of the image mode's sample size
    (``I;16``: 2, ``I``/``F``: 4, else 1) and the sample size the file
    declares (a 16-bit RGBA PNG opens in mode ``RGBA`` but declares 16
    bits). Nothing is decoded.

    Parameters
    ----------
    img : PIL.Image.Image
        An opened (not necessarily loaded) image.

    Returns
    -------
    int
        The size in bytes.
    """
    width, height = img.size
    try:
        mode = ImageMode.getmode(img.mode)
        bands, item = len(mode.bands), int(mode.typestr[2:] or 1)
    except (KeyError, ValueError, AttributeError):
        bands, item = max(len(img.getbands()), 1), 1
    per_channel = max(item, math.ceil(_raw_bits(img) / 8), 1)
    return width * height * bands * per_channel


def _check_bytes(obj, img: Image.Image, max_bytes: int) -> None:
    size = decoded_size(img)
    if size > max_bytes:
        width, height = img.size
        raise _fail(
            obj,
            f"image of {width}x{height} pixels in mode {img.mode!r} decodes to {size} bytes, "
            f"over the limit of {max_bytes} bytes (possible decompression bomb)",
        )


# --------------------------------------------------------------------------- conversion


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
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise _fail(original, f"unsupported array shape {arr.shape}")
    _check_pixels(original, arr.shape[0], arr.shape[1], max_pixels)
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


def _decode_stream(fh, original, max_pixels: int, max_bytes: int) -> np.ndarray:
    """Decode the image in the binary file object ``fh``.

    Takes a stream, never the bytes, so no traceback frame of this module
    shows the data as an argument; every error is one line without a
    chained exception.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(fh)
            width, height = img.size
            _check_pixels(original, height, width, max_pixels)
            _check_bytes(original, img, max_bytes)
    except InvalidImageError:
        raise
    except Image.DecompressionBombError as exc:
        raise _fail(original, f"image refused as a decompression bomb ({_reason(exc)})") from None
    except UnidentifiedImageError:
        raise _fail(original, "bytes are not a recognised image format") from None
    except _DECODE_ERRORS as exc:
        raise _fail(original, f"image data is truncated or corrupt ({_reason(exc)})") from None
    try:
        with _DECODE_BUDGET.hold(_working_bytes(img)):
            try:
                img.load()
            except _DECODE_ERRORS as exc:
                raise _fail(original, f"image data is truncated or corrupt "
                                      f"({_reason(exc)})") from None
            return _pil_to_rgb8(img, original, max_pixels, max_bytes, owned=True)
    finally:
        img.close()


def _working_bytes(img: Image.Image) -> int:
    """Memory a decode of ``img`` holds at its peak: Pillow's image and the RGB result.

    Pillow keeps 3- and 4-channel 8-bit images at 4 bytes a pixel; the
    result is 3 bytes a pixel; an EXIF rotation may briefly double
    Pillow's image, which the budget's margin covers.
    """
    width, height = img.size
    return max(decoded_size(img), width * height * 4) + width * height * 3


def _open_path(path: Path, original, max_pixels: int, max_bytes: int) -> np.ndarray:
    """Decode the image file at ``path`` (see :func:`_open_regular`)."""
    with _open_regular(path, original) as fh:
        return _decode_stream(fh, original, max_pixels, max_bytes)


def _open_regular(path: Path, original) -> io.BufferedReader:
    """Open ``path`` for reading if it is a regular, non-empty file, without blocking.

    A FIFO cannot hang the run (``O_NONBLOCK``), and the checks use
    ``fstat`` on the open descriptor, so what is checked is what is read.
    Zero-size files are refused: that includes ``/proc`` files, whose size
    reads as 0.
    """
    name = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise _fail(original, f"no such file {name!r}") from None
    except OSError as exc:
        raise _fail(original, f"file {name!r} could not be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(original, f"file {name!r} could not be read: it is "
                                  f"{file_kind(info.st_mode)}, not a regular file")
        if info.st_size == 0:
            raise _fail(original, f"file {name!r} is empty (0 bytes) or a special file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def probe_image_file(path, *, max_pixels: int = MAX_PIXELS,
                     max_bytes: int = MAX_DECODED_BYTES) -> tuple:
    """Read only the header of the image file at ``path``: its ``(width, height)``.

    The same checks as :func:`as_rgb8` before decoding (a regular,
    non-empty file; a recognised format; ``max_pixels``; ``max_bytes``),
    without decoding a pixel. Used to validate manifests when they load.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    max_pixels, max_bytes : int, optional
        As for :func:`as_rgb8`.

    Returns
    -------
    tuple of int
        ``(width, height)`` after the EXIF orientation is applied.

    Raises
    ------
    InvalidImageError
        One line naming the file, never its content.
    """
    with _open_regular(Path(path), path) as fh:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with Image.open(fh) as img:
                    width, height = img.size
                    _check_pixels(path, height, width, max_pixels)
                    _check_bytes(path, img, max_bytes)
                    # EXIF from the header only: Pillow's getexif() would decode a
                    # PNG to look for an eXIf chunk after the pixels
                    orientation = (img.getexif().get(ExifTags.Base.Orientation, 1)
                                   if "exif" in img.info else 1)
        except InvalidImageError:
            raise
        except UnidentifiedImageError:
            raise _fail(path, "bytes are not a recognised image format") from None
        except (Image.DecompressionBombError, *_DECODE_ERRORS) as exc:
            raise _fail(path, f"image header is corrupt ({_reason(exc)})") from None
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


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
    if (reader or _READER[0]) != "pillow":
        _check_reader(reader or _READER[0])
        return _as_rgb8_opencv(obj, max_pixels, max_bytes)
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


# --------------------------------------------------------------------------- the reference's reading

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


def _cv_array(arr: np.ndarray, original, max_pixels: int) -> np.ndarray:
    """An array as ``cv2.imread`` would read it back from a PNG: alpha dropped, 16 bits truncated."""
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise _fail(original, f"unsupported array shape {arr.shape}")
    _check_pixels(original, arr.shape[0], arr.shape[1], max_pixels)
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
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:
                width, height = img.size
                _check_pixels(original, height, width, max_pixels)
                _check_bytes(original, img, max_bytes)
    except InvalidImageError:
        raise
    except Image.DecompressionBombError as exc:
        raise _fail(original, f"image refused as a decompression bomb ({_reason(exc)})") from None
    except UnidentifiedImageError:
        raise _fail(original, "bytes are not a recognised image format") from None
    except _DECODE_ERRORS as exc:
        raise _fail(original, f"image data is truncated or corrupt ({_reason(exc)})") from None
    with _DECODE_BUDGET.hold(width * height * 7):
        try:
            bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        except cv2.error:
            bgr = None
        if bgr is None or bgr.ndim != 3 or bgr.shape[2] != 3:
            raise _fail(original, "OpenCV cannot decode this image (cv2.imread, which the "
                                  "reference scripts read files with, returns None for it)")
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _as_rgb8_opencv(obj, max_pixels: int, max_bytes: int) -> np.ndarray:
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


def resize_rgb8(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Resize an RGB uint8 image to ``width`` x ``height``.

    Area averaging when shrinking (no aliasing), bilinear when enlarging.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W, 3)`` uint8.
    width, height : int
        Target size in pixels.

    Returns
    -------
    numpy.ndarray
        ``(height, width, 3)`` uint8; ``image`` itself when no resize is needed.
    """
    h, w = image.shape[:2]
    if (w, h) == (width, height):
        return image
    interp = cv2.INTER_AREA if (width < w and height < h) else cv2.INTER_LINEAR
    return cv2.resize(image, (int(width), int(height)), interpolation=interp)


def check_same_size(image: np.ndarray, expected: np.ndarray) -> None:
    """Raise :class:`ImageSizeMismatchError` unless both images have one size.

    Parameters
    ----------
    image, expected : numpy.ndarray
        Arrays whose first two dimensions are compared.
    """
    if image.shape[:2] != expected.shape[:2]:
        raise ImageSizeMismatchError(
            f"image shape {tuple(image.shape)} does not match expected shape "
            f"{tuple(expected.shape)}; both images must have the same height and width"
        )
