"""Colour obedience metrics: ``rgb_ed, lab_00, sd, ced, hf`` (paper Eq. 2-6).

Every metric is computed per block of the layout (a single-colour region of the expected image) and averaged
over blocks. The implementation is the fast equivalent of the plain definitions in
:mod:`pytest_violin.metrics._reference`: when an expected block is one colour (always, in colour tasks),
per-pixel distances come from lookup tables indexed by the generated pixel's 8-bit codes, and the
high-frequency power ratio needs only the few low frequencies of the DFT (Parseval gives the total). Results
equal the plain path to ~1e-12.

Under ``violin``, ``lab_00`` is the reference's float32 CIEDE2000 (:mod:`.ciede2000`): the table of the
chroma/hue part is built per code pair with the reference's float32 arithmetic, since its hue-branch decisions
depend on the ``(a, b)`` codes only. ``strict`` computes the float64 formula over the image
(:mod:`.ciede2000`) on unquantized Lab.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache

import cv2
import numpy as np

from ._common import (LAYOUTS, Metrics, check_layout, check_profile, clip01, float_lab, float_lab_planes,
                      gray, lab8, lab8_to_cie32, mean_channel_std, prepare_pair, split_blocks)
from .ciede2000 import chroma_hue32, ciede2000, ciede2000_32, ciede2000_planes_to_color, lightness_sq32

__all__ = ["COLOR_METRICS", "LAYOUTS", "color_metrics", "RGB_ED_NORM", "HF_RADIUS",
           "CANNY_LOW", "CANNY_HIGH"]

#: Metric names of the colour task, in display order.
COLOR_METRICS = ("rgb_ed", "lab_00", "sd", "ced", "hf")

#: Normalizer of the mean RGB Euclidean distance (about ``255 * sqrt(3)``).
RGB_ED_NORM = 441.67
#: Normalized spectral radius above which power counts as high frequency.
HF_RADIUS = 0.02
#: Canny hysteresis thresholds of the edge-density metric.
CANNY_LOW, CANNY_HIGH = 20, 60

#: float32 ``L*`` of each 8-bit lightness code, as the reference converts it.
_L_VALUES32 = lab8_to_cie32(np.stack([np.arange(256, dtype=np.uint8)] * 3, axis=-1))[:, 0]
#: Elements per chunk of the per-pixel float32 formula (bounds its temporaries).
CHUNK32 = 4096


def _single_color(block: np.ndarray):
    """Return the block's colour if every pixel has it, else ``None``."""
    h, w = block.shape[:2]
    first = block[0, 0]
    row = np.tile(first, w)
    # The first row alone settles most textured blocks at once; then compare whole rows against one tiled row
    # (much faster than broadcasting over a length-3 last axis).
    if not np.array_equal(block[0].reshape(w * 3), row):
        return None
    if (block.reshape(h, w * 3) == row).all():
        return first.copy()
    return None


_SQUARES = np.arange(256, dtype=np.float64) ** 2
_ZEROS3 = np.zeros(3, dtype=np.uint8)
_ONES = np.ones((1, 3), dtype=np.float64)


def _rgb_ed(gen: np.ndarray, exp: np.ndarray) -> float:
    # |gen - exp| per channel (exact in uint8), squared through a float64 lookup table, summed over channels,
    # square-rooted, averaged in double.
    sq = cv2.LUT(cv2.absdiff(gen, exp), _SQUARES)
    dist = cv2.sqrt(cv2.transform(sq, _ONES))
    return clip01(cv2.mean(dist)[0] / RGB_ED_NORM)


class _ChromaHueTables:
    """Per reference colour, the chroma/hue part of CIEDE2000 for every
    8-bit ``(a, b)`` code pair seen so far (NaN: not computed yet).

    A suite scores many answers against a few dozen colours, so entries computed for one answer are reused for
    the next. Bounded LRU (each table is 512 KiB); a lost race between threads recomputes identical values, so
    no lock is needed around the arrays.
    """

    def __init__(self, maxsize: int = 16):
        self.maxsize = maxsize
        self._tables: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()

    def table(self, ref_ab: tuple[int, int]) -> tuple[np.ndarray, bool]:
        """The table of ``ref_ab`` and whether it was just created (all NaN)."""
        with self._lock:
            table = self._tables.get(ref_ab)
            created = table is None
            if created:
                table = np.full(65536, np.nan, dtype=np.float64)
                self._tables[ref_ab] = table
                while len(self._tables) > self.maxsize:
                    self._tables.popitem(last=False)
            else:
                self._tables.move_to_end(ref_ab)
        return table, created

    @staticmethod
    def fill(ref_ab: tuple[int, int], table: np.ndarray, codes: np.ndarray) -> None:
        """Compute the entries of ``table`` for every code in ``codes``
        (packed ``a << 8 | b``, uint16) that it lacks."""
        present = np.flatnonzero(np.bincount(codes.ravel(), minlength=65536))
        missing = present[np.isnan(table[present])]
        if missing.size:
            # Clamped at 0: the true value is >= 0 and only rounding leaves a tiny negative residue, so sqrt(L
            # + max(ch, 0)) agrees with the plain sqrt(max(L + ch, 0)) to rounding and is never NaN.
            table[missing] = np.maximum(_chroma_hue_codes32(ref_ab, missing), 0.0)


