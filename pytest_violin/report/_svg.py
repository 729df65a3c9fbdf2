"""Inline SVG bar charts for the HTML report (no JavaScript, no external files)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from .json_report import fmt

__all__ = ["PALETTE", "bar_chart", "color_scale", "text_width"]

#: Series colours (colour-blind friendly, Okabe-Ito order).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def _nice_max(value: float) -> float:
    """Smallest 1/2/5 x 10^k at or above ``value`` (at least 0.01)."""
    value = max(float(value), 0.01)
    exp = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        top = step * 10 ** exp
        if top >= value - 1e-12:
            return top
    return 10 ** (exp + 1)  # pragma: no cover


def bar_chart(categories: Sequence[str], series: Sequence[tuple[str, Mapping[str, float]]], *,
              title: str = "", width: int = 520, height: int = 220,
              highlight: Sequence[str] = ()) -> str:
    """A grouped vertical bar chart as self-contained inline ``<svg>`` markup.

    One group of bars per category (metric names), one bar per series ``(name, {category: value})`` in each
    (missing or non-finite values draw none), each with a ``<title>`` tooltip of its value; ``title`` is drawn
    above and is the accessible label; ``highlight`` series get a red outline (regressed variations). Labels
    are escaped.
    """
    cats = [str(c) for c in categories]
    values = [v for _, vals in series for v in vals.values()
              if isinstance(v, (int, float)) and math.isfinite(v)]
    top = _nice_max(max(values, default=0.0))
    left, right, top_pad, bottom = 44, 8, 24 if title else 8, 40
    legend_h = 16 * ((len(series) + 3) // 4) if len(series) > 1 else 0  # what callers size for
    plot_w = max(10, width - left - right)
    plot_h = max(10, height - top_pad - bottom - legend_h)
    legend = _legend_layout([str(name) for name, _ in series], plot_w) if len(series) > 1 else []
    rows = 1 + max((row for *_, row in legend), default=-1)
    height = top_pad + plot_h + bottom + 16 * rows  # the legend grows the chart, never overlaps
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
    ]
    if title:
        parts.append(f'<text x="{left}" y="15" class="ct">{escape(title)}</text>')
    # axis and grid lines at 0, top/2, top
    for frac in (0.0, 0.5, 1.0):
        y = top_pad + plot_h * (1 - frac)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" class="ax" text-anchor="end">{top * frac:g}</text>')
    n_cat = max(1, len(cats))
    group_w = plot_w / n_cat
    n_ser = max(1, len(series))
    bar_w = max(1.0, (group_w * 0.8) / n_ser)
    highlight = set(highlight)
    for ci, cat in enumerate(cats):
        gx = left + ci * group_w + group_w * 0.1
        for si, (name, vals) in enumerate(series):
            v = vals.get(cat)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                continue
            h = plot_h * min(max(v, 0.0), top) / top
            x = gx + si * bar_w
            y = top_pad + plot_h - h
            color = PALETTE[si % len(PALETTE)]
            extra = ' stroke="#c00" stroke-width="2"' if name in highlight else ""
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(bar_w - 1, 0.5):.1f}" height="{max(h, 0.5):.1f}" '
                f'fill="{color}"{extra}><title>{escape(str(name))} {escape(cat)} = {fmt(v)}</title></rect>'
            )
        parts.append(
            f'<text x="{left + (ci + 0.5) * group_w:.1f}" y="{top_pad + plot_h + 14:.1f}" '
            f'class="ax" text-anchor="middle">{escape(cat)}</text>'
        )
    ly0 = top_pad + plot_h + 24
    for si, (name, shown, x, row) in enumerate(legend):
        lx, ly = left + x, ly0 + 16 * row
        parts.append(f'<g class="lg"><title>{escape(name)}</title><rect x="{lx:.1f}" y="{ly:.1f}" '
                     f'width="10" height="10" fill="{PALETTE[si % len(PALETTE)]}"/>'
                     f'<text x="{lx + 14:.1f}" y="{ly + 9:.1f}" class="ax">{escape(shown)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


#: Upper bounds of the advance width of characters of the legend's 10 px text, in pixels, from DejaVu Sans
#: (the widest of the common sans-serif fonts browsers fall back to; its W is 9.9 px, m 9.7 px, M 8.6 px at 10
#: px): labels laid out with them never meet, whatever the font.
_WIDE_PX = {"W": 10.0, "m": 9.8, "M": 8.8, "w": 8.4, "@": 10.0, "%": 9.6, "&": 7.9, "+": 8.4, "=": 8.4,
            "<": 8.4, ">": 8.4, "~": 8.4, "^": 8.4, "#": 8.4}
_NARROW = set(".,:;'|!()[]/-\"` ")


def _char_px(ch: str) -> float:
    if ch in _WIDE_PX:
        return _WIDE_PX[ch]
    if ch in _NARROW:
        return 4.0
    if not ch.isascii():
        return 10.0  # a full em: CJK and other wide scripts
    return 8.0 if ch.isupper() else 6.5


def text_width(text: str) -> float:
    """An upper bound of the width of ``text`` at the legend's 10 px, in pixels."""
    return sum(_char_px(ch) for ch in text)


