"""Stand-ins for Acme's image model, with the errors real models make.

Every real model fails most Violin samples (the paper's best model scores task means of 0.05
for colour, 0.13 for shapes and 0.16 for masks, 2.5-5x the default limits). These models draw
the exact answer and then spoil it the way models do: colours a few CIEDE2000 units off, soft
gradients, shapes a few percent off in place and size, masked areas dark gray instead of black
with feathered edges. Their task means are close to the paper's Tables 1-3 for a good model, and
about half of their samples are over the default limits.

``production``
    The model in production; deterministic (the same spoiling for a sample on every run), like
    an endpoint that honours the seed. ``baseline.json`` is a run of it.
``stochastic``
    The same model without a fixed seed: fresh noise on every run, like an API that ignores it.
``worse``
    A candidate that got clearly worse: larger colour shifts and shape errors.
``off_colour``
    ``production``, but a fifth of the colour samples answered 12 levels off: the colour mean
    barely moves, the colour pass rate falls by about a fifth.

Use one with ``--violin-model=python:acme_models:production`` (the folder of ``conftest.py`` is
on the import path).
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

__all__ = ["off_colour", "production", "stochastic", "worse"]


def _rng(request, fresh: bool, salt: str = "") -> np.random.Generator:
    if fresh:
        return np.random.default_rng(int.from_bytes(os.urandom(8), "big"))
    digest = hashlib.blake2b((salt + request.sample_id).encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


def _colour(img: np.ndarray, rng, scale: float) -> np.ndarray:
    """A colour cast of a few levels, a soft gradient and a little grain."""
    h, w = img.shape[:2]
    out = img.astype(np.float32)
    out += rng.normal(0.0, 10.0 * scale, size=3)                       # the cast
    ramp = np.linspace(-1.0, 1.0, w, dtype=np.float32)[None, :, None]
    out += ramp * rng.normal(0.0, 8.0 * scale, size=3)                 # a soft gradient
    out += rng.normal(0.0, 1.5, size=out.shape).astype(np.float32)     # grain
    return np.clip(out, 0, 255).astype(np.uint8)


def _shape(img: np.ndarray, rng, scale: float) -> np.ndarray:
    """The drawing moved and resized by a few percent of the frame."""
    import cv2

    h, w = img.shape[:2]
    zoom = 1.0 + rng.normal(0.0, 0.06 * scale)
    dx, dy = rng.normal(0.0, 0.04 * scale * w), rng.normal(0.0, 0.04 * scale * h)
    matrix = np.array([[zoom, 0.0, (1 - zoom) * w / 2 + dx], [0.0, zoom, (1 - zoom) * h / 2 + dy]])
    moved = cv2.warpAffine(img, matrix, (w, h), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
    return _colour(moved, rng, 0.5 * scale)


def _mask(img: np.ndarray, rng, scale: float) -> np.ndarray:
    """Blacked-out areas left dark gray, their edges feathered."""
    import cv2

    black = np.all(img == 0, axis=2)
    out = img.astype(np.float32)
    out[black] = rng.uniform(0.0, 10.0) * scale
    if scale > 0.5:  # the clearly wrong ones also feather the edges
        out = cv2.GaussianBlur(out, (0, 0), sigmaX=0.8 * scale)
    return np.clip(out, 0, 255).astype(np.uint8)


_SPOIL = {"shape": _shape, "mask": _mask}


def _answer(request, *, fresh: bool, scale: float) -> np.ndarray:
    rng = _rng(request, fresh)
    # about half the samples come out nearly right, the rest clearly off (as in the paper)
    severity = scale * (0.1 if rng.random() < 0.5 else 2.5)
    spoil = _SPOIL.get(request.task, _colour)
    return spoil(request.sample.expected(), rng, severity)


def production(request):
    """The model in production (deterministic per sample)."""
    return _answer(request, fresh=False, scale=1.0)


def stochastic(request):
    """The same model with fresh noise on every run."""
    return _answer(request, fresh=True, scale=1.0)


def worse(request):
    """A clearly worse candidate."""
    return _answer(request, fresh=False, scale=2.0)


def off_colour(request):
    """Production, with a fifth of the colour samples 12 levels off."""
    img = production(request)
    if request.task == "color" and _rng(request, False, "off").random() < 0.2:
        img = np.clip(img.astype(np.int16) + 12, 0, 255).astype(np.uint8)
    return img
