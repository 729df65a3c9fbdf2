"""The records of a diagnosis: :class:`Finding` and :class:`Diagnosis`.

A finding names one way the answer departs from the exact ground truth (``kind``), says it in one line
(``text``) and keeps the numbers behind it (``numbers``, JSON-able). Its ``weight`` says how much of the
failure it explains; the families compute it as a share of the answer's error where the error decomposes (the
colour energy, the shape IoU loss, the masked area), so findings of one diagnosis compare with each other.
"""

from __future__ import annotations

import numbers as _num
from dataclasses import dataclass, field

__all__ = ["Finding", "Diagnosis", "build"]


def _plain(value):
    """A JSON-able copy of ``value`` (numpy scalars and tuples made plain)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, _num.Integral):
        return int(value)
    if isinstance(value, _num.Real):
        return round(float(value), 4)
    return str(value)


@dataclass(frozen=True)
class Finding:
    """One measured departure from the ground truth."""

    #: E.g. ``"gradient"``, ``"offset"``, ``"leak"`` (docs/diagnoses.md lists them).
    kind: str
    #: One line in words, with the numbers.
    text: str
    #: The measurements behind ``text`` (JSON-able).
    numbers: dict = field(default_factory=dict)
    #: How much of the failure this explains (larger first); 0..1 for most kinds.
    weight: float = 0.0

    def to_json(self) -> dict:
        """``{"kind", "text", "numbers"}`` as plain JSON values."""
        return {"kind": self.kind, "text": self.text, "numbers": _plain(self.numbers)}


@dataclass(frozen=True)
class Diagnosis:
    """The findings of one answer, the one that explains most first.

    Empty (falsy) when the answer shows nothing above the noise thresholds or the sample's task has no
    diagnoser (``supported`` is then False).
    """

    sample_id: str
    task: str
    findings: tuple = ()
    supported: bool = True

    def __iter__(self):
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __bool__(self) -> bool:
        return bool(self.findings)

    @property
    def kinds(self) -> tuple:
        """The findings' kinds, in order."""
        return tuple(f.kind for f in self.findings)

    @property
    def first(self) -> Finding | None:
        """The finding that explains most, or ``None``."""
        return self.findings[0] if self.findings else None

    def texts(self) -> list:
        """The findings' one-line texts, in order."""
        return [f.text for f in self.findings]

    def to_json(self) -> list:
        """A list of ``{kind, text, numbers}``, in order."""
        return [f.to_json() for f in self.findings]


def build(sample, findings, *, supported: bool = True) -> Diagnosis:
    """A :class:`Diagnosis` of ``sample`` with ``findings`` sorted by weight (stable)."""
    ordered = tuple(sorted(findings, key=lambda f: -float(f.weight)))
    return Diagnosis(sample_id=str(sample.id), task=str(sample.task), findings=ordered,
                     supported=supported)
