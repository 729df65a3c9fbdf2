"""Suite ``violin-probes``: paired diagnostic tests, 235 samples at 512x512.

Every probe names its control sample (same suite) in ``control``:

* ``negation`` (task color): per ISCC-NBS color a plain hex prompt (the control) and the same prompt with "no
  gradient" and "no ripples" clauses; 29 x 3 = 87;
* ``gravity`` (task color): a hex color alone (control), inside an agreeing context ("the color of rusted
  iron" for reddish brown), a conflicting one (the context of the color farthest away in RGB) and an unrelated
  one; 29 x 4 = 116;
* ``inertia`` (task ratio): a 50 % split (control) against 31.5 %, 13 % and 70 % splits, for 4 color pairs x 2
  orientations; 8 x 4 = 32.
"""

from __future__ import annotations

from ..builders import make_blocks, make_ratio
from ..colors import ISCC_NBS_COLORS, format_color
from ..prompts import (GRAVITY_CONTEXTS, NEGATION_CLAUSES, RATIO_TEMPLATES, UNRELATED_CONTEXT,
                      percent)

__all__ = ["NAME", "INERTIA_RATIOS", "INERTIA_PAIRS", "farthest_color", "build"]

NAME = "violin-probes"
INERTIA_RATIOS = (0.315, 0.13, 0.7)
INERTIA_PAIRS = (((0, 0, 255), (255, 0, 0)), ((120, 66, 197), (43, 41, 43)),
                 ((217, 180, 81), (59, 116, 192)), ((255, 255, 255), (0, 0, 0)))
_SIZE = 512


def farthest_color(color):
    """The ISCC-NBS color farthest from ``color`` in RGB (first one on ties)."""
    def dist(other):
        return sum((a - b) ** 2 for a, b in zip(color.rgb, other.rgb))
    return max(ISCC_NBS_COLORS, key=dist)


def build(photos_dir=None) -> list:
    """All 235 samples of ``violin-probes``."""
    samples = []
    for c in ISCC_NBS_COLORS:
        base = f"Generate a solid image of the color {c.hex} (hex code)."
        control = f"probes/negation/{c.slug}/control"
        samples.append(make_blocks(control, NAME, "negation", "single", [c.rgb], base, _SIZE,
                                   _SIZE, notation="hex", extra={"probe": "control"}))
        for name, clause in NEGATION_CLAUSES.items():
            samples.append(make_blocks(f"probes/negation/{c.slug}/{name}", NAME, "negation",
                                       "single", [c.rgb], base + clause, _SIZE, _SIZE,
                                       notation="hex", control=control, extra={"probe": name}))
    for c in ISCC_NBS_COLORS:
        control = f"probes/gravity/{c.slug}/control"
        samples.append(make_blocks(control, NAME, "gravity", "single", [c.rgb],
                                   f"Fill the image with the hex color {c.hex}.", _SIZE, _SIZE,
                                   notation="hex", extra={"probe": "control"}))
        contexts = {
            "agree": f"the color of {GRAVITY_CONTEXTS[c.slug]}",
            "conflict": f"the color of {GRAVITY_CONTEXTS[farthest_color(c).slug]}",
            "unrelated": f"the color of {UNRELATED_CONTEXT}",
        }
        for name, context in contexts.items():
            prompt = f"Fill the image with the hex color {c.hex}, {context}."
            samples.append(make_blocks(f"probes/gravity/{c.slug}/{name}", NAME, "gravity",
                                       "single", [c.rgb], prompt, _SIZE, _SIZE, notation="hex",
                                       control=control, extra={"probe": name}))
    for orientation in ("vertical", "horizontal"):
        for first, second in INERTIA_PAIRS:
            names = "-".join(format_color(x, "hex")[1:].lower() for x in (first, second))
            control = f"probes/inertia/{orientation}/{names}/r50"
            for ratio in (0.5,) + INERTIA_RATIOS:
                prompt = RATIO_TEMPLATES[orientation][0].format(
                    pct=percent(ratio), rest=percent(round(1 - ratio, 6)),
                    first=format_color(first, "hex"), second=format_color(second, "hex"))
                sid = f"probes/inertia/{orientation}/{names}/r{percent(ratio)[:-1]}"
                samples.append(make_ratio(sid, NAME, "inertia", ratio, orientation,
                                          [first, second], prompt, _SIZE, _SIZE,
                                          control=None if ratio == 0.5 else control))
    return samples
