"""The colour metrics written the straightforward way.

This is the executable statement of the definitions that
:func:`pytest_violin.metrics.color_metrics` implements quickly: per-pixel
``skimage.color.deltaE_ciede2000`` over the whole block, ``numpy.std``,
a full ``numpy.fft.fft2`` with ``fftshift``. Tests and
``benchmarks/bench_metrics.py`` compare the fast path against it; it is not
public API.
"""

from __future__ import annotations

import cv2
import numpy as np

from ._common import gray, prepare_pair, split_blocks
from ._lab import lab8, lab8_to_cie
from ._types import Metrics, check_profile

__all__ = ["plain_color_metrics", "plain_hf"]


def plain_hf(g: np.ndarray) -> float:
    """High-frequency power ratio of a gray block via the full shifted FFT."""
    rows, cols = g.shape
    crow, ccol = rows // 2, cols // 2
    norm = np.sqrt(crow**2 + ccol**2)
    if norm == 0:
        return 0.0
    power = np.abs(np.fft.fftshift(np.fft.fft2(g.astype(np.float64)))) ** 2
    total = power.sum()
    if total == 0:
        return 0.0
    y, x = np.ogrid[:rows, :cols]
    radius = np.sqrt((y - crow) ** 2 + (x - ccol) ** 2) / norm
    return float(min(max(power[radius > 0.02].sum() / total, 0.0), 1.0))


def plain_color_metrics(image, expected, *, layout: str = "single",
                        profile: str = "violin") -> Metrics:
    """The colour metrics computed plainly (slow reference path).

    Same parameters and result as :func:`pytest_violin.metrics.color_metrics`.
    """
    from skimage.color import deltaE_ciede2000, rgb2lab

    check_profile(profile)
    gen, exp = prepare_pair(image, expected)
    blocks = split_blocks(gen.shape[0], gen.shape[1], layout)
    if profile == "violin":
        g_lab, e_lab = lab8_to_cie(lab8(gen)), lab8_to_cie(lab8(exp))
    else:
        g_lab = rgb2lab(gen.astype(np.float64) / 255.0)
        e_lab = rgb2lab(exp.astype(np.float64) / 255.0)
    g_gray = gray(gen)
    rows = []
    for rs, cs in blocks:
        gb = gen[rs, cs].astype(np.float64)
        eb = exp[rs, cs].astype(np.float64)
        rgb_ed = np.sqrt(((gb - eb) ** 2).sum(axis=-1)).mean() / 441.67
        lab_00 = deltaE_ciede2000(e_lab[rs, cs], g_lab[rs, cs]).mean() / 100.0
        sd = np.mean([gb[:, :, c].std() for c in range(3)]) / 127.5
        gg = np.ascontiguousarray(g_gray[rs, cs])
        ced = np.count_nonzero(cv2.Canny(gg, 20, 60)) / gg.size
        hf = plain_hf(gg)
        rows.append([min(max(v, 0.0), 1.0) for v in (rgb_ed, lab_00, sd, ced, hf)])
    means = np.mean(np.array(rows), axis=0)
    names = ("rgb_ed", "lab_00", "sd", "ced", "hf")
    return Metrics(dict(zip(names, means.tolist())), task="color", profile=profile)
