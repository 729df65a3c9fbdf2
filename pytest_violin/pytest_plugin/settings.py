"""The ``--violin-*`` options of one run, parsed once and frozen.

:func:`parse_settings` reads every option of :data:`pytest_violin.pytest_plugin.options.OPTIONS`
(the command line winning over the ini file) into a frozen
:class:`ViolinSettings` and :class:`GateSettings`, and checks what needs
the file system (a directory that is a file, a template that does not
exist). Every bad value raises ``pytest.UsageError`` naming the value and
the accepted forms. Mutable run state lives in :mod:`pytest_violin.pytest_plugin.state`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..gating.policy import DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP
from .options import DEFAULT_MAX_ANSWER_MB, DEFAULT_MAX_REGRESSION, PASS_RULES, PROFILES, read_option, resolve_path

__all__ = ["GateSettings", "PASS_RULES", "PROFILES", "ViolinSettings", "parse_gate_settings",
           "parse_settings", "resolve_path"]


@dataclass(frozen=True)
class ViolinSettings:
    """The parsed and validated ``--violin-*`` options."""

    model: str | None = None
    suite: str = "violin"
    tasks: tuple | None = None
    limit: int | None = None
    #: ``--violin-shard``: the part of the selection this run makes (suite.shard.Shard), None: all
    shard: object = None
    seed: int = 0
    profile: str = "violin"
    repeats: int = 1
    pass_rule: str = "mean"
    save_outputs: Path | None = None
    concurrency: int = 4
    timeout: float = 120.0
    retries: int = 3
    request_template: Path | None = None
    response_path: str | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    thresholds: tuple = ()
    headers: tuple = ()
    suite_from_ini: bool = False
    model_from_ini: bool = False
    metadata: Path | None = None
    max_calls: int | None = None
    max_calls_given: bool = False
    max_answer_mb: int = DEFAULT_MAX_ANSWER_MB
    price: float | None = None
    max_cost: float | None = None


@dataclass(frozen=True)
class GateSettings:
    """The parsed gate and report options (the gate's run state is in ``GateState``)."""

    save_baseline: Path | None = None
    baseline: Path | None = None
    baseline_label: str | None = None
    max_regression: float = DEFAULT_MAX_REGRESSION
    max_pass_drop: float = DEFAULT_MAX_PASS_DROP
    allow_mismatch: bool = False
    report: Path | None = None
    compare: tuple = ()
    sequential: bool = False
    alpha: float = DEFAULT_ALPHA

    @property
    def active(self) -> bool:
        """True when any gate option was given."""
        return bool(self.save_baseline or self.baseline or self.report)


def _raw_text(config, name: str) -> str:
    """The option's text as the user gave it, for messages."""
    value = config.getoption(f"violin_{name}", default=None)
    return str(value) if value is not None else str(config.getini(f"violin_{name}"))


def _usage(config, name: str, problem: str, accepted: str) -> pytest.UsageError:
    flag = f"--violin-{name.replace('_', '-')}"
    from .echo import cut as _cut  # the value echoed at most MAX_ECHOED characters, as by the converters

    return pytest.UsageError(f"{flag}={_cut(repr(_raw_text(config, name)))}: {problem}; "
                             f"accepted: {accepted}")


def parse_settings(config) -> ViolinSettings:
    """Read every run option; raise ``pytest.UsageError`` on bad values."""
    values, from_ini = {}, {}
    for name in ("model", "suite", "tasks", "limit", "shard", "seed", "profile", "repeats", "pass_rule",
                 "save_outputs", "concurrency", "timeout", "retries", "request_template",
                 "response_path", "cache_dir", "no_cache", "max_calls", "max_answer_mb", "threshold",
                 "header", "price", "max_cost", "metadata"):
        values[name], from_ini[name] = read_option(config, name)
    save_outputs = values["save_outputs"]
    if save_outputs is not None and save_outputs.exists() and not save_outputs.is_dir():
        raise _usage(config, "save_outputs", f"{str(save_outputs)!r} is not a directory",
                     "a directory path (created if missing)")
    template = values["request_template"]
    if template is not None and not template.is_file():
        problem = (f"{str(template)!r} is not a regular file" if template.exists()
                   else f"file {str(template)!r} does not exist")
        raise _usage(config, "request_template", problem, "a JSON template file")
    cache_dir = values["cache_dir"]
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        raise _usage(config, "cache_dir", f"{str(cache_dir)!r} is not a directory",
                     "a directory path (created if missing)")
    metadata = values["metadata"]
    if metadata is not None and not metadata.is_dir():
        raise _usage(config, "metadata", f"{str(metadata)!r} is not a directory",
                     "the folder of the official data's *metadata*.csv files")
    max_calls = values["max_calls"]  # None: the adapter's default; inf: 'none', no limit
    if values["max_cost"] is not None and values["price"] is None:
        # a cap with no estimate to hold it against would look like a cap and never trip
        raise pytest.UsageError(
            f"--violin-max-cost={values['max_cost']:g} needs a price to estimate the cost against; "
            f"accepted: --violin-price=USD (per image, e.g. --violin-price=0.04) beside it, or no "
            f"--violin-max-cost")
    return ViolinSettings(
        model=values["model"], model_from_ini=from_ini["model"], suite=values["suite"],
        suite_from_ini=from_ini["suite"], tasks=values["tasks"], limit=values["limit"],
        shard=values["shard"],
        seed=values["seed"], profile=values["profile"], repeats=values["repeats"],
        pass_rule=values["pass_rule"], save_outputs=save_outputs, concurrency=values["concurrency"],
        timeout=float(values["timeout"]), retries=values["retries"], request_template=template,
        response_path=values["response_path"], cache_dir=cache_dir, no_cache=bool(values["no_cache"]),
        thresholds=values["threshold"], headers=values["header"],
        max_calls=None if max_calls in (None, math.inf) else int(max_calls),
        max_calls_given=max_calls is not None, max_answer_mb=values["max_answer_mb"],
        price=None if values["price"] is None else float(values["price"]),
        max_cost=None if values["max_cost"] is None else float(values["max_cost"]),
        metadata=metadata,
    )


def parse_gate_settings(config) -> GateSettings:
    """Read the gate and report options; raise ``pytest.UsageError`` on bad values."""
    save, _ = read_option(config, "save_baseline")
    if save is not None and save.is_dir():
        raise _usage(config, "save_baseline", f"{str(save)!r} is a directory",
                     "a file path (e.g. baselines/violin.json; parent directories are created)")
    report, _ = read_option(config, "report")
    if report is not None and report.exists() and not report.is_dir():
        raise _usage(config, "report", f"{str(report)!r} is a file", "a directory (created if missing)")
    baseline, _ = read_option(config, "baseline")
    max_regression, _ = read_option(config, "max_regression")
    compare, _ = read_option(config, "compare")
    max_pass_drop, _ = read_option(config, "max_pass_drop")
    allow_mismatch, _ = read_option(config, "allow_mismatch")
    sequential, _ = read_option(config, "sequential")
    alpha, _ = read_option(config, "alpha")
    if sequential and baseline is None:
        raise pytest.UsageError("--violin-sequential needs a baseline to decide against; accepted: "
                                "--violin-baseline=PATH beside it (ini violin_baseline), or no "
                                "--violin-sequential")
    shard, _ = read_option(config, "shard")
    if sequential and shard is not None:
        # each shard would stop on its own evidence: N gates, none deciding the whole run
        raise pytest.UsageError(f"--violin-sequential cannot run in a shard (--violin-shard={shard}): "
                                f"the sequential gate decides on the whole run's samples as they come; "
                                f"accepted: --violin-sequential without --violin-shard, or shards "
                                f"merged and gated with 'python -m pytest_violin merge' and 'gate'")
    return GateSettings(save_baseline=save, baseline=baseline, compare=tuple(compare),
                        baseline_label=None if baseline is None else _raw_text(config, "baseline"),
                        max_regression=float(max_regression), max_pass_drop=float(max_pass_drop),
                        allow_mismatch=bool(allow_mismatch), report=report,
                        sequential=bool(sequential), alpha=float(alpha))
