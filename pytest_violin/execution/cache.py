"""On-disk cache of generated images.

Entries are PNG files named by a SHA-256 key over the adapter identity (secret-free by contract), every
request field that changes the image (prompt, size, seed, task, repeat index and a digest of the input images)
and the image reader that decoded the answer: an entry holds decoded pixels, and the readers disagree on the
same answer (``pillow``, profile ``strict``, composites transparency over black; ``opencv``, profile
``violin``, drops it), so an entry is only found by a run that reads as the one that wrote it. Credentials are
never part of a key or an entry. Writes go to a temporary file in the entry's directory and are renamed into
place with :func:`os.replace`, which is atomic: concurrent pytest-xdist workers never see half-written
entries. An entry is read only if it is a regular file (never through a symlink, never a device or a FIFO) of
at most :data:`MAX_ENTRY_BYTES`, checked before a byte is read, and at most that many bytes are read. A
corrupt, oversized or special entry is deleted with a warning (logger ``pytest_violin.cache``) and reported as
a miss, so it is regenerated. Errors are never cached (the runner only stores images).
"""

from __future__ import annotations

import hashlib
import json
import logging
import stat
import threading
from pathlib import Path

import numpy as np

from .._fs import atomic_write, read_option_bytes
from ..errors import InvalidArgumentError, InvalidImageError
from ..imaging import MAX_DECODED_BYTES, READERS, current_reader, decode_image, encode_png

__all__ = ["CACHE_VERSION", "MAX_ENTRY_BYTES", "ImageCache", "cache_identity", "cached_counts"]

log = logging.getLogger("pytest_violin.cache")

#: Largest entry read, in bytes: a PNG is never much larger than its pixels, and no image larger than
#: :data:`~pytest_violin.imaging.MAX_DECODED_BYTES` decodes.
MAX_ENTRY_BYTES = MAX_DECODED_BYTES

#: Bumped when the key layout changes or an adapter's answers for the same request change meaning, so old
#: entries are simply not found. 2: the diffusers adapter stopped answering mask samples with text-to-image
#: images. 3: the image reader joined the key.
CACHE_VERSION = 3


def _check_reader(reader: str) -> str:
    if reader not in READERS:
        raise InvalidArgumentError(f"image reader {reader!r} is unknown; accepted: {', '.join(READERS)}")
    return reader


def cache_identity(adapter, identity: str) -> str | None:
    """The identity cache keys are formed with for ``adapter``.

    An adapter may define ``cache_identity()``: a string that adds what its server reports of the models it
    runs and its version (ComfyUI: the files its loader nodes read, ``/system_stats``), or None when that
    cannot be learnt (then nothing is looked up in or written to the cache). Without it: ``identity``.
    """
    method = getattr(adapter, "cache_identity", None)
    if not callable(method):
        return identity
    try:
        value = method()
    except Exception:  # an adapter that cannot tell: no cache rather than a stale one
        return None
    return None if value is None else str(value)


class ImageCache:
    """A directory of cached images (``root``, created on the first write), safe for threads
    and processes; ``hits``, ``misses``, ``writes`` and ``dropped`` (corrupt entries deleted)
    count this object's work."""

    def __init__(self, root):
        self.root = Path(root)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.dropped = 0

    @staticmethod
    def key(identity: str, request, *, reader: str | None = None) -> str:
        """64 hex digits keying ``request`` for the adapter's secret-free ``identity`` and the
        ``reader`` the answer is decoded with (default: the calling run's,
        :func:`~pytest_violin.imaging.current_reader`, which its profile sets before anything is
        looked up)."""
        fields = [
            CACHE_VERSION,
            str(identity),
            str(request.prompt),
            int(request.width),
            int(request.height),
            int(request.seed),
            str(request.task),
            int(request.repeat),
            request.inputs_digest(),
            _check_reader(reader or current_reader()),
        ]
        text = json.dumps(fields, ensure_ascii=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("ascii")).hexdigest()

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives (``root/ab/abcdef....png``)."""
        key = str(key)
        if len(key) < 8 or any(c not in "0123456789abcdef" for c in key):
            raise InvalidArgumentError(f"cache key {key!r} is not a lowercase hex digest")
        return self.root / key[:2] / f"{key}.png"

    def is_empty(self) -> bool:
        """Whether the cache holds no entry at all (a first run: nothing to look up)."""
        try:
            return not any(self.root.iterdir())
        except OSError:  # missing or unreadable: nothing can be found in it
            return True

    def contains(self, key: str) -> bool:
        """Whether an entry for ``key`` is on disk (not read, not validated)."""
        return self.path(key).is_file()

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def get(self, key: str) -> np.ndarray | None:
        """The cached image for ``key`` (RGB uint8), or ``None``.

        A corrupt, oversized, unreadable or special entry (a symlink, a device, a FIFO, a directory) is
        deleted with a warning where it can be and ``None`` returned.
        """
        path = self.path(key)
        try:
            info = path.lstat()
        except OSError:  # missing (the common miss) or its folder unreadable
            self._count("misses")
            return None
        if not stat.S_ISREG(info.st_mode):
            return self._drop(path, "it is not a regular file")
        try:
            data = read_option_bytes(path, what="cache entry", limit=MAX_ENTRY_BYTES)
        except InvalidArgumentError as exc:  # replaced meanwhile, over the limit, unreadable
            return self._drop(path, str(exc).split(": ", 1)[-1])
        try:
            image = decode_image(data)
        except InvalidImageError as exc:
            return self._drop(path, getattr(exc, "problem", "not an image"))
        self._count("hits")
        return image

    def _drop(self, path: Path, why: str) -> None:
        """Delete the bad entry at ``path`` (the generation is made again); a miss."""
        log.warning("cache entry %s dropped (%s); the image is generated again", str(path), why)
        try:
            path.unlink()
        except OSError:
            pass
        self._count("dropped")
        self._count("misses")
        return None

    def put(self, key: str, image) -> Path:
        """Store ``image`` (anything ``as_rgb8`` accepts) under ``key``, atomically; its path."""
        path = atomic_write(self.path(key), encode_png(image))
        self._count("writes")
        return path

    def __contains__(self, key: str) -> bool:
        return self.path(key).is_file()

    def __repr__(self) -> str:
        return f"ImageCache({str(self.root)!r})"


def cached_counts(cache, identity: str | None, samples, *, seed: int, repeats: int) -> dict:
    """Sample id -> how many of its ``repeats`` images ``cache`` holds (samples with none left out).

    ``identity`` is the adapter's :func:`cache_identity` (None: nothing is
    cached). An empty cache costs nothing; otherwise a key needs the request's
    input images (rendered for mask samples, ~1 ms each). An unreadable entry
    counts as an image to make.
    """
    from dataclasses import replace

    from ..models.request import GenerationRequest, derive_seed

    found: dict = {}
    if cache is None or identity is None or cache.is_empty():
        return found
    for sample in samples:
        request = GenerationRequest.from_sample(sample, base_seed=seed, repeat=0)
        for repeat in range(repeats):
            if repeat:
                request = replace(request, seed=derive_seed(seed, sample.id, repeat), repeat=repeat)
            try:
                if cache.contains(cache.key(identity, request)):
                    found[sample.id] = found.get(sample.id, 0) + 1
            except Exception:  # an unreadable cache entry counts as a generation to make
                pass
    return found
