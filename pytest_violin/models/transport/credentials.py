"""Credentials in the configuration: headers, ``${ENV}`` expansion, URL passwords.

* :func:`expand_env`: ``${NAME}`` references in configured values; an unset
  variable, or one set to nothing (a fork's CI without the secret), is a
  usage error that names it, never a value.
* :func:`parse_headers`: ``--violin-header`` values (``"Name: value"`` or
  pairs) with ``${ENV}`` expansion; every credential-like value is
  registered as a secret.
* :func:`check_url`: validates an endpoint URL (by the one rule of
  :mod:`~pytest_violin.models.transport.origins`) and takes
  ``user:password@`` out of it for HTTP Basic auth; passwords and
  credential-like query values are registered as secrets.
* :func:`provider_endpoint`: a provider's key and base URL from the
  environment; a key variable set to nothing is a usage error naming it.

Everything registered here is masked by :func:`pytest_violin.redaction.redact`.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from ...errors import ModelSpecError
from ...redaction import redact, redact_url, register_secret
from .origins import refusal, shown

__all__ = [
    "provider_endpoint","PUBLIC_HEADERS", "check_url", "expand_env", "parse_headers"]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

#: Header names (lower case) whose literal values are not credentials.
PUBLIC_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "content-type", "content-encoding", "user-agent"}
)
_SECRET_QUERY = re.compile(r"key|token|secret|password|passwd|sig|auth|credential", re.IGNORECASE)


def expand_env(value: str, *, what: str = "value", environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${NAME}`` references in ``value`` by environment variables.

    Parameters
    ----------
    value : str
        Text such as ``"Bearer ${HF_TOKEN}"``.
    what : str, optional
        What the value is, for the error message.
    environ : Mapping, optional
        The environment (default :data:`os.environ`).

    Returns
    -------
    str
        The expanded text. Expanded values are registered as secrets.

    Raises
    ------
    ModelSpecError
        When a referenced variable is not set, or is set to nothing but
        whitespace (``Bearer ${TOKEN}`` would go out as ``Bearer ``); the
        message names the variable, never a value.
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
    """The usage error for a header without ``:``, never showing its value.

    ``'Authorization Bearer s3cr3t'`` is a credential typed with a space
    instead of a colon: only the first word (when it is a valid header name)
    is shown, the rest is masked whatever it is.
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
    """Turn configured headers into a dict, expanding ``${ENV}`` references.

    Parameters
    ----------
    headers : iterable of str or (str, str)
        ``"Name: value"`` strings or ``(name, value)`` pairs.
    environ : Mapping, optional
        The environment for ``${NAME}`` references.

    Returns
    -------
    dict
        Header name -> expanded value. Every value (except those of
        ``Accept``, ``Content-Type``, ``User-Agent`` and similar) is
        registered as a secret, and so is the credential part of
        ``Bearer TOKEN`` style values.

    Raises
    ------
    ModelSpecError
        For a malformed header, an unset or empty environment variable, or a
        value HTTP cannot carry (a line break, a character outside latin-1).
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
        register_secret(unquote(password))
        register_secret(password)
        register_secret(f"{unquote(user)}:{unquote(password)}", public_prefix=len(unquote(user)) + 1)


def check_url(url: str, *, what: str = "URL") -> tuple[str, tuple[str, str] | None]:
    """Validate an endpoint URL and take the credentials out of it.

    Parameters
    ----------
    url : str
        ``http(s)://[user:password@]host[:port]/path[?query]``.
    what : str
        What the URL is for, for the error message.

    Returns
    -------
    (str, tuple or None)
        The URL without ``user:password@`` and the ``(user, password)``
        pair for HTTP Basic auth (both registered as secrets), or ``None``.
        Query values whose names look like credentials (``key``,
        ``token``, ``sig`` ...) are registered as secrets too.

    Raises
    ------
    ModelSpecError
        For a URL that is not http(s) or has no host, or one the rule of
        :mod:`~pytest_violin.models.transport.origins` refuses (a backslash,
        whitespace or a control character, a percent-encoded host, a host
        the URL parsers read differently).
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
        register_secret(password)
        register_secret(f"{user}:{password}", public_prefix=len(user) + 1)
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
    """A provider's key and base URL from the environment, by the one naming rule.

    ``<PROVIDER>_API_KEY`` (or the provider's own names, tried in order) and
    ``<PROVIDER>_BASE_URL`` (default: the provider's public host). Read when
    the adapter is built, in the main thread; the key is registered as a
    secret before anything else happens.

    Parameters
    ----------
    scheme : str
        The spec scheme, for messages (``"bfl"``).
    key_vars : sequence of str
        Variables holding the key, first set wins.
    base_var : str
        The variable overriding the base URL.
    default_base : str
        The provider's public base URL.
    what : str
        What the key is called, for the message.

    Returns
    -------
    (str, str, tuple or None)
        The key, the base URL without credentials, and the ``(user,
        password)`` of the base URL for Basic auth (or ``None``).

    Raises
    ------
    ModelSpecError
        When no key variable is set (naming the variables, never a value),
        when the ones set are empty (naming them: a fork's CI without the
        secret), or for a malformed base URL.
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
