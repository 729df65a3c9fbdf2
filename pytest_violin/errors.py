"""One exception tree for pytest-violin.

Every error the package raises on purpose derives from :class:`ViolinError`. Each subclass also inherits the
builtin exception it means, so callers can catch ``ValueError`` (bad input) or ``RuntimeError`` (a failed
generation) without importing anything from this package.
"""

from __future__ import annotations

__all__ = ["ViolinError", "InvalidArgumentError", "InternalError", "InvalidImageError", "ImageSizeMismatchError",
           "InvalidColorError", "SuiteError", "ManifestError", "SampleIdError", "ModelSpecError", "ThresholdError",
           "GenerationError", "GenerationCancelled", "GenerationRefused", "GenerationUnjudged",
           "GenerationCrashed", "ServerCrashed", "SetupError", "BatchPending", "BaselineError", "ReportsNotWritten",
           "ViolinFailure", "ViolinWarning"]


class ViolinError(Exception):
    """Base class of every error raised by pytest-violin."""


class InvalidArgumentError(ViolinError, ValueError, TypeError):
    """A function of pytest-violin was called with an argument it does not accept.

    The message names the argument, the value given and what is accepted. Also a ``ValueError`` and a
    ``TypeError``, so callers that catch either keep working.
    """


class InternalError(ViolinError, RuntimeError):
    """pytest-violin reached a state it must not (a bug); please report it."""


class InvalidImageError(ViolinError, ValueError):
    """An object could not be turned into an RGB uint8 image."""


class ImageSizeMismatchError(ViolinError, ValueError):
    """Two images that must have the same size do not."""


class InvalidColorError(ViolinError, ValueError):
    """A color string or tuple is in no accepted notation."""


class SuiteError(ViolinError, ValueError):
    """A suite name, selection or definition is invalid."""


