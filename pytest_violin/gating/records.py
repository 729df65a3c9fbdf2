"""What identifies a sample's definition: its digest, and the fingerprint of a selection."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from ..results import _jsonable

__all__ = ["sample_definition", "sample_digest", "suite_fingerprint"]


def sample_definition(sample) -> str:
    """The definition digest of a Sample (:func:`sample_digest` of its manifest)."""
    return sample_digest(sample.to_manifest())


def sample_digest(manifest: Mapping) -> str:
    """32 hex digits (BLAKE2b-128 of the canonical JSON) of ``Sample.to_manifest()``."""
    canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=_jsonable)
    return hashlib.blake2b(canonical.encode(), digest_size=16).hexdigest()


def suite_fingerprint(items: Iterable) -> str:
    """``"blake2b:"`` and 32 hex digits for a selection of samples, whatever their order or
    how the run was split over processes.

    ``items``: ``Sample.to_manifest()`` mappings (each with an ``id``) or ``(sample_id, digest)`` pairs from
    :func:`sample_digest`.
    """
    pairs = []
    for item in items:
        if isinstance(item, Mapping):
            pairs.append((str(item.get("id")), sample_digest(item)))
        else:
            sid, digest = item
            pairs.append((str(sid), str(digest)))
    h = hashlib.blake2b(digest_size=16)
    for sid, digest in sorted(pairs):
        h.update(f"{sid}\x00{digest}\n".encode())
    return "blake2b:" + h.hexdigest()
