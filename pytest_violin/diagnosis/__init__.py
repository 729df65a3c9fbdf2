"""Diagnoses: what a failing answer did, measured against its exact ground truth.

:func:`diagnose` returns a :class:`Diagnosis`: a list of :class:`Finding` (``kind``, one-line ``text``, the
``numbers`` behind it), the one that explains most of the failure first. One module per task family
(:mod:`.blocks` also serves the area-ratio task, :mod:`.shape` the border and count tasks); every threshold is
a module constant with its reason. A perfect answer gets no finding. docs/diagnoses.md lists the kinds with
real examples.

This layer sits beside :mod:`pytest_violin.verdict`: it reads suites, task specs and metrics; the plugin and
reporters call it for failing samples only.
"""

from __future__ import annotations

from .model import Diagnosis, Finding, build

__all__ = ["diagnose", "diagnose_failure", "Diagnosis", "Finding", "DIAGNOSERS"]

#: Characters of a diagnosis error line kept (after redaction).
ERROR_LINE_CHARS = 300


class _Lazy:
    """``diagnose_<what>`` of a module of this package, imported on the first call.

    The diagnosers import OpenCV and scikit-image; importing this package must not.
    """

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, sample, image, expected):
        import importlib

        func = getattr(importlib.import_module(f".{self.module}", __name__), self.name)
        return func(sample, image, expected)

    def __repr__(self):
        return f"<diagnoser {self.module}.{self.name}>"


#: Task name -> ``diagnoser(sample, image, expected) -> list of Finding``.
DIAGNOSERS = {"color": _Lazy("blocks", "diagnose_color"), "ratio": _Lazy("blocks", "diagnose_ratio"),
              "shape": _Lazy("shape", "diagnose_shape"), "mask": _Lazy("mask", "diagnose_mask"),
              "border": _Lazy("shape", "diagnose_border"), "count": _Lazy("shape", "diagnose_count")}

#: Spec kinds whose numbers a diagnoser needs; a sample of the task without them (e.g. an exported suite read
#: from PNG files) is diagnosed as ``unsupported`` rather than guessed at.
_NEEDS = {"ratio": ("orientation", "split", "colors"), "border": ("thickness", "fg", "bg"),
          "count": ("count", "dot", "fg", "bg")}


def diagnose(sample, image) -> Diagnosis:
    """Measure how ``image`` departs from ``sample``'s exact answer.

    ``image`` is read as :meth:`Sample.score` reads it under profile ``violin`` (another size resized to the
    sample's first). The :class:`Diagnosis` lists the findings, the one that explains most first: empty for a
    perfect answer, ``supported=False`` for a task without a diagnoser.
    """
    from ..imaging import as_rgb8, resize_rgb8

    func = DIAGNOSERS.get(sample.task)
    needs = _NEEDS.get(sample.task, ())
    if func is None or any(k not in sample.spec for k in needs):
        return build(sample, (), supported=False)
    img = as_rgb8(image, reader="opencv")
    if img.shape[:2] != (sample.height, sample.width):
        img = resize_rgb8(img, sample.width, sample.height)
    return build(sample, func(sample, img, sample.expected()))


def diagnose_failure(sample, images, per_repeat) -> tuple:
    """``(Diagnosis, None)`` of a failing sample's worst repeat, or ``(None, "Type: first line")``.

    The worst is the largest ``mean`` among ``per_repeat`` (each repeat's metrics, one per image of
    ``images``). Diagnosing never raises: a diagnosis must never turn a failure into an error, so an exception
    becomes its first line (redacted, cut to :data:`ERROR_LINE_CHARS`).
    """
    try:
        worst = max(range(len(images)),
                    key=lambda i: float(per_repeat[i].get("mean", 0.0)) if i < len(per_repeat) else 0.0)
        return diagnose(sample, images[worst]), None
    except Exception as exc:  # noqa: BLE001 - reported as one line, the verdict stands
        from ..redaction import redact

        lines = str(exc).strip().splitlines()
        text = redact(f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": "))
        return None, text[:ERROR_LINE_CHARS]
