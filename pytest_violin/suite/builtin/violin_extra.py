"""Suite ``violin-extra``: exact-count tasks with their own metrics, 84 samples.

* ``ratio``: area-ratio splits, 8 ratios x 2 orientations x 3 color pairs = 48 (512x512); variation =
  orientation;
* ``border``: a white border of 1-64 pixels on black, 8 thicknesses x (512, 1024) canvases = 16; variation =
  ``512px`` / ``1024px``;
* ``count``: exactly N white square dots on black, 10 counts x dot sides (4, 8) = 20 (512x512); variation =
  ``dot4`` / ``dot8``. Dot positions are drawn from a stable seed on a grid of cells so dots never touch.
"""

from __future__ import annotations

import numpy as np

from ...errors import SuiteError
from ..colors import format_color
from ..ids import stable_seed
from ..prompts import BORDER_TEMPLATES, COUNT_TEMPLATES, RATIO_TEMPLATES, percent
from ..builders import make_ratio
from ..sample import Sample

__all__ = ["NAME", "RATIOS", "RATIO_PAIRS", "BORDER_THICKNESSES", "DOT_COUNTS", "DOT_SIDES",
           "dot_positions", "make_border", "make_dots", "build"]

NAME = "violin-extra"
RATIOS = (0.13, 0.2, 0.25, 0.315, 0.4, 0.6, 0.75, 0.87)
RATIO_PAIRS = (((0, 0, 255), (255, 0, 0)), ((255, 255, 255), (0, 0, 0)),
               ((120, 66, 197), (220, 125, 52)))
BORDER_THICKNESSES = (1, 2, 4, 8, 16, 20, 32, 64)
DOT_COUNTS = (1, 2, 3, 5, 7, 10, 12, 15, 20, 30)
DOT_SIDES = (4, 8)
_WHITE, _BLACK = (255, 255, 255), (0, 0, 0)


def dot_positions(count: int, dot: int, width: int, height: int, seed: int) -> list:
    """Top-left corners of ``count`` non-touching ``dot`` x ``dot`` dots.

    The image is cut into cells of ``4 * dot`` pixels; ``count`` distinct cells are drawn and each dot sits at
    a random offset inside its cell with at least ``dot`` pixels of margin, so two dots are always at least
    ``2 * dot`` pixels apart.
    """
    cell = 4 * dot
    cols, rows = width // cell, height // cell
    if count > cols * rows:
        raise SuiteError(f"{count} dots of {dot}px do not fit in a {width}x{height} image")
    rng = np.random.default_rng(seed)
    cells = rng.choice(cols * rows, size=count, replace=False)
    out = []
    for c in sorted(int(v) for v in cells):
        cx, cy = (c % cols) * cell, (c // cols) * cell
        ox, oy = rng.integers(dot, 2 * dot + 1, size=2)
        out.append([int(cx + ox), int(cy + oy)])
    return out


def make_border(sample_id, suite, variation, thickness, width, height, template=0) -> Sample:
    """A border sample: ``thickness`` px of white along every edge, black inside."""
    prompt = BORDER_TEMPLATES[template].format(width=width, height=height, thickness=thickness,
                                               fg="white", bg="black")
    spec = {"kind": "border", "thickness": int(thickness), "fg": list(_WHITE),
            "bg": list(_BLACK), "template": template}
    return Sample(sample_id, suite, "border", variation, prompt, width, height, spec=spec)


def make_dots(sample_id, suite, variation, count, dot, width, height, seed, template=0) -> Sample:
    """A counting sample: ``count`` white ``dot`` x ``dot`` squares on black."""
    prompt = COUNT_TEMPLATES[template].format(count=count, dot=dot, fg="white", bg="black")
    spec = {"kind": "dots", "count": int(count), "dot": int(dot),
            "positions": dot_positions(count, dot, width, height, seed),
            "fg": list(_WHITE), "bg": list(_BLACK), "template": template}
    return Sample(sample_id, suite, "count", variation, prompt, width, height, spec=spec)


def build(photos_dir=None) -> list:
    """All 84 samples of ``violin-extra``."""
    samples = []
    i = 0
    for orientation in ("vertical", "horizontal"):
        for first, second in RATIO_PAIRS:
            names = "-".join(format_color(c, "hex")[1:].lower() for c in (first, second))
            for ratio in RATIOS:
                t = i % 2
                i += 1
                prompt = RATIO_TEMPLATES[orientation][t].format(
                    pct=percent(ratio), rest=percent(round(1 - ratio, 6)),
                    first=format_color(first, "hex"), second=format_color(second, "hex"))
                samples.append(make_ratio(f"extra/ratio/{orientation}/{names}/r{percent(ratio)[:-1]}",
                                          NAME, orientation, ratio, orientation, [first, second],
                                          prompt, 512, 512))
    for size in (512, 1024):
        for j, t in enumerate(BORDER_THICKNESSES):
            samples.append(make_border(f"extra/border/{size}px/t{t}", NAME, f"{size}px", t, size,
                                       size, j % 2))
    for dot in DOT_SIDES:
        for j, n in enumerate(DOT_COUNTS):
            sid = f"extra/count/dot{dot}/n{n:02d}"
            samples.append(make_dots(sid, NAME, f"dot{dot}", n, dot, 512, 512,
                                     stable_seed(NAME, sid), j % 2))
    return samples
