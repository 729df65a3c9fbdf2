"""The model adapter protocol.

An adapter turns a :class:`~pytest_violin.models.request.GenerationRequest`
into an image: anything :func:`pytest_violin.as_rgb8` accepts.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .request import GenerationRequest

__all__ = ["ModelAdapter"]


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