_CH_TABLES = _ChromaHueTables()


def _chroma_hue_codes32(ref_ab: tuple[int, int], codes: np.ndarray) -> np.ndarray:
    """The reference's chroma/hue part of one expected colour against
    packed ``a << 8 | b`` codes of generated pixels (see :mod:`.ciede2000`)."""
    a_ref, b_ref = np.float32(ref_ab[0] - 128), np.float32(ref_ab[1] - 128)
    a = ((codes >> 8) - 128).astype(np.float32)
    b = ((codes & 255) - 128).astype(np.float32)
    out = np.empty(codes.size, dtype=np.float64)
    for start in range(0, codes.size, CHUNK32):
        sl = slice(start, start + CHUNK32)
        out[sl] = chroma_hue32(a[sl], b[sl], a_ref, b_ref)
    return out


def _lab00_violin(gen_codes: np.ndarray, ref_codes) -> float:
    """Mean reference CIEDE2000 / 100 of 8-bit Lab codes against one code."""
    l_table = lightness_sq32(_L_VALUES32, _L_VALUES32[int(ref_codes[0])])
    ab = gen_codes[:, :, 1].astype(np.uint16)
    ab <<= 8
    ab |= gen_codes[:, :, 2]
    ref_ab = (int(ref_codes[1]), int(ref_codes[2]))
    ch_table, created = _CH_TABLES.table(ref_ab)
    if created:
        _CH_TABLES.fill(ref_ab, ch_table, ab)
    lightness = cv2.extractChannel(gen_codes, 0)
    for _ in range(2):
        d2 = cv2.LUT(lightness, l_table)
        d2 += np.take(ch_table, ab)
        # Entries are clamped at 0 and the lightness part is a square: d2 >= 0; a NaN mean means the table
        # lacked some code (a warm table costs nothing more than its lookup).
        mean = np.sqrt(d2, out=d2).mean()
        if not np.isnan(mean):
            break
        _CH_TABLES.fill(ref_ab, ch_table, ab)
    return clip01(mean / 100.0)


def _lab00_violin_general(gen_codes: np.ndarray, exp_codes: np.ndarray) -> float:
    """Mean reference CIEDE2000 / 100 of two blocks of 8-bit Lab codes."""
    gen = lab8_to_cie32(gen_codes).reshape(-1, 3)
    exp = lab8_to_cie32(exp_codes).reshape(-1, 3)
    total = 0.0
    for start in range(0, gen.shape[0], CHUNK32):
        sl = slice(start, start + CHUNK32)
        total += float(ciede2000_32(gen[sl], exp[sl]).sum())
    return clip01(total / gen.shape[0] / 100.0)


#: Pixels per chunk of the strict one-colour path: Lab conversion and CIEDE2000 run chunk by chunk, so no
#: temporary is image-sized.
STRICT_CHUNK = 8192


def _lab00_strict_one(gen: np.ndarray, color: np.ndarray) -> float:
    """Mean float64 CIEDE2000 / 100 of a block against one colour, in unquantized Lab.

    Pixels equal to the colour score exactly 0 (their Lab is the colour's; a vectorized conversion may round
    one colour differently in the last bit at different positions, which would cost a perfect answer its exact
    0.0).
    """
    ref = float_lab(color)
    pixels = np.ascontiguousarray(gen).reshape(-1, 1, 3)
    total = 0.0
    for start in range(0, pixels.shape[0], STRICT_CHUNK):
        chunk = pixels[start:start + STRICT_CHUNK]
        d = ciede2000_planes_to_color(*float_lab_planes(chunk), ref)
        same = cv2.inRange(chunk, color, color)
        if cv2.countNonZero(same):
            d[same > 0] = 0.0
        total += float(d.sum())
    return clip01(total / pixels.shape[0] / 100.0)


