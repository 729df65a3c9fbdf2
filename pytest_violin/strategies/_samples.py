"""Sample strategies: whole :class:`pytest_violin.Sample` objects of every task.

Each composes the strategies of its parts (colors, ratios, placements, masks) with a prompt template and
builds the sample with :mod:`pytest_violin.suite.builders`, so a failing sample shrinks through its parts and
toward prompt template 0.

Each returns a strategy of :class:`pytest_violin.Sample` objects of its task and takes, where they apply:
``notation`` (``"hex"``, ``"rgb"``, ``"hsl"``, ``"name"``: how the colors are written in the prompt; None
draws one, shrinking toward hex), ``width`` and ``height`` (the image size, default the suite's 512 x 512) and
``template`` (a fixed prompt template, or None to draw one).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from ..tasks import color as _color_family
from ..tasks.geometric import ORIENTATIONS as _ORIENTATIONS
from ._checks import check, check_canvas, check_choice, check_strategy_or_none, is_int
from ._colors import NOTATIONS, named_colors, notations_for, rgb_colors
from ._geometry import ANCHORS, SHAPES, shape_placements, split_ratios
from ._masks import kind_and_mask, masks, source_images

#: Multi-block layouts of the color family and their number of blocks.
_BLOCKS = {name: n for name, n in _color_family.BLOCK_COUNTS.items() if n > 1}
_LAYOUTS = tuple(_BLOCKS)


def _builders():
    from ..suite import builders

    return builders


def _template_count(task: str, variant=None) -> int:
    """Number of prompt templates the builder of ``task`` accepts for ``variant``."""
    from ..suite import prompts

    if task == "color":
        return len(prompts.COLOR_TEMPLATES if variant == "name" else prompts.CODE_TEMPLATES)
    if task == "blocks":
        if variant == "quad":
            return len(prompts.QUAD_TEMPLATES)
        return sum(1 for lay, _ in prompts.BLOCK_TEMPLATES if lay == variant)
    if task == "ratio":
        return len(prompts.RATIO_TEMPLATES[variant])
    if task == "shape":
        return len(prompts.SHAPE_TEMPLATES)
    return len(prompts.MASK_TEMPLATES)


def _templates(task: str, variant, template) -> st.SearchStrategy:
    if template is not None:
        return st.just(int(template))
    return st.integers(min_value=0, max_value=_template_count(task, variant) - 1)


def _check_template(template, task: str, variants) -> None:
    """A fixed template must exist for every variant that can be drawn."""
    check(template is None or (is_int(template) and template >= 0), "template", template,
          "a non-negative integer or None (any template)")
    if template is None:
        return
    limit = min(_template_count(task, v) for v in variants)
    check(template < limit, "template", template,
          f"a template index in 0..{limit - 1} for these {task} samples, or None")


def _check_notation_any(notation) -> None:
    check_choice("notation", notation, NOTATIONS, allow_none=True)


def _colors_for(notation) -> st.SearchStrategy:
    """RGB tuples a notation can express (``name``: the 29 named colors)."""
    return named_colors() if notation == "name" else rgb_colors()


def _variants(value, choices: tuple) -> tuple:
    """The variants that can be drawn: ``value``, or all of ``choices`` when it is None."""
    return choices if value is None else (value,)


def _check_colored(notation, width, height, minimum: int) -> tuple:
    """Check the arguments every color-sample strategy takes; return ``(width, height)``."""
    _check_notation_any(notation)
    return check_canvas(width, height, minimum)


def _distinct_colors(draw, notation, count: int) -> tuple:
    """``(colors, notation)``: ``count`` distinct RGB tuples and a notation that writes them all."""
    cols = draw(st.lists(_colors_for(notation), min_size=count, max_size=count, unique=True))
    return cols, notation or draw(notations_for(cols))


def color_samples(*, notation: str | None = None, width: int = 512, height: int = 512,
                  template: int | None = None) -> st.SearchStrategy:
    """Single-color samples: "a pure #D9B451 image", built by ``color_sample``."""
    width, height = _check_colored(notation, width, height, 1)
    _check_template(template, "color", _variants(notation, NOTATIONS))

    @st.composite
    def sample(draw):
        rgb = draw(_colors_for(notation))
        note = notation or draw(notations_for([rgb]))
        tmpl = draw(_templates("color", note, template))
        return _builders().color_sample(rgb, notation=note, width=width, height=height,
                                        template=tmpl)

    return sample()


def block_samples(*, layout: str | None = None, notation: str | None = None,
                  width: int = 512, height: int = 512,
                  template: int | None = None) -> st.SearchStrategy:
    """Multi-block color samples: halves or quadrants, each block a distinct color.

    ``layout`` is ``vertical`` (left | right halves), ``horizontal`` (top / bottom) or ``quad`` (2 x 2 in
    reading order); None draws one (shrinking toward ``vertical``). The image is at least 2 x 2.
    """
    check_choice("layout", layout, _LAYOUTS, allow_none=True)
    width, height = _check_colored(notation, width, height, 2)
    _check_template(template, "blocks", _variants(layout, _LAYOUTS))

    @st.composite
    def sample(draw):
        lay = draw(st.sampled_from(_variants(layout, _LAYOUTS)))
        cols, note = _distinct_colors(draw, notation, _BLOCKS[lay])
        tmpl = draw(_templates("blocks", lay, template))
        return _builders().block_sample(lay, cols, notation=note, width=width, height=height,
                                        template=tmpl)

    return sample()


def ratio_samples(*, orientation: str | None = None, min_value: float = 0.05,
                  max_value: float = 0.95, notation: str | None = None, width: int = 512,
                  height: int = 512, template: int | None = None) -> st.SearchStrategy:
    """Area-ratio samples: "the left 31.5% pure blue, the rest pure red".

    ``orientation`` is ``vertical`` (left | right) or ``horizontal`` (top / bottom); None draws one.
    ``min_value`` and ``max_value`` bound the first region's share (see :func:`split_ratios`); the ratio
    shrinks toward 0.5.
    """
    check_choice("orientation", orientation, _ORIENTATIONS, allow_none=True)
    ratios = split_ratios(min_value=min_value, max_value=max_value)
    width, height = _check_colored(notation, width, height, 2)
    _check_template(template, "ratio", _variants(orientation, _ORIENTATIONS))

    @st.composite
    def sample(draw):
        ori = draw(st.sampled_from(_variants(orientation, _ORIENTATIONS)))
        ratio = draw(ratios)
        cols, note = _distinct_colors(draw, notation, 2)
        tmpl = draw(_templates("ratio", ori, template))
        return _builders().ratio_sample(ratio, cols, orientation=ori, notation=note, width=width,
                                        height=height, template=tmpl)

    return sample()


def shape_samples(*, width: int = 512, height: int = 512, shapes: Sequence[str] = SHAPES,
                  min_size: float = 0.05, max_size: float = 0.5,
                  anchors: Sequence[str] | None = ANCHORS, centers: bool = True,
                  template: int | None = None) -> st.SearchStrategy:
    """Shape samples: a solid white shape on black, placed as drawn by :func:`shape_placements`
    (whose arguments the others are).
    """
    placements = shape_placements(width=width, height=height, shapes=shapes, min_size=min_size,
                                  max_size=max_size, anchors=anchors, centers=centers)
    _check_template(template, "shape", (None,))

    @st.composite
    def sample(draw):
        p = draw(placements)
        tmpl = draw(_templates("shape", None, template))
        return _builders().shape_sample(p.shape, p.size, anchor=p.anchor, center=p.center,
                                        width=width, height=height, template=tmpl)

    return sample()


def mask_samples(*, width: int = 64, height: int = 64, kind: str | None = None,
                 images: st.SearchStrategy | None = None,
                 template: int | None = None) -> st.SearchStrategy:
    """Mask samples: an image, a keep-mask and "black out every pixel where the mask is 0".

    The image is 64 x 64 by default; ``kind`` is as for :func:`masks`. ``images`` draws the source images of
    ``(height, width)`` (default :func:`source_images`): keep their darkest pixels above the mask metrics'
    black threshold (gray 30 or darker), or the ground truth cannot score 0.
    """
    masks(width=width, height=height, kind=kind)  # validates the arguments
    pairs = kind_and_mask(int(width), int(height), kind)
    check_strategy_or_none("images", images)
    _check_template(template, "mask", (None,))
    sources = source_images(width=width, height=height) if images is None else images

    @st.composite
    def sample(draw):
        image = draw(sources)
        chosen, keep = draw(pairs)
        tmpl = draw(_templates("mask", None, template))
        return _builders().mask_sample(image, keep, kind=chosen, template=tmpl)

    return sample()