class ManifestError(SuiteError):
    """A manifest file is malformed: ``message`` says what is wrong, after the manifest's ``path``,
    1-based ``line`` and JSON ``field`` where given.
    """

    def __init__(self, message: str, *, path=None, line=None, field=None):
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        where = []
        if self.path is not None:
            where.append(self.path if line is None else f"{self.path}:{line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class SampleIdError(SuiteError):
    """A sample id is not a safe relative path of ``[a-z0-9._-]`` segments."""


class ModelSpecError(ViolinError, ValueError):
    """A ``--violin-model`` spec names no known adapter or is malformed."""


class ThresholdError(ViolinError, ValueError):
    """A threshold override is malformed or names an unknown metric."""


class GenerationError(ViolinError, RuntimeError):
    """A model failed to produce an image for a sample.

    ``reason`` is one line that says why (status, server message, ...); ``attempts`` how many attempts were
    made, ``status`` the HTTP status of the last one where there was one. ``transport`` is True when no answer
    came at all (connection refused, DNS, TLS, time-out): the runner counts these to stop calling a dead
    endpoint.
    """

    def __init__(self, reason: str, *, attempts: int | None = None, status: int | None = None,
                 transport: bool = False):
        self.reason = reason
        self.attempts = attempts
        self.status = status
        self.transport = bool(transport)
        super().__init__(_message(reason, attempts))

    @property
    def unjudged(self) -> bool:
        """Whether the sample cannot be judged from this error: no answer at all
        (:attr:`transport`), a :class:`SetupError` or a time-out (:class:`GenerationUnjudged`). Such a sample
        ends as an *error*, never as a
        score; other generation errors are the model's failure."""
        return self.transport

    def remade(self, *, text=None, **fields) -> GenerationError:
        """A copy of this error: the same class (a refusal stays a refusal) and fields, ``fields`` set, every
        text field and argument passed through ``text`` (a redaction), made without calling the class again
        (an adapter's subclass may take other arguments than ``GenerationError``'s).

        The message follows ``reason`` and ``attempts`` where it is the one ``GenerationError`` makes of them;
        a subclass's own message is kept (through ``text``).
        """
        keep = text or (lambda value: value)
        err = type(self).__new__(type(self))
        err.__dict__.update({k: keep(v) if isinstance(v, str) else v for k, v in vars(self).items()})
        err.__dict__.update(fields)
        if self.args == (_message(getattr(self, "reason", None), getattr(self, "attempts", None)),):
            err.args = (_message(err.reason, err.attempts),)
        else:
            err.args = tuple(keep(a) if isinstance(a, str) else a for a in self.args)
        return err


def _message(reason, attempts) -> str:
    if attempts is None:
        return reason
    return f"{reason} (after {attempts} attempt{'s' if attempts != 1 else ''})"


class GenerationCancelled(GenerationError):
    """A generation stopped because the run was interrupted (Ctrl-C, ``-x``).

    Raised by adapters and the HTTP client when the run's cancel event
    (:attr:`pytest_violin.models.AdapterOptions.cancel`) is set: no new request or retry starts after that.
    Never the model's failure: the sample ends as an *error* (:attr:`GenerationError.unjudged`), never a
    score.
    """

    @property
    def unjudged(self) -> bool:  # noqa: D102 - documented on the base class
        return True


class GenerationRefused(GenerationError):
    """The provider declined to make the image: moderation, a safety filter, an answer with text but no image.

    A refusal is its own outcome (``"refused"``): it fails obedience, is counted apart in the summary, reports
    and baseline, and is never retried.
    """


class GenerationUnjudged(GenerationError):
    """The sample could not be judged, through no fault of the model's obedience:
    a time-out (the sample's budget spent after its job started running, or the overall wait limit spent in
    the server's queue) or a job the server lost (deleted from its queue, server restarted).

    Ends as outcome ``"error"`` (pytest's ``ERROR at setup``): never scored, never the model's failure
    (:attr:`GenerationError.unjudged`).
    """

    @property
    def unjudged(self) -> bool:  # noqa: D102 - documented on the base class
        return True


class GenerationCrashed(GenerationError):
    """The code that makes the image raised an exception: a ``python:`` model's exception other than a
    :class:`GenerationError` (the message ends with the traceback's last frames).

    The model's failure for that sample (no image), as before; but when the first samples of a run all end in
    the same crash before any image (glue code raising ``KeyError: 'steps'`` on every call), the runner stops
    the run as it does for a :class:`SetupError` (see :data:`pytest_violin.execution.runner.SETUP_AFTER`).
    """


class ServerCrashed(GenerationCrashed, GenerationUnjudged):
    """An exception inside the server's pipeline: a ComfyUI node's
    ``execution_error`` (CUDA out of memory, a model file missing at run time, a wrong channel).

    Says nothing about the model's obedience: an *error* outcome, never a score; the same crash on the first
    samples stops the run.
    """


class SetupError(GenerationUnjudged):
    """The request itself is invalid, whatever the sample: a ComfyUI workflow
    that fails validation (a checkpoint that is not there, a wrong input type), an HTTP 400/401/403/404/422
    that is not a refusal of this sample's prompt.

    The message carries the server's reason in full. An *error* outcome, never a score; when the first samples
    of a run all end in the same setup error, the runner stops the run (see
    :data:`pytest_violin.execution.runner.SETUP_AFTER`).
    """


class BatchPending(GenerationUnjudged):
    """The sample's request is in a provider batch that has not finished yet
    (``--violin-batch``): the run's wait ended, or the run was interrupted.

    Never a score and never the model's failure: an *error* outcome whose
    message says which batch holds it and how to collect it (the same command
    again); nothing is submitted twice.
    """


class BaselineError(ViolinError, ValueError):
    """A baseline file is missing, malformed or incompatible."""


class ReportsNotWritten(ViolinError, OSError):
    """A report file could not be written; the message says which were, and which stale ones went."""


class ViolinFailure(ViolinError, AssertionError):
    """A sample failed its limits; ``str()`` is the table pytest shows (with prompt and sample id).

    An ``AssertionError``, so pytest reports it as a test failure; ``rows`` are the verdict rows.
    """

    def __init__(self, message: str, rows=()):
        super().__init__(message)
        self.rows = list(rows)


class ViolinWarning(UserWarning):
    """Something pytest-violin works around and wants the user to know (once):
    a server without a route it would use, a fact it had to assume."""
