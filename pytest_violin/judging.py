"""One sample's generation judged: the outcome rules every runner of the suite shares.

The plugin's items and :func:`pytest_violin.evaluation.evaluate` both turn a
:class:`~pytest_violin.execution.runner.Generation` into a
:class:`~pytest_violin.results.SampleResult` here, so a sample gets the same
metrics, diagnoses and outcome however it was run:

* a fault while generating (a bug, a full disk, a call the cap refused) is
  an error, never the model's failure;
* otherwise the images are scored and judged (:func:`~pytest_violin.results.score_generation`:
  a generation error the model is to blame for fails, one it is not is an error);
* an exception while scoring (a broken expected image) is an error too.
"""

from __future__ import annotations

from dataclasses import dataclass

from .results import error_result, score_generation

__all__ = ["JudgeSettings", "judge_generation"]


@dataclass(frozen=True)
class JudgeSettings:
    """What judging a sample reads of a run's settings (the plugin's ``ViolinSettings`` has them too).

    Attributes
    ----------
    profile : str
        The metric profile (``"violin"`` or ``"strict"``).
    pass_rule : str
        ``"mean"`` or ``"worst"`` over repeats.
    seed : int
        The run seed (the result records repeat 0's derived seed).
    """

    profile: str = "violin"
    pass_rule: str = "mean"
    seed: int = 0


def judge_generation(sample, generation, settings, limits, *, index: int = 0):
    """The result of ``sample`` from its ``generation``, and the images that were scored.

    Parameters
    ----------
    sample : Sample
    generation : Generation
        What the runner made of it.
    settings : JudgeSettings or ViolinSettings
        ``profile``, ``pass_rule`` and ``seed`` are read.
    limits : Mapping[str, float]
        All limits keyed ``"task.metric"``.
    index : int, optional
        Position in the suite.

    Returns
    -------
    tuple of (SampleResult, list)
        The result (its failure text in ``message``) and the images (empty
        when none was scored).
    """
    if generation.fault is not None:
        return error_result(sample, generation, settings, index=index,
                            reason=f"error while generating: {generation.fault}"), []
    try:  # an unjudged generation error (no answer, setup, time-out) ends as an error there
        return score_generation(sample, generation, settings, limits, index=index)
    except Exception as exc:  # a broken expected image or spec: not the model's fault
        from .execution.runner import exception_line

        return error_result(sample, generation, settings, index=index,
                            reason=f"error while scoring: {exception_line(exc)}"), []
