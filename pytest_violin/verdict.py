"""One verdict: a sample's metrics against its limits, and the one way it is told.

:func:`judge` turns (sample, metric values, limits) into a :class:`Verdict`;
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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .errors import ViolinFailure
from .thresholds import Row, evaluate, format_table

__all__ = ["Verdict", "judge"]


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
    """

    sample_id: str
    prompt: str
    asked: str
    rows: tuple
    notes: tuple = ()
    size: tuple = (0, 0)

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
