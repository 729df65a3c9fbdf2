"""The data a comparison works on: loaded runs, published rows, the comparison itself."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ComparedRow", "Comparison", "PairDelta", "PublishedRow", "Run"]


@dataclass
class Run:
    """One run to compare."""

    #: Shown in tables (``--label`` or the adapter recorded in the run).
    label: str
    #: Where it was loaded from (path), for messages.
    source: str
    #: ``"results"`` (results.json / report folder), ``"baseline"`` or ``"dir"``.
    kind: str
    #: ``suite``, ``fingerprint``, ``profile``, ``package_version``, ``adapter``, ... as recorded.
    metadata: dict = field(default_factory=dict)
    #: sample id -> record (a dict with at least ``task``, ``suite``, ``variation``, ``outcome``, ``metrics``;
    #: where the run holds them also ``failed`` (a tuple of metric names, left out when empty), ``prompt``,
    #: ``error`` and ``extra`` with thumbnails), in suite order. Records loaded from files hold only these
    #: keys (cut to bounded lengths): a run may hold 1,000,000 of them, so they are not in the repr either.
    records: dict = field(default_factory=dict, repr=False)
    #: The sample definition digests the run recorded (16 bytes each, in the order of ``records``), or None
    #: when some record has none; what the suite fingerprint is made of, so runs holding different samples of
    #: one suite tell apart from a changed suite.
    digests: bytes | None = field(default=None, repr=False)

    def definitions(self, ids) -> dict | None:
        """Sample id -> definition digest (32 hex digits) of ``ids``; None when one is unknown.

        From :attr:`digests`, else from the records themselves (a run built from full result records,
        ``extra.definition``).
        """
        if self.digests is not None and len(self.digests) == 16 * len(self.records):
            at = {sid: i for i, sid in enumerate(self.records)}
            return {sid: self.digests[16 * at[sid]:16 * at[sid] + 16].hex() for sid in ids}
        out = {}
        for sid in ids:
            rec = self.records.get(sid) or {}
            extra = rec.get("extra") if isinstance(rec.get("extra"), dict) else {}
            digest = rec.get("definition") or extra.get("definition")
            if not isinstance(digest, str) or not digest:
                return None
            out[sid] = digest
        return out


@dataclass(frozen=True)
class PublishedRow:
    """One model's row of a published table of the paper."""

    #: As printed in the paper.
    model: str
    #: ``"Table 1"`` ... with the line numbers of the source text.
    table: str
    #: ``color``, ``shape``, ``mask`` (or ``absolute`` for Table 7).
    task: str
    #: The column group (e.g. ``v1``, ``inpaint``), None for a task total.
    variation: str | None
    #: Metric name -> published value (named as the package's metrics) and ``mean``.
    metrics: dict
    #: ``violin-paper.txt:LINE``.
    source: str


@dataclass(frozen=True)
class ComparedRow:
    """A (task, variation) row for one run or published model.

    ``variation`` None is the task's row; ``pass_rate`` and ``n`` are None for published rows.
    """

    label: str
    task: str
    variation: str | None
    metrics: dict
    mean: float | None
    pass_rate: float | None
    n: int | None
    published: bool = False


@dataclass(frozen=True)
class PairDelta:
    """"B minus A" on a task's mean metric over the samples both hold, with its interval."""

    a: str
    b: str
    task: str
    n: int
    delta: float
    ci_low: float
    ci_high: float

    @property
    def significant(self) -> bool:
        """True when the 95% interval excludes 0."""
        return self.ci_low > 0 or self.ci_high < 0


@dataclass
class Comparison:
    """Everything a renderer needs."""

    runs: list
    #: :class:`ComparedRow` of every run and published model, in the paper's layout order.
    rows: list
    #: :class:`PairDelta` of every pair of runs and task.
    pairs: list = field(default_factory=list)
    #: Run label -> number of its samples left out because another run lacks them.
    dropped: dict = field(default_factory=dict)
    #: Samples compared (held by every run), unless ``all_samples``.
    shared: int = 0
    #: Suite fingerprint / profile / package version differences (shown above the table).
    mismatches: list = field(default_factory=list)
    all_samples: bool = False
    #: Run label -> why its dropped samples were left out (``"not held by B"``).
    dropped_reasons: dict = field(default_factory=dict)
    #: :class:`~pytest_violin.compare.modes.TaskModes`: failure modes per task and run.
    modes: list = field(default_factory=list)
    #: Facts shown above the table that are no warning (runs holding different samples of one suite: why their
    #: fingerprints differ).
    notes: list = field(default_factory=list)
