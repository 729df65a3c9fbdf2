"""The batch protocol: what an adapter offers to have its requests run by a provider's batch API.

An adapter offers batches with a ``batch_api()`` method that returns a
:class:`BatchApi`; ``openai:`` (the OpenAI Batch API) and ``gemini:`` (the
Gemini API's Batch Mode) do (see docs/models.md, "Batch"). A third-party
adapter implements the same few methods. The run's batch driver
(:mod:`pytest_violin.execution.batch`) does the rest: it records every batch
before it is submitted, packs the requests into as few batches as
:attr:`BatchApi.limits` allow, polls, collects, and turns each answer into an
image or the error the synchronous path would have raised.

Every method raises :class:`~pytest_violin.errors.GenerationError` (with a
one-line, redacted reason) when the provider cannot be reached or refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol, runtime_checkable

from ..request import GenerationRequest

__all__ = [
    "CANCELLED",
    "COMPLETED",
    "EXPIRED",
    "FAILED",
    "PENDING",
    "TERMINAL",
    "BatchApi",
    "BatchLimits",
    "BatchStatus",
    "batch_api_of",
]

#: The batch is queued or running (OpenAI ``validating``, ``in_progress``, ``finalizing``,
#: ``cancelling``; Gemini ``*_PENDING``, ``*_RUNNING``).
PENDING = "pending"
#: Every request ran (each one's answer may still be an error).
COMPLETED = "completed"
#: The batch as a whole was refused (OpenAI ``failed``: its input did not validate).
FAILED = "failed"
#: The completion window ended first: the completed answers are there, the rest never ran.
EXPIRED = "expired"
#: Cancelled (here or elsewhere): the completed answers are there, the rest never ran.
CANCELLED = "cancelled"
#: The states after which a batch changes no more.
TERMINAL = frozenset({COMPLETED, FAILED, EXPIRED, CANCELLED})


@dataclass(frozen=True)
class BatchLimits:
    """The most one batch may hold.

    Attributes
    ----------
    max_requests : int
        Requests per batch.
    max_bytes : int
        Bytes of the encoded requests of one batch (the input file, or the
        inline request body).
    """

    max_requests: int
    max_bytes: int


@dataclass(frozen=True)
class BatchStatus:
    """One poll of a batch.

    Attributes
    ----------
    id : str
        The provider's batch id (``batch_...``, ``batches/...``).
    state : str
        :data:`PENDING`, :data:`COMPLETED`, :data:`FAILED`, :data:`EXPIRED` or :data:`CANCELLED`.
    provider_state : str
        The provider's own word (``in_progress``, ``BATCH_STATE_RUNNING``).
    total, completed, failed : int
        The provider's request counts: ``completed`` is what it billed.
    reason : str or None
        Why a batch failed, expired or was cancelled, on one line.
    tag : str or None
        The tag the batch was submitted with (see :meth:`BatchApi.submit`).
    created : float or None
        Unix time the provider created it.
    files : tuple of str
        Where the answers are (the provider's file ids).
    """

    id: str
    state: str
    provider_state: str
    total: int = 0
    completed: int = 0
    failed: int = 0
    reason: str | None = None
    tag: str | None = None
    created: float | None = None
    #: where the answers are (the provider's file ids; empty for answers held inline)
    files: tuple = ()

    @property
    def done(self) -> bool:
        return self.state in TERMINAL

    def describe(self) -> str:
        """``batch_abc: in_progress, 120/200 completed, 2 failed``."""
        text = f"{self.id}: {self.provider_state}, {self.completed}/{self.total} completed"
        if self.failed:
            text += f", {self.failed} failed"
        if self.reason:
            text += f" ({self.reason})"
        return text


@runtime_checkable
class BatchApi(Protocol):
    """What an adapter's ``batch_api()`` returns.

    Attributes
    ----------
    name : str
        The service, for messages (``OpenAI Batch API``).
    discount : float
        The share of the synchronous price the provider takes off batch
        requests (0.5: half price); ``--violin-price`` states the synchronous
        price and the cost line the batch price.
    limits : BatchLimits
    """

    name: str
    discount: float
    limits: BatchLimits

    def encode(self, custom_id: str, request: GenerationRequest) -> tuple[str, bytes]:
        """``(group, line)``: one request as the batch input holds it, and the group of
        requests that may share a batch (an endpoint). ``custom_id`` comes back with its answer."""

    def submit(self, group: str, lines: list, *, tag: str) -> str:
        """Submit ``lines`` of one ``group`` as one batch tagged ``tag``; return its id.

        Nothing is created when this raises before the batch exists (a failed
        upload); :meth:`find` tells whether a batch with ``tag`` was created
        when its answer was lost.
        """

    def find(self, tag: str) -> str | None:
        """The id of the batch submitted with ``tag``, or None when there is none."""

    def status(self, batch_id: str) -> BatchStatus:
        """Poll one batch."""

    def download(self, status: BatchStatus, sink: BinaryIO, *, max_bytes: int) -> None:
        """Write the answers of a finished batch to ``sink``, one JSON object a line
        (every answer the provider has, errors included), at most ``max_bytes``.

        ``sink`` is binary and file-like (``write``, ``flush``, ``tell``, and ``seek``/``truncate`` to a
        position ``tell`` gave at a line end): it masks every registered secret line by line on its way
        to disk."""

    def answer(self, record: dict) -> tuple[str, Any]:
        """``(custom_id, image or GenerationError)`` of one downloaded line, with the
        synchronous path's rules (a refusal, a model failure, a setup error)."""

    def cancel(self, batch_id: str) -> BatchStatus:
        """Ask the provider to cancel a batch."""

    def list(self, limit: int = 100) -> list:
        """The newest batches of this account (:class:`BatchStatus`), at most ``limit``."""


def batch_api_of(adapter) -> BatchApi | None:
    """``adapter.batch_api()`` (through wrappers such as the call counter), or None."""
    inner = getattr(adapter, "wrapped", adapter)
    offer = getattr(inner, "batch_api", None)
    return offer() if callable(offer) else None