def _lab00_strict(gen: np.ndarray, gen_lab: np.ndarray, exp: np.ndarray,
                  exp_lab: np.ndarray) -> float:
    """Mean float64 CIEDE2000 / 100 of two blocks in unquantized Lab; pixels
    equal in RGB score exactly 0 (as in :func:`_lab00_strict_one`)."""
    d = ciede2000(exp_lab, gen_lab)
    same = cv2.inRange(cv2.absdiff(gen, exp), _ZEROS3, _ZEROS3)
    if cv2.countNonZero(same):
        d[same > 0] = 0.0
    return clip01(d.mean() / 100.0)


def _sd(gen: np.ndarray) -> float:
    return clip01(mean_channel_std(gen) / 127.5)


def _ced(g: np.ndarray) -> float:
    edges = cv2.Canny(np.ascontiguousarray(g), CANNY_LOW, CANNY_HIGH)
    return clip01(cv2.countNonZero(edges) / g.size)


@lru_cache(maxsize=16)
def _low_frequency_basis(rows: int, cols: int):
    """DFT rows for the low frequencies of a ``rows`` x ``cols`` block.

    Returns ``(basis_u, basis_v, weights)``: ``basis_u`` stacks cos and sin rows ``(2 ku, rows)``, ``basis_v``
    is ``(kv, cols)`` complex, ``weights`` a float ``(ku, kv)`` array that counts each non-zero frequency
    inside the radius (0 outside), or ``None`` when the block has no spectral radius (1 pixel).

    The spectrum of a real image is Hermitian, ``|F(-u, -v)| = |F(u, v)|``, and the low-frequency disc is
    symmetric about the origin, so when the frequency ranges are symmetric only the rows ``u >= 0`` are
    computed and the rows ``u > 0`` count twice: half the work of the largest product, the same sum up to
    rounding.
    """
    crow, ccol = rows // 2, cols // 2
    norm = np.sqrt(crow**2 + ccol**2)
    if norm == 0:
        return None
    reach = int(np.floor(HF_RADIUS * norm)) + 1
    du = np.arange(max(-crow, -reach), min(rows - 1 - crow, reach) + 1)
    dv = np.arange(max(-ccol, -reach), min(cols - 1 - ccol, reach) + 1)
    # Same float operations as the plain path's radius grid, so the boundary decisions agree bit for bit.
    radius = np.sqrt(du[:, None] ** 2 + dv[None, :] ** 2) / norm
    low = ~(radius > HF_RADIUS)
    low[du == 0, dv == 0] = False  # the DC term is handled exactly
    keep_u = low.any(axis=1)
    keep_v = low.any(axis=0)
    du, dv, low = du[keep_u], dv[keep_v], low[np.ix_(keep_u, keep_v)]
    weights = low.astype(np.float64)
    if np.array_equal(du, -du[::-1]) and np.array_equal(dv, -dv[::-1]):
        half = du >= 0
        du, weights = du[half], weights[half] * np.where(du[half] > 0, 2.0, 1.0)[:, None]
    ang_u = 2.0 * np.pi * ((du[:, None] * np.arange(rows)[None, :]) % rows) / rows
    ang_v = 2.0 * np.pi * ((dv[:, None] * np.arange(cols)[None, :]) % cols) / cols
    basis_u = np.concatenate([np.cos(ang_u), np.sin(ang_u)])
    basis_v = np.exp(-1j * ang_v)
    for arr in (basis_u, basis_v, weights):
        arr.setflags(write=False)
    return basis_u, basis_v, weights


def _hf(g: np.ndarray) -> float:
    rows, cols = g.shape
    basis = _low_frequency_basis(rows, cols)
    if basis is None:
        return 0.0
    gf = g.astype(np.float64)
    n = gf.size
    s = gf.sum()
    gf -= s / n
    ac = float(np.dot(gf.ravel(), gf.ravel()))
    total = s * s + n * ac  # Parseval: |F(0,0)|^2 + the power of every other frequency
    if total == 0.0 or ac == 0.0:
        return 0.0
    basis_u, basis_v, weights = basis
    if weights.size:
        ku = weights.shape[0]
        proj = basis_u @ gf
        a = proj[:ku] - 1j * proj[ku:]
        spectrum = a @ basis_v.T
        low_power = float(np.sum(weights * (spectrum.real ** 2 + spectrum.imag ** 2)))
    else:
        low_power = 0.0
    high = max(n * ac - low_power, 0.0)
    return clip01(high / total)


