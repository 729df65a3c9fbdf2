"""Where a request may go and what goes with it: the environment, the origins rule, credentials.

* :class:`EnvironmentSettings`: proxies, CA bundle and ``~/.netrc`` read once, in the main thread (requests'
  ``trust_env`` reads ``os.environ`` on every request); the rules stay requests' and urllib's.
* One rule for every place that decides whether a credential goes with a request (:func:`refusal`,
  :func:`origin_of`, :class:`Origins`, :func:`guard`, :func:`resolve`, :func:`check_path_id`). A URL is judged
  only when :func:`urllib.parse.urlsplit` and urllib3's ``parse_url`` (what requests connects with) read the
  same scheme, host and port: ``http://OTHER:1\\@API:2/x`` is host ``API`` for one and ``OTHER`` for the
  other, and a check made with one parser let a key go where the other connected. urllib3 has no "same origin"
  test.
* Credentials in the configuration: :func:`expand_env` (``${NAME}``; unset or empty is a usage error naming
  it), :func:`parse_headers`, :func:`check_url` (``user:password@`` taken out for Basic auth),
  :func:`provider_endpoint`. Every secret found is registered for :func:`pytest_violin.redaction.redact`.
"""

from __future__ import annotations

import netrc as _netrc
import os
import re
import unicodedata
from contextlib import suppress
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit, urlunsplit

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from ...errors import GenerationUnjudged, ModelSpecError
from ...redaction import contains_secret, redact, redact_url, register_secret


def _register_login(login: str | None, password: str | None) -> None:
    register_secret(password)
    if login and password:
        register_secret(f"{login}:{password}", public_prefix=len(login) + 1)


def _register_url_password(url: str | None) -> None:
    if not url or "@" not in url:
        return
    with suppress(ValueError):
        parts = urlsplit(url if "://" in url else f"http://{url}")
        _register_login(parts.username, parts.password)


def _ipv4_in(host: str, entry: str) -> bool:
    from requests.utils import address_in_network, is_ipv4_address, is_valid_cidr

    if not is_ipv4_address(host):
        return False
    if is_valid_cidr(entry):
        return address_in_network(host, entry)
    return host == entry


@dataclass(frozen=True)
class EnvironmentSettings:
    """What the environment decides for HTTP (proxies, CA bundle, ``~/.netrc``), read once in the main thread.

    requests with ``trust_env`` reads them from ``os.environ`` on every request, in the generation threads,
    while pytest rewrites ``PYTEST_CURRENT_TEST`` in the main thread: iterating a mapping that changes size
    raises. Netrc passwords are registered as secrets.
    """

    proxies: Mapping[str, str] = field(default_factory=dict)
    ca_bundle: str | None = None
    netrc: Any = None

    @classmethod
    def capture(cls, environ: Mapping[str, str] | None = None) -> "EnvironmentSettings":
        """Read the settings from ``environ`` (default: the process environment).

        Call it in the main thread before generation threads start.
        """
        env = dict(os.environ if environ is None else environ)
        if environ is None:
            proxies = dict(urllib.request.getproxies())
        else:
            proxies = {}
            for name, value in env.items():
                low = name.lower()
                if value and low.endswith("_proxy"):
                    proxies[low[:-6]] = value
            for name, value in env.items():  # lower case wins, as in urllib
                if value and name.endswith("_proxy"):
                    proxies[name[:-6]] = value
        for value in proxies.values():
            _register_url_password(value)
        ca_bundle = env.get("REQUESTS_CA_BUNDLE") or env.get("CURL_CA_BUNDLE") or None
        return cls(proxies=proxies, ca_bundle=ca_bundle, netrc=_read_netrc(env))

    def bypass(self, url: str) -> bool:
        """Whether ``url`` is in ``no_proxy`` (requests' rules, no environment read)."""
        no_proxy = self.proxies.get("no")
        if not no_proxy:
            return False
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError:
            return False
        if not host:
            return False
        entries = [e for e in no_proxy.replace(" ", "").split(",") if e]
        host_port = f"{host}:{port}" if port else host
        for entry in entries:
            if _ipv4_in(host, entry) or host.endswith(entry) or host_port.endswith(entry):
                return True
        return bool(urllib.request.proxy_bypass_environment(host, {"no": no_proxy}))

    def proxies_for(self, url: str) -> dict[str, str]:
        """The ``proxies`` argument for a request to ``url``."""
        if not self.proxies or self.bypass(url):
            return {}
        scheme = urlsplit(url).scheme.lower()
        proxy = self.proxies.get(scheme) or self.proxies.get("all")
        return {scheme: proxy} if proxy else {}

    def netrc_auth(self, url: str) -> tuple[str, str] | None:
        """``(login, password)`` of the netrc entry for the host of ``url``."""
        if self.netrc is None:
            return None
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return None
        if not host:
            return None
        entry = self.netrc.authenticators(host)
        if not entry:
            return None
        login = entry[0] or entry[1]
        return (login or "", entry[2] or "")


