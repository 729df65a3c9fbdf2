"""What an image may be before a pixel is decoded: the caps, the header checks, the files.

Every reader of :mod:`pytest_violin.imaging` runs these first: the pixel cap (:data:`MAX_PIXELS`) and the
decoded-size cap (:data:`MAX_DECODED_BYTES`, from the header: :func:`decoded_size`), the process-wide budget
that decodes in progress share (:data:`DECODE_BUDGET_BYTES`), the opening of a path as a regular, non-empty
file without blocking (:func:`_open_regular`), and the one-line error every refusal becomes (:func:`_fail`,
which names what was received and what is accepted, never the bytes of a file). :func:`probe_image_file`
applies the same checks to a file's header alone.
"""

from __future__ import annotations

import io
import math
import os
import queue
import re
import stat
import struct
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from PIL import ExifTags, Image, ImageMode, UnidentifiedImageError

from .._fs import file_kind
from .._threads import carried
from ..errors import InvalidImageError

#: Largest image, in pixels, that :func:`as_rgb8` accepts (64 megapixels). A guard against decompression bombs
#: in model answers.
MAX_PIXELS = 8192 * 8192

#: Largest decoded size, in bytes, of an encoded or PIL image that :func:`as_rgb8` accepts: ``width
#: * height * channels * bytes per channel`` as the file's header declares it, read before any pixel
#: is decoded (:func:`decoded_size`). 256 MiB: a 64-megapixel 8-bit RGBA image, or a 32-megapixel
#: 16-bit RGBA one. The second guard against decompression bombs: a 16-bit RGBA PNG of 8192 x 8192
#: passes :data:`MAX_PIXELS` but is refused here.
MAX_DECODED_BYTES = 256 * 1024 * 1024

#: Working memory, in bytes, that the decodes of encoded images in progress may hold together in one process
#: (512 MiB). Each decode reserves an estimate (:func:`_working_bytes`: Pillow's decoded image plus the RGB
#: result) before decoding and waits while the budget is taken: many small images decode side by side, the
#: largest ones (about 450 MiB for 64-megapixel RGBA) one at a time, whatever the number of threads.
DECODE_BUDGET_BYTES = 512 * 1024 * 1024


class _Budget:
    """A process-wide byte budget shared by threads (a counting semaphore in bytes).

    A reservation larger than the whole budget is cut to it, so it runs alone rather than never. ``peak``
    records the most ever reserved at once; ``waiting`` is set whenever a thread starts to wait (for tests).
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


#: Work that allocates at least this many bytes (a decode's working memory, the parse of a large answer) runs
#: in the one large-work thread (:func:`run_large`).
LARGE_WORK_BYTES = 16 * 2**20


class _LargeWork:
    """One daemon thread that runs the process's large decodes and parses, one at a time.

    Why one thread: the C allocator (glibc) gives each thread its own arena and keeps what is freed there for
    that thread's next allocations. Pillow holds an image in 16 MiB blocks and a large JSON object grows its
    tables in pieces under 32 MiB, below the size that is mapped and unmapped on its own: when every
    generation thread decoded its own large answer, the freed blocks stayed resident in every thread's arena,
    and a run's peak memory grew with ``--violin-concurrency`` (2.6 GB at 16 for 59 MB JPEGs) although the
    budget above let one decode run at a time. Done here, they are kept (and reused) in one arena only.
    """

    def __init__(self):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.runs = 0  # jobs run (for tests)

    def run(self, fn, *args):
        if threading.current_thread() is self._thread:  # a job's own large work: run it inline
            return fn(*args)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="violin-large-work", daemon=True)
                self._thread.start()
        done, box = threading.Event(), {}
        # one thread serves every run: each job runs in its caller's context (the caller's run's reader)
        self._jobs.put((carried(fn), args, done, box))
        done.wait()
        if "error" in box:
            error = box.pop("error")
            try:
                raise error
            finally:
                del error  # no reference cycle through the traceback
        return box["value"]

    def _serve(self) -> None:
        while True:
            fn, args, done, box = self._jobs.get()
            try:
                box["value"] = fn(*args)
            except BaseException as exc:  # handed to the caller, whatever it is
                box["error"] = exc
            finally:
                self.runs += 1
                del fn, args
                done.set()


_LARGE_WORK = _LargeWork()


def run_large(nbytes: int, fn, *args):
    """``fn(*args)``, in the large-work thread when it allocates ``nbytes`` >= :data:`LARGE_WORK_BYTES`.

    The caller waits for the result (or the exception) as for a direct call. See :class:`_LargeWork` for why.
    """
    if int(nbytes) < LARGE_WORK_BYTES:
        return fn(*args)
    return _LARGE_WORK.run(fn, *args)


def run_budgeted(nbytes: int, fn, *args):
    """``fn(*args)`` holding ``nbytes`` of the decode budget (:data:`_DECODE_BUDGET`, read at the call: both
    readers share it), in the large-work thread when large."""
    def budgeted():
        with _DECODE_BUDGET.hold(nbytes):
            return fn(*args)

    return run_large(nbytes, budgeted)


ACCEPTED_INPUTS = (
    "a numpy array (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) of uint8, uint16, bool "
    "or float in [0, 1]; a PIL image; encoded PNG/JPEG/WebP bytes; or a path to such a file"
)

# Everything a hostile file can make Pillow raise while identifying or decoding it; each becomes one
# InvalidImageError line.
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


def _reason(exc: BaseException) -> str:
    """Pillow's message for ``exc``, or only its type when the message may quote data.

    Some decoders put bytes of the file into their messages (a PNG chunk name, a header field); a file given
    by path may be anything, so a message holding a bytes repr, control characters or more than a short line
    is replaced by the exception's type name.
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
    """Bytes an opened (not necessarily loaded) PIL image holds decoded, from its header.

    That is ``w * h * channels * bytes/channel``, the bytes per channel the larger of the image mode's sample
    size (``I;16``: 2, ``I``/``F``: 4, else 1) and the sample size the file declares (a 16-bit RGBA PNG opens
    in mode ``RGBA`` but declares 16 bits). Nothing is decoded.
    """
    width, height = img.size
    try:
        mode = ImageMode.getmode(img.mode)
        bands, item = len(mode.bands), int(mode.typestr[2:] or 1)
    except (KeyError, ValueError, AttributeError):
        bands, item = max(len(img.getbands()), 1), 1
    per_channel = max(item, math.ceil(_raw_bits(img) / 8), 1)
    return width * height * bands * per_channel


