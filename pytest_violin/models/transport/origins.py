"""Where a request may go, and whether credentials may go with it: one rule.

Every place that decides whether a credential goes with a request (the
session's redirects, an adapter's status, result, file, image and cancel
URLs, the generic job mode) asks this module, and
:meth:`~pytest_violin.models.transport.client.HttpClient` asks it again for
every request it sends, redirect hops included.

* :func:`refusal` / :func:`origin_of`: a URL is acceptable only when it is
  ``http(s)://host[:port]/...`` with no user info, no backslash, no control
  character or whitespace, no ``%`` in its host, and when
  :func:`urllib.parse.urlsplit` and urllib3's
  :func:`~urllib3.util.parse_url` (what requests prepares and connects with)
  read the same scheme, host and port. Its origin is ``(scheme, host,
  port)`` with the default port filled in.
* :class:`Origins`: the origins the user named (the endpoint or base URL,
  and for some providers their own ``https`` domains, such as regional
  ``*.bfl.ai`` hosts); :func:`guard` refuses a URL that carries a
  registered secret (:func:`pytest_violin.redaction.contains_secret`) to
  any other origin.
* :func:`resolve`: a URL reference read from an answer (a status, result
  or image URL, a redirect's ``Location``), judged as the server wrote it,
  then resolved against the answer's URL.
* :func:`check_path_id`: a model or app id that becomes part of a URL path
  stays under the base path (no ``..``, no ``%``, no backslash, not
  absolute).

Why hand-written: urllib3 has no "same origin" test, and the two parsers a
request meets disagree. ``http://OTHER:1\\@API:2/x`` is user info
``OTHER:1\\`` on host ``API`` for :mod:`urllib.parse`, but host ``OTHER``
for urllib3, which connects there; ``http://%41PI/`` is host ``%41pi`` for
one and ``api`` for the other. A check written with one parser and a
connection made with the other let a key go to a foreign host (issue 21).
So a URL is judged only when both parsers agree, and the URL checked again
is the prepared one, the very string requests connects with.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, NamedTuple
from urllib.parse import urljoin, urlsplit

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from ...errors import GenerationError, GenerationUnjudged, ModelSpecError
from ...redaction import contains_secret, redact

__all__ = ["Origin", "Origins", "UrlRefused", "check_path_id", "guard", "origin_of", "origin_or_none",
           "refusal", "resolve", "same_origin", "shown"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SHOWN = 120


class Origin(NamedTuple):
    """``(scheme, host, port)``: lower case, brackets off IPv6 hosts, default port filled in."""

    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


class UrlRefused(GenerationUnjudged):
    """A URL that is never fetched: malformed or ambiguous, or carrying a secret to a foreign origin.

    An *error* outcome, never the model's failure: the server pointed at a URL
    that cannot be fetched safely, which says nothing of the image.
    """

    def __init__(self, reason: str, *, attempts: int | None = 0, status: int | None = None):
        super().__init__(reason, attempts=attempts, status=status, transport=False)


_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*):[^/?#@]*@")


def shown(url) -> str:
    """``url`` for a message: a user-info password and secrets (in any encoding) masked,
    escapes visible, cut to a line."""
    text = _PASSWORD.sub(r"\1:***@", str(url))
    if contains_secret(text):  # in any encoding: masking one form can leave the rest of another
        origin = origin_or_none(text)
        return f"{origin or 'a URL'}/... (the rest hidden: it carries a credential)"
    text = redact(text)
    text = ascii(text)[1:-1] if not text.isprintable() or not text.isascii() else text
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _bad_character(text: str) -> str | None:
    for char in text:
        if char == "\\":
            return "a backslash"
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            return "whitespace or a control character"
    return None


def _host_of(host: str) -> str:
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return ""
    return host


def _parse(url) -> tuple[Origin | None, str | None]:
    if not isinstance(url, str) or not url:
        return None, "it is not a URL"
    bad = _bad_character(url)
    if bad:
        return None, f"it has {bad}"
    try:
        split = urlsplit(url)
        split_port = split.port
        split_host = split.hostname
        lib = parse_url(url)
    except (ValueError, LocationParseError) as exc:
        return None, f"it is malformed ({type(exc).__name__})"
    scheme = split.scheme.lower()
    if scheme not in _DEFAULT_PORTS or (lib.scheme or "").lower() != scheme:
        return None, "it is not an http:// or https:// URL"
    authority = split.netloc
    if "@" in authority or split.username is not None or lib.auth is not None:
        return None, "it has user info (user@ before the host)"
    if "%" in authority:
        return None, "its host is percent-encoded"
    if not split_host or not lib.host:
        return None, "it has no host"
    a_host, b_host = _host_of(split_host), _host_of(lib.host)
    a_port = split_port if split_port is not None else _DEFAULT_PORTS[scheme]
    b_port = lib.port if lib.port is not None else _DEFAULT_PORTS[scheme]
    if not a_host or a_host != b_host or a_port != b_port:
        return None, "URL parsers read its host differently"
    return Origin(scheme, a_host, a_port), None


def refusal(url) -> str | None:
    """Why ``url`` is refused (one clause), or ``None`` when it is acceptable."""
    return _parse(url)[1]


def origin_of(url) -> Origin:
    """The origin of an acceptable ``url``.

    Raises
    ------
    UrlRefused
        With one line naming the URL (redacted) and why it is refused.
    """
    origin, why = _parse(url)
    if origin is None:
        raise UrlRefused(f"URL '{shown(url)}' refused: {why}; never fetched")
    return origin


def origin_or_none(url) -> Origin | None:
    """The origin of ``url``, or ``None`` for a refused URL."""
    return _parse(url)[0]


_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def resolve(reference, base: str | None = None, *, what: str = "URL") -> str:
    """An absolute URL from a reference an answer gave (a status, result or image URL, a
    ``Location``), resolved against ``base``; :class:`UrlRefused` when it is refused.

    The reference is judged as the server wrote it, before
    :func:`urllib.parse.urljoin` (which silently drops tabs and newlines) or
    requests (which decodes ``%31`` in a host to ``1``) can make it look
    harmless, and the resolved URL is judged again.
    """
    if not isinstance(reference, str):
        raise UrlRefused(f"{what} {type(reference).__name__} refused: it is not a URL; never fetched")
    bad = _bad_character(reference)
    if bad:
        raise UrlRefused(f"{what} '{shown(reference)}' refused: it has {bad}; never fetched")
    if _ABSOLUTE.match(reference) or reference.startswith("//"):  # its own authority: judged as written
        why = refusal(f"http:{reference}" if reference.startswith("//") else reference)
        if why:
            raise UrlRefused(f"{what} '{shown(reference)}' refused: {why}; never fetched")
    url = urljoin(base, reference) if base else reference
    why = refusal(url)
    if why:
        raise UrlRefused(f"{what} '{shown(reference)}' refused: {why}; never fetched")
    return url


def same_origin(url, other) -> bool:
    """Whether both URLs are acceptable and share scheme, host and port."""
    a = origin_or_none(url)
    return a is not None and a == origin_or_none(other)


class Origins:
    """The origins the user named, which alone get credentials and URLs that carry secrets.

    Parameters
    ----------
    urls : iterable of str
        The endpoint or base URLs the user configured.
    domains : iterable of str
        A provider's own domains: any ``https`` host equal to or under one
        of them is named too (``"bfl.ai"`` names ``https://api.us1.bfl.ai``).

    Without any URL named, :meth:`add` learns the origins of the requests an
    :class:`~pytest_violin.models.transport.client.HttpClient` sends with
    credentials (the behaviour for clients built without ``origins``);
    once a URL is named, :meth:`add` learns nothing more.
    """

    def __init__(self, urls: Iterable[str] = (), domains: Iterable[str] = ()):
        self._origins: set[Origin] = set()
        self._domains: tuple[str, ...] = ()
        self.named = False
        self.name(urls, domains)

    def name(self, urls: Iterable[str] = (), domains: Iterable[str] = ()) -> None:
        """Name more URLs (or domains); from now on nothing is learned."""
        if isinstance(urls, str):
            urls = (urls,)
        for url in urls:
            self._origins.add(origin_of(url))
            self.named = True
        extra = tuple(d.lower().strip(".") for d in domains if d)
        if extra:
            self._domains += extra
            self.named = True

    def add(self, origin: Origin | None) -> None:
        """Learn ``origin`` (only while nothing was named)."""
        if origin is not None and not self.named:
            self._origins.add(origin)

    def __contains__(self, item) -> bool:
        origin = item if isinstance(item, Origin) else origin_or_none(item)
        if origin is None:
            return False
        if origin in self._origins:
            return True
        return origin.scheme == "https" and any(
            origin.host == d or origin.host.endswith("." + d) for d in self._domains)

    def __bool__(self) -> bool:
        return bool(self._origins or self._domains)

    def __repr__(self) -> str:
        names = sorted(map(str, self._origins)) + [f"https://*.{d}" for d in self._domains]
        return f"Origins({', '.join(names)})"


def guard(url, origins: Origins | None = None, *, body=None) -> Origin:
    """The origin of ``url`` when the request may be sent; else :class:`UrlRefused`.

    Refused: a URL :func:`refusal` refuses, and, when ``origins`` names
    any, a URL (or ``body``) that carries a registered secret to an origin
    not among them.
    """
    origin = origin_of(url)
    if origins and origin not in origins:
        if contains_secret(url):
            raise UrlRefused(f"a URL on {origin} refused: it carries a credential and {origin} is not "
                             "an origin you named; never fetched")
        if body is not None and contains_secret(body):
            raise UrlRefused(f"a request to {origin} refused: its body carries a credential and "
                             f"{origin} is not an origin you named; never sent")
    return origin


_ID_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._:-]*$")


def check_path_id(value: str, *, what: str, accepted: str, segments: bool = True) -> str:
    """Refuse a model or app id that would leave the base path it is appended to.

    ``..`` and ``.`` segments, ``%`` (``%2e%2e``), a backslash, a leading
    ``/`` and empty segments are usage errors; ``segments=False`` refuses
    any ``/`` too.

    Raises
    ------
    ModelSpecError
        Naming the id and what is accepted.
    """
    text = value if isinstance(value, str) else ""
    parts = text.split("/") if segments else [text]
    for part in parts:
        if not _ID_SEGMENT.match(part):
            raise ModelSpecError(f"{what} {value!r} would leave the API's base path or is not an id "
                                 f"(accepted: {accepted})")
    return text
