"""Small helpers that put colors and fractions into words (failure messages)."""

from __future__ import annotations

__all__ = ["color_words", "plain_color", "pct"]


def color_words(rgb) -> str:
    """``#RRGGBB`` followed by its ISCC-NBS name (or pure black / white) when it has one."""
    from ..suite.colors import ISCC_NBS_COLORS, format_color

    rgb = tuple(int(c) for c in rgb)
    text = format_color(rgb, "hex")
    for color in ISCC_NBS_COLORS:
        if color.rgb == rgb:
            return f"{text} ({color.phrase})"
    if rgb == (0, 0, 0):
        return f"{text} (pure black)"
    if rgb == (255, 255, 255):
        return f"{text} (pure white)"
    return text


def plain_color(rgb) -> str:
    """``white`` or ``black``, else :func:`color_words`."""
    rgb = tuple(int(c) for c in rgb)
    return {(255, 255, 255): "white", (0, 0, 0): "black"}.get(rgb) or color_words(rgb)


def pct(fraction: float) -> str:
    """A fraction as a percentage with at most two decimals (``0.315`` -> ``31.5%``)."""
    text = f"{100.0 * fraction:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"
