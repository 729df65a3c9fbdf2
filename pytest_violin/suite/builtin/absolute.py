"""Suite ``violin-absolute``: exact color codes instead of names, 522 samples at 512x512.

Sizes chosen so that each of the 29 ISCC-NBS colors appears in every variation:

* ``v1`` hex single color: 29 colors x 6 templates = 174;
* ``v2`` hex two blocks: the 58 pairs of ``violin`` x (one left|right, one top/bottom template) = 116;
* ``v3`` hex 2x2 quadrants: 29 x 2 templates = 58; sample ``i`` uses colors ``i, i+5, i+12, i+20`` (mod 29),
  so each color sits once in each quadrant per template;
* ``v4`` fuzzy color: 29 x 2 templates = 58; range = each channel ``c`` from ``round(0.7 c)`` to ``min(255,
  round(1.3 c))``; any solid color inside scores 0;
* ``v5`` multilingual: 29 x (Chinese, French) = 58;
* ``v6`` other notations: 29 x (``rgb()``, ``hsl()``) = 58.
"""

from __future__ import annotations

from ..builders import make_blocks, make_fuzzy
from ..colors import ISCC_NBS_COLORS, format_color, parse_color
from ..prompts import (BLOCK_TEMPLATES, CODE_TEMPLATES, FUZZY_TEMPLATES, MULTILINGUAL_TEMPLATES,
                      NOTATION_LABELS, QUAD_TEMPLATES)
from .violin import color_pairs

__all__ = ["NAME", "QUAD_OFFSETS", "FUZZY_SPREAD", "fuzzy_range", "build"]

NAME = "violin-absolute"
QUAD_OFFSETS = (0, 5, 12, 20)
#: Relative half-width of the fuzzy ranges.
FUZZY_SPREAD = 0.3
_SIZE = 512


def fuzzy_range(rgb) -> tuple:
    """``(low, high)`` per-channel range around ``rgb`` (see module docstring)."""
    low = tuple(int(round(c * (1 - FUZZY_SPREAD))) for c in rgb)
    high = tuple(min(255, int(round(c * (1 + FUZZY_SPREAD)))) for c in rgb)
    return low, high


def build(photos_dir=None) -> list:
    """All 522 samples of ``violin-absolute``."""
    samples = []
    hexl = NOTATION_LABELS["hex"]
    for c in ISCC_NBS_COLORS:
        for t, text in enumerate(CODE_TEMPLATES, 1):
            samples.append(make_blocks(f"absolute/v1/{c.slug}/t{t:02d}", NAME, "v1", "single",
                                       [c.rgb], text.format(color=c.hex, label=hexl),
                                       _SIZE, _SIZE, notation="hex", extra={"template": t - 1}))
    vertical = [i for i, (lay, _) in enumerate(BLOCK_TEMPLATES) if lay == "vertical"]
    horizontal = [i for i, (lay, _) in enumerate(BLOCK_TEMPLATES) if lay == "horizontal"]
    for p, (a, b) in enumerate(color_pairs()):
        for layout, options in (("vertical", vertical), ("horizontal", horizontal)):
            t = options[p % len(options)]
            prompt = BLOCK_TEMPLATES[t][1].format(first=a.hex, second=b.hex)
            prompt += f" Colors are given as {hexl}s."
            samples.append(make_blocks(f"absolute/v2/{a.slug}/{b.slug}/{layout}", NAME, "v2",
                                       layout, [a.rgb, b.rgb], prompt, _SIZE, _SIZE,
                                       notation="hex", extra={"template": t}))
    n = len(ISCC_NBS_COLORS)
    for i, c in enumerate(ISCC_NBS_COLORS):
        quad = [ISCC_NBS_COLORS[(i + k) % n] for k in QUAD_OFFSETS]
        for t, text in enumerate(QUAD_TEMPLATES, 1):
            prompt = text.format(tl=quad[0].hex, tr=quad[1].hex, bl=quad[2].hex, br=quad[3].hex,
                                 label=hexl)
            samples.append(make_blocks(f"absolute/v3/{c.slug}/t{t:02d}", NAME, "v3", "quad",
                                       [q.rgb for q in quad], prompt, _SIZE, _SIZE,
                                       notation="hex", extra={"template": t - 1}))
    for c in ISCC_NBS_COLORS:
        low, high = fuzzy_range(c.rgb)
        for t, text in enumerate(FUZZY_TEMPLATES, 1):
            prompt = text.format(low=format_color(low, "hex"), high=format_color(high, "hex"),
                                 label=hexl)
            samples.append(make_fuzzy(f"absolute/v4/{c.slug}/t{t:02d}", NAME, "v4", c.rgb, low,
                                      high, prompt, _SIZE, _SIZE))
    for c in ISCC_NBS_COLORS:
        for lang, text in MULTILINGUAL_TEMPLATES.items():
            samples.append(make_blocks(f"absolute/v5/{c.slug}/{lang}", NAME, "v5", "single",
                                       [c.rgb], text.format(color=c.hex), _SIZE, _SIZE,
                                       notation="hex", extra={"language": lang}))
    for i, c in enumerate(ISCC_NBS_COLORS):
        for j, notation in enumerate(("rgb", "hsl")):
            code = format_color(c.rgb, notation)
            t = (2 * i + j) % len(CODE_TEMPLATES)
            prompt = CODE_TEMPLATES[t].format(color=code, label=NOTATION_LABELS[notation])
            samples.append(make_blocks(f"absolute/v6/{c.slug}/{notation}", NAME, "v6", "single",
                                       [parse_color(code)], prompt, _SIZE, _SIZE,
                                       notation=notation, extra={"template": t}))
    return samples
