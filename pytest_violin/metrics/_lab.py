"""RGB to CIE Lab conversion for the two metric profiles."""

from __future__ import annotations

import cv2
import numpy as np

from ..imaging import as_rgb8
from ._types import check_profile

__all__ = ["rgb_to_lab", "lab8", "lab8_to_cie"]

_L_SCALE = 100.0 / 255.0


def lab8(rgb: np.ndarray) -> np.ndarray:
    """OpenCV's 8-bit Lab codes (``L*255/100``, ``a+128``, ``b+128``) of RGB uint8."""
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2LAB)


def lab8_to_cie(codes: np.ndarray) -> np.ndarray:
    """Rescale OpenCV 8-bit Lab codes to CIE ranges as float64."""
    lab = codes.astype(np.float64)
    lab[..., 0] *= _L_SCALE
    lab[..., 1] -= 128.0
    lab[..., 2] -= 128.0
    return lab


def rgb_to_lab(image, *, profile: str = "violin") -> np.ndarray:
    """Convert an image to CIE Lab (D65) as the given metric profile does.

    Parameters
    ----------
    image : image-like
        Anything :func:`pytest_violin.as_rgb8` accepts.
    profile : {"violin", "strict"}
        ``violin``: OpenCV's 8-bit ``COLOR_RGB2LAB`` rescaled to CIE
        ranges (``L*100/255``, ``a-128``, ``b-128``), as the reference
        metrics do; quantized to 256 levels per channel.
        ``strict``: ``skimage.color.rgb2lab`` on float RGB, unquantized.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` float64 with ``L*`` in [0, 100].

    Raises
    ------
    ValueError
        For an unknown profile or an input :func:`as_rgb8` refuses.
    """
    check_profile(profile)
    rgb = as_rgb8(image)
    if profile == "violin":
        return lab8_to_cie(lab8(rgb))
    from skimage.color import rgb2lab

    return rgb2lab(rgb.astype(np.float64) / 255.0)