def _read_netrc(env: Mapping[str, str]):
    candidates = [env["NETRC"]] if env.get("NETRC") else ["~/.netrc", "~/_netrc"]
    for name in candidates:
        try:
            path = os.path.expanduser(name)
        except KeyError:  # no home directory
            return None
        if not os.path.isfile(path):
            continue
        try:
            parsed = _netrc.netrc(path)
        except (_netrc.NetrcParseError, OSError, UnicodeDecodeError):
            return None
        for login, _account, password in parsed.hosts.values():
            _register_login(login, password)
        return parsed
    return None


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
    """A URL that is never fetched: malformed, ambiguous, or carrying a secret to a foreign origin (an error
    outcome: it says nothing of the image).
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

    Raises :class:`UrlRefused`: with one line naming the URL (redacted) and why it is refused.
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

    The reference is judged as the server wrote it, before :func:`urllib.parse.urljoin` (which silently drops
    tabs and newlines) or requests (which decodes ``%31`` in a host to ``1``) can make it look harmless, and
    the resolved URL is judged again.
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

    ``domains``: a provider's own domains; any ``https`` host equal to or under one is named too (``"bfl.ai"``
    names ``https://api.us1.bfl.ai``).
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
    """The origin of ``url`` when the request may be sent, else :class:`UrlRefused`: a URL :func:`refusal`
    refuses, or one (or its ``body``) carrying a registered secret to an origin ``origins`` does not name.
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
    """Refuse (:class:`ModelSpecError`) a model or app id that would leave the base path it is appended to:
    ``..``, ``.``, ``%``, a backslash, a leading ``/``, empty segments, and any ``/`` without ``segments``.
    """
    text = value if isinstance(value, str) else ""
    parts = text.split("/") if segments else [text]
    for part in parts:
        if not _ID_SEGMENT.match(part):
            raise ModelSpecError(f"{what} {value!r} would leave the API's base path or is not an id "
                                 f"(accepted: {accepted})")
    return text


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

#: Header names (lower case) whose literal values are not credentials.
PUBLIC_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "content-type", "content-encoding", "user-agent"}
)
_SECRET_QUERY = re.compile(r"key|token|secret|password|passwd|sig|auth|credential", re.IGNORECASE)


