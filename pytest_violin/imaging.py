"""Image input and output at the edges of the package.

:func:`as_rgb8` is the one place where anything image-like becomes an
``(H, W, 3)`` ``uint8`` RGB array. Every metric, sample and adapter goes
through it, so the accepted inputs and the error messages are the same
everywhere.
"""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .errors import ImageSizeMismatchError, InvalidImageError

__all__ = [
    "MAX_PIXELS",
    "ACCEPTED_INPUTS",
    "as_rgb8",
    "encode_png",
    "decode_image",
    "resize_rgb8",
    "check_same_size",
]

#: Largest image, in pixels, that :func:`as_rgb8` accepts (64 megapixels).
#: A guard against decompression bombs in model answers.
MAX_PIXELS = 8192 * 8192

ACCEPTED_INPUTS = (
    "a numpy array (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) of uint8, uint16, bool "
    "or float in [0, 1]; a PIL image; encoded PNG/JPEG/WebP bytes; or a path to such a file"
)


def _describe(obj) -> str:
    if isinstance(obj, np.ndarray):
        return f"numpy array of shape {obj.shape} and dtype {obj.dtype}"
    if isinstance(obj, (bytes, bytearray, memoryview)):
        head = bytes(obj[:16])
        return f"{len(obj)} bytes starting with {head!r}"
    if isinstance(obj, Image.Image):
        return f"PIL image of mode {obj.mode!r} and size {obj.size}"
    text = repr(obj)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(obj).__name__} {text}"


def _fail(obj, problem: str) -> InvalidImageError:
    return InvalidImageError(f"{problem}: got {_describe(obj)}; accepted: {ACCEPTED_INPUTS}")


def _check_pixels(obj, height: int, width: int, max_pixels: int) -> None:
    if height <= 0 or width <= 0:
        raise _fail(obj, "empty image")
    if height * width > max_pixels:
        raise _fail(
            obj,
            f"image of {width}x{height} = {width * height} pixels is over the limit "
            f"of {max_pixels} pixels (possible decompression bomb)",
        )


