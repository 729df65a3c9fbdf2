"""Work handed to another thread carries the calling thread's context (:mod:`contextvars`)."""

from __future__ import annotations

import contextvars
import functools

__all__ = ["carried"]


def carried(fn):
    """``fn`` bound to a copy of the calling thread's context, to run in another thread.

    A run's settings that are not arguments (the image reader of :mod:`pytest_violin.imaging`) live in
    context variables: a new thread starts without them, so a thread that works for a run runs what the run
    hands it through this. One copy per call: a context can be entered by one thread at a time.
    """
    return functools.partial(contextvars.copy_context().run, fn)
