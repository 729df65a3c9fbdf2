"""Sample ids: validation, slugs and stable seeds.

Sample ids become file paths (exports, replays, saved outputs), so they are restricted to relative,
``/``-separated segments of ``[a-z0-9._-]``. Seeds are derived with BLAKE2b, never with ``hash()``, so they
are the same in every process, on every machine and Python version.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import SampleIdError

__all__ = ["validate_sample_id", "slugify", "stable_seed"]

_SEGMENT = re.compile(r"^[a-z0-9._-]+$")
_MAX_ID = 200


def validate_sample_id(sample_id) -> str:
    """``sample_id`` (e.g. ``"color/v1/yellowish-pink/t07"``) if it is a safe relative path.

    Else a :class:`~pytest_violin.errors.SampleIdError`: not a string, empty, longer than 200 characters,
    absolute, an empty, ``.`` or ``..`` segment, or a character outside ``[a-z0-9._-]`` in a segment.
    """
    accepted = ("accepted: relative '/'-separated segments of [a-z0-9._-], "
                "no empty, '.' or '..' segment, at most 200 characters")
    if not isinstance(sample_id, str):
        raise SampleIdError(f"sample id {sample_id!r} is a {type(sample_id).__name__}, "
                            f"not a string; {accepted}")
    if not sample_id or len(sample_id) > _MAX_ID:
        raise SampleIdError(f"sample id {sample_id!r} has length {len(sample_id)}; {accepted}")
    for segment in sample_id.split("/"):
        if segment in ("", ".", ".."):
            raise SampleIdError(f"sample id {sample_id!r} has an empty, '.' or '..' "
                                f"segment; {accepted}")
        if not _SEGMENT.fullmatch(segment):
            raise SampleIdError(f"sample id {sample_id!r}: segment {segment!r} has a "
                                f"character outside [a-z0-9._-]; {accepted}")
    return sample_id


def slugify(text: str) -> str:
    """Turn free text into one id segment: lower case, runs of other characters -> ``-``.

    ``"Yellowish pink"`` -> ``"yellowish-pink"``, ``"IMG 0001.JPG"`` -> ``"img-0001.jpg"``; ``"x"`` if nothing
    usable is left.
    """
    slug = re.sub(r"[^a-z0-9.]+", "-", str(text).lower()).strip("-.")
    return slug or "x"


def stable_seed(*parts) -> int:
    """A seed in ``[0, 2**63)`` from ``parts`` (their ``str()`` joined by NUL), stable across processes."""
    data = "\x00".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") >> 1

