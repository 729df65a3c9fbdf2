"""Keep credentials out of everything pytest-violin writes.

HTTP adapters register every credential they are given (API keys, the values of configured headers, URL
passwords) with :func:`register_secret` when they are created. Every failure message, log line, report field
and JUnit property then goes through :func:`redact`, which replaces each registered secret, and its
URL-encoded and base64 forms, with ``***``.

The registry is process-global and thread-safe. Values shorter than :data:`MIN_SECRET_LENGTH` characters are
ignored: redacting ``"1"`` or ``"on"`` everywhere would destroy messages and protect nothing.

A cut secret is still a secret: a server that echoes ``Bearer s3cr3t-plante...`` (or a message cut anywhere)
must not show the start of the token. So :func:`redact` also masks every run of at least
:data:`PREFIX_MIN_LENGTH` characters that is the start of a registered secret (6 characters of a random token
identify it; shorter runs would mask ordinary words). For values whose start is public, ``Bearer TOKEN`` or
``user:password``, the run must reach past the public part (``public_prefix``). Messages are always redacted
first and cut afterwards.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from urllib.parse import (quote, quote_plus, unquote, unquote_plus, unquote_to_bytes, urlsplit,
                          urlunsplit)

__all__ = ["MASK", "MIN_SECRET_LENGTH", "PREFIX_MIN_LENGTH", "RedactingFilter",
           "install_log_redaction", "register_secret", "redact", "redact_url", "redact_userinfo",
           "is_registered", "contains_secret"]

#: What a secret is replaced with.
MASK = "***"

#: Registered values shorter than this are ignored.
MIN_SECRET_LENGTH = 4

#: A run of this many characters (or more) that starts a secret is masked.
PREFIX_MIN_LENGTH = 6

_lock = threading.Lock()
_secrets: set[str] = set()
# Longest first, so a secret that contains another is replaced whole.
_ordered: tuple[str, ...] = ()
# variant -> (characters a run must have to be masked, public characters kept)
_prefix_rules: dict[str, tuple[int, int]] = {}
_ordered_prefixes: tuple[tuple[str, int, int], ...] = ()


def _variants(value: str, public_prefix: int = 0) -> dict[str, tuple[int, int]]:
    """Each form of ``value`` -> (length a run of its start needs to be masked, characters kept)."""
    plain = public_prefix + PREFIX_MIN_LENGTH
    out = {value: (plain, public_prefix)}
    for quoted in (quote(value, safe=""), quote_plus(value)):
        out.setdefault(quoted, (len(quote(value[:plain], safe="")), 0))
    raw = value.encode("utf-8")
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = encoded.decode("ascii")
        # 3 bytes -> 4 characters, plus one for the partly known character
        needed = -(-len(value[:plain].encode("utf-8")) * 4 // 3) + 1
        out.setdefault(text, (needed, 0))
        out.setdefault(text.rstrip("="), (needed, 0))
    return {v: n for v, n in out.items() if len(v) >= MIN_SECRET_LENGTH}


def register_secret(value, *, public_prefix: int = 0) -> None:
    """Remember ``value`` (a credential) as a secret that :func:`redact` must hide.

    The value itself, its URL-encoded forms and its base64 forms are registered; ``None``, empty strings and
    values shorter than :data:`MIN_SECRET_LENGTH` characters (after stripping) are ignored. ``public_prefix``
    leading characters are not secret (``len("Bearer ")``, ``len("user:")``): a cut copy of the value is
    masked only when it reaches :data:`PREFIX_MIN_LENGTH` characters past them.
    """
    global _ordered, _ordered_prefixes
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return
    variants = _variants(value, max(int(public_prefix), 0))
    with _lock:
        changed = False
        for variant, rule in variants.items():
            if variant not in _secrets:
                _secrets.add(variant)
                changed = True
            if rule[0] < len(variant) and rule[0] < _prefix_rules.get(variant, (len(variant), 0))[0]:
                _prefix_rules[variant] = rule
                changed = True
        if not changed:
            return
        _ordered = tuple(sorted(_secrets, key=len, reverse=True))
        _ordered_prefixes = tuple((v, n, k) for v, (n, k) in _prefix_rules.items())


def is_registered(value: str) -> bool:
    """Whether ``value`` (exactly) is a registered secret."""
    with _lock:
        return isinstance(value, str) and value.strip() in _secrets


def contains_secret(text) -> bool:
    """Whether ``text`` (a URL, a header value, a body) holds a registered secret in any form.

    Read-only. The registered forms (plain, percent-encoded, ``+``-encoded, base64) are looked for in ``text``
    and in its percent-decoded and ``+``-decoded forms (``%2f`` and ``%2F`` alike); ``bytes`` get the same
    decodings, byte for byte (a body need not be UTF-8: an image in a multipart form), and are searched for
    the secrets' UTF-8 forms. Cut secrets (prefixes) do not count: this decides whether a request may leave,
    not what a message shows.

    Linear in the size of ``text`` (at most two decoded copies are made); the bodies checked are requests the
    adapters build from bounded inputs.
    """
    secrets = _ordered
    if not secrets or text is None:
        return False
    if isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text)
        datas = {data}
        if b"%" in data or b"+" in data:
            datas |= {unquote_to_bytes(data), unquote_to_bytes(data.replace(b"+", b" "))}
        encoded = [secret.encode("utf-8") for secret in secrets]
        return any(secret in form for form in datas for secret in encoded)
    text = str(text)
    forms = {text}
    if "%" in text or "+" in text:
        forms |= {unquote(text), unquote_plus(text)}
    return any(secret in form for form in forms for secret in secrets)


def redact(text) -> str:
    """``text`` (``str()`` of any object) with every registered secret replaced by ``***``."""
    if not isinstance(text, str):
        text = str(text)
    secrets = _ordered  # an immutable snapshot: no lock needed to read it
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    spans = []
    for secret, needed, keep in _ordered_prefixes:
        spans.extend(_starts(text, secret, needed, keep))
    if not spans:
        return text
    # the longest run wins where runs of several secrets overlap
    spans.sort()
    out, pos = [], 0
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in merged:
        out.append(text[pos:start])
        out.append(MASK)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _starts(text: str, secret: str, needed: int, keep: int):
    """``(start, end)`` of every run of at least ``needed`` characters that starts ``secret``.

    The first ``keep`` characters (a public ``Bearer `` or ``user:``) stay.
    """
    head = secret[:needed]
    start = text.find(head)
    while start != -1:
        end = start + len(head)
        stop = min(len(text), start + len(secret))
        while end < stop and text[end] == secret[end - start]:
            end += 1
        yield start + keep, end
        start = text.find(head, end)


def redact_url(url: str) -> str:
    """An absolute URL without ``user:password@`` and with every registered secret (an API key in
    the query) masked.
    """
    url = str(url)
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = netloc.rsplit("@", 1)[1]
        url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return redact(url)


#: The user-info part of a URL: ``SCHEME://user:password@``. A model name followed by a URL
#: (``openai:gpt-image-1@https://api.openai.com/v1``, ``replicate:owner/name:abc123@https://...``) has no
#: ``://`` before its ``@`` and is no password.
_URL_USERINFO = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://(?P<user>[^\s/@:'\"?#]*)):(?P<password>[^\s/@'\"?#]*)@")

#: ``user:password@host`` in text that failed to parse as a model spec: a mistyped scheme (``htp://``,
#: ``http//``) or none (``alice:pw@host/gen``). The ``@`` must be followed by a host (a name or ``[IPv6]``, an
#: optional ``:PORT``, then the end, ``/``, ``?``, ``#``, a space or a quote), so ``MODEL@https://HOST`` stays
#: readable here too.
_LOOSE_USERINFO = re.compile(
    r"(?<![\w.%+~-])(?P<head>(?P<user>[\w.%+~-]+)):(?P<password>[^\s/@'\"?#]+)@"
    r"(?=(?:\[[0-9A-Fa-f:.]+\]|[\w.-]+)(?::\d+)?(?:[/?#\s'\"]|$))"
)


def redact_userinfo(text, *, loose: bool = False) -> str:
    """Mask URL user-info passwords in ``text`` (``str()`` of any object), then redact registered secrets.

    Secrets are masked, identities never are: only the password of ``SCHEME://user:password@host`` is a
    password (``https://alice:pw@example.com/gen`` becomes ``https://alice:***@example.com/gen``); model
    names, paths and hosts stay readable (``openai:gpt-image-1@https://api.openai.com/v1``,
    ``replicate:owner/name:abc123@https://api.replicate.com/v1``,
    ``openai:org@team/gpt:image-1@https://...``). ``loose``, for text that did not parse as a model spec, also
    masks ``user:password@host`` after a mistyped scheme (``htp://``, ``http//``) or none
    (``alice:pw@host/gen``), when a host follows the ``@``.
    """
    text = _URL_USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", str(text))
    if loose:
        text = _LOOSE_USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    return redact(text)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts every record's message and arguments.

    Attach it to a handler (or logger) that may see messages containing credentials::

        handler.addFilter(RedactingFilter())
    """

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003 - logging API
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the raw parts
            message = f"{record.msg} {record.args}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            # formatters print exc_text when it is set: a traceback naming a URL with a key is redacted like
            # the message
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


#: Loggers of the HTTP stack whose records can carry a URL (with a query key), a header or a server's answer.
#: urllib3 logs every request line at DEBUG, ``"POST /gen?key=... HTTP/1.1" 500``; a filter on a logger only
#: sees records created on that very logger, so each one is named.
HTTP_LOGGERS = (
    "pytest_violin",
    "pytest_violin.http",
    "urllib3",
    "urllib3.connectionpool",
    "urllib3.connection",
    "urllib3.poolmanager",
    "urllib3.response",
    "urllib3.util.retry",
    "requests",
)

_FILTER = RedactingFilter()


def install_log_redaction(names=HTTP_LOGGERS) -> None:
    """Attach one :class:`RedactingFilter` to each logger in ``names`` (idempotent).

    The HTTP adapters call it when they are created, so a run with ``--log-level=DEBUG`` or ``--log-file``
    does not write a credential that urllib3 logs with the request line.
    """
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