_SWATCH_PX, _GAP_PX = 14, 14


def _legend_layout(names, plot_w) -> list[tuple[str, str, float, int]]:
    """``(name, shown text, x, row)`` per series: entries flow left to right and wrap to a new
    row where the next would pass the plot's width; a label wider than a whole row is cut with
    an ellipsis (the full name stays in the entry's tooltip)."""
    room = max(40.0, plot_w - _SWATCH_PX)
    out, x, row = [], 0.0, 0
    for name in names:
        shown = name
        if text_width(shown) > room:
            while shown and text_width(shown) + 10.0 > room:
                shown = shown[:-1]
            shown += "\u2026"
        width = _SWATCH_PX + text_width(shown)
        if x > 0 and x + width > plot_w:
            x, row = 0.0, row + 1
        out.append((name, shown, x, row))
        x += width + _GAP_PX
    return out


def color_scale(stops: Sequence[tuple[float, str]], ticks: Sequence[tuple[float, str]], *,
                title: str = "", width: int = 360, height: int = 46) -> str:
    """A horizontal colour-scale legend as inline ``<svg>``: a gradient bar of ``(position,
    "#rrggbb")`` ``stops`` with ``(position, label)`` ``ticks`` under it, positions in [0, 1] (one per page:
    its gradient's id is fixed). Labels are escaped."""
    left, right = 8, 14
    bar_y = 18 if title else 4
    bar_h = 12
    bar_w = max(10, width - left - right)
    gid = "violin-scale"
    parts = [f'<svg class="scale" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="{escape(title)}"><defs><linearGradient id="{gid}" x1="0" x2="1" y1="0" y2="0">']
    for pos, color in stops:
        parts.append(f'<stop offset="{min(max(float(pos), 0.0), 1.0):.4f}" stop-color="{escape(str(color))}"/>')
    parts.append("</linearGradient></defs>")
    if title:
        parts.append(f'<text x="{left}" y="12" class="ax">{escape(title)}</text>')
    parts.append(f'<rect x="{left}" y="{bar_y}" width="{bar_w}" height="{bar_h}" fill="url(#{gid})" '
                 f'stroke="#999" stroke-width="0.5"/>')
    for pos, label in ticks:
        x = left + bar_w * min(max(float(pos), 0.0), 1.0)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bar_y + bar_h}" y2="{bar_y + bar_h + 4}" '
                     f'stroke="#555"/>')
        parts.append(f'<text x="{x:.1f}" y="{bar_y + bar_h + 14}" class="ax" text-anchor="middle">'
                     f'{escape(str(label))}</text>')
    parts.append("</svg>")
    return "".join(parts)
