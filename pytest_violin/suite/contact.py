"""Contact sheets: a grid of expected images with their ids, for a quick look."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["contact_sheet"]


def contact_sheet(samples, *, columns: int = 10, tile: int = 160, label_height: int = 44) -> np.ndarray:
    """Render a grid of the samples' expected images, each captioned with its id.

    Parameters
    ----------
    samples : sequence of Sample
        Samples to show (their ``expected()`` is rendered one at a time).
    columns : int
        Tiles per row.
    tile : int
        Side of each thumbnail in pixels.
    label_height : int
        Height of the caption band under each thumbnail.

    Returns
    -------
    numpy.ndarray
        RGB uint8 image.
    """
    samples = list(samples)
    rows = max(1, -(-len(samples) // columns))
    cell_h = tile + label_height
    sheet = np.full((rows * cell_h, columns * tile, 3), 255, np.uint8)
    for k, s in enumerate(samples):
        r, c = divmod(k, columns)
        img = s.expected()
        h, w = img.shape[:2]
        scale = tile / max(h, w)
        thumb = cv2.resize(img, (max(1, int(w * scale)), max(1, int(h * scale))),
                           interpolation=cv2.INTER_AREA)
        th, tw = thumb.shape[:2]
        y0, x0 = r * cell_h, c * tile
        sheet[y0:y0 + th, x0:x0 + tw] = thumb
        cv2.rectangle(sheet, (x0, y0), (x0 + tile - 1, y0 + tile - 1), (128, 128, 128), 1)
        text = s.id
        per_line = max(8, tile // 8)
        lines = [text[i:i + per_line] for i in range(0, len(text), per_line)][:3]
        for j, line in enumerate(lines):
            cv2.putText(sheet, line, (x0 + 2, y0 + tile + 11 + 12 * j), cv2.FONT_HERSHEY_PLAIN,
                        0.75, (0, 0, 0), 1, cv2.LINE_AA)
    return sheet
