"""The colour metrics written the straightforward way.

This is the executable statement of the definitions that :func:`pytest_violin.metrics.color_metrics`
implements quickly: per-pixel CIEDE2000 over the whole block, ``numpy.std``, a full ``numpy.fft.fft2`` with
``fftshift``. Tests and ``benchmarks/bench_metrics.py`` compare the fast path against it; it is not public
API.

CIEDE2000 per pixel: under ``violin`` the reference's float32 formula on float32 Lab
(:func:`.ciede2000.ciede2000_32` by default; :func:`skimage_ciede2000` is the reference's own call, whose hue
decisions at exactly opposite hues depend on the platform's float32 ``arctan2``, see :mod:`.ciede2000`); under
``strict`` ``skimage.color.rgb2lab`` and ``skimage.color.deltaE_ciede2000`` in float64.
"""

from __future__ import annotations

import cv2
import numpy as np

from ._common import Metrics, check_profile, gray, lab8, lab8_to_cie32, prepare_pair, split_blocks
from .ciede2000 import ciede2000_32

__all__ = ["plain_color_metrics", "plain_hf", "skimage_ciede2000"]


def skimage_ciede2000(lab_gen: np.ndarray, lab_exp: np.ndarray) -> np.ndarray:
    """``skimage.color.deltaE_ciede2000(lab_gen, lab_exp)``: the reference's call.

    On float32 input skimage keeps float32, as in the reference; its hue decisions at exact ties follow this
    platform's float32 ``arctan2``.
    """
    from skimage.color import deltaE_ciede2000

    return deltaE_ciede2000(lab_gen, lab_exp)


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
                        profile: str = "violin", violin_ciede2000=ciede2000_32) -> Metrics:
    """The colour metrics computed plainly (slow reference path).

    Same parameters and result as :func:`pytest_violin.metrics.color_metrics`; ``violin_ciede2000(lab_gen,
    lab_exp)`` is the per-pixel CIEDE2000 of the ``violin`` profile on float32 Lab (default: the reference's
    arithmetic, :func:`.ciede2000.ciede2000_32`; :func:`skimage_ciede2000` is the reference's own call).
    """
    from skimage.color import deltaE_ciede2000, rgb2lab

    check_profile(profile)
    gen, exp = prepare_pair(image, expected)
    blocks = split_blocks(gen.shape[0], gen.shape[1], layout)
    if profile == "violin":
        g_lab, e_lab = lab8_to_cie32(lab8(gen)), lab8_to_cie32(lab8(exp))
        ciede = violin_ciede2000
    else:
        g_lab = rgb2lab(gen.astype(np.float64) / 255.0)
        e_lab = rgb2lab(exp.astype(np.float64) / 255.0)

        def ciede(lab_gen, lab_exp):
            return deltaE_ciede2000(lab_exp, lab_gen)
    g_gray = gray(gen)
    rows = []
    for rs, cs in blocks:
        gb = gen[rs, cs].astype(np.float64)
        eb = exp[rs, cs].astype(np.float64)
        rgb_ed = np.sqrt(((gb - eb) ** 2).sum(axis=-1)).mean() / 441.67
        lab_00 = np.mean(ciede(g_lab[rs, cs], e_lab[rs, cs]), dtype=np.float64) / 100.0
        sd = np.mean([gb[:, :, c].std() for c in range(3)]) / 127.5
        gg = np.ascontiguousarray(g_gray[rs, cs])
        ced = np.count_nonzero(cv2.Canny(gg, 20, 60)) / gg.size
        hf = plain_hf(gg)
        rows.append([min(max(v, 0.0), 1.0) for v in (rgb_ed, lab_00, sd, ced, hf)])
    means = np.mean(np.array(rows), axis=0)
    names = ("rgb_ed", "lab_00", "sd", "ced", "hf")
    return Metrics(dict(zip(names, means.tolist())), task="color", profile=profile)
