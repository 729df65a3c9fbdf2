"""Base photographs of the mask task.

By default the photographs bundled inside scikit-image (they load offline).
Users can point the mask task at their own folder of images with
``load_suite("violin", photos_dir=...)`` or the ``VIOLIN_PHOTOS_DIR``
environment variable.

Every base image is a deterministic crop (``zoom``, ``fx``, ``fy``), optional
horizontal flip and resize of one photograph, then *lifted*: each channel
``v`` becomes ``LIFT + round(v * (255 - LIFT) / 255)``, so every kept pixel
has all channels (and its gray value) at least ``LIFT`` = 40, safely above
the mask metrics' black threshold (gray 30 or darker).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import cv2
import numpy as np

from ..errors import SuiteError
from ..imaging import as_rgb8

__all__ = ["SKIMAGE_PHOTOS", "LIFT", "WORKING_SIDE", "PHOTO_EXTENSIONS", "photos_dir_from_env",
           "list_photo_dir", "load_photo", "lift_dark", "base_image"]

#: scikit-image photographs used by default (all bundled with the package).
SKIMAGE_PHOTOS = (
    "astronaut", "chelsea", "coffee", "rocket", "immunohistochemistry",
    "hubble_deep_field", "stereo_motorcycle", "cat", "retina", "colorwheel",
    "camera", "coins",
)

#: Lowest channel value of a kept pixel in a mask base image.
LIFT = 40

#: File extensions read from a user photo folder.
PHOTO_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff")


def photos_dir_from_env():
    """The ``VIOLIN_PHOTOS_DIR`` environment variable as a Path, or None."""
    value = os.environ.get("VIOLIN_PHOTOS_DIR", "").strip()
    return Path(value) if value else None


def list_photo_dir(folder) -> tuple:
    """Sorted image file names in ``folder`` (none opened); a :class:`~pytest_violin.errors.SuiteError`
    when it does not exist or holds no image file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise SuiteError(f"photos_dir {str(folder)!r} is not a directory")
    names = tuple(sorted(p.name for p in folder.iterdir()
                         if p.is_file() and p.suffix.lower() in PHOTO_EXTENSIONS))
    if not names:
        raise SuiteError(f"photos_dir {str(folder)!r} holds no image "
                         f"(accepted extensions: {', '.join(PHOTO_EXTENSIONS)})")
    return names


#: Photos are cached with their short side reduced to at most this many
#: pixels (area averaging, once per process), so every crop is resized by a
#: factor below 2 and rendering stays fast.
WORKING_SIDE = 768


def _working(img: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    short = min(h, w)
    if short > WORKING_SIDE:
        f = WORKING_SIDE / short
        img = cv2.resize(img, (max(1, int(round(w * f))), max(1, int(round(h * f)))),
                         interpolation=cv2.INTER_AREA)
    out = np.ascontiguousarray(img)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=None)
def _skimage_photo(name: str) -> np.ndarray:
    import skimage.data

    loader = getattr(skimage.data, name, None)
    if name not in SKIMAGE_PHOTOS or loader is None:
        raise SuiteError(f"unknown scikit-image photo {name!r}; accepted: {', '.join(SKIMAGE_PHOTOS)}")
    img = loader()
    if isinstance(img, tuple):  # stereo_motorcycle returns (left, right, disparity)
        img = img[0]
    return _working(as_rgb8(np.ascontiguousarray(img)))


@functools.lru_cache(maxsize=32)
def _file_photo(path: str) -> np.ndarray:
    return _working(as_rgb8(path))


@functools.lru_cache(maxsize=64)
def _lifted(source: str, name: str, folder, lift: int) -> np.ndarray:
    out = lift_dark(load_photo(source, name, folder), lift)
    out.setflags(write=False)
    return out


def load_photo(source: str, name: str, folder=None) -> np.ndarray:
    """Load (and cache per process) one photograph as read-only RGB uint8.

    ``source`` is ``"skimage"`` (``name`` is a scikit-image data name) or ``"dir"``
    (``name`` is a file name inside ``folder``). The cached copy has its short
    side reduced to :data:`WORKING_SIDE`.
    """
    if source == "skimage":
        return _skimage_photo(name)
    if source == "dir":
        if folder is None:
            raise SuiteError(f"photo {name!r} comes from a folder but no folder is given")
        return _file_photo(str(Path(folder) / name))
    raise SuiteError(f"unknown photo source {source!r}; accepted: skimage, dir")


def lift_dark(image: np.ndarray, lift: int = LIFT) -> np.ndarray:
    """Map the channel values ``0..255`` of RGB uint8 ``image`` linearly onto ``lift..255`` (a new array)."""
    lift = int(lift)
    if lift <= 0:
        return np.array(image, dtype=np.uint8, copy=True)
    lut = (lift + (np.arange(256) * (255 - lift) + 127) // 255).astype(np.uint8)
    return cv2.LUT(np.ascontiguousarray(image, dtype=np.uint8), lut)


def base_image(photo: dict, width: int, height: int, lift: int = LIFT) -> np.ndarray:
    """Render one ``(height, width, 3)`` uint8 base image from its ``photo`` spec.

    The spec holds ``source``, ``name``, optional ``folder``; ``zoom`` (>= 1: the
    crop is the largest ``width:height`` window divided by ``zoom``), ``fx``,
    ``fy`` in ``[0, 1]`` (where the window sits within the slack) and ``flip``
    (mirror left-right); dark tones are lifted by :func:`lift_dark`.
    """
    # Lifting the cached photo once equals lifting every crop: resizing only
    # takes convex combinations of pixels, which stay >= lift.
    src = _lifted(photo["source"], photo["name"], photo.get("folder"), int(lift))
    sh, sw = src.shape[:2]
    aspect = width / height
    cw = min(float(sw), sh * aspect) / float(photo.get("zoom", 1.0))
    ch = cw / aspect
    cw_i, ch_i = max(1, int(round(cw))), max(1, int(round(ch)))
    cw_i, ch_i = min(cw_i, sw), min(ch_i, sh)
    x0 = int(round(float(photo.get("fx", 0.5)) * (sw - cw_i)))
    y0 = int(round(float(photo.get("fy", 0.5)) * (sh - ch_i)))
    crop = src[y0:y0 + ch_i, x0:x0 + cw_i]
    interp = cv2.INTER_AREA if cw_i >= 2 * width else cv2.INTER_LINEAR
    out = cv2.resize(crop, (width, height), interpolation=interp)
    if photo.get("flip"):
        out = cv2.flip(out, 1)
    return out
