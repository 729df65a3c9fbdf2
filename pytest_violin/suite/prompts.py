"""Prompt templates, written for pytest-violin in the style of the Violin examples.

Templates go from loose to strict: the first ones just name the color or shape, the last ones spell out every
constraint (no texture, no gradient, exact sizes). Placeholders are filled with :meth:`str.format`.
"""

from __future__ import annotations

from ..errors import SuiteError

__all__ = ["COLOR_TEMPLATES", "CODE_TEMPLATES", "BLOCK_TEMPLATES", "QUAD_TEMPLATES", "FUZZY_TEMPLATES",
           "MULTILINGUAL_TEMPLATES", "RATIO_TEMPLATES", "SHAPE_TEMPLATES", "SHAPE_PHRASES", "ANCHOR_PHRASES",
           "MASK_TEMPLATES", "BORDER_TEMPLATES", "COUNT_TEMPLATES", "NOTATION_LABELS", "NEGATION_CLAUSES",
           "GRAVITY_CONTEXTS", "UNRELATED_CONTEXT", "pick", "percent"]

#: Single color by name, 15 templates (suite ``violin``, ``color/v1``).
COLOR_TEMPLATES = (
    "Make an image that is entirely {color}.",
    "A plain {color} image.",
    "Fill the whole picture with {color}.",
    "Create a solid {color} background.",
    "Generate a flat image of a single color: {color}.",
    "Produce an image in which every pixel is {color}.",
    "Paint the entire canvas {color}, edge to edge.",
    "Create a uniform {color} image with nothing else in it.",
    "Generate a solid {color} image. Do not add any object, text or pattern.",
    "Produce a completely flat {color} fill covering the full frame, with no lighting effects.",
    "Create an image of one single color, {color}. No texture, no gradient, no vignette.",
    "Render a perfectly uniform {color} image: every pixel must have exactly the same value.",
    "Output a {color} image with zero variation: no noise, no shading, no border, no gradient.",
    "Generate an image that is exactly one color, {color}, identical in every pixel. "
    "No texture, no gradient, no shadows, no highlights, no grain.",
    "Strict instruction: the output must be a single solid {color} fill with no texture, "
    "no gradient, no shadows, no noise, no border and no other color anywhere.",
)

#: Labels of color codes in prompts.
NOTATION_LABELS = {"hex": "hex code", "rgb": "RGB", "hsl": "HSL", "name": "color name"}

#: Single color given as a code (hex, rgb(), hsl()), 6 templates.
CODE_TEMPLATES = (
    "Generate a solid image of the color {color} ({label}).",
    "Fill the entire image with the {label} color {color}.",
    "Create a flat background in {color} ({label}).",
    "Every pixel of the image must be exactly {color} ({label}).",
    "Produce a uniform image in {color} ({label}) with no texture, no gradient and no shadows.",
    "Color given as {label}: {color}. Output an image filled edge to edge with exactly this "
    "value and nothing else.",
)

_V = "vertical"
_H = "horizontal"

#: Two blocks, 20 templates as ``(layout, text)``: ``{first}`` is the left (vertical) or top (horizontal)
#: color, ``{second}`` the other one.
BLOCK_TEMPLATES = (
    (_V, "An image split into a left half in {first} and a right half in {second}."),
    (_H, "An image split into a top half in {first} and a bottom half in {second}."),
    (_V, "Make the left half of the image {first} and the right half {second}."),
    (_H, "Make the upper half of the image {first} and the lower half {second}."),
    (_V, "Divide the image vertically into two equal halves: {first} on the left, "
         "{second} on the right."),
    (_H, "Divide the image horizontally into two equal halves: {first} on top, "
         "{second} at the bottom."),
    (_V, "Create a background whose right half is {second} and whose left half is {first}."),
    (_H, "Create a background whose lower half is {second} and whose upper half is {first}."),
    (_V, "Generate two side-by-side color blocks of equal width: left {first}, right {second}."),
    (_H, "Generate two stacked color blocks of equal height: top {first}, bottom {second}."),
    (_V, "Produce an image cut down the middle by a vertical line: the left side solid "
         "{first}, the right side solid {second}."),
    (_H, "Produce an image cut across the middle by a horizontal line: the top side solid "
         "{first}, the bottom side solid {second}."),
    (_V, "Paint the left 50% of the canvas {first} and the right 50% {second}. "
         "Both halves must be flat."),
    (_H, "Paint the top 50% of the canvas {first} and the bottom 50% {second}. "
         "Both halves must be flat."),
    (_V, "Create an image divided vertically into two even halves, left in {first} and right "
         "in {second}, with a perfectly sharp boundary."),
    (_H, "Create a flat image divided horizontally, the bottom half {second} and the top half "
         "{first}, each half perfectly solid."),
    (_V, "Generate an image with a {second} right half and a {first} left half. No gradient "
         "between them, no texture, no shadows."),
    (_H, "Generate an image with a {second} lower half and a {first} upper half. No gradient "
         "between them, no texture, no shadows."),
    (_V, "Strictly two colors: the left half exactly {first}, the right half exactly {second}, "
         "split at the vertical center line, every pixel solid."),
    (_H, "Strictly two colors: the top half exactly {first}, the bottom half exactly {second}, "
         "split at the horizontal center line, every pixel solid."),
)

