"""One verdict: a sample's metrics against its limits, and the one way it is told.

:func:`evaluate` compares metric values with limits (one :class:`Row` per metric), :func:`format_table`
renders the rows, :func:`judge` makes a :class:`Verdict` of (sample, metric values, limits). The plugin's
items, the ``violin_check`` fixture and the ``assert_*`` functions all render that object, so a failure reads
the same wherever it happens. :class:`Outcome` is how a sample ended. The limits themselves live in
:mod:`pytest_violin.thresholds`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from .errors import InvalidArgumentError, ViolinFailure

__all__ = ["Outcome", "Row", "Verdict", "evaluate", "failure_message", "format_table", "judge"]


class Outcome(str, Enum):
    """How a sample ended; the value is what results.json and baselines hold."""

    PASSED = "passed"
    FAILED = "failed"
    REFUSED = "refused"  # the provider declined: fails and scores like FAILED
    ERROR = "error"  # the tool or the environment failed, not the model: never judged

    __str__ = str.__str__
    __format__ = str.__format__

    @classmethod
    def _missing_(cls, value):
        raise InvalidArgumentError(f"outcome {value!r} is not one of {', '.join(o.value for o in cls)}") from None

    @property
    def judged(self) -> bool:
        return self is not Outcome.ERROR

    @property
    def failing(self) -> bool:
        """Judged and not passed (a refusal fails)."""
        return self in (Outcome.FAILED, Outcome.REFUSED)


@dataclass(frozen=True)
class Row:
    """One line of a verdict: a metric, its value, its limit and the outcome."""

    metric: str
    value: float
    limit: float | None
    ok: bool


def evaluate(metrics: Mapping[str, float], limits: Mapping[str, float]) -> list[Row]:
    """One :class:`Row` per metric, then ``mean``.

    ``metrics``: a ``Metrics`` object (its ``mean`` is added) or a dict that may hold ``"mean"``; ``limits``:
    metric name (bare, or ``"task.metric"`` when ``metrics`` has a ``task``) -> limit. Metrics without a limit
    are reported, never failed.
    """
    values = dict(metrics)
    if "mean" not in values:
        mean = getattr(metrics, "mean", None)
        if mean is None:
            mean = sum(values.values()) / len(values) if values else 0.0
        values["mean"] = float(mean)
    task = getattr(metrics, "task", None)
    rows = []
    for name, value in values.items():
        limit = limits.get(name)
        if limit is None and task is not None:
            limit = limits.get(f"{task}.{name}")
        ok = True if limit is None else float(value) <= float(limit)
        rows.append(Row(name, float(value), None if limit is None else float(limit), ok))
    rows.sort(key=lambda r: r.metric == "mean")
    return rows


def format_table(rows: Iterable[Row]) -> str:
    """Render rows as a small aligned table ``metric | value | limit | result``."""
    header = ("metric", "value", "limit", "result")
    body = [
        (r.metric, f"{r.value:.4f}", "-" if r.limit is None else f"{r.limit:.4f}",
         "pass" if r.ok else "FAIL")
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(4)]

    def fmt(line):
        return " | ".join(
            cell.ljust(w) if i in (0, 3) else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths))
        ).rstrip()

    sep = "-+-".join("-" * w for w in widths)
    return "\n".join([fmt(header), sep, *(fmt(line) for line in body)])


@dataclass(frozen=True)
class Verdict:
    """A sample's metrics judged against its limits.

    ``asked`` is the ground truth in words (``""`` names the sample by its id); ``rows`` one per metric,
    ``mean`` last; ``notes`` lines after the table (resized image, repeats, ...); ``size`` the sample's
    ``(width, height)``; ``diagnosis`` what the answer did, one line per finding
    (:func:`pytest_violin.diagnose`).
    """

    sample_id: str
    prompt: str
    asked: str
    rows: tuple
    notes: tuple = ()
    size: tuple = (0, 0)
    diagnosis: tuple = ()

    @property
    def passed(self) -> bool:
        """True when every metric with a limit is within it."""
        return all(r.ok for r in self.rows)

    @property
    def failed(self) -> list[str]:
        """The metrics over their limit, in table order."""
        return [r.metric for r in self.rows if not r.ok]

    def message(self, *, show_prompt: bool = True) -> str:
        """The failure text (a passing verdict "obeys"); ending with the prompt and the sample id
        (a suite sample), or with the size only (``show_prompt=False``: an ad-hoc request)."""
        what = self.asked or f"violin sample {self.sample_id}"
        head = f"image does not obey: {what}" if not self.passed else f"image obeys: {what}"
        lines = [head]
        if self.failed:
            lines.append(f"over the limit: {', '.join(self.failed)}")
        lines += ["", format_table(self.rows), ""]
        if self.diagnosis:
            lines += ["diagnosis:", *(f"  - {text}" for text in self.diagnosis), ""]
        lines += list(self.notes)
        if show_prompt:
            lines.append(f"prompt:    {self.prompt}")
            if self.sample_id:
                lines.append(f"sample id: {self.sample_id}")
        else:
            lines.append(f"size:      {self.size[0]}x{self.size[1]}")
        return "\n".join(lines).rstrip()

    def check(self, *, show_prompt: bool = True) -> "Verdict":
        """Raise :class:`~pytest_violin.errors.ViolinFailure` unless the verdict passed."""
        __tracebackhide__ = True
        if not self.passed:
            raise ViolinFailure(self.message(show_prompt=show_prompt), self.rows)
        return self


def judge(sample, metrics: Mapping[str, float], limits: Mapping[str, float], *,
          notes: Iterable[str] = (), asked: str | None = None) -> Verdict:
    """The :class:`Verdict` of ``sample``'s metric values against per-metric limits.

    ``sample`` gives ``id``, ``prompt``, ``width``, ``height``; ``limits`` are keyed by metric (``"mean"``
    included); ``asked`` is by default the sample in its task family's words
    (:func:`pytest_violin.tasks.describe`).
    """
    if asked is None:
        from .tasks import describe

        asked = describe(sample)
    rows: tuple[Row, ...] = tuple(evaluate(metrics, limits))
    return Verdict(sample_id=str(getattr(sample, "id", "") or ""), prompt=str(sample.prompt), asked=asked,
                   rows=rows, notes=tuple(n for n in notes if n),
                   size=(int(sample.width), int(sample.height)))


def failure_message(rows: Iterable[Row], *, sample_id: str, prompt: str, note: str = "") -> str:
    """The text of a failing sample, as :class:`Verdict` tells it (no words, the sample id instead)."""
    verdict = Verdict(sample_id=sample_id, prompt=prompt, asked="", rows=tuple(rows),
                      notes=(note,) if note else ())
    return verdict.message()
