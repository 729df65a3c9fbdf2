"""Acme Studio's brand palette and layouts, and the assertions built on them.

The palette is written in the notations our design files use; every helper
accepts them all (hex, ``rgb()``, ``hsl()`` or an ISCC-NBS name).
"""

from __future__ import annotations

from pytest_violin import assert_blocks, assert_pure_color, assert_shape
from pytest_violin.suite import block_sample, color_sample, shape_sample

#: Brand colors, as the design system spells them.
BRAND = {
    "acme-blue": "#3B74C0",
    "signal-orange": "#DC7D34",
    "ink": "#2B292B",
    "paper": "rgb(231, 225, 233)",
    "mint": "hsl(160, 47%, 53%)",
}

#: Tighter than the defaults: a designer sees a CIEDE2000 of about 2 on the
#: brand blue, and a banner must be flat (no vignette, no grain).
BRAND_LIMITS = {"lab_00": 0.015, "sd": 0.01, "hf": 0.01}

#: The layouts our templates ask the model for: (layout, brand colors in
#: reading order, what the prompt asks).
LAYOUTS = {
    "hero-banner": ("horizontal", ("acme-blue", "paper")),
    "split-card": ("vertical", ("ink", "signal-orange")),
    "tile-grid": ("quad", ("acme-blue", "signal-orange", "mint", "paper")),
}

SIZE = 256


def brand_fill_sample(name: str, *, size: int = SIZE, template: int = 0):
    """The request "fill the image with brand color NAME" (hex in the prompt)."""
    return color_sample(BRAND[name], notation="hex", width=size, height=size, template=template)


def layout_sample(layout_name: str, *, size: int = SIZE):
    """The request for one of :data:`LAYOUTS`."""
    layout, names = LAYOUTS[layout_name]
    return block_sample(layout, [BRAND[n] for n in names], notation="hex", width=size,
                        height=size)


def logo_dot_sample(*, size: int = SIZE):
    """Our app icon: a white dot, 20% of the width, in the top-right corner."""
    return shape_sample("circle", 0.2, anchor="top-right", width=size, height=size)


def assert_brand_color(image, name: str, **limits):
    """The image is the brand color NAME, within the brand limits."""
    __tracebackhide__ = True
    return assert_pure_color(image, BRAND[name], **{**BRAND_LIMITS, **limits})


def assert_brand_layout(image, layout_name: str, **limits):
    """The image is the brand layout LAYOUT_NAME, within the brand limits."""
    __tracebackhide__ = True
    layout, names = LAYOUTS[layout_name]
    return assert_blocks(image, layout, [BRAND[n] for n in names], **{**BRAND_LIMITS, **limits})


def assert_logo_dot(image, **limits):
    """The image is our app icon."""
    __tracebackhide__ = True
    return assert_shape(image, "circle", 0.2, "top-right", **limits)
