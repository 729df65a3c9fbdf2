"""The successful answer every adapter reads: :class:`HttpResult`.

Below the client and the answer decoder (:mod:`.decode` reads it,
:mod:`.client` makes it), so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["HttpResult"]


@dataclass
class HttpResult:
    """A successful (2xx) HTTP exchange, body fully read.

    Attributes
    ----------
    status : int
    headers : Mapping
        Case-insensitive response headers.
    content : bytes
        The body, decompressed (at most ``max_answer_bytes``).
    url : str
        The final URL (after redirects).
    attempts : int
        Attempts it took.
    """

    status: int
    headers: Mapping[str, str]
    content: bytes
    url: str
    attempts: int = 1
    elapsed: float = field(default=0.0)

    @property
    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
