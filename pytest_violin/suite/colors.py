"""Colors: the ISCC-NBS Level-2 table and color notations.

Notations understood by :func:`parse_color` and written by :func:`format_color`:

* ``name``: one of the 29 ISCC-NBS Level-2 names (``"yellowish pink"``), case and spacing insensitive;
* ``hex``: ``#RRGGBB`` or ``#RGB`` (the ``#`` is optional);
* ``rgb``: ``rgb(217, 180, 81)``, components 0-255 or percentages;
* ``hsl``: ``hsl(43, 64%, 58%)``, hue in degrees, saturation and lightness in percent (decimals allowed);
* a sequence of three integers in ``0..255``.
"""

from __future__ import annotations

import colorsys
import re
from dataclasses import dataclass
from importlib import resources

from ..errors import InternalError, InvalidColorError
from .ids import slugify

__all__ = ["IsccColor", "ISCC_NBS_COLORS", "NOTATIONS", "parse_color", "format_color",
           "color_by_name"]

#: Notations accepted by :func:`format_color`.
NOTATIONS = ("name", "hex", "rgb", "hsl")

_ACCEPTED = ("accepted: an ISCC-NBS Level-2 name (e.g. 'yellowish pink'), '#RRGGBB' or '#RGB', "
             "'rgb(R, G, B)' with 0-255 or percent components, 'hsl(H, S%, L%)', "
             "or a sequence of three integers in 0..255")


@dataclass(frozen=True)
class IsccColor:
    """One ISCC-NBS Level-2 color as used by the Violin benchmark.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"Yellowish pink"``.
    rgb : tuple of int
        ``(r, g, b)`` in ``0..255``.
    slug : str
        Id segment, e.g. ``"yellowish-pink"``.
    """

    name: str
    rgb: tuple
    slug: str

    @property
    def hex(self) -> str:
        """``#RRGGBB`` in upper case."""
        return format_color(self.rgb, "hex")

    @property
    def phrase(self) -> str:
        """The name as written in prompts (lower case)."""
        return self.name.lower()


def _load_table() -> tuple:
    text = resources.files("pytest_violin").joinpath("data/iscc_nbs_level2.tsv").read_text("utf-8")
    colors = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#") or line.startswith("name\t"):
            continue
        name, r, g, b, hexcode = line.split("\t")
        rgb = (int(r), int(g), int(b))
        if "#%02X%02X%02X" % rgb != hexcode.strip().upper():  # pragma: no cover - data check
            raise InternalError(f"ISCC-NBS table: {name} hex {hexcode} != rgb {rgb}")
        colors.append(IsccColor(name, rgb, slugify(name)))
    return tuple(colors)


#: The 29 ISCC-NBS Level-2 colors, in the paper's table order.
ISCC_NBS_COLORS = _load_table()

_BY_KEY = {" ".join(c.name.lower().split()): c for c in ISCC_NBS_COLORS}
_BY_KEY.update({c.slug: c for c in ISCC_NBS_COLORS})
_BY_RGB = {c.rgb: c for c in ISCC_NBS_COLORS}


def color_by_name(name: str) -> IsccColor:
    """The ISCC-NBS color called ``name`` (case, space and dash insensitive), else an
    :class:`~pytest_violin.errors.InvalidColorError`.
    """
    key = " ".join(str(name).lower().replace("-", " ").replace("_", " ").split())
    color = _BY_KEY.get(key)
    if color is None:
        names = ", ".join(c.phrase for c in ISCC_NBS_COLORS)
        raise InvalidColorError(f"unknown color name {name!r}; the ISCC-NBS Level-2 names are: {names}")
    return color


_HEX = re.compile(r"^#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")
_NUM = r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*"
_RGB = re.compile(r"^rgb\(" + _NUM + r"(%?)\s*,\s*" + _NUM.strip(r"\s*") + r"\s*(%?)\s*,"
                  + _NUM + r"(%?)\s*\)$", re.IGNORECASE)
_HSL = re.compile(r"^hsl\(" + _NUM + r"(?:deg)?\s*,\s*" + _NUM.strip(r"\s*") + r"\s*%\s*,"
                  + _NUM + r"%\s*\)$", re.IGNORECASE)


def _round8(x: float) -> int:
    return int(min(255, max(0, int(x * 255.0 + 0.5))))


def _hsl_to_rgb(h: float, s: float, lum: float) -> tuple:
    r, g, b = colorsys.hls_to_rgb((h % 360.0) / 360.0, lum / 100.0, s / 100.0)
    return (_round8(r), _round8(g), _round8(b))


