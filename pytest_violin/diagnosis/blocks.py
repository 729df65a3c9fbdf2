"""Layout diagnoses: swapped blocks, a split in the wrong place, then each block.

:func:`diagnose_color` serves the colour task (blocks in a layout, or a colour range), :func:`diagnose_ratio`
the area-ratio task. Multi-block layouts are checked first for ``swapped_blocks`` (a permutation of the
requested colours fits with less than half the error), two-colour splits for ``wrong_split`` (orientation and
position of the border between the two colours, from the pixel classes of
:func:`pytest_violin.metrics.geometric.nearer_first`); then every block is decomposed by
:func:`.color.block_findings`, after :func:`.edges.blurred_edges` has taken out the band of a blurred boundary
between blocks (``blurred_edge``). Weights are shares of the image's squared RGB error.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..metrics.geometric import nearer_first
from .color import block_findings
from .edges import blurred_edges
from .model import Finding

__all__ = ["SPLIT_MIN_SHARE", "SPLIT_NEAR", "SPLIT_TWO_TONE_SHARE", "swap_finding", "split_finding", "diagnose_regions",
           "diagnose_color", "diagnose_ratio"]

#: Departure of a split's position (share of the side) reported as wrong_split (1%).
SPLIT_MIN_SHARE = 0.01
#: A pixel is "of one of the two colours" within this share of their distance.
SPLIT_NEAR = 0.25
#: Share of such pixels that makes the answer two-tone, so that its split can be measured (a uniform or
#: unrelated answer has no split to speak of).
SPLIT_TWO_TONE_SHARE = 0.5

def swap_finding(medians, colors, names) -> tuple:
    """``(finding or None, permutation)``: whether the blocks hold the requested
    colours in another order (a permutation fits with < half the identity's error)."""
    m = np.asarray(medians, float)
    c = np.asarray(colors, float)
    n = len(c)
    cost = lambda perm: float(sum(np.sum((m[i] - c[p]) ** 2) for i, p in enumerate(perm)))
    ident = tuple(range(n))
    best = min(itertools.permutations(range(n)), key=cost)
    base = cost(ident)
    if best == ident or base <= 0 or cost(best) >= 0.5 * base \
            or all(np.array_equal(c[i], c[p]) for i, p in enumerate(best)):
        return None, ident
    moved = [f"{names[i]} has the colour of the {names[p]}" for i, p in enumerate(best) if i != p]
    return Finding("swapped_blocks", "swapped blocks: " + "; ".join(moved),
                   {"permutation": list(best), "blocks": list(names)},
                   base - cost(best)), best


def split_finding(image, colors, orientation: str, split: int):
    """``(finding or None, misplaced)``: the border between two colours found vs requested.

    ``misplaced`` (bool array) marks the pixels of the other colour's side when the split is wrong, so block
    findings leave them out.
    """
    h, w = image.shape[:2]
    # judged only on a two-tone answer: most pixels near one of the two colours
    c0, c1 = np.asarray(colors[0], np.float32), np.asarray(colors[1], np.float32)
    probe = image[::4, ::4].reshape(-1, 3).astype(np.float32)
    near = np.minimum(np.linalg.norm(probe - c0, axis=1), np.linalg.norm(probe - c1, axis=1))
    if np.mean(near <= SPLIT_NEAR * float(np.linalg.norm(c0 - c1))) < SPLIT_TWO_TONE_SHARE:
        return None, None
    first = nearer_first(image, colors[0], colors[1])
    cols, rows = first.mean(axis=0), first.mean(axis=1)
    found_orient = "vertical" if np.var(cols) >= np.var(rows) else "horizontal"
    side = w if found_orient == "vertical" else h
    # first colour assumed on the left / top: the median over the lines across the border of their
    # first-colour pixel counts (their mean moves with text drawn over the border)
    pos = float(np.median(first.sum(axis=1 if found_orient == "vertical" else 0)))
    side_req = w if orientation == "vertical" else h
    expected = np.zeros((h, w), bool)
    if orientation == "vertical":
        expected[:, :split] = True
    else:
        expected[:split, :] = True
    misplaced = first != expected
    off = abs(pos / side - split / side_req)
    if found_orient == orientation and (off < SPLIT_MIN_SHARE or abs(pos - split) < 2):
        return None, None
    diff = np.sum((np.asarray(colors[0], float) - np.asarray(colors[1], float)) ** 2)
    numbers = {"orientation": found_orient, "requested_orientation": orientation,
               "position_pct": 100.0 * pos / side, "requested_pct": 100.0 * split / side_req,
               "position_px": pos, "requested_px": int(split)}
    text = (f"split {found_orient} at {numbers['position_pct']:.1f}% instead of "
            f"{orientation} at {numbers['requested_pct']:.1f}%")
    return Finding("wrong_split", text, numbers, float(misplaced.sum()) * diff), misplaced


_BLOCK_NAMES = {"single": ("image",), "vertical": ("left half", "right half"),
                "horizontal": ("top half", "bottom half"),
                "quad": ("top-left quadrant", "top-right quadrant", "bottom-left quadrant",
                         "bottom-right quadrant")}


def diagnose_regions(image, boxes, colors, names, *, split=None, swap=False, target=None) -> list:
    """Findings of an RGB uint8 answer made of rectangular single-colour regions.

    ``boxes`` (``(x0, y0, w, h)``), ``colors`` and ``names`` give each region, its expected colour and its
    name in the texts. ``split`` (``(orientation, position)``, two regions split at ``position`` px) checks
    ``wrong_split``; ``swap`` checks ``swapped_blocks`` first; ``target(found)`` replaces the expected colour
    (ranges).
    """
    findings, total = [], 0.0
    colors = [tuple(int(v) for v in c) for c in colors]
    misplaced = None
    if swap and len(boxes) > 1:
        medians = [np.median(image[y:y + h:4, x:x + w:4].reshape(-1, 3), axis=0)
                   for x, y, w, h in boxes]
        found, perm = swap_finding(medians, colors, names)
        if found is not None:
            findings.append(found)
            total += found.weight
            colors = [colors[p] for p in perm]
            split = None
    if split is not None and len(boxes) == 2 and colors[0] != colors[1]:
        found, misplaced = split_finding(image, colors, split[0], int(split[1]))
        if found is not None:
            findings.append(found)
            total += found.weight
    if len(boxes) > 1 and not findings:  # the blocks where asked: are their edges sharp?
        more, band = blurred_edges(image, boxes, colors, names)
        if more:
            findings.extend(more)
            total += sum(f.weight for f in more)
            misplaced = band
    for (x, y, w, h), color, name in zip(boxes, colors, names):
        explained = None if misplaced is None else misplaced[y:y + h, x:x + w]
        more, energy = block_findings(image[y:y + h, x:x + w], target or color, where=name,
                                      origin=(x, y), explained=explained)
        findings.extend(more)
        total += energy
    total = max(total, 1e-9)  # each finding's weight as its share of the whole
    return [Finding(f.kind, f.text, f.numbers, min(float(f.weight) / total, 1.0)) for f in findings]


def diagnose_color(sample, image, expected) -> list:
    """Findings of a colour-task answer (blocks in a layout, or a colour range)."""
    from ..suite.drawing import block_boxes

    h, w = image.shape[:2]
    spec = sample.spec
    if spec.get("kind") == "fuzzy":
        lo = np.minimum(np.asarray(spec["low"]), np.asarray(spec["high"]))
        hi = np.maximum(np.asarray(spec["low"]), np.asarray(spec["high"]))
        return diagnose_regions(image, [(0, 0, w, h)], [expected[0, 0]], ["image"],
                                target=lambda found: np.clip(np.rint(found), lo, hi))
    layout = sample.layout or spec.get("layout") or "single"
    if layout not in _BLOCK_NAMES:
        layout = "single"
    boxes = block_boxes(layout, w, h)
    colors = [expected[y, x] for x, y, _, _ in boxes]
    split = None
    if layout == "vertical":
        split = ("vertical", w // 2)
    elif layout == "horizontal":
        split = ("horizontal", h // 2)
    return diagnose_regions(image, boxes, colors, _BLOCK_NAMES[layout], split=split,
                            swap=len(boxes) > 1)


def diagnose_ratio(sample, image, expected) -> list:
    """Findings of an area-ratio answer: the split, then each region's colour."""
    h, w = image.shape[:2]
    spec = sample.spec
    orientation, split = spec["orientation"], int(spec["split"])
    colors = [tuple(spec["colors"][0]), tuple(spec["colors"][1])]
    if orientation == "vertical":
        boxes, names = [(0, 0, split, h), (split, 0, w - split, h)], ["left part", "right part"]
    else:
        boxes, names = [(0, 0, w, split), (0, split, w, h - split)], ["top part", "bottom part"]
    boxes = [b for b in boxes if b[2] > 0 and b[3] > 0]
    if len(boxes) < 2:
        return diagnose_regions(image, boxes, colors[:1], names[:1])
    return diagnose_regions(image, boxes, colors, names, split=(orientation, split))
