"""How many model calls a run may make: the cap every runner of the suite applies.

The plugin's ``--violin-max-calls`` / ``--violin-max-cost`` / ``--violin-price``
and :func:`pytest_violin.evaluation.evaluate`'s ``max_calls`` / ``max_cost`` /
``price`` give the same cap (:func:`call_cap`), held at run time by
:class:`~.usage.CallCounter`. An adapter that bills gets a default cap
(:data:`DEFAULT_BILLED_MAX_CALLS`, :func:`adapter_bills`); a self-hosted server
(``comfyui``, ``a1111``, ``http`` to a loopback address) and local adapters have
none.
"""

from __future__ import annotations

import math

from ..report.text import format_usd

__all__ = ["COST_TOLERANCE", "DEFAULT_BILLED_MAX_CALLS", "adapter_bills", "call_cap"]

#: The calls a run with an adapter that bills may make unless told otherwise.
DEFAULT_BILLED_MAX_CALLS = 2000

#: Relative slack of the cost comparison (binary floats: 3 x 0.1 > 0.3).
COST_TOLERANCE = 1e-9


def adapter_bills(adapter, *, price: float | None = None) -> bool:
    """Whether calls to ``adapter`` may cost money, so the default cap applies.

    An adapter says so with a ``bills`` attribute (True for the providers'
    APIs, False for self-hosted servers); without one, an adapter that calls
    a network service (``network = True``) is taken to bill. A run with a
    price bills whatever the adapter says.
    """
    if price is not None:
        return True
    declared = getattr(adapter, "bills", None)
    if declared is not None:
        return bool(declared)
    return bool(getattr(adapter, "network", False))


def call_cap(max_calls: int | None, *, given: bool, bills: bool, price: float | None = None,
             max_cost: float | None = None, names=("--violin-max-calls", "--violin-max-cost")) -> tuple:
    """The calls a run may make, and the words that say which setting decided.

    Parameters
    ----------
    max_calls : int or None
        The cap asked for; None with ``given`` means "no cap".
    given : bool
        Whether ``max_calls`` was given at all (else the default applies where the adapter bills).
    bills : bool
        :func:`adapter_bills` of the run's adapter.
    price, max_cost : float, optional
        USD per image and the most the run may cost: the cap is lowered to the calls
        ``max_cost`` affords at ``price``.
    names : tuple of (str, str)
        How the caller names the call cap and the cost cap, for messages.

    Returns
    -------
    tuple of (int or None, str)
        The cap (None: none) and its words, e.g. ``"--violin-max-calls=20"``.
    """
    calls_name, cost_name = names
    limit, text = max_calls, (f"{calls_name}={max_calls}" if max_calls is not None else "")
    if not given and (bills or price is not None):
        limit = DEFAULT_BILLED_MAX_CALLS
        text = f"the default {calls_name}={limit} of an adapter that bills"
    if max_cost is not None and price:
        affordable = math.floor(max_cost / price * (1 + COST_TOLERANCE))
        if limit is None or affordable < limit:
            limit = affordable
            text = f"{cost_name}={max_cost:g} ({affordable} calls at {format_usd(price)} per image)"
    return limit, text