def _fail(value, problem: str = "is in no accepted notation") -> InvalidColorError:
    return InvalidColorError(f"color {value!r} {problem}; {_ACCEPTED}")


def parse_color(value) -> tuple:
    """Parse a color in any notation of the module docstring to an ``(r, g, b)`` tuple of ints in ``0..255``.

    Anything else is an :class:`~pytest_violin.errors.InvalidColorError` naming ``value`` and the accepted
    forms.

    Examples
    --------
    >>> parse_color("#D9B451")
    (217, 180, 81)
    >>> parse_color("olive green")
    (62, 80, 31)
    """
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, (bytes, bytearray, dict)) or not hasattr(value, "__len__"):
        raise _fail(value)
    try:
        items = list(value)
    except TypeError:
        raise _fail(value) from None
    if len(items) != 3:
        raise _fail(value, f"has {len(items)} components, not 3")
    out = []
    for item in items:
        if isinstance(item, bool) or not hasattr(item, "__index__"):
            if isinstance(item, float) and item.is_integer():
                item = int(item)
            else:
                raise _fail(value, f"has a component {item!r} that is not an integer")
        v = int(item)
        if not 0 <= v <= 255:
            raise _fail(value, f"has a component {v} outside 0..255")
        out.append(v)
    return tuple(out)


def _parse_text(value: str) -> tuple:
    text = value.strip()
    m = _HEX.match(text)
    if m:
        digits = m.group(1)
        if len(digits) == 3:
            digits = "".join(ch * 2 for ch in digits)
        return tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4))
    m = _RGB.match(text)
    if m:
        return tuple(_rgb_component(value, m.group(i), m.group(i + 1)) for i in (1, 3, 5))
    m = _HSL.match(text)
    if m:
        h, s, lum = float(m.group(1)), float(m.group(2)), float(m.group(3))
        if not (0.0 <= s <= 100.0 and 0.0 <= lum <= 100.0):
            raise _fail(value, "has saturation or lightness outside 0..100%")
        return _hsl_to_rgb(h, s, lum)
    try:
        return color_by_name(text).rgb
    except InvalidColorError:
        raise _fail(value) from None


def _rgb_component(value: str, num: str, pct: str) -> int:
    v = float(num)
    if pct:
        if not 0.0 <= v <= 100.0:
            raise _fail(value, f"has a percentage {num}% outside 0..100")
        return _round8(v / 100.0)
    if not (0.0 <= v <= 255.0 and v == int(v)):
        raise _fail(value, f"has a component {num} that is not an integer in 0..255")
    return int(v)


def _fmt(x: float, decimals: int) -> str:
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _format_hsl(rgb: tuple) -> str:
    h, lum, s = colorsys.rgb_to_hls(*(c / 255.0 for c in rgb))
    h, s, lum = h * 360.0, s * 100.0, lum * 100.0
    for decimals in (0, 1, 2, 3):
        hd = round(h, decimals) % 360.0
        text = f"hsl({_fmt(hd, decimals)}, {_fmt(s, decimals)}%, {_fmt(lum, decimals)}%)"
        if parse_color(text) == tuple(rgb):
            return text
    return text  # pragma: no cover - three decimals always round-trip 8-bit colors


def format_color(rgb, notation: str = "hex") -> str:
    """Write a color (anything :func:`parse_color` accepts) in one notation.

    ``hex`` -> ``#D9B451``; ``rgb`` -> ``rgb(217, 180, 81)``; ``hsl`` -> the shortest ``hsl(...)`` (0 to 3
    decimals) that parses back to exactly the color; ``name`` -> the ISCC-NBS name in lower case (only for the
    29 table colors). An unparseable color, an unknown notation or ``name`` of a color not in the table is an
    :class:`~pytest_violin.errors.InvalidColorError`.
    """
    rgb = parse_color(rgb)
    if notation == "hex":
        return "#%02X%02X%02X" % rgb
    if notation == "rgb":
        return "rgb(%d, %d, %d)" % rgb
    if notation == "hsl":
        return _format_hsl(rgb)
    if notation == "name":
        color = _BY_RGB.get(rgb)
        if color is None:
            raise InvalidColorError(f"color {rgb!r} has no ISCC-NBS Level-2 name; use one of "
                                    f"the 29 table colors or another notation (hex, rgb, hsl)")
        return color.phrase
    raise InvalidColorError(f"unknown color notation {notation!r}; accepted: {', '.join(NOTATIONS)}")
