"""The generation request every model adapter receives."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["GenerationRequest", "LazyImages", "derive_seed"]


def derive_seed(base_seed: int, sample_id: str, repeat: int = 0) -> int:
    """Derive a per-sample seed from the run seed and the sample id.

    Stable across processes, machines and Python versions (BLAKE2b, not
    ``hash()``), so a team can replay one sample with the same seed.

    * ``base_seed``: the run seed (``--violin-seed``).
    * ``sample_id``: the sample id.
    * ``repeat``: repeat index for ``--violin-repeats``; 0 for the first image.

    Returns: A seed in ``[0, 2**31 - 1]`` (fits every framework's seed type).
    """
    digest = hashlib.blake2b(
        f"{int(base_seed)}\x00{sample_id}\x00{int(repeat)}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


class LazyImages(Sequence):
    """A sample's input images, rendered on first use.

    Behaves like the tuple ``sample.inputs`` (``len``, indexing, iteration,
    truth value) but renders nothing until an adapter reads it: the oracle
    and the text-only adapters never pay for decoding and cropping a photo.
    Rendered once per request, then kept with the request.
    """

    __slots__ = ("_sample", "_images", "_lock")

    def __init__(self, sample):
        self._sample = sample
        self._images = None
        self._lock = threading.Lock()

    def _load(self) -> tuple:
        images = self._images
        if images is None:
            with self._lock:
                if self._images is None:
                    self._images = tuple(self._sample.inputs)
                images = self._images
        return images

    @property
    def rendered(self) -> bool:
        """Whether the images have been rendered yet."""
        return self._images is not None

    def __len__(self) -> int:
        return len(self._load())

    def __getitem__(self, index):
        return self._load()[index]

    def __iter__(self):
        return iter(self._load())

    def __bool__(self) -> bool:
        return bool(self._load())

    def __repr__(self) -> str:
        if self._images is None:
            return f"LazyImages(<inputs of {getattr(self._sample, 'id', '?')!r}, not rendered>)"
        return f"LazyImages({len(self._images)} images)"


@dataclass(frozen=True, eq=False)
class GenerationRequest:
    """What a model is asked to produce for one sample.

    * ``prompt``: the instruction.
    * ``width``, ``height``: requested image size in pixels.
    * ``seed``: per-sample seed (see :func:`derive_seed`).
    * ``sample_id``: the sample id, for logging and replay.
    * ``task``: ``color``, ``shape``, ``mask``, ...
    * ``images``: input images for editing tasks, RGB uint8: for the mask task the source image then the mask
      as a black/white RGB image. Requests built by :meth:`from_sample` hold a :class:`LazyImages`, rendered
      on first access (``len``, indexing, iteration or truth value).
    * ``sample``: the sample itself, for adapters that need more than the above (the oracle). Never sent over
      the wire.
    * ``repeat``: repeat index (0 unless ``--violin-repeats`` is above 1).
    """

    prompt: str
    width: int
    height: int
    seed: int
    sample_id: str
    task: str
    images: tuple = ()
    sample: Any = field(default=None, repr=False)
    repeat: int = 0

    @classmethod
    def from_sample(cls, sample, *, base_seed: int = 0, repeat: int = 0) -> "GenerationRequest":
        """Build the request for ``sample`` with its derived seed.

        The input images are not rendered here: ``images`` is a
        :class:`LazyImages` that renders them when an adapter first reads
        them (the oracle never does).
        """
        return cls(
            prompt=sample.prompt,
            width=sample.width,
            height=sample.height,
            seed=derive_seed(base_seed, sample.id, repeat),
            sample_id=sample.id,
            task=sample.task,
            images=LazyImages(sample),
            sample=sample,
            repeat=repeat,
        )

    def inputs_digest(self) -> str:
        """A hex digest of the input images (shape and pixels), for cache keys."""
        h = hashlib.blake2b(digest_size=16)
        for img in self.images:
            arr = np.ascontiguousarray(img)
            h.update(repr((arr.shape, str(arr.dtype))).encode())
            h.update(arr.tobytes())
        return h.hexdigest()