def color_metrics(image, expected, *, layout: str = "single", profile: str = "violin") -> Metrics:
    """Score a colour answer against its expected image.

    Parameters
    ----------
    image, expected : image-like
        The generated image and the ground truth (each block of ``layout`` normally one colour).
    layout : {"single", "vertical", "horizontal", "quad"}
        ``vertical`` = left|right halves, ``horizontal`` = top/bottom halves, ``quad`` = 2x2 quadrants; split
        at ``h // 2`` / ``w // 2``. Each metric is computed per block and averaged over blocks.
    profile : {"violin", "strict"}
        ``violin`` reproduces the reference numbers (8-bit OpenCV Lab codes, the reference's float32
        CIEDE2000); ``strict`` uses unquantized float Lab (the formula of ``skimage.color.rgb2lab``) and the
        float64 CIEDE2000.

    Returns
    -------
    Metrics
        ``rgb_ed``, ``lab_00``, ``sd``, ``ced``, ``hf`` in ``[0, 1]`` (0 = perfect), task ``"color"``.

    An image too small for the layout is a ``ValueError`` too.

    Notes
    -----
    * ``rgb_ed`` (Eq. 2): mean per-pixel ``||gen - exp||_2`` / 441.67.
    * ``lab_00`` (CIEDE2000, Sharma 2005): mean per-pixel dE00 / 100;
      under ``violin`` with the reference's float32 arithmetic and hue
      decisions (``docs/metrics.md``).
    * ``sd`` (Eq. 3): mean of the three channel standard deviations of the
      generated block / 127.5.
    * ``ced`` (Eq. 4): fraction of ``cv2.Canny(gray, 20, 60)`` edge pixels.
    * ``hf`` (Eq. 5): share of the centred power spectrum of the gray
      block at normalized radius > 0.02 (0 for zero total power).
    Every value is clipped to ``[0, 1]``.
    """
    check_layout(layout)
    check_profile(profile)
    gen, exp = prepare_pair(image, expected)
    blocks = split_blocks(gen.shape[0], gen.shape[1], layout)
    whole = {}  # whole-image conversions, made once and only when a block needs them

    def g_gray():
        if "gray" not in whole:
            whole["gray"] = gray(gen)
        return whole["gray"]

    def g_lab():
        if "g_lab" not in whole:
            whole["g_lab"] = lab8(gen) if profile == "violin" else float_lab(gen)
        return whole["g_lab"]

    def lab00_strict(rs, cs, gb, eb, e_one):
        if e_one is not None:
            return _lab00_strict_one(gb, e_one)
        return _lab00_strict(gb, g_lab()[rs, cs], eb, _strict_exp_lab(whole, exp)[rs, cs])

    sums = dict.fromkeys(COLOR_METRICS, 0.0)
    for rs, cs in blocks:
        gb, eb = gen[rs, cs], exp[rs, cs]
        g_one = _single_color(gb)
        e_one = _single_color(eb)
        if g_one is not None:
            # A one-colour generated block: sd, ced and hf are exactly 0 (one histogram bin, no gradient for
            # Canny, no power off the zero frequency: the fast path's own values), and against a one-colour
            # expected block every pixel pair is the same pair.
            if e_one is not None:
                sums["rgb_ed"] += _rgb_ed(g_one.reshape(1, 1, 3), e_one.reshape(1, 1, 3))
            else:
                sums["rgb_ed"] += _rgb_ed(gb, eb)
            if profile == "violin" and e_one is not None:
                sums["lab_00"] += _lab00_violin(lab8(g_one.reshape(1, 1, 3)), _ref_codes(e_one))
            elif profile == "violin":
                sums["lab_00"] += _lab00_violin_general(g_lab()[rs, cs], lab8(eb))
            elif e_one is not None:
                sums["lab_00"] += _lab00_strict_one(g_one.reshape(1, 1, 3), e_one)
            else:
                sums["lab_00"] += lab00_strict(rs, cs, gb, eb, None)
            continue
        sums["rgb_ed"] += _rgb_ed(gb, eb)
        if profile == "violin":
            if e_one is not None:
                sums["lab_00"] += _lab00_violin(g_lab()[rs, cs], _ref_codes(e_one))
            else:
                sums["lab_00"] += _lab00_violin_general(g_lab()[rs, cs], lab8(eb))
        else:
            sums["lab_00"] += lab00_strict(rs, cs, gb, eb, e_one)
        sums["sd"] += _sd(gb)
        gg = g_gray()[rs, cs]
        sums["ced"] += _ced(gg)
        sums["hf"] += _hf(gg)
    k = len(blocks)
    return Metrics({name: clip01(sums[name] / k) for name in COLOR_METRICS},
                   task="color", profile=profile)


def _ref_codes(color: np.ndarray) -> np.ndarray:
    """8-bit Lab codes of one RGB colour (OpenCV converts pixels independently)."""
    return lab8(color.reshape(1, 1, 3))[0, 0]


def _strict_exp_lab(whole: dict, exp: np.ndarray) -> np.ndarray:
    if "e_lab" not in whole:
        whole["e_lab"] = float_lab(exp)
    return whole["e_lab"]
