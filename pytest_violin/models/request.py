"""What a model is asked for one sample, and the adapter protocol that answers it.

An adapter turns a :class:`GenerationRequest` into an image (anything :func:`pytest_violin.as_rgb8` accepts);
:class:`NetworkAdapter` is what the adapters calling a service through an
:class:`~pytest_violin.models._transport.client.HttpClient` share.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["GenerationRequest", "LazyImages", "ModelAdapter", "NetworkAdapter", "derive_seed"]


def derive_seed(base_seed: int, sample_id: str, repeat: int = 0) -> int:
    """A per-sample seed in ``[0, 2**31 - 1]`` from the run seed, the sample id and the repeat index.

    Stable across processes, machines and Python versions (BLAKE2b, not ``hash()``), so a team can replay one
    sample with the same seed.
    """
    digest = hashlib.blake2b(
        f"{int(base_seed)}\x00{sample_id}\x00{int(repeat)}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


class LazyImages(Sequence):
    """A sample's input images as the tuple ``sample.inputs``, rendered once, when an adapter first reads them
    (the oracle and the text-only adapters never pay for decoding and cropping a photo).
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

    * ``images``: input images for editing tasks, RGB uint8 (for the mask task the source, then the mask as a
      black/white image); a :class:`LazyImages` when built by :meth:`from_sample`.
    * ``sample``: the sample itself, for adapters that need more (the oracle); never sent over the wire.
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
        """The request for ``sample`` with its derived seed; its images render when an adapter first reads them."""
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


@runtime_checkable
class ModelAdapter(Protocol):
    """What every model adapter implements; ``identity``: a stable, secret-free description of the model."""

    identity: str

    def generate(self, request: GenerationRequest) -> Any:
        """Return an image for ``request`` (anything ``as_rgb8`` accepts).

        Raise :class:`~pytest_violin.errors.GenerationError` with a one-line reason when the model fails.
        """

    def close(self) -> None:
        """Release sessions, pools and files. Called once at session end."""


class NetworkAdapter:
    """Base of the adapters that call a service through their ``client``; ``bills``: its calls may cost
    money (the default ``--violin-max-calls`` applies; a self-hosted server sets it False).
    """

    identity: str
    client: Any
    cacheable = True
    #: calls a network service: --violin-max-calls defaults to 2000 (see docs/plugin.md)
    network = True
    #: a paid API unless a subclass says otherwise
    bills = True

    def close(self) -> None:
        """Close the session."""
        self.client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity!r})"
