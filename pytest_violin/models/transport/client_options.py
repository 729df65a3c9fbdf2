"""What :class:`~pytest_violin.models.AdapterOptions` ask of an HTTP client, checked: :func:`client_settings`.

:func:`.client.client_from_options` builds the client from these keyword
arguments; the checks live here so that the client module holds the client.
"""

from __future__ import annotations

from typing import Mapping

from ...errors import ModelSpecError
from .body import DEFAULT_MAX_ANSWER_BYTES
from .credentials import parse_headers
from .limits import parse_rate
from .retries import RetryPolicy

__all__ = ["client_settings"]


def client_settings(options, *, auth: tuple[str, str] | None = None,
                    headers: Mapping[str, str] | None = None, origins=(), domains=()) -> dict:
    """The keyword arguments of :class:`.client.HttpClient` for ``options`` (see :func:`.client.client_from_options`).

    Raises
    ------
    ModelSpecError
        For malformed headers, an unset ``${ENV}`` variable or bad numbers.
    """
    merged = dict(headers or {})
    merged.update(parse_headers(getattr(options, "headers", ()) or ()))
    if auth is not None and any(name.lower() == "authorization" for name in merged):
        auth = None  # a configured Authorization header wins over URL credentials
    extra = getattr(options, "extra", None) or {}
    knobs = {}
    for key in ("backoff_base", "backoff_cap", "retry_after_cap"):
        if key in extra:
            try:
                knobs[key] = float(extra[key])
            except (TypeError, ValueError):
                raise ModelSpecError(f"option {key!r} must be a number of seconds, got {extra[key]!r}") from None
            if knobs[key] < 0:
                raise ModelSpecError(f"option {key!r} must be >= 0, got {extra[key]!r}")
    retries = getattr(options, "retries", 3)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ModelSpecError(f"retries must be an integer >= 0, got {retries!r}")
    concurrency = getattr(options, "concurrency", 4)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ModelSpecError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    rate = extra.get("rate")
    return dict(
        rate=parse_rate(rate) if rate is not None else None,
        concurrency=concurrency,
        headers=merged,
        timeout=getattr(options, "timeout", 120.0),
        policy=RetryPolicy(retries=retries, **knobs),
        auth=auth,
        max_bytes=getattr(options, "max_answer_bytes", DEFAULT_MAX_ANSWER_BYTES),
        cancel=getattr(options, "cancel", None),
        origins=origins,
        domains=domains,
    )
