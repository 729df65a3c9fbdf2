"""Diagnoses: what a failing answer did, measured against its exact ground truth.

:func:`diagnose` returns a :class:`Diagnosis`: a list of :class:`Finding`
(``kind``, one-line ``text``, the ``numbers`` behind it), the one that
explains most of the failure first. One module per task family
(:mod:`.color` also serves the area-ratio task, :mod:`.geometric` the
border and count tasks); every threshold is a module constant with its
reason. A perfect answer gets no finding. docs/diagnoses.md lists the kinds
with real examples.

This layer sits beside :mod:`pytest_violin.verdict`: it reads suites,
task specs and metrics; the plugin and reporters call it for failing
samples only.
"""

from __future__ import annotations

from .model import Diagnosis, Finding, build

__all__ = ["diagnose", "Diagnosis", "Finding", "DIAGNOSERS"]


def _color(sample, image, expected):
    from .blocks import diagnose_color
    return diagnose_color(sample, image, expected)


def _ratio(sample, image, expected):
    from .blocks import diagnose_ratio
    return diagnose_ratio(sample, image, expected)


def _shape(sample, image, expected):
    from .shape import diagnose_shape
    return diagnose_shape(sample, image, expected)


def _mask(sample, image, expected):
    from .mask import diagnose_mask
    return diagnose_mask(sample, image, expected)


def _border(sample, image, expected):
    from .geometric import diagnose_border
    return diagnose_border(sample, image, expected)


def _count(sample, image, expected):
    from .geometric import diagnose_count
    return diagnose_count(sample, image, expected)


#: Task name -> ``diagnoser(sample, image, expected) -> list of Finding``.
DIAGNOSERS = {"color": _color, "ratio": _ratio, "shape": _shape, "mask": _mask,
              "border": _border, "count": _count}

#: Spec kinds whose numbers a diagnoser needs; a sample of the task without
#: them (e.g. an exported suite read from PNG files) is diagnosed as
#: ``unsupported`` rather than guessed at.
_NEEDS = {"ratio": ("orientation", "split", "colors"), "border": ("thickness", "fg", "bg"),
          "count": ("count", "dot", "fg", "bg")}


def diagnose(sample, image) -> Diagnosis:
    """Measure how ``image`` departs from ``sample``'s exact answer.

    Parameters
    ----------
    sample : Sample
        The sample (its spec and ground truth say what was asked).
    image : image-like
        The answer: anything :func:`pytest_violin.as_rgb8` accepts, read as
        :meth:`Sample.score` reads it under profile ``violin``; another size
        is resized to the sample's first.

    Returns
    -------
    Diagnosis
        The findings, the one that explains most first; empty for a
        perfect answer, and ``supported=False`` for a task without a
        diagnoser.
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
