"""Text that is safe to print on a terminal.

Prompts, sample ids and server messages come from manifests and model endpoints: a prompt holding ``ESC [ 2
J`` must not clear the user's screen, and one holding a carriage return must not overwrite the line before it.
"""

from __future__ import annotations

import re

__all__ = ["format_usd", "printable"]

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidirectional overrides and isolates that
# reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text) -> str:
    """``str(text)`` with every C0/C1 control character but tab and newline, DEL and the
    bidirectional overrides shown as ``\\xNN`` / ``\\uNNNN`` escapes.

    Examples
    --------
    >>> printable("red\\x1b[2J")
    'red\\\\x1b[2J'
    """
    return _UNSAFE.sub(_escape, str(text))


def format_usd(amount: float | None) -> str:
    """``$12.34`` (cents), or more digits for amounts under a cent (``$0.0025``); ``n/a`` for None."""
    if amount is None:
        return "n/a"
    amount = float(amount)
    if amount == 0 or abs(amount) >= 0.01:
        return f"${amount:,.2f}"
    return f"${amount:.4g}"


_IMAGE_DATA_URI = re.compile(r"^data:image/(png|jpeg);base64,[A-Za-z0-9+/]+=*$")


def is_image_data_uri(value) -> bool:
    """Whether ``value`` is a base64 PNG or JPEG ``data:`` URI, safe to embed in a page.

    Thumbnails come from files a report folder or a results.json holds: nothing else (no script, no other
    scheme, no stray quote) is embedded.
    """
    return isinstance(value, str) and _IMAGE_DATA_URI.match(value) is not None