#: 2x2 quadrants.
QUAD_TEMPLATES = (
    "Divide the image into four equal quadrants: top-left {tl}, top-right {tr}, "
    "bottom-left {bl}, bottom-right {br}.",
    "Colors given as {label}. Make an image of four equal quadrants, top-left {tl}, top-right "
    "{tr}, bottom-left {bl}, bottom-right {br}. No gradients, no shadows, no borders.",
)

#: A color range.
FUZZY_TEMPLATES = (
    "Generate an image in one single solid color anywhere within the range from {low} to "
    "{high} ({label}, per channel).",
    "Pick any one color between {low} and {high} ({label}, each channel within range) and fill "
    "the whole image with it, perfectly flat.",
)

#: Single color in other languages (hex codes).
MULTILINGUAL_TEMPLATES = {
    "zh": "请生成一张纯色图像，颜色为 {color}（十六进制代码），不要有任何纹理、渐变或阴影。",
    "fr": "Génère une image d'une seule couleur unie, {color} (code hexadécimal), sans texture, "
          "sans dégradé et sans ombre.",
}

#: Area ratio: ``{first}`` covers ``{pct}`` of the width (vertical) or height (horizontal).
RATIO_TEMPLATES = {
    "vertical": (
        "Fill exactly the left {pct} of the image width with {first} and the remaining {rest} on "
        "the right with {second}.",
        "Make an image whose left {pct} is solid {first} and whose right {rest} is solid {second}, "
        "with a straight vertical boundary and no gradient.",
    ),
    "horizontal": (
        "Fill exactly the top {pct} of the image height with {first} and the remaining {rest} at "
        "the bottom with {second}.",
        "Make an image whose top {pct} is solid {first} and whose bottom {rest} is solid {second}, "
        "with a straight horizontal boundary and no gradient.",
    ),
}

SHAPE_PHRASES = {
    "circle": ("solid white circle", "diameter"),
    "square": ("solid white axis-aligned square", "side length"),
    "triangle": ("solid white upright equilateral triangle", "side length"),
}

#: How each named anchor is said.
ANCHOR_PHRASES = {
    "left-center": "with its bounding box touching the left edge of the image, vertically centered",
    "right-center": "with its bounding box touching the right edge of the image, vertically "
                    "centered",
    "top-center": "with its bounding box touching the top edge of the image, horizontally centered",
    "bottom-center": "with its bounding box touching the bottom edge of the image, horizontally "
                     "centered",
    "center": "exactly in the center of the image",
    "top-left": "with its bounding box touching the top and left edges of the image",
    "top-right": "with its bounding box touching the top and right edges of the image",
    "bottom-left": "with its bounding box touching the bottom and left edges of the image",
    "bottom-right": "with its bounding box touching the bottom and right edges of the image",
}

