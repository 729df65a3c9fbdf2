"""What the environment decides for HTTP, read once: :class:`EnvironmentSettings`.

Proxies (``*_proxy``, ``no_proxy``), the CA bundle (``REQUESTS_CA_BUNDLE``,
``CURL_CA_BUNDLE``) and ``~/.netrc`` are captured in the main thread when a
session is built; generation threads never read ``os.environ`` (see the
class for why). Passwords found in proxy URLs and netrc entries are
registered as secrets.

Why not requests' own ``trust_env``: it reads all of these from
``os.environ`` on every request. The rules stay requests' and urllib's:
``no_proxy`` matching uses :func:`requests.utils.address_in_network` and
:func:`urllib.request.proxy_bypass_environment`, the proxies come from
:func:`urllib.request.getproxies` and the netrc from :mod:`netrc`.
"""

from __future__ import annotations

import netrc as _netrc
import os
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlsplit

from ...redaction import register_secret

__all__ = ["EnvironmentSettings"]


def _register_url_password(url: str | None) -> None:
    if not url or "@" not in url:
        return
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        register_secret(parts.password)
        if parts.username and parts.password:
            register_secret(f"{parts.username}:{parts.password}", public_prefix=len(parts.username) + 1)
    except ValueError:
        pass


def _ipv4_in(host: str, entry: str) -> bool:
    from requests.utils import address_in_network, is_ipv4_address, is_valid_cidr

    if not is_ipv4_address(host):
        return False
    if is_valid_cidr(entry):
        return address_in_network(host, entry)
    return host == entry


@dataclass(frozen=True)
class EnvironmentSettings:
    """What the environment decides for HTTP, read once (never per request).

    requests with ``trust_env=True`` reads proxies, ``no_proxy``, the CA
    bundle and ``~/.netrc`` from ``os.environ`` on every request, in the
    generation threads, while pytest rewrites ``PYTEST_CURRENT_TEST`` in
    the main thread: iterating a mapping that changes size raises. The
    session is built with ``trust_env=False`` and these settings instead.

    Attributes
    ----------
    proxies : Mapping
        ``urllib.request.getproxies()`` at build time (``http``, ``https``,
        ``all``; ``no`` is the ``no_proxy`` list).
    ca_bundle : str or None
        ``REQUESTS_CA_BUNDLE`` or else ``CURL_CA_BUNDLE``.
    netrc : netrc.netrc or None
        The parsed ``NETRC`` / ``~/.netrc`` file; its passwords are
        registered as secrets.
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
        for login, account, password in parsed.hosts.values():
            register_secret(password)
            if login and password:
                register_secret(f"{login}:{password}", public_prefix=len(login) + 1)
        return parsed
    return None

