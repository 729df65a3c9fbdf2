"""One verdict: a sample's metrics against its limits, and the one way it is told.

:func:`evaluate` compares metric values with limits, one :class:`Row` per
metric; :func:`format_table` renders the rows; :func:`judge` turns (sample,
metric values, limits) into a :class:`Verdict`;
the plugin's items, the ``violin_check`` fixture and the ``assert_*``
functions all render that object, so a failure reads the same wherever it
happens::

    image does not obey: one uniform color #D9B451 (yellow)
    over the limit: sd, mean

    metric |  value |  limit | result
    -------+--------+--------+-------
    ...

    prompt:    A pure #D9B451 image.
    sample id: color/v1/yellow/t03

The limits themselves (defaults, overrides, per task) live in
:mod:`pytest_violin.thresholds`, which imports this module (and re-exports
``Row``, ``evaluate``, ``format_table`` and ``failure_message`` under their
old names); this module imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from .errors import ViolinFailure

__all__ = ["Outcome", "Row", "Verdict", "evaluate", "failure_message", "format_table", "judge"]


class Outcome(str, Enum):
    """How a sample ended; the value is what results.json and baselines hold."""

    PASSED = "passed"
    FAILED = "failed"
    REFUSED = "refused"  # the provider declined: fails and scores like FAILED
    ERROR = "error"  # the tool or the environment failed, not the model: never judged

    __str__ = str.__str__
    __format__ = str.__format__

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
    """Compare metric values with their limits.

    Parameters
    ----------
    metrics : Mapping[str, float]
        Metric name -> value; a ``Metrics`` object (its ``mean`` is added)
        or a plain dict that may contain ``"mean"``.
    limits : Mapping[str, float]
        Metric name (bare, or ``"task.metric"`` when ``metrics`` has a
        ``task``) -> limit. Metrics without a limit are reported, never
        failed.

    Returns
    -------
    list of Row
        One row per metric, then ``mean``.
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
    # mean last
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

    Attributes
    ----------
    sample_id, prompt : str
        The sample (``sample_id`` may be ``""`` for an ad-hoc request).
    asked : str
        What the ground truth is, in words (``"one uniform color ..."``);
        ``""`` names the sample by its id instead.
    rows : tuple of Row
        One per metric, ``mean`` last.
    notes : tuple of str
        Lines shown after the table (resized image, repeats, ...).
    size : tuple of (int, int)
        ``(width, height)`` of the sample.
    diagnosis : tuple of str
        What the answer did, one line per finding (a ``diagnosis:`` block
        after the table; :func:`pytest_violin.diagnose`).
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
        """The failure text (also for a passing verdict, which says "obeys").

        Parameters
        ----------
        show_prompt : bool, optional
            End with the prompt and the sample id (a suite sample), or with
            the size only (an ad-hoc request built by an ``assert_*``).
        """
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
    """Judge a sample's metric values against per-metric limits.

    Parameters
    ----------
    sample : Sample
        Gives ``id``, ``prompt``, ``width``, ``height`` (and its words, see
        :func:`pytest_violin.tasks.describe`).
    metrics : Mapping[str, float]
        Metric name -> value (a ``Metrics`` object or a dict that may hold
        ``"mean"``).
    limits : Mapping[str, float]
        Metric name -> limit (``"mean"`` included); metrics without one are
        shown, never failed.
    notes : iterable of str, optional
        Lines for the message.
    asked : str, optional
        The ground truth in words; by default the sample described by its
        task family.

    Returns
    -------
    Verdict
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