def _check_array(arr: np.ndarray, original, max_pixels: int) -> np.ndarray:
    """``arr`` as gray ``(H, W)`` or colour ``(H, W, 3|4)`` (``(H, W, 1)`` squeezed), within ``max_pixels``."""
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise _fail(original, f"unsupported array shape {arr.shape}")
    _check_pixels(original, arr.shape[0], arr.shape[1], max_pixels)
    return arr


def _check_bytes(obj, img: Image.Image, max_bytes: int) -> None:
    size = decoded_size(img)
    if size > max_bytes:
        width, height = img.size
        raise _fail(
            obj,
            f"image of {width}x{height} pixels in mode {img.mode!r} decodes to {size} bytes, "
            f"over the limit of {max_bytes} bytes (possible decompression bomb)",
        )


def _open_checked(fh, original, max_pixels: int, max_bytes: int) -> Image.Image:
    """Pillow's image of the encoded data in ``fh``, its header checked, no pixel decoded.

    Both readers open encoded data here first, so :data:`MAX_PIXELS`, :data:`MAX_DECODED_BYTES` and a corrupt
    header are refused with the same one line whichever of them decodes the pixels. A refused image is closed;
    the caller closes the one returned.
    """
    img = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(fh)
            width, height = img.size
            _check_pixels(original, height, width, max_pixels)
            _check_bytes(original, img, max_bytes)
        return img
    except BaseException as exc:
        if img is not None:
            img.close()
        if isinstance(exc, InvalidImageError):
            raise
        if isinstance(exc, Image.DecompressionBombError):
            raise _fail(original, f"image refused as a decompression bomb ({_reason(exc)})") from None
        if isinstance(exc, UnidentifiedImageError):
            raise _fail(original, "bytes are not a recognised image format") from None
        if isinstance(exc, _DECODE_ERRORS):
            raise _fail(original, f"image data is truncated or corrupt ({_reason(exc)})") from None
        raise


def _working_bytes(img: Image.Image) -> int:
    """Memory a decode of ``img`` holds at its peak: Pillow's image and the RGB result.

    Pillow keeps 3- and 4-channel 8-bit images at 4 bytes a pixel; the result is 3 bytes a pixel; an EXIF
    rotation may briefly double Pillow's image, which the budget's margin covers.
    """
    width, height = img.size
    return max(decoded_size(img), width * height * 4) + width * height * 3


def _open_regular(path: Path, original) -> io.BufferedReader:
    """Open ``path`` for reading if it is a regular, non-empty file, without blocking.

    A FIFO cannot hang the run (``O_NONBLOCK``), and the checks use ``fstat`` on the open descriptor, so what
    is checked is what is read. Zero-size files are refused: that includes ``/proc`` files, whose size reads
    as 0.
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
    """Read only the header of the image file at ``path``: its ``(width, height)``, EXIF orientation applied.

    The same checks as :func:`as_rgb8` before decoding (a regular, non-empty file; a recognised format;
    ``max_pixels``; ``max_bytes``), without decoding a pixel; an
    :class:`~pytest_violin.errors.InvalidImageError` names the file, never its content. Used to validate
    manifests when they load.
    """
    with _open_regular(Path(path), path) as fh:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with Image.open(fh) as img:
                    width, height = img.size
                    _check_pixels(path, height, width, max_pixels)
                    _check_bytes(path, img, max_bytes)
                    # EXIF from the header only: Pillow's getexif() would decode a PNG to look for an eXIf
                    # chunk after the pixels
                    orientation = (img.getexif().get(ExifTags.Base.Orientation, 1)
                                   if "exif" in img.info else 1)
        except InvalidImageError:
            raise
        except UnidentifiedImageError:
            raise _fail(path, "bytes are not a recognised image format") from None
        except (Image.DecompressionBombError, *_DECODE_ERRORS) as exc:
            raise _fail(path, f"image header is corrupt ({_reason(exc)})") from None
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)
