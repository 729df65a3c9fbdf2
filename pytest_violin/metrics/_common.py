"""What the colour, shape and mask metrics share: the :class:`Metrics` result, the profiles,
RGB to CIE Lab for both profiles, layouts and region helpers.

Regions (the shape and mask metrics) are ``uint8`` images with 0 outside and 255 inside.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from types import MappingProxyType

import cv2
import numpy as np

from ..errors import InternalError, InvalidArgumentError
from ..imaging import as_rgb8, check_same_size

__all__ = ["Metrics", "PROFILES", "check_profile", "rgb_to_lab", "lab8", "lab8_to_cie", "lab8_to_cie32",
           "float_lab", "float_lab_planes", "LAYOUTS", "check_layout", "prepare_pair", "gray", "clip01",
           "split_blocks", "mean_channel_std", "largest_filled", "region_iou_distance", "centroid",
           "centroid_distance", "KERNEL3"]

#: Metric profiles: ``violin`` reproduces the published reference numbers, ``strict`` fixes their documented
#: weaknesses (see docs/metrics.md).
PROFILES = ("violin", "strict")


def check_profile(profile: str) -> str:
    """Return ``profile`` if it is a known profile, else raise ``ValueError``."""
    if profile not in PROFILES:
        raise InvalidArgumentError(f"unknown metric profile {profile!r}; accepted: {', '.join(PROFILES)}")
    return profile


class Metrics(Mapping):
    """A read-only mapping from metric name to a distance in ``[0, 1]``.

    0.0 means perfect obedience; higher is worse.

    Parameters
    ----------
    values : Mapping[str, float]
        Metric name to value, in display order.
    task : str
        The task the metrics belong to (``color``, ``shape``, ``mask``, ...).
    profile : str, optional
        The metric profile used.
    info : Mapping, optional
        Extra read-only facts about the measurement (e.g. the original size of a resized image).

    Attributes
    ----------
    mean : float
        The average of all metric values (the paper's ``*-mean`` column).
    """

    __slots__ = ("_values", "task", "profile", "info")

    def __init__(self, values: Mapping[str, float], *, task: str, profile: str = "violin",
                 info: Mapping | None = None):
        clean = {}
        for name, value in values.items():
            v = float(value)
            if math.isnan(v):
                raise InvalidArgumentError(f"metric {name!r} is NaN")
            clean[str(name)] = v
        object.__setattr__(self, "_values", MappingProxyType(clean))
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "profile", profile)
        object.__setattr__(self, "info", MappingProxyType(dict(info or {})))

    def __setattr__(self, name, value):
        raise AttributeError("Metrics is read-only")

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def mean(self) -> float:
        """Average of all metric values (0.0 for an empty set)."""
        if not self._values:
            return 0.0
        return sum(self._values.values()) / len(self._values)

    def to_dict(self) -> dict:
        """Return the values plus ``mean`` as a plain dict."""
        out = dict(self._values)
        out["mean"] = self.mean
        return out

    def with_info(self, **info) -> "Metrics":
        """Return a copy with ``info`` entries added."""
        merged = dict(self.info)
        merged.update(info)
        return Metrics(self._values, task=self.task, profile=self.profile, info=merged)

    def __eq__(self, other):
        if isinstance(other, Metrics):
            return dict(self._values) == dict(other._values) and self.task == other.task
        if isinstance(other, Mapping):
            return dict(self._values) == dict(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v:.4f}" for k, v in self._values.items())
        return f"Metrics[{self.task}]({body}, mean={self.mean:.4f})"


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


def lab8_to_cie32(codes: np.ndarray) -> np.ndarray:
    """Rescale OpenCV 8-bit Lab codes to CIE ranges in float32, as the
    reference metric does (``L * 100 / 255`` as two float32 operations)."""
    lab = codes.astype(np.float32)
    lab[..., 0] = lab[..., 0] * np.float32(100.0) / np.float32(255.0)
    lab[..., 1] -= np.float32(128.0)
    lab[..., 2] -= np.float32(128.0)
    return lab


# skimage.color.rgb2lab's constants: sRGB (D65) to XYZ, and the D65 2-degree white point.
_XYZ_FROM_RGB = np.array([[0.412453, 0.357580, 0.180423],
                          [0.212671, 0.715160, 0.072169],
                          [0.019334, 0.119193, 0.950227]])
_WHITE = np.array([0.95047, 1.0, 1.08883])


def _linear_levels() -> np.ndarray:
    v = np.arange(256, dtype=np.float64) / 255.0
    return np.where(v > 0.04045, ((v + 0.055) / 1.055) ** 2.4, v / 12.92)


#: sRGB companding of each 8-bit level.
_LINEAR = _linear_levels()
#: Linear RGB to XYZ relative to the white point (rows divided by it).
_XYZN_FROM_LINEAR = _XYZ_FROM_RGB / _WHITE[:, None]
#: ``f(X/Xn), f(Y/Yn), f(Z/Zn)`` to ``L*, a*, b*`` (affine: last column).
_LAB_FROM_F = np.array([[0.0, 116.0, 0.0, -16.0],
                        [500.0, -500.0, 0.0, 0.0],
                        [0.0, 200.0, -200.0, 0.0]])


def float_lab(rgb: np.ndarray) -> np.ndarray:
    """CIE Lab (D65) of RGB uint8 pixels, unquantized, as float64.

    The formula of ``skimage.color.rgb2lab`` (sRGB companding, the same matrix and white point, the same
    cube-root knee), organized for 8-bit input: the companding is a 256-entry table (``cv2.LUT``) and both
    linear steps are ``cv2.transform``. Equal to ``rgb2lab`` to ~1e-13 (all 2**24 colours checked) and several
    times faster.
    """
    shape = rgb.shape
    if rgb.ndim != 3:  # OpenCV reads (H, W, 3) as a 3-channel image only
        rgb = rgb.reshape(-1, 1, 3)
    return cv2.transform(_f_xyz(rgb), _LAB_FROM_F).reshape(shape)


def _f_xyz(rgb: np.ndarray) -> np.ndarray:
    """``f(X/Xn), f(Y/Yn), f(Z/Zn)`` of an (H, W, 3) uint8 image (cube root
    above the knee, its linear continuation below)."""
    t = cv2.transform(cv2.LUT(rgb, _LINEAR), _XYZN_FROM_LINEAR)
    small = t <= 0.008856
    knee = t[small] * 7.787 + 16.0 / 116.0
    np.cbrt(t, out=t)
    t[small] = knee
    return t


def float_lab_planes(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`float_lab` of an (H, W, 3) uint8 image as three contiguous
    (H, W) planes ``L*, a*, b*`` (what the vectorized CIEDE2000 reads)."""
    fx, fy, fz = cv2.split(_f_xyz(rgb))
    lightness = fy * 116.0
    lightness -= 16.0
    a = fx - fy
    a *= 500.0
    b = fy - fz
    b *= 200.0
    return lightness, a, b


def rgb_to_lab(image, *, profile: str = "violin") -> np.ndarray:
    """An image as ``(H, W, 3)`` float64 CIE Lab (D65, ``L*`` in [0, 100]) as the metric profile converts it.

    ``violin``: OpenCV's 8-bit ``COLOR_RGB2LAB`` rescaled to CIE ranges (``L*100/255``, ``a-128``, ``b-128``),
    as the reference metrics do; quantized to 256 levels per channel. ``strict``: the formula of
    ``skimage.color.rgb2lab`` on float RGB, unquantized (:func:`float_lab`).
    """
    check_profile(profile)
    rgb = as_rgb8(image)
    if profile == "violin":
        return lab8_to_cie(lab8(rgb))
    return float_lab(rgb)


#: Colour layouts: ``single`` block, ``vertical`` = left|right halves, ``horizontal`` = top/bottom halves,
#: ``quad`` = 2x2 quadrants.
LAYOUTS = ("single", "vertical", "horizontal", "quad")

# Smallest (height, width) each layout can split into non-empty blocks.
_MIN_SIZE = {"single": (1, 1), "vertical": (1, 2), "horizontal": (2, 1), "quad": (2, 2)}


def check_layout(layout: str) -> str:
    """Return ``layout`` if known, else raise ``ValueError`` naming the accepted ones."""
    if layout not in LAYOUTS:
        raise InvalidArgumentError(f"unknown color layout {layout!r}; accepted: {', '.join(LAYOUTS)}")
    return layout


def prepare_pair(image, expected) -> tuple[np.ndarray, np.ndarray]:
    """Convert both images with ``as_rgb8`` and check they have one size."""
    img = as_rgb8(image)
    exp = as_rgb8(expected)
    check_same_size(img, exp)
    return img, exp


def gray(rgb: np.ndarray) -> np.ndarray:
    """OpenCV grayscale (``0.299 R + 0.587 G + 0.114 B``, rounded) as uint8."""
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)


