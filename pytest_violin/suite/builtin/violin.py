"""Suite ``violin``: the main benchmark, 7,745 samples at 512x512.

* ``color/v1``: 29 ISCC-NBS colors x 15 templates = 435;
* ``color/v2``: 58 ordered color pairs x 20 templates (10 left|right, 10 top/bottom) = 1,160; pair ``k`` of
  color ``i`` is ``(i, i + 7)`` or ``(i, i + 18)`` modulo 29, so every color is first twice and second twice;
* ``shape``: 3 shapes x 10 templates x 25 (size, anchor) combinations = 750, the combinations rotating through
  5 sizes x 9 anchors;
* ``mask``: 1,800 base images x 3 mask kinds = 5,400.
"""

from __future__ import annotations

from ..builders import make_blocks, make_photo_mask, make_shape
from ..colors import ISCC_NBS_COLORS
from ..drawing import ANCHORS, MASK_KINDS, SHAPES, SKIMAGE_PHOTOS, list_photo_dir
from ..sample import freeze
from ..ids import slugify, stable_seed
from ..prompts import BLOCK_TEMPLATES, COLOR_TEMPLATES, SHAPE_TEMPLATES, percent

__all__ = ["NAME", "SHAPE_SIZES", "MASK_BASE_IMAGES", "PAIR_OFFSETS", "color_pairs", "build",
           "photo_specs"]

NAME = "violin"
#: Shape sizes, fractions of the image width.
SHAPE_SIZES = (0.1, 0.2, 0.25, 0.3, 0.4)
#: Number of base images of the mask task.
MASK_BASE_IMAGES = 1800
#: Offsets (mod 29) that make the 58 color pairs.
PAIR_OFFSETS = (7, 18)
_SIZE = 512


def color_pairs() -> list:
    """The 58 ordered (first, second) ISCC-NBS color pairs."""
    n = len(ISCC_NBS_COLORS)
    return [(ISCC_NBS_COLORS[i], ISCC_NBS_COLORS[(i + k) % n])
            for k in PAIR_OFFSETS for i in range(n)]


def _round(x: float) -> float:
    return round(x, 4)


def photo_specs(photos_dir=None, count: int = MASK_BASE_IMAGES) -> list:
    """``(slug, n, photo_spec)`` of the base images: photos cycled, variant ``n`` of each.

    Variant 0 of a photo is the largest centred crop; later variants are zoomed (1-1.8x), shifted and possibly
    mirrored crops drawn from 16-bit slices of one stable hash of ``(NAME, photo, n)``.
    """
    if photos_dir is None:
        photos = [("skimage", name, None) for name in SKIMAGE_PHOTOS]
    else:
        folder = str(photos_dir)
        photos = [("dir", name, folder) for name in list_photo_dir(photos_dir)]
    out = []
    for b in range(count):
        source, name, folder = photos[b % len(photos)]
        n = b // len(photos)
        key = (NAME, name, n)
        if n == 0:
            spec = {"source": source, "name": name, "zoom": 1.0, "fx": 0.5, "fy": 0.5,
                    "flip": False}
        else:
            bits = stable_seed(*key, "crop")
            u = [((bits >> (16 * i)) & 0xFFFF) / 65536.0 for i in range(4)]
            spec = {"source": source, "name": name, "zoom": _round(1.0 + 0.8 * u[0]),
                    "fx": _round(u[1]), "fy": _round(u[2]), "flip": u[3] < 0.5}
        if folder is not None:
            spec["folder"] = folder
        out.append((slugify(name), n, freeze(spec)))
    return out


def build(photos_dir=None) -> list:
    """All 7,745 samples of the ``violin`` suite, in suite order."""
    samples = []
    for color in ISCC_NBS_COLORS:
        for t, text in enumerate(COLOR_TEMPLATES, 1):
            samples.append(make_blocks(f"color/v1/{color.slug}/t{t:02d}", NAME, "v1", "single",
                                       [color.rgb], text.format(color=color.phrase),
                                       _SIZE, _SIZE, extra={"template": t - 1}))
    for first, second in color_pairs():
        for t, (layout, text) in enumerate(BLOCK_TEMPLATES, 1):
            prompt = text.format(first=first.phrase, second=second.phrase)
            samples.append(make_blocks(f"color/v2/{first.slug}/{second.slug}/t{t:02d}", NAME,
                                       "v2", layout, [first.rgb, second.rgb], prompt, _SIZE,
                                       _SIZE, extra={"template": t - 1}))
    combos = [(size, anchor) for size in SHAPE_SIZES for anchor in ANCHORS]
    for s, shape in enumerate(SHAPES):
        for t in range(len(SHAPE_TEMPLATES)):
            for j in range(25):
                size, anchor = combos[(t * 25 + j + s * 15) % len(combos)]
                sid = f"shape/{shape}/s{percent(size)[:-1]}/{anchor}/t{t + 1:02d}"
                samples.append(make_shape(sid, NAME, shape, shape, size, t, _SIZE, _SIZE,
                                          anchor=anchor))
    bases = photo_specs(photos_dir)
    for k, kind in enumerate(MASK_KINDS):
        for b, (slug, n, photo) in enumerate(bases):
            sid = f"mask/{kind}/{slug}/n{n:03d}"
            samples.append(make_photo_mask(sid, NAME, kind, photo, stable_seed(NAME, sid),
                                           (b + k) % 3, _SIZE, _SIZE))
    return samples
