"""Option values echoed in error messages are cut: a 100,000-character value is never printed whole.

:func:`bounded_messages` wraps every converter of :data:`pytest_violin.pytest_plugin.options.OPTIONS`
(the one place, applied when an :class:`~pytest_violin.pytest_plugin.options.Option` is declared),
and :func:`cut` is the rule the settings' own usage errors use too.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

__all__ = ["MAX_ECHOED", "MAX_MESSAGE", "bounded_messages", "cut"]


#: Characters of an option value echoed in an error message, at most (after redaction).
MAX_ECHOED = 200
#: Characters of a converter's whole error message, at most.
MAX_MESSAGE = 1000


def cut(text: str, limit: int = MAX_ECHOED) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def bounded_messages(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert`` whose :class:`argparse.ArgumentTypeError` echoes at most :data:`MAX_ECHOED`
    characters of the value (a 100,000-character value is cut, not printed whole).

    The message is already redacted by the converter (a header's value is
    masked); the value as given, its stripped form and their reprs are cut
    where they occur in it, and a message still over :data:`MAX_MESSAGE`
    characters (a value echoed in another form) keeps its start and its
    ``accepted: ...`` end.
    """
    if getattr(convert, "_bounded", False):
        return convert

    def run(value):
        try:
            return convert(value)
        except argparse.ArgumentTypeError as exc:
            message = str(exc)
            text = str(value)
            for form in sorted({repr(text), text, repr(text.strip()), text.strip()}, key=len,
                               reverse=True):
                if len(form) > MAX_ECHOED and form in message:
                    message = message.replace(form, cut(form))
            if len(message) > MAX_MESSAGE:
                head, sep, tail = message.rpartition("; accepted:")
                tail = (sep + tail) if sep else message[-MAX_MESSAGE // 4:]
                message = cut(head if sep else message, MAX_MESSAGE // 2) + cut(tail, MAX_MESSAGE // 2)
            raise argparse.ArgumentTypeError(message) from None
        except (TypeError, ValueError) as exc:  # argparse would echo the whole value
            raise argparse.ArgumentTypeError(
                f"{cut(repr(str(value)))} is invalid ({type(exc).__name__})") from None

    run._bounded = True
    run.__name__ = getattr(convert, "__name__", "convert")
    run.__doc__ = getattr(convert, "__doc__", None)
    return run