_LEVELS = np.arange(256, dtype=np.float64)


def mean_channel_std(rgb: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Mean over R, G, B of the population standard deviation of the pixels.

    Computed from exact per-channel histograms, so a one-colour region gives exactly 0.0 (``cv2.meanStdDev``
    leaves ~1e-8 of rounding). ``mask`` (uint8, nonzero = inside) restricts the pixels; an empty selection
    gives 0.0.
    """
    n = rgb.shape[0] * rgb.shape[1] if mask is None else cv2.countNonZero(mask)
    if n == 0:
        return 0.0
    if mask is not None:
        # Only the mask's bounding box holds selected pixels: same counts, fewer pixels to visit (a shape
        # covers a fraction of its image).
        x, y, w, h = cv2.boundingRect(mask)
        rgb, mask = rgb[y:y + h, x:x + w], mask[y:y + h, x:x + w]
    total = 0.0
    for c in range(3):
        if n < 2**24:  # calcHist counts in float32: exact below 2**24
            counts = cv2.calcHist([rgb], [c], mask, [256], [0, 256]).ravel().astype(np.float64)
        else:
            chan = rgb[:, :, c] if mask is None else rgb[:, :, c][mask > 0]
            counts = np.bincount(chan.ravel(), minlength=256).astype(np.float64)
        mean = counts @ _LEVELS / n
        total += np.sqrt(counts @ (_LEVELS - mean) ** 2 / n)
    return total / 3.0


def clip01(value: float) -> float:
    """Clip to ``[0, 1]`` as a Python float (NaN is a bug, so it raises)."""
    v = float(value)
    if math.isnan(v):
        raise InternalError("metric computation produced NaN")
    return 0.0 if v < 0.0 else 1.0 if v > 1.0 else v


def split_blocks(height: int, width: int, layout: str) -> list[tuple[slice, slice]]:
    """The ``(rows, cols)`` slices of each block of ``layout``, split at ``height // 2`` and ``width // 2``.

    The second half gets the odd row or column; an image too small to give every block a pixel is a
    ``ValueError``.
    """
    check_layout(layout)
    min_h, min_w = _MIN_SIZE[layout]
    if height < min_h or width < min_w:
        raise InvalidArgumentError(
            f"an image of {width}x{height} pixels is too small for layout {layout!r}; "
            f"it needs at least {min_w}x{min_h}")
    full = slice(None)
    top, bottom = slice(0, height // 2), slice(height // 2, height)
    left, right = slice(0, width // 2), slice(width // 2, width)
    if layout == "single":
        return [(full, full)]
    if layout == "vertical":
        return [(full, left), (full, right)]
    if layout == "horizontal":
        return [(top, full), (bottom, full)]
    return [(top, left), (top, right), (bottom, left), (bottom, right)]


# ---------------------------------------------------------------- binary regions

#: The 3x3 structuring element of every erosion and dilation.
KERNEL3 = np.ones((3, 3), dtype=np.uint8)


def largest_filled(region: np.ndarray) -> np.ndarray:
    """Keep the largest external contour of ``region``, filled.

    ``cv2.findContours(RETR_EXTERNAL, CHAIN_APPROX_SIMPLE)``, the largest by ``cv2.contourArea`` (the first
    one on ties), drawn with ``thickness=-1``. Holes inside it are filled; everything else is dropped. An
    empty region stays empty.
    """
    contours, _ = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    out = np.zeros_like(region)
    if contours:
        biggest = max(contours, key=cv2.contourArea)
        cv2.drawContours(out, [biggest], -1, 255, thickness=-1)
    return out


def region_iou_distance(a: np.ndarray, b: np.ndarray) -> float:
    """``1 - |a & b| / |a | b|``; 0.0 when both regions are empty."""
    union = cv2.countNonZero(cv2.bitwise_or(a, b))
    if union == 0:
        return 0.0
    inter = cv2.countNonZero(cv2.bitwise_and(a, b))
    return 1.0 - inter / union


def centroid(region: np.ndarray):
    """``(area, (x, y))`` of a region from its binary moments; ``(0, None)`` if empty.

    Equal, bit for bit, to ``cv2.moments(region, binaryImage=True)``'s ``m00`` and ``(m10 / m00, m01 / m00)``,
    about 10x faster: for a binary image those moments are integer sums (OpenCV accumulates them exactly), so
    they are computed here from the row and column pixel counts in integer arithmetic, without the second- and
    third-order moments.
    """
    ones = cv2.threshold(region, 0, 1, cv2.THRESH_BINARY)[1]
    cols = cv2.reduce(ones, 0, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel().astype(np.int64)
    m00 = int(cols.sum())
    if m00 == 0:
        return 0.0, None
    rows = cv2.reduce(ones, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel().astype(np.int64)
    m10 = int(cols @ np.arange(cols.size, dtype=np.int64))
    m01 = int(rows @ np.arange(rows.size, dtype=np.int64))
    area = float(m00)
    return area, (float(m10) / area, float(m01) / area)


def centroid_distance(c_gen, c_gt, height: int, width: int, *, both_empty: float) -> float:
    """Centroid distance over the image diagonal, clipped to 1.

    1.0 when exactly one centroid is missing; ``both_empty`` when both are.
    """
    if c_gen is None and c_gt is None:
        return both_empty
    if c_gen is None or c_gt is None:
        return 1.0
    d = math.hypot(c_gen[0] - c_gt[0], c_gen[1] - c_gt[1]) / math.hypot(width, height)
    return min(d, 1.0)
