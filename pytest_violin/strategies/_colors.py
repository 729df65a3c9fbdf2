"""Color strategies: RGB tuples and color strings in every notation the prompts use.

Colors shrink toward the 29 named ISCC-NBS Level-2 colors, the darkest first; a color that must not be a named
one shrinks channel by channel toward pure black.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ._checks import check_bool, check_choice

#: Color notations :func:`colors` can write (``None`` there means any).
NOTATIONS = ("hex", "rgb", "hsl", "name")


def _iscc():
    from ..suite.colors import ISCC_NBS_COLORS

    return ISCC_NBS_COLORS


def _named_rgbs() -> tuple:
    """The 29 named colors' RGB tuples, darkest first (Rec. 601 luma)."""
    return tuple(sorted((c.rgb for c in _iscc()),
                        key=lambda rgb: (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2], rgb)))


def named_colors() -> st.SearchStrategy:
    """One of the 29 ISCC-NBS Level-2 colors, as an ``(r, g, b)`` tuple of ints.

    Shrinks toward the darkest (ISCC-NBS "Black", ``(43, 41, 43)``); the order is by luma, so a failure
    shrinks to the darkest named color that still fails.
    """
    return st.sampled_from(_named_rgbs())


def rgb_colors(*, named: bool = True) -> st.SearchStrategy:
    """Any 8-bit color as an ``(r, g, b)`` tuple of ints.

    With ``named`` (the default) part of the draws are the 29 ISCC-NBS colors: a trivially failing example
    shrinks to the darkest of them, and an arbitrary color shrinks channel by channel toward ``(0, 0, 0)``
    (the shrinker stays in the branch where it found the failure). Without, only the uniform channel strategy
    (shrinks to pure black).
    """
    check_bool("named", named)
    channel = st.integers(min_value=0, max_value=255)
    anything = st.tuples(channel, channel, channel)
    if not named:
        return anything
    return st.one_of(named_colors(), anything)


def _format(rgb, notation: str) -> str:
    from ..suite.colors import format_color

    return format_color(rgb, notation)


def hex_colors(*, named: bool = True) -> st.SearchStrategy:
    """Colors written ``#RRGGBB`` (upper case, ``"#D9B451"``), shrinking as :func:`rgb_colors`."""
    return rgb_colors(named=named).map(lambda rgb: _format(rgb, "hex"))


def colors(*, notation: str | None = None, named: bool = True) -> st.SearchStrategy:
    """Color strings in one notation, or in any of them, that :func:`pytest_violin.parse_color` reads back exactly.

    ``hex`` -> ``#D9B451``; ``rgb`` -> ``rgb(217, 180, 81)``; ``hsl`` -> the shortest ``hsl(...)`` that parses
    back to the exact 8-bit color; ``name`` -> an ISCC-NBS Level-2 name such as ``"yellowish pink"`` (only the
    29 named colors). None (the default): any notation, shrinking toward ``hex``. ``named`` is as for
    :func:`rgb_colors` (ignored for ``notation="name"``).
    """
    check_choice("notation", notation, NOTATIONS, allow_none=True)
    check_bool("named", named)
    if notation == "name":
        return named_colors().map(lambda rgb: _format(rgb, "name"))
    if notation is not None:
        return rgb_colors(named=named).map(lambda rgb: _format(rgb, notation))

    @st.composite
    def any_notation(draw):
        rgb = draw(rgb_colors(named=named))
        return _format(rgb, draw(notations_for([rgb])))

    return any_notation()


def notations_for(rgbs) -> st.SearchStrategy:
    """Notations that can write every color of ``rgbs``, hex first."""
    named = set(_named_rgbs())
    if all(tuple(c) in named for c in rgbs):
        return st.sampled_from(NOTATIONS)
    return st.sampled_from(NOTATIONS[:3])
