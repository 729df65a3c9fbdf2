"""Build one sample from parameters, with its prompt and ground truth.

The public builders (:func:`color_sample`, :func:`block_sample`, :func:`ratio_sample`, :func:`shape_sample`,
:func:`mask_sample`) are what hypothesis strategies and assertions call; the suites use the lower-level
``make_*`` functions with their own ids. Both produce the same :class:`~pytest_violin.suite.sample.Sample`
class.

A public builder makes a sample of suite ``custom`` whose id is built from its parameters
(``custom/color/<rrggbb>[/...]``); its colors are anything :func:`parse_color` accepts, ``notation`` is how
the prompt writes them (``hex``, ``rgb``, ``hsl``, or ``name`` for ISCC-NBS colors only), ``width`` and
``height`` the image size and ``template`` the prompt template index.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import ImageSizeMismatchError, SuiteError
from ..imaging import as_rgb8
from .colors import format_color, parse_color
from .drawing import LIFT, MASK_KINDS, fill_enclosed, lift_dark, place_bbox, shape_extent
from .prompts import (ANCHOR_PHRASES, BLOCK_TEMPLATES, CODE_TEMPLATES, COLOR_TEMPLATES,
                      MASK_TEMPLATES, NOTATION_LABELS, QUAD_TEMPLATES, RATIO_TEMPLATES,
                      SHAPE_PHRASES, SHAPE_TEMPLATES, percent, pick)
from .sample import Sample

__all__ = ["CUSTOM_SUITE", "color_sample", "block_sample", "ratio_sample", "shape_sample",
           "mask_sample", "make_blocks", "make_fuzzy", "make_ratio", "make_shape",
           "make_photo_mask", "shape_prompt"]

#: Suite name of samples made by the public builders.
CUSTOM_SUITE = "custom"

_CODE_NOTATIONS = ("hex", "rgb", "hsl")


def _rgb_list(rgb) -> list:
    return [int(v) for v in rgb]


def _check_notation(notation):
    if notation not in ("name",) + _CODE_NOTATIONS:
        raise SuiteError(f"unknown notation {notation!r}; accepted: name, hex, rgb, hsl")


def _suffix(notation, template, width, height) -> str:
    parts = []
    if notation != "hex":
        parts.append(notation)
    if template:
        parts.append(f"t{template}")
    if (width, height) != (512, 512):
        parts.append(f"{width}x{height}")
    return "".join("/" + p for p in parts)


def _decimal(value) -> str:
    """A number in an id: at most 6 decimals, no trailing zeros (``0.315``, ``0.5``, ``1``)."""
    return f"{float(value):.6f}".rstrip("0").rstrip(".")


def _hex6(rgb) -> str:
    return format_color(rgb, "hex")[1:].lower()


def _size(width, height):
    for name, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise SuiteError(f"{name} {v!r} must be a positive integer")
    return int(width), int(height)


# ---------------------------------------------------------------- low level
def make_blocks(sample_id, suite, variation, layout, colors, prompt, width=512, height=512, *,
                notation="name", control=None, extra=None) -> Sample:
    """A color sample: uniform blocks in ``layout`` (``single`` for one color)."""
    spec = {"kind": "blocks", "layout": layout, "colors": [_rgb_list(c) for c in colors],
            "notation": notation}
    if extra:
        spec.update(extra)
    return Sample(sample_id, suite, "color", variation, prompt, width, height, layout=layout,
                  spec=spec, control=control)


def make_fuzzy(sample_id, suite, variation, center, low, high, prompt, width=512,
               height=512) -> Sample:
    """A fuzzy-color sample: any solid color inside the per-channel range is exact."""
    spec = {"kind": "fuzzy", "colors": [_rgb_list(center)], "low": _rgb_list(low),
            "high": _rgb_list(high), "notation": "hex"}
    return Sample(sample_id, suite, "color", variation, prompt, width, height, layout="single",
                  spec=spec)


def make_ratio(sample_id, suite, variation, ratio, orientation, colors, prompt, width=512,
               height=512, *, control=None) -> Sample:
    """An area-ratio sample: the first color covers ``ratio`` of the width/height."""
    if orientation not in ("vertical", "horizontal"):
        raise SuiteError(f"unknown orientation {orientation!r}; accepted: vertical, horizontal")
    ratio = float(ratio)
    extent = width if orientation == "vertical" else height
    split = int(round(ratio * extent))
    if not 0.0 < ratio < 1.0 or not 0 < split < extent:
        raise SuiteError(f"ratio {ratio!r} must leave both regions at least one pixel "
                         f"(0 < ratio < 1 and 1 <= ratio * {extent} <= {extent - 1})")
    spec = {"kind": "ratio", "ratio": ratio, "orientation": orientation, "split": split,
            "colors": [_rgb_list(c) for c in colors]}
    return Sample(sample_id, suite, "ratio", variation, prompt, width, height, spec=spec,
                  control=control)


def shape_prompt(shape, size, template, *, anchor=None, center=None) -> str:
    """The prompt of a shape sample."""
    text = pick(SHAPE_TEMPLATES, template, "shape")
    phrase, measure = SHAPE_PHRASES[shape]
    if anchor is not None:
        position = ANCHOR_PHRASES[anchor]
    else:
        position = (f"with its center at {percent(center[0])} of the image width from the left "
                    f"and {percent(center[1])} of the image height from the top")
    return text.format(shape=phrase, measure=measure, size=percent(size), position=position)


def make_shape(sample_id, suite, variation, shape, size, template, width=512, height=512, *,
               anchor=None, center=None) -> Sample:
    """A geometric shape sample (white on black), geometry resolved into the spec."""
    bw, bh = shape_extent(shape, size, width)
    bbox = place_bbox(bw, bh, width, height, anchor=anchor, center=center)
    spec = {"kind": "shape", "shape": shape, "size": float(size), "anchor": anchor,
            "center": None if center is None else [float(center[0]), float(center[1])],
            "bbox": list(bbox), "fg": [255, 255, 255], "bg": [0, 0, 0], "template": template}
    prompt = shape_prompt(shape, size, template, anchor=anchor, center=center)
    return Sample(sample_id, suite, "shape", variation, prompt, width, height, spec=spec)


def make_photo_mask(sample_id, suite, kind, photo, mask_seed, template, width=512,
                    height=512) -> Sample:
    """A mask sample on a base photograph (see :mod:`pytest_violin.suite.drawing`)."""
    spec = {"kind": "mask", "mask_kind": kind, "mask_seed": int(mask_seed), "photo": photo,
            "lift": LIFT, "template": template}
    prompt = pick(MASK_TEMPLATES, template, "mask")
    return Sample(sample_id, suite, "mask", kind, prompt, width, height, spec=spec)


# ---------------------------------------------------------------- public builders
def _colors(colors, need: int, notation: str, what: str) -> tuple:
    """``(rgbs, texts)``: ``need`` colors, as the prompt writes them (an hsl text read back)."""
    rgbs = [parse_color(c) for c in colors]
    if len(rgbs) != need:
        raise SuiteError(f"{what} {need} colors, got {len(rgbs)}")
    if notation == "hsl":
        rgbs = [parse_color(format_color(c, "hsl")) for c in rgbs]
    return rgbs, [format_color(c, notation) for c in rgbs]


def color_sample(color, *, notation: str = "hex", width: int = 512, height: int = 512,
                 template: int = 0) -> Sample:
    """One uniform color image (task ``color``, layout ``single``).

    ``template`` is ``0..14`` for ``name``, ``0..5`` for code notations.
    """
    width, height = _size(width, height)
    _check_notation(notation)
    rgb = parse_color(color)
    if notation == "name":
        prompt = pick(COLOR_TEMPLATES, template, "color").format(color=format_color(rgb, "name"))
    else:
        prompt = pick(CODE_TEMPLATES, template, "color code").format(
            color=format_color(rgb, notation), label=NOTATION_LABELS[notation])
    if notation == "hsl":
        rgb = parse_color(format_color(rgb, "hsl"))
    sid = f"custom/color/{_hex6(rgb)}" + _suffix(notation, template, width, height)
    return make_blocks(sid, CUSTOM_SUITE, "v1", "single", [rgb], prompt, width, height,
                       notation=notation)


def block_sample(layout: str, colors, *, notation: str = "hex", width: int = 512,
                 height: int = 512, template: int = 0) -> Sample:
    """Two or four uniform color blocks (task ``color``), id ``custom/blocks/<layout>/<rrggbb>-...``.

    ``layout`` is ``vertical`` (left | right halves), ``horizontal`` (top / bottom) or ``quad`` (2x2 in
    reading order: top-left, top-right, bottom-left, bottom-right), with 2 colors (4 for ``quad``);
    ``template`` is ``0..9`` for two blocks, ``0..1`` for quad.
    """
    width, height = _size(width, height)
    _check_notation(notation)
    need = {"vertical": 2, "horizontal": 2, "quad": 4}.get(layout)
    if need is None:
        raise SuiteError(f"unknown block layout {layout!r}; accepted: vertical, horizontal, quad")
    rgbs, texts = _colors(colors, need, notation, f"layout {layout!r} needs")
    label = NOTATION_LABELS[notation]
    if layout == "quad":
        prompt = pick(QUAD_TEMPLATES, template, "quad").format(
            tl=texts[0], tr=texts[1], bl=texts[2], br=texts[3], label=label)
        variation = "v3"
    else:
        options = [t for lay, t in BLOCK_TEMPLATES if lay == layout]
        prompt = pick(options, template, f"{layout} block").format(first=texts[0],
                                                                  second=texts[1])
        if notation != "name":
            prompt += f" Colors are given as {label}s."
        variation = "v2"
    sid = (f"custom/blocks/{layout}/" + "-".join(_hex6(c) for c in rgbs)
           + _suffix(notation, template, width, height))
    return make_blocks(sid, CUSTOM_SUITE, variation, layout, rgbs, prompt, width, height,
                       notation=notation)


def ratio_sample(ratio: float, colors, *, orientation: str = "vertical", notation: str = "hex",
                 width: int = 512, height: int = 512, template: int = 0) -> Sample:
    """An area-ratio split (task ``ratio``): the first color covers ``ratio`` of the width (or height).

    ``0 < ratio < 1``; the boundary is at pixel ``round(ratio * width)`` (``height`` for
    ``orientation="horizontal"``, top / bottom instead of left | right), which must leave both regions
    non-empty. ``template`` is ``0..1``.
    """
    width, height = _size(width, height)
    _check_notation(notation)
    if orientation not in RATIO_TEMPLATES:
        raise SuiteError(f"unknown orientation {orientation!r}; accepted: vertical, horizontal")
    rgbs, texts = _colors(colors, 2, notation, "a ratio sample needs")
    ratio = float(ratio)
    if not 0.0 < ratio < 1.0:
        raise SuiteError(f"ratio {ratio!r} must lie strictly between 0 and 1")
    prompt = pick(RATIO_TEMPLATES[orientation], template, "ratio").format(
        pct=percent(ratio), rest=percent(round(1.0 - ratio, 6)), first=texts[0], second=texts[1])
    sid = (f"custom/ratio/{orientation}/{_decimal(ratio)}/" + "-".join(_hex6(c) for c in rgbs)
           + _suffix(notation, template, width, height))
    return make_ratio(sid, CUSTOM_SUITE, orientation, ratio, orientation, rgbs, prompt, width,
                      height)


def shape_sample(shape: str, size: float, *, anchor=None, center=None, width: int = 512,
                 height: int = 512, template: int = 0) -> Sample:
    """A solid white shape on black (task ``shape``, variation = shape).

    ``shape`` is a ``circle`` (``size`` = diameter), an axis-aligned ``square`` or an upright equilateral
    ``triangle`` (``size`` = side length), ``size`` a fraction of the image width in ``(0, 1]``. ``anchor``
    names the alignment of the bounding box (``left-center``, ``top-right``, ``center``, ... see
    :data:`~pytest_violin.suite.drawing.ANCHORS`), or ``center`` gives the bounding-box centre ``(fx, fy)`` as
    fractions of the width and height; neither given: ``anchor="center"``. ``template`` is ``0..9``.
    """
    width, height = _size(width, height)
    if anchor is None and center is None:
        anchor = "center"
    if anchor is not None and anchor not in ANCHOR_PHRASES:
        raise SuiteError(f"unknown anchor {anchor!r}; accepted: {', '.join(ANCHOR_PHRASES)}")
    if shape not in SHAPE_PHRASES:
        raise SuiteError(f"unknown shape {shape!r}; accepted: {', '.join(SHAPE_PHRASES)}")
    if anchor is not None:
        where = anchor
    else:
        where = f"c{_decimal(center[0])}-{_decimal(center[1])}"
    sid = f"custom/shape/{shape}/s{_decimal(size)}/{where}" + _suffix("hex", template, width, height)
    return make_shape(sid, CUSTOM_SUITE, shape, shape, size, template, width, height,
                      anchor=anchor, center=center)


def _keep_mask(mask, shape) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.ndim == 3:
        arr = as_rgb8(arr).max(axis=2)
    if arr.ndim != 2:
        raise SuiteError(f"mask of shape {arr.shape} must be (H, W) or an RGB image")
    if arr.dtype == bool:
        keep = arr
    else:
        top = float(arr.max()) if arr.size else 0.0
        keep = arr > (0.5 if top <= 1.0 else 127)
    if keep.shape != tuple(shape):
        raise ImageSizeMismatchError(f"mask of shape {keep.shape} does not match the image "
                                     f"shape {tuple(shape)}; both must have the same height "
                                     f"and width")
    return keep


def mask_sample(image, mask, *, kind: str = "random", template: int = 0,
                well_formed: bool = True) -> Sample:
    """A mask sample (task ``mask``, id ``custom/mask/<kind>/<digest>``) from any image and a binary mask.

    ``mask`` is of the image's size: bool, 0/1, 0/255, or a black/white RGB image; true / non-zero / white =
    keep. ``kind`` is the variation to file the sample under, ``template`` ``0..2``. ``well_formed`` (default)
    makes the ground truth measurable by the mask metrics: the darkest tones of the source are lifted so every
    channel is >= 40 (:func:`~pytest_violin.suite.drawing.lift_dark`) and kept pixels enclosed by black turn
    black (:func:`~pytest_violin.suite.drawing.fill_enclosed`). The sample holds the pixels (read-only).
    """
    if kind not in MASK_KINDS:
        raise SuiteError(f"unknown mask kind {kind!r}; accepted: {', '.join(MASK_KINDS)}")
    source = np.array(as_rgb8(image), copy=True)
    keep = _keep_mask(mask, source.shape[:2])
    if well_formed:
        source = lift_dark(source, LIFT)
        keep = fill_enclosed((~keep).astype(np.uint8)) == 0
    source.setflags(write=False)
    keep = np.ascontiguousarray(keep)
    keep.setflags(write=False)
    digest = hashlib.blake2b(digest_size=8)
    digest.update(repr(source.shape).encode())
    digest.update(source.tobytes())
    digest.update(np.packbits(keep).tobytes())
    hexd = digest.hexdigest()
    prompt = pick(MASK_TEMPLATES, template, "mask")
    h, w = source.shape[:2]
    spec = {"kind": "mask", "mask_kind": kind, "digest": hexd, "lift": LIFT if well_formed else 0,
            "template": template}
    sid = f"custom/mask/{kind}/{hexd}" + (f"/t{template}" if template else "")
    return Sample(sid, CUSTOM_SUITE, "mask", kind, prompt, w, h, spec=spec,
                  payload=(source, keep))