def expand_env(value: str, *, what: str = "value", environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${NAME}`` references in ``value`` (``"Bearer ${HF_TOKEN}"``) by environment variables.

    Expanded values are registered as secrets. Raises :class:`ModelSpecError` naming the variable, never a
    value, when it is unset or blank (``Bearer ${TOKEN}`` would go out as ``Bearer ``).
    """
    env = os.environ if environ is None else environ

    def sub(match: re.Match) -> str:
        name = match.group(1)
        if name not in env:
            raise ModelSpecError(
                f"{what} references environment variable {name!r}, which is not set; "
                f"export it or remove the ${{{name}}} reference"
            )
        if not env[name].strip():
            raise ModelSpecError(
                f"{what} references environment variable {name!r}, which is set but empty "
                f"(a CI job without access to the secret?); give it a value or remove the "
                f"${{{name}}} reference"
            )
        register_secret(env[name])
        return env[name]

    return _ENV_REF.sub(sub, value)


def _split_header(item) -> tuple[str, str]:
    if isinstance(item, str):
        name, sep, value = item.partition(":")
        if not sep:
            raise ModelSpecError(_no_colon_message(item))
        return name.strip(), value.strip()
    try:
        name, value = item
    except (TypeError, ValueError):
        raise ModelSpecError(
            f"header {type(item).__name__} is neither 'Name: value' nor a (name, value) pair"
        ) from None
    return str(name).strip(), str(value).strip()


def _no_colon_message(item: str) -> str:
    """The usage error for a header without ``:``: only its first word is shown (``'Authorization Bearer s3cr3t'``
    is a credential typed with a space).
    """
    words = item.strip().split(None, 1)
    first = words[0] if words else ""
    if len(words) > 1 and _HEADER_NAME.match(first) and len(first) <= 60:
        # a name, then the value: show the name only
        shown = f"{redact(first)} ***"
        hint = f"; did you mean '{redact(first)}: ...'?"
    else:  # one word may be the value itself
        shown, hint = "***", ""
    return (
        f"header {shown!r} has no ':' between name and value (value hidden); "
        f"accepted: 'Name: value', e.g. 'Authorization: Bearer ${{TOKEN}}'{hint}"
    )


def parse_headers(headers: Iterable, *, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Configured headers (``"Name: value"`` strings or pairs) as a dict, ``${ENV}`` expanded.

    Every value but those of ``Accept``, ``Content-Type``, ``User-Agent`` and the like is registered as a
    secret, and so is the token of ``Bearer TOKEN``. Raises :class:`ModelSpecError` for a malformed header, an
    unset variable, or a value HTTP cannot carry (a line break, a character outside latin-1).
    """
    out: dict[str, str] = {}
    for item in headers or ():
        name, raw = _split_header(item)
        if not _HEADER_NAME.match(name):
            raise ModelSpecError(f"invalid HTTP header name {name!r}; accepted: letters, digits and -")
        value = expand_env(raw, what=f"header {name!r}", environ=environ)
        if "\n" in value or "\r" in value:
            raise ModelSpecError(f"header {name!r} has a line break in its value")
        try:  # what http.client sends: a value it cannot encode would fail every sample later
            value.encode("latin-1")
        except UnicodeEncodeError as exc:
            where = "its ${...} expansion" if value != raw else "its value"
            raise ModelSpecError(
                f"header {name!r}: {where} has a character outside latin-1 at position {exc.start} "
                f"(U+{ord(value[exc.start]):04X}); accepted: ASCII or latin-1 text "
                "(percent- or base64-encode anything else)") from None
        if name.lower() not in PUBLIC_HEADERS or value != raw:
            scheme, _, credential = value.partition(" ")
            if credential.strip() and scheme.isalpha():
                # "Bearer TOKEN": the scheme word is public, the token is not
                register_secret(value, public_prefix=len(scheme) + 1)
                register_secret(credential)
            else:
                register_secret(value)
        out[name] = value
    return out


def _register_userinfo(text: str) -> None:
    # before any validation, so even an error about a malformed URL is clean
    authority = text.split("://", 1)[-1].split("/", 1)[0]
    if "@" in authority:
        userinfo = authority.rsplit("@", 1)[0]
        user, _, password = userinfo.partition(":")
        register_secret(password)
        _register_login(unquote(user), unquote(password))


def check_url(url: str, *, what: str = "URL") -> tuple[str, tuple[str, str] | None]:
    """``url`` validated by the one rule, without ``user:password@``, and that pair for Basic auth (or None).

    The password and query values named like credentials (``key``, ``token``, ``sig``) are registered as
    secrets. Raises :class:`ModelSpecError` for a URL that is not http(s), has no host, or is refused.
    """
    text = (url or "").strip()
    _register_userinfo(text)
    for char in ("\\", "\t", "\n", "\r", " "):
        if char in text:
            raise ModelSpecError(f"{what} {shown(text)!r} is not accepted: it has "
                                 f"{'a backslash' if char == chr(92) else 'whitespace'} (percent-encode it); "
                                 "example: http://127.0.0.1:8000/generate")
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ModelSpecError(f"{what} {redact_url(text)!r} is malformed ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ModelSpecError(
            f"{what} {redact_url(text)!r} is not an http:// or https:// URL with a host; "
            "example: http://127.0.0.1:8000/generate"
        )
    auth = None
    if parts.username is not None or parts.password is not None:
        user = unquote(parts.username or "")
        password = unquote(parts.password or "")
        _register_login(user, password)
        auth = (user, password)
        netloc = parts.netloc.rsplit("@", 1)[1]
        text = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    why = refusal(text)
    if why:
        raise ModelSpecError(f"{what} {shown(text)!r} is not accepted: {why}; "
                             "example: http://127.0.0.1:8000/generate")
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_QUERY.search(name):
            register_secret(value)
    return text, auth


def provider_endpoint(scheme: str, key_vars, base_var: str, default_base: str, *,
                      what: str = "API key") -> tuple[str, str, tuple[str, str] | None]:
    """A provider's key, base URL and the base URL's Basic auth, from the environment; read in the main thread.

    The first of ``key_vars`` set holds the key (registered as a secret at once); ``base_var`` overrides
    ``default_base``. Raises :class:`ModelSpecError` naming the variables, never a value, when none is set or
    the ones set are empty (a fork's CI without the secret), or for a malformed base URL.
    """
    key = ""
    empty = []
    for name in key_vars:
        value = (os.environ.get(name) or "").strip()
        register_secret(value or None)
        if value and not key:
            try:  # it goes in a header: a key HTTP cannot carry would fail every sample later
                value.encode("latin-1")
            except UnicodeEncodeError:
                raise ModelSpecError(f"{scheme}: environment variable {name} has a character outside "
                                     "latin-1; accepted: the key as the provider gave it (ASCII)") from None
            key = value
        elif name in os.environ and not value:
            empty.append(name)
    if not key and empty:
        names = " and ".join(empty)
        raise ModelSpecError(f"{scheme}: environment variable {names} {'is' if len(empty) == 1 else 'are'} "
                             f"set but empty (a CI job without access to the secret?); export your {what} "
                             f"(any non-empty value for a local server that needs none)")
    if not key:
        names = " (or ".join(key_vars) + ")" * (len(key_vars) - 1)
        raise ModelSpecError(f"{scheme}: environment variable {names} is not set; export your {what} "
                             f"(any non-empty value for a local server that needs none)")
    base = (os.environ.get(base_var) or "").strip() or default_base
    base, auth = check_url(base, what=base_var)
    return key, base, auth
