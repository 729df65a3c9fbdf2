"""The ``oracle`` model: renders each sample's ground truth.

Every sample passes with it; it is the default that makes the README's main command work on any machine, and
the harness-overhead benchmark.
"""

from __future__ import annotations

from ..errors import GenerationError, ModelSpecError

__all__ = ["OracleAdapter", "create"]


class OracleAdapter:
    """Return ``request.sample.expected()`` (not cached: rendering is cheaper than a cache lookup)."""

    identity = "oracle"
    cacheable = False

    def generate(self, request):
        """Render the expected image of the request's sample."""
        sample = getattr(request, "sample", None)
        if sample is None:
            raise GenerationError(
                f"the oracle needs the sample itself; request for {request.sample_id!r} has none"
            )
        return sample.expected()

    def close(self) -> None:
        """Nothing to release."""


def create(target: str, options=None) -> OracleAdapter:
    """Factory for the ``oracle`` scheme (takes no target)."""
    if target:
        raise ModelSpecError(f"model spec 'oracle:{target}': the oracle takes no target; use 'oracle'")
    return OracleAdapter()
