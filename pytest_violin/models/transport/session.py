"""The requests session every adapter's client sends with: :func:`make_session`.

* :class:`_Session` never reads the environment (``trust_env`` off; proxies,
  CA bundle and netrc from :class:`~.environment.EnvironmentSettings`
  captured when it was built) and keeps credentials home: every request it
  sends, redirect hops included, passes :func:`.origins.guard` with the
  prepared URL, and a request to an origin the user did not name carries
  none of our credentials (:mod:`.origins` holds the one rule).
* :func:`make_session`: the pool sized by the concurrency, no urllib3
  retries (the client retries, :mod:`.retries`), the watchdog's adapter
  (:mod:`.deadline`), and log redaction for the HTTP stack.

Written on requests' own extension points (``send``, ``rebuild_auth``,
``rebuild_proxies``, ``get_redirect_target``) rather than response hooks:
hooks run after an answer arrives, too late to keep a header from a host.
"""

from __future__ import annotations

from typing import Mapping

import requests

from ... import __version__
from ...redaction import install_log_redaction
from .body import ACCEPT_ENCODING
from .credentials import PUBLIC_HEADERS
from .deadline import WatchedAdapter
from .environment import EnvironmentSettings
from .origins import Origins, UrlRefused, guard, origin_or_none, resolve

__all__ = ["USER_AGENT", "make_session"]

USER_AGENT = f"pytest-violin/{__version__}"


class _Session(requests.Session):
    """A session that never reads the environment and keeps credentials home.

    * Proxies, CA bundle and netrc come from :class:`EnvironmentSettings`
      captured when it was built (``trust_env`` is off).
    * On a redirect that leaves the origin (scheme, host, port), every
      credential header (``Authorization``, ``Proxy-Authorization``,
      ``Cookie`` and each configured header but ``Accept``,
      ``Content-Type`` and the like) and Basic auth are dropped.
    * Every request it sends, redirect hops included, passes
      :func:`.origins.guard` with the prepared URL (see :meth:`send`).
    """

    def __init__(self, env: EnvironmentSettings):
        super().__init__()
        self.trust_env = False
        self.env = env
        self.origins = Origins()  # the HttpClient names (or learns) them
        self.credential_headers: set[str] = {"Authorization", "Proxy-Authorization", "Cookie"}
        if env.ca_bundle:
            self.verify = env.ca_bundle

    def request(self, method, url, *args, **kwargs):  # noqa: D102 - requests API
        if kwargs.get("proxies") is None:
            kwargs["proxies"] = self.env.proxies_for(url)
        if self.auth is None and kwargs.get("auth") is None and "Authorization" not in self.headers:
            netrc_auth = self.env.netrc_auth(url)
            if netrc_auth is not None:
                kwargs["auth"] = netrc_auth
        return super().request(method, url, *args, **kwargs)

    def send(self, request, **kwargs):  # noqa: D102 - requests API
        # the one place every request passes, redirect hops included, with the
        # URL requests connects with: refused URLs never leave, and an origin
        # not named gets no credential of ours
        origin = guard(request.url, self.origins, body=None)
        if self.origins and origin not in self.origins:
            self._drop_credentials(request)
            guard(request.url, self.origins, body=request.body)
        return super().send(request, **kwargs)

    def get_redirect_target(self, resp):  # noqa: D102 - requests API
        target = super().get_redirect_target(resp)
        if target is not None:
            try:  # as the server wrote it: requests decodes %31 in a host and drops tabs later
                resolve(target, resp.url, what="redirect to")
            except UrlRefused:
                resp.close()
                raise
            # requests reads a redirect's whole body before following it, outside the
            # answer's byte cap and decoding limits: nothing of it is needed. Closed
            # unread, its connection is dropped, not pooled with the body still in it.
            resp.close()
            resp._content, resp._content_consumed = b"", True
        return target

    def _drop_credentials(self, request) -> None:
        from requests.auth import _basic_auth_str
        from ...redaction import contains_secret

        netrc_auth = self.env.netrc_auth(request.url)
        netrc_header = _basic_auth_str(*netrc_auth) if netrc_auth else None
        drop = {name.lower() for name in self.credential_headers}
        for name in list(request.headers):
            value = request.headers[name]
            if value == netrc_header and name.lower() == "authorization":
                continue  # the user's own ~/.netrc entry for this very host
            if name.lower() in drop or contains_secret(str(value)):
                del request.headers[name]

    def rebuild_auth(self, prepared_request, response):  # noqa: D102 - requests API
        start = origin_or_none(response.request.url)
        if start is None or start != origin_or_none(prepared_request.url):
            drop = {name.lower() for name in self.credential_headers}
            for name in [n for n in prepared_request.headers if n.lower() in drop]:
                del prepared_request.headers[name]
            new_auth = self.env.netrc_auth(prepared_request.url)
            if new_auth is not None:
                prepared_request.prepare_auth(new_auth)

    def rebuild_proxies(self, prepared_request, proxies):  # noqa: D102 - requests API
        prepared_request.headers.pop("Proxy-Authorization", None)
        return self.env.proxies_for(prepared_request.url)


def make_session(concurrency: int = 4, headers: Mapping[str, str] | None = None, *,
                 env: EnvironmentSettings | None = None) -> requests.Session:
    """A :class:`requests.Session` whose pool holds ``concurrency`` connections.

    Parameters
    ----------
    concurrency : int
        Requests the runner keeps in flight; the pool keeps that many
        connections (plus slack for image downloads) alive per host.
    headers : Mapping, optional
        Headers sent with every request.
    env : EnvironmentSettings, optional
        Proxies, CA bundle and netrc (default: captured now, from
        ``os.environ``; call this in the main thread).

    Returns
    -------
    requests.Session
        With urllib3 retries disabled (:class:`HttpClient` retries) and
        ``trust_env`` off.
    """
    size = max(int(concurrency), 1) + 2
    session = _Session(env if env is not None else EnvironmentSettings.capture())
    adapter = WatchedAdapter(pool_connections=4, pool_maxsize=size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    session.headers["Accept-Encoding"] = ACCEPT_ENCODING
    if headers:
        session.headers.update(headers)
        session.credential_headers |= {n for n in headers if n.lower() not in PUBLIC_HEADERS}
    # urllib3 logs every request line at DEBUG ("POST /gen?key=... HTTP/1.1"):
    # redact records of the HTTP stack before any handler sees them
    install_log_redaction()
    return session
