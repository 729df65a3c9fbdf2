"""The ``--violin-*`` options and ini keys, parsed and validated.

:func:`parse_settings` turns a pytest config into a frozen
:class:`ViolinSettings`; every bad value raises ``pytest.UsageError``
naming the value and the accepted forms.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["PROFILES", "PASS_RULES", "ViolinSettings", "option_value", "parse_settings", "resolve_path"]

PROFILES = ("violin", "strict")
PASS_RULES = ("mean", "worst")

#: Largest ``--violin-concurrency``: generations in flight per process.
MAX_CONCURRENCY = 256
#: Largest ``--violin-timeout`` in seconds (one day).
MAX_TIMEOUT = 86400.0
#: Largest ``--violin-retries``.
MAX_RETRIES = 100
#: Default ``--violin-max-answer-mb``: the largest model answer read, in MiB.
DEFAULT_MAX_ANSWER_MB = 64
#: Largest ``--violin-max-answer-mb``.
MAX_ANSWER_MB = 1024
#: Default ``--violin-max-calls`` of adapters that call a network service.
DEFAULT_NETWORK_MAX_CALLS = 2000


@dataclass(frozen=True)
class ViolinSettings:
    """The parsed and validated ``--violin-*`` options."""

    model: str | None = None
    suite: str = "violin"
    tasks: tuple | None = None
    limit: int | None = None
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
    max_calls: int | None = None
    max_calls_given: bool = False
    max_answer_mb: int = DEFAULT_MAX_ANSWER_MB


def option_value(config, name, ini):
    """Return ``(value, from_ini)``: the command line wins over the ini key.

    Blank strings count as unset (``None``).
    """
    value = config.getoption(f"violin_{name}", default=None)
    from_ini = value is None
    if from_ini:
        try:
            value = config.getini(ini)
        except ValueError:  # an ini key no plugin declared
            value = None
    if isinstance(value, str):
        value = value.strip() or None
    return value, from_ini


def _raw(config, name, ini):
    return option_value(config, name, ini)[0]


def _int(name, value, minimum, maximum=None):
    flag = f"--violin-{name.replace('_', '-')}"
    accepted = (f"an integer >= {minimum}" if maximum is None
                else f"an integer from {minimum} to {maximum}")
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{flag}={value!r} is not an integer; accepted: {accepted}") from None
    if number < minimum:
        raise pytest.UsageError(f"{flag}={value!r} is below {minimum}; accepted: {accepted}")
    if maximum is not None and number > maximum:
        raise pytest.UsageError(f"{flag}={value!r} is above {maximum}; accepted: {accepted}")
    return number


_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f", "")


def _ini_bool(config, ini: str) -> bool:
    """An ini boolean, parsed here so that a bad value names its key."""
    raw = config.getini(ini)
    if raw is None or isinstance(raw, bool):
        return bool(raw)
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise pytest.UsageError(
        f"ini key {ini}={raw!r} is not a boolean; accepted: true/false, yes/no, on/off, 1/0")


def resolve_path(config, value, *, from_ini: bool = False) -> Path:
    """``value`` as an absolute path.

    A relative path from the command line is relative to the invocation
    directory; one from an ini file is relative to that file's directory
    (the rootdir when there is none), so ``pytest`` run from a
    subdirectory finds the same files.
    """
    path = Path(os.path.expanduser(str(value)))
    if not path.is_absolute():
        if not from_ini:
            base = Path(config.invocation_params.dir)
        elif config.inipath is not None:
            base = Path(config.inipath).parent
        else:
            base = Path(config.rootpath)
        path = base / path
    return path


def _path_option(config, name, ini):
    value, from_ini = option_value(config, name, ini)
    return value, (None if value is None else resolve_path(config, value, from_ini=from_ini))


def parse_settings(config) -> ViolinSettings:
    """Read every ``--violin-*`` option and ini key; raise ``pytest.UsageError`` on bad values."""
    from .thresholds import parse_thresholds
    from .errors import ThresholdError

    model, model_from_ini = option_value(config, "model", "violin_model")
    suite, suite_from_ini = option_value(config, "suite", "violin_suite")
    suite = suite or "violin"
    tasks_raw = _raw(config, "tasks", "violin_tasks")
    tasks = None
    if tasks_raw is not None:
        # a string "color,shape" or, from pyproject.toml, a list ["color", "shape"]
        parts = ([str(p) for p in tasks_raw] if isinstance(tasks_raw, (list, tuple))
                 else [str(tasks_raw)])
        tasks = tuple(t.strip().lower() for p in parts for t in p.split(",") if t.strip())
        if not tasks:
            raise pytest.UsageError(
                f"--violin-tasks={tasks_raw!r} names no task; accepted: comma-separated task names "
                f"such as color,shape,mask")
    limit_raw = _raw(config, "limit", "violin_limit")
    limit = None if limit_raw is None else _int("limit", limit_raw, 1)
    seed_raw = _raw(config, "seed", "violin_seed")
    seed = 0 if seed_raw is None else _int("seed", seed_raw, 0)
    profile = (_raw(config, "profile", "violin_profile") or "violin").lower()
    if profile not in PROFILES:
        raise pytest.UsageError(f"--violin-profile={profile!r} is unknown; accepted: {', '.join(PROFILES)}")
    repeats_raw = _raw(config, "repeats", "violin_repeats")
    repeats = 1 if repeats_raw is None else _int("repeats", repeats_raw, 1)
    rule = (_raw(config, "pass_rule", "violin_pass_rule") or "mean").lower()
    if rule not in PASS_RULES:
        raise pytest.UsageError(f"--violin-pass-rule={rule!r} is unknown; accepted: {', '.join(PASS_RULES)}")
    conc_raw = _raw(config, "concurrency", "violin_concurrency")
    concurrency = 4 if conc_raw is None else _int("concurrency", conc_raw, 1, MAX_CONCURRENCY)
    retries_raw = _raw(config, "retries", "violin_retries")
    retries = 3 if retries_raw is None else _int("retries", retries_raw, 0, MAX_RETRIES)
    timeout_raw = _raw(config, "timeout", "violin_timeout")
    timeout = 120.0
    if timeout_raw is not None:
        try:
            timeout = float(timeout_raw)
        except (TypeError, ValueError):
            timeout = float("nan")
        if not 0 < timeout <= MAX_TIMEOUT:
            raise pytest.UsageError(
                f"--violin-timeout={timeout_raw!r} is invalid; accepted: a number of seconds > 0 "
                f"and <= {MAX_TIMEOUT:g}")
    calls_raw, calls_from_ini = option_value(config, "max_calls", "violin_max_calls")
    max_calls = None
    if calls_raw is not None and str(calls_raw).strip().lower() not in ("none", "unlimited"):
        max_calls = _int("max_calls", calls_raw, 0)
    answer_raw = _raw(config, "max_answer_mb", "violin_max_answer_mb")
    max_answer_mb = (DEFAULT_MAX_ANSWER_MB if answer_raw is None
                     else _int("max_answer_mb", answer_raw, 1, MAX_ANSWER_MB))
    save, save_outputs = _path_option(config, "save_outputs", "violin_save_outputs")
    if save_outputs is not None and save_outputs.exists() and not save_outputs.is_dir():
        raise pytest.UsageError(
            f"--violin-save-outputs={save!r}: {str(save_outputs)!r} is not a directory; accepted: a "
            f"directory path (created if missing)")
    tmpl, request_template = _path_option(config, "request_template", "violin_request_template")
    if tmpl is not None:
        if not request_template.is_file():
            raise pytest.UsageError(
                f"--violin-request-template={tmpl!r}: file {str(request_template)!r} does not exist; "
                f"accepted: a JSON template file")
    response_path = _raw(config, "response_path", "violin_response_path")
    cache_raw, cache_dir = _path_option(config, "cache_dir", "violin_cache_dir")
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        raise pytest.UsageError(
            f"--violin-cache-dir={cache_raw!r}: {str(cache_dir)!r} is not a directory; accepted: a "
            f"directory path (created if missing)")
    no_cache = bool(config.getoption("violin_no_cache", default=None))
    if not no_cache:
        no_cache = _ini_bool(config, "violin_no_cache")

    threshold_texts = [*config.getini("violin_thresholds"), *config.getoption("violin_threshold", default=[])]
    try:
        parse_thresholds(threshold_texts, None)  # syntax only; names are checked against the suite
    except ThresholdError as exc:
        raise pytest.UsageError(f"--violin-threshold: {exc}") from None
    headers = []
    for text in [*config.getini("violin_headers"), *config.getoption("violin_header", default=[])]:
        if not text.strip():
            continue
        name, sep, value = text.partition(":")
        if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
            raise pytest.UsageError(
                f"--violin-header={_mask_header(text)!r} is malformed (no 'Name:' before the value); "
                f"accepted: 'Name: value' (value may reference ${{ENV_VAR}})")
        headers.append((name.strip(), value.strip()))
    return ViolinSettings(
        model=model, model_from_ini=model_from_ini, suite=suite, tasks=tasks, limit=limit, seed=seed, profile=profile,
        repeats=repeats, pass_rule=rule, save_outputs=save_outputs, concurrency=concurrency,
        timeout=timeout, retries=retries, request_template=request_template,
        response_path=response_path, cache_dir=cache_dir, no_cache=no_cache,
        thresholds=tuple(threshold_texts), headers=tuple(headers), suite_from_ini=suite_from_ini,
        max_calls=max_calls, max_calls_given=calls_raw is not None, max_answer_mb=max_answer_mb,
    )


def _mask_header(text: str) -> str:
    """A malformed header as it may be shown: its name at most, never a value.

    ``'Authorization Bearer s3cr3t'`` (no colon) shows as
    ``'Authorization ***'``; a lone word that is not a plausible header name
    (it may be the token itself) shows as ``'***'``.
    """
    name, sep, value = text.partition(":")
    if sep:
        return f"{name}:***" if value.strip() else text
    words = text.split()
    first = words[0] if words else ""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]{0,39}", first) or any(c.isdigit() for c in first):
        return "***"
    return first + (" ***" if len(words) > 1 else "")