def _array_to_rgb8(arr: np.ndarray, original, max_pixels: int) -> np.ndarray:
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise _fail(original, f"unsupported array shape {arr.shape}")
    _check_pixels(original, arr.shape[0], arr.shape[1], max_pixels)

    if arr.dtype == np.uint8:
        out = arr
    elif arr.dtype == np.bool_:
        out = arr.astype(np.uint8) * 255
    elif arr.dtype == np.uint16:
        out = ((arr.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)
    elif np.issubdtype(arr.dtype, np.floating):
        if not np.isfinite(arr).all():
            raise _fail(original, "array contains NaN or infinite values")
        lo, hi = float(arr.min()), float(arr.max())
        if lo < 0.0 or hi > 1.0:
            raise _fail(original, f"float values must lie in [0, 1], found [{lo:g}, {hi:g}]")
        out = np.rint(arr.astype(np.float64) * 255.0).astype(np.uint8)
    else:
        raise _fail(original, f"unsupported dtype {arr.dtype}")

    if out.ndim == 2:
        out = np.repeat(out[:, :, None], 3, axis=2)
    elif out.shape[2] == 4:
        out = _composite_over_black(out)
    return np.ascontiguousarray(out)


def _composite_over_black(rgba: np.ndarray) -> np.ndarray:
    alpha = rgba[:, :, 3]
    rgb = rgba[:, :, :3]
    if (alpha == 255).all():
        return np.ascontiguousarray(rgb)
    a = alpha.astype(np.uint32)[:, :, None]
    return ((rgb.astype(np.uint32) * a + 127) // 255).astype(np.uint8)


def _pil_to_rgb8(img: Image.Image, original, max_pixels: int) -> np.ndarray:
    width, height = img.size
    _check_pixels(original, height, width, max_pixels)
    try:
        img = ImageOps.exif_transpose(img)
        mode = img.mode
        if mode in ("I;16", "I;16B", "I;16L", "I;16N"):
            arr = np.asarray(img).astype(np.uint16)
        elif mode == "I":
            arr = np.asarray(img)
            if arr.size and (arr.min() < 0 or arr.max() > 65535):
                raise _fail(original, "32-bit integer image outside 0..65535")
            arr = arr.astype(np.uint16)
        elif mode == "F":
            arr = np.asarray(img, dtype=np.float32)
        elif mode in ("RGB", "L"):
            arr = np.asarray(img)
        elif "A" in mode or mode == "P" and "transparency" in img.info:
            arr = np.asarray(img.convert("RGBA"))
        else:
            arr = np.asarray(img.convert("RGB"))
    except InvalidImageError:
        raise
    except (OSError, ValueError, SyntaxError) as exc:
        raise _fail(original, f"image data could not be decoded ({exc})") from exc
    return _array_to_rgb8(arr, original, max_pixels)


def decode_image(data: bytes, *, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """Decode PNG, JPEG, WebP (or any format Pillow reads) bytes to RGB uint8.

    The header is read first and the pixel count checked before any pixel
    is decoded, so a decompression bomb is refused cheaply.

    Parameters
    ----------
    data : bytes
        The encoded image.
    max_pixels : int, optional
        Largest accepted width * height.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` uint8 RGB.

    Raises
    ------
    InvalidImageError
        Zero bytes, bytes that are not an image, truncated data, or an image
        over ``max_pixels``.
    """
    return as_rgb8(bytes(data), max_pixels=max_pixels)


def _open_encoded(data: bytes, original, max_pixels: int) -> np.ndarray:
    if len(data) == 0:
        raise _fail(original, "zero bytes of image data")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            width, height = img.size
            _check_pixels(original, height, width, max_pixels)
            img.load()
    except InvalidImageError:
        raise
    except Image.DecompressionBombError as exc:
        raise _fail(original, f"image refused as a decompression bomb ({exc})") from exc
    except UnidentifiedImageError as exc:
        raise _fail(original, "bytes are not a recognised image format") from exc
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise _fail(original, f"image data is truncated or corrupt ({exc})") from exc
    return _pil_to_rgb8(img, original, max_pixels)


def as_rgb8(obj, *, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """Turn an image-like object into an ``(H, W, 3)`` uint8 RGB array.

    Parameters
    ----------
    obj : array_like, PIL.Image.Image, bytes, str or os.PathLike
        * numpy array: gray ``(H, W)`` or ``(H, W, 1)``, RGB ``(H, W, 3)``
          or RGBA ``(H, W, 4)``; dtype ``uint8``, ``uint16`` (rescaled),
          ``bool`` (0/255) or floating point in ``[0, 1]``.
        * a PIL image of any mode;
        * encoded image bytes (PNG, JPEG, WebP, ...);
        * a path to an image file.

        RGBA inputs are composited over black: a transparent pixel is a
        black pixel.
    max_pixels : int, optional
        Largest accepted ``width * height`` (default :data:`MAX_PIXELS`).

    Returns
    -------
    numpy.ndarray
        C-contiguous ``uint8`` array of shape ``(H, W, 3)``. A uint8 RGB
        input is returned without a copy.

    Raises
    ------
    InvalidImageError
        (a ``ValueError``) for anything else, empty images, NaN or
        out-of-range floats, undecodable bytes, missing files, and images
        over ``max_pixels``; the message names what was received and what
        is accepted.

    Examples
    --------
    >>> import numpy as np
    >>> as_rgb8(np.zeros((2, 3), dtype=np.uint8)).shape
    (2, 3, 3)
    """
    if isinstance(obj, np.ndarray):
        return _array_to_rgb8(obj, obj, max_pixels)
    if isinstance(obj, Image.Image):
        return _pil_to_rgb8(obj, obj, max_pixels)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return _open_encoded(bytes(obj), obj, max_pixels)
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise _fail(obj, f"no such file {str(path)!r}") from None
        except OSError as exc:
            raise _fail(obj, f"file {str(path)!r} could not be read ({exc})") from exc
        return _open_encoded(data, obj, max_pixels)
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