#: Geometric shapes, 10 templates.
SHAPE_TEMPLATES = (
    "A {shape} on a black background, {measure} {size} of the image width, {position}.",
    "Draw a {shape} on black. Its {measure} is {size} of the image width. Place it {position}.",
    "Create an image with a single {shape} on a pure black background; {measure} = {size} of "
    "the width; {position}.",
    "Generate a black image containing one {shape} whose {measure} equals {size} of the image "
    "width, {position}.",
    "On a black canvas, render a {shape} ({measure} {size} of the image width) {position}. "
    "Nothing else in the image.",
    "Produce a precise image of a {shape} on a black background. The {measure} must be exactly "
    "{size} of the image width, {position}.",
    "Place one {shape} {position}. Its {measure} is {size} of the image width. The background "
    "is pure black.",
    "Generate a {shape} on pure black, {measure} {size} of the image width, {position}. "
    "Sharp edges, no shading, no outline.",
    "Precise geometry: a {shape} with a {measure} of exactly {size} of the image width, "
    "{position}, on a uniform black background with no texture.",
    "Render exactly one {shape} on a solid black (0, 0, 0) background. Its {measure} is exactly "
    "{size} of the image width and it sits {position}. The edges must be perfectly sharp, with "
    "no anti-aliasing, texture, shadow or other object.",
)

#: Masking, 3 templates (no placeholders: the image and mask are the inputs).
MASK_TEMPLATES = (
    "Apply the mask (second input) to the image (first input): wherever the mask is white (1), "
    "keep the image's original pixel; wherever the mask is black (0), set the pixel to pure "
    "black (0, 0, 0).",
    "Multiply the input image by the binary mask, pixel by pixel. A mask value of 1 keeps the "
    "original color, a mask value of 0 turns the pixel pure black. Return only the result.",
    "Produce the masked image: copy every pixel of the source image where the mask is 1 and "
    "paint every pixel where the mask is 0 exactly black. Change nothing else.",
)

#: Pixel-level border.
BORDER_TEMPLATES = (
    "Generate a {width}x{height} {bg} image with a {fg} border exactly {thickness} pixels wide "
    "along all four edges.",
    "Create a {width}x{height} pixel image: a {thickness}-pixel-wide solid {fg} frame at the "
    "edges and a solid {bg} interior, with no glow, no rounding and no gradient.",
)

#: Dot counting.
COUNT_TEMPLATES = (
    "Generate a {bg} image containing exactly {count} {fg} dots, each a {dot}x{dot} pixel square.",
    "On a solid {bg} background, draw exactly {count} separate {fg} square dots of {dot}x{dot} "
    "pixels each. No other marks.",
)

#: Probe clauses added to a plain color prompt.
NEGATION_CLAUSES = {
    "no-gradient": " No gradient.",
    "no-ripples": " No ripples, no waves, no gradient.",
}

#: An agreeing semantic context for each ISCC-NBS color (by slug).
GRAVITY_CONTEXTS = {
    "pink": "a strawberry milkshake", "red": "a ripe cherry", "yellowish-pink": "salmon fillet",
    "reddish-orange": "terracotta tiles", "reddish-brown": "rusted iron", "orange": "a pumpkin",
    "brown": "milk chocolate", "orange-yellow": "honey", "yellowish-brown": "a cardboard box",
    "yellow": "mustard", "olive-brown": "dried tobacco leaves", "greenish-yellow": "a ripe pear",
    "olive": "green olives", "yellow-green": "fresh spring leaves", "olive-green": "an army "
    "uniform", "yellowish-green": "fresh grass", "green": "jade", "bluish-green": "turquoise",
    "greenish-blue": "a tropical lagoon", "blue": "denim jeans", "purplish-blue": "ultramarine "
    "pigment", "violet": "an amethyst", "purple": "an orchid", "reddish-purple": "fuchsia "
    "flowers", "purplish-pink": "bubble gum", "purplish-red": "raspberry jam", "white": "fresh "
    "snow", "gray": "wet concrete", "black": "charcoal",
}

#: A context with no color meaning at all.
UNRELATED_CONTEXT = "a quiet Tuesday afternoon"


def pick(templates, index: int, what: str):
    """``templates[index]``, or a SuiteError naming the valid range."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(templates):
        raise SuiteError(f"{what} template {index!r} does not exist; accepted: 0..{len(templates) - 1}")
    return templates[index]


def percent(fraction: float) -> str:
    """``0.315`` -> ``"31.5%"``, ``0.2`` -> ``"20%"``."""
    text = f"{float(fraction) * 100:.3f}".rstrip("0").rstrip(".")
    return f"{text}%"
