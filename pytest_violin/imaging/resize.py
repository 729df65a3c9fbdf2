"""Sizes of decoded images: :func:`resize_rgb8` and :func:`check_same_size`."""

from __future__ import annotations

import cv2
import numpy as np

from ..errors import ImageSizeMismatchError


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
