"""The model adapter protocol.

An adapter turns a :class:`~pytest_violin.models.request.GenerationRequest`
into an image: anything :func:`pytest_violin.as_rgb8` accepts.
:class:`NetworkAdapter` is what the adapters that call a service through an
:class:`~pytest_violin.models.transport.client.HttpClient` share.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .request import GenerationRequest

__all__ = ["ModelAdapter", "NetworkAdapter"]


@runtime_checkable
class ModelAdapter(Protocol):
    """What every model adapter implements.

    Attributes
    ----------
    identity : str
        A stable, secret-free description of the model (scheme, endpoint,
        model name). Used in cache keys, baselines and reports.
    """

    identity: str

    def generate(self, request: GenerationRequest) -> Any:
        """Return an image for ``request`` (anything ``as_rgb8`` accepts).

        Raise :class:`~pytest_violin.errors.GenerationError` with a one-line
        reason when the model fails.
        """

    def close(self) -> None:
        """Release sessions, pools and files. Called once at session end."""


class NetworkAdapter:
    """Base of the adapters that call a service through their ``client`` (an ``HttpClient``).

    A subclass sets ``identity`` and ``client`` and says with ``bills``
    whether its calls may cost money (a provider's API: the default
    ``--violin-max-calls`` applies, see ``execution.budget.adapter_bills``;
    a self-hosted server sets it False).
    """

    identity: str
    client: Any
    cacheable = True
    #: calls a network service: --violin-max-calls defaults to 2000 (see docs/plugin.md)
    network = True
    #: a paid API unless a subclass says otherwise
    bills = True

    def close(self) -> None:
        """Close the session."""
        self.client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity!r})"
