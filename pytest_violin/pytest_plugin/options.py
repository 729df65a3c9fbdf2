"""Every ``--violin-*`` option and ini key, declared once.

:data:`OPTIONS` is the one table: each :class:`Option` names the option, its
ini key, the converter that turns a string into a value (raising
:class:`argparse.ArgumentTypeError` with the accepted forms, never echoing
a secret), the default and the help text. :func:`add_options` declares them
with pytest (``type=`` converters, as pytest-xdist does, so a bad
command-line value is a pytest usage error, exit 4); :func:`read_option`
reads one back, the command line winning over the ini file, with ini values
going through the same converter (a bad one names its key).

Relative paths are resolved by :func:`resolve_path`: against the directory
pytest was started in for a command-line value, against the ini file's
directory for an ini value.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from ..gating.policy import DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REGRESSION
from .echo import bounded_messages, cut as _cut
from ..errors import InternalError

__all__ = [
    "DEFAULT_MAX_ANSWER_MB", "DEFAULT_NETWORK_MAX_CALLS", "MAX_ANSWER_MB", "MAX_CONCURRENCY",
    "MAX_REPEATS", "MAX_RETRIES", "MAX_TIMEOUT", "OPTIONS", "Option", "PASS_RULES", "PROFILES", "add_options",
    "adapter_option_names", "read_option", "resolve_path",
]

PROFILES = ("violin", "strict")
PASS_RULES = ("mean", "worst")

#: Largest ``--violin-concurrency``: generations in flight per process.
MAX_CONCURRENCY = 256
#: Largest ``--violin-timeout`` in seconds (one day).
MAX_TIMEOUT = 86400.0
#: Largest ``--violin-retries``.
MAX_RETRIES = 100
#: Largest ``--violin-repeats``: every repeat of a sample is held until it is scored.
MAX_REPEATS = 64
#: Default ``--violin-max-answer-mb``: the largest model answer read, in MiB.
DEFAULT_MAX_ANSWER_MB = 64
#: Largest ``--violin-max-answer-mb``.
MAX_ANSWER_MB = 1024
#: Largest ``--violin-price``: USD per image.
MAX_PRICE = 1000.0
#: Largest ``--violin-max-cost``: USD.
MAX_COST = 1_000_000.0
#: Default ``--violin-max-calls`` of adapters that bill (pytest_plugin.planning.adapter_bills).
DEFAULT_NETWORK_MAX_CALLS = 2000


from .converters import (  # noqa: F401  (the converters, re-exported)
    _mask_header, _text, boolean, calls_limit, choice, header, integer, nonempty, number, task_list, threshold,
)

# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Option:
    """One ``--violin-*`` option and its ini key.

    Attributes
    ----------
    name : str
        ``limit`` for ``--violin-limit`` / ini ``violin_limit``.
    convert : callable
        String (or ini list) -> value; raises ``ArgumentTypeError``.
    default : object
        The value when neither the command line nor the ini file gives one.
    help : str
        Help text.
    kind : str
        ``value`` (one value), ``list`` (repeatable; an ini line list) or
        ``flag`` (``store_true``; an ini boolean).
    path : bool
        The value is a path (resolved by :func:`resolve_path`).
    adapter : bool
        The value is for the model adapters: it reaches them as
        ``AdapterOptions.extra[name]`` (None when not given).
    ini_type : str
        pytest's ini type for the key (``args`` accepts a TOML list).
    """

    name: str
    convert: Callable[[Any], Any]
    default: Any
    help: str
    kind: str = "value"
    path: bool = False
    ini_type: str = "string"
    metavar: str | None = None
    adapter: bool = False

    def __post_init__(self):
        # the one place every converter's message is bounded (command line and ini alike)
        object.__setattr__(self, "convert", bounded_messages(self.convert))

    @property
    def flag(self) -> str:
        return f"--violin-{self.name.replace('_', '-')}"

    @property
    def ini(self) -> str:
        return f"violin_{self.name}"

    @property
    def dest(self) -> str:
        return f"violin_{self.name}"


def _rate(value) -> str:
    """``N/s`` or ``N/min`` (checked here; the HTTP client reads it)."""
    from ..errors import ModelSpecError
    from ..models.transport.limits import parse_rate

    try:
        parse_rate(_text(value))
    except ModelSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return _text(value)


def _path_text(value) -> str:
    return nonempty(value)


def _shard(value):
    """``K/N`` (:func:`pytest_violin.suite.shard.parse_shard` says what is accepted)."""
    from ..errors import InvalidArgumentError
    from ..suite.shard import parse_shard

    try:
        return parse_shard(_text(value))
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


OPTIONS: tuple[Option, ...] = (
    Option("model", nonempty, None,
           "model SPEC: oracle, python:MODULE:ATTR, dir:PATH, http(s)://URL, openai:MODEL, a1111:URL, "
           "diffusers:PATH_OR_ID, gemini:MODEL, ark:MODEL, bfl:MODEL, fal:APP, replicate:OWNER/NAME, "
           "comfyui:URL or a third-party SCHEME:TARGET. Turns the Violin suite into tests.",
           metavar="SPEC"),
    Option("suite", nonempty, "violin",
           "suite name (violin, violin-absolute, violin-extra, violin-probes) or manifest path "
           "(default: violin)", metavar="NAME_OR_PATH"),
    Option("metadata", _path_text, None,
           "the official Violin data's folder of metadata CSVs (prompts by id; default: "
           "metadata/ beside the parquet or the converted folder)", path=True, metavar="DIR"),
    Option("tasks", task_list, None,
           "comma-separated tasks to run (default: all); in pyproject.toml also a list",
           ini_type="args", metavar="LIST"),
    Option("limit", integer(1), None, "run a stratified subset of N samples", metavar="N"),
    Option("shard", _shard, None,
           "run part K of N of the selection (after --violin-tasks and --violin-limit): a split "
           "stratified by task and variation, the same on every machine; merge the parts' "
           "--violin-report folders with 'python -m pytest_violin merge'", metavar="K/N"),
    Option("seed", integer(0), 0, "run seed; per-sample seeds derive from it (default 0)", metavar="N"),
    Option("profile", choice(PROFILES), "violin", "metric profile: violin or strict"),
    Option("repeats", integer(1, MAX_REPEATS), 1, f"images per sample (default 1, at most {MAX_REPEATS})",
           metavar="K"),
    Option("pass_rule", choice(PASS_RULES), "mean",
           "with repeats: pass on the mean over repeats or on the worst repeat (mean|worst)"),
    Option("save_outputs", _path_text, None, "write every generated image as DIR/<sample id>.png",
           path=True, metavar="DIR"),
    Option("concurrency", integer(1, MAX_CONCURRENCY), 4,
           f"generations in flight per process (default 4, at most {MAX_CONCURRENCY})", metavar="N"),
    Option("timeout", number(0.0, MAX_TIMEOUT, low_open=True, what="a number of seconds"), 120.0,
           "deadline in seconds for one HTTP attempt, connection and whole body included; one "
           "sample's attempts and retry waits together take at most twice that (default 120)",
           metavar="S"),
    Option("retries", integer(0, MAX_RETRIES), 3, "retries on transient HTTP failures (default 3)",
           metavar="N"),
    Option("request_template", _path_text, None, "JSON body template FILE for the http adapter",
           path=True, metavar="FILE"),
    Option("response_path", nonempty, None, "where the image is in a JSON response, e.g. data.0.b64_json",
           metavar="PATH"),
    Option("cache_dir", _path_text, None, "image cache directory (default: pytest cache dir/violin-images)",
           path=True, metavar="DIR"),
    Option("no_cache", boolean, False, "do not read or write the image cache", kind="flag"),
    Option("max_calls", calls_limit, None,
           "refuse to start when the run plans more uncached generations than N ('none': no limit; "
           f"default {DEFAULT_NETWORK_MAX_CALLS} for adapters that bill, no limit for self-hosted and local ones)",
           metavar="N"),
    Option("max_answer_mb", integer(1, MAX_ANSWER_MB), DEFAULT_MAX_ANSWER_MB,
           f"largest model answer read, in MiB (default {DEFAULT_MAX_ANSWER_MB})", metavar="MB"),
    Option("threshold", threshold, (),
           "override a limit, e.g. color.sd=0.02 or shape.mean=0.1 (repeatable; ini: violin_thresholds, "
           "one per line)", kind="list", metavar="TASK.METRIC=VALUE"),
    Option("header", header, (),
           "extra HTTP header (repeatable); VALUE may use ${ENV_VAR} (ini: violin_headers, one per line)",
           kind="list", metavar="'NAME: VALUE'"),
    # issue 15, generic job polling (http adapter):
    Option("poll_url_path", nonempty, None,
           "http adapter, job APIs: where the status URL is in the submit answer, e.g. urls.get; the "
           "adapter then polls it until a done value (see docs/models.md)", metavar="PATH", adapter=True),
    Option("status_path", nonempty, None,
           "http adapter, job APIs: where the state is in a status answer (default: status)",
           metavar="PATH", adapter=True),
    Option("done_values", nonempty, None,
           "http adapter, job APIs: comma-separated states that end the job with a result "
           "(default: succeeded,completed,done,ready); --violin-response-path then reads the image "
           "from that status answer", metavar="LIST", adapter=True),
    Option("failed_values", nonempty, None,
           "http adapter, job APIs: comma-separated states that end the job as failed "
           "(default: failed,error,canceled,cancelled,aborted)", metavar="LIST", adapter=True),
    Option("refused_values", nonempty, None,
           "http adapter, job APIs: comma-separated states that end the job as refused "
           "(moderation; never retried; default: none)", metavar="LIST", adapter=True),
    Option("rate", _rate, None,
           "cap request starts at N/s or N/min, shared by the threads of a process (with -n W, "
           "each worker has its own cap: give RATE/W)", metavar="RATE", adapter=True),
    # issue 15, comfyui:
    Option("workflow", _path_text, None,
           "ComfyUI workflow FILE (API format) with placeholders {prompt}, {seed}, {width}, {height}, "
           "{image}, {mask} for the comfyui adapter", path=True, adapter=True, metavar="FILE"),
    Option("replicate_input", _path_text, None,
           "JSON FILE of the replicate adapter's input object, with --violin-request-template "
           "placeholders ({images[N]} is a data URI)", path=True, adapter=True, metavar="FILE"),
    # issue 15, rate limits and money:
    Option("price", number(0.0, MAX_PRICE, low_open=False, what="a price in USD per image"), None,
           "estimated price in USD of one generated image: the plan line states the estimated cost of "
           "the uncached generations, the reports the cost of those made (no default)", metavar="USD"),
    Option("max_cost", number(0.0, MAX_COST, low_open=False, what="an amount in USD"), None,
           "refuse to start when the estimated cost of the uncached generations (--violin-price) "
           "exceeds USD", metavar="USD"),
    # issue 16: compare this run with others (and the paper's rows)
    Option("compare", _path_text, (),
           "print this run side by side with RUN (a --violin-report folder or results.json, or a "
           "baseline file; 'paper' for the paper's published rows) after the summary, and add it to "
           "summary.md and report.html (repeatable)", kind="list", metavar="RUN"),
    # the regression gate and reports
    Option("save_baseline", _path_text, None, "write a baseline of this run to PATH (JSON)", path=True,
           metavar="PATH"),
    Option("baseline", _path_text, None,
           "compare this run with the baseline at PATH; credible regressions fail the session",
           path=True, metavar="PATH"),
    Option("max_regression", number(0.0, 1.0, low_open=False, what="a number"), DEFAULT_MAX_REGRESSION,
           "the margin of the mean metric: a task or variation regresses when its mean is shown to "
           f"worsen by more than this (default {DEFAULT_MAX_REGRESSION})", metavar="FLOAT"),
    Option("max_pass_drop", number(0.0, 1.0, low_open=False, what="a share"), DEFAULT_MAX_PASS_DROP,
           "the margin of the pass rate: a task or variation regresses when its share of samples within "
           f"their limits is shown to fall by more than this (default {DEFAULT_MAX_PASS_DROP}: 5 points)",
           metavar="SHARE"),
    Option("allow_mismatch", boolean, False,
           "with --violin-baseline: decide even when a task shares too few samples with the baseline "
           "to show a regression of the margins (another seed, suite or selection; docs/gating.md)",
           kind="flag"),
    Option("sequential", boolean, False,
           "with --violin-baseline: generate the samples in a seeded random order and stop as soon as "
           "an anytime-valid test decides every task and variation (docs/gating.md); samples not "
           "needed are skipped", kind="flag"),
    Option("alpha", number(0.0, 0.5, low_open=True, what="an error rate"), DEFAULT_ALPHA,
           "the gate's error rate over all its groups and statistics together: the chance of failing a "
           "model that did not get worse, and (sequential) of passing one that did "
           f"(default {DEFAULT_ALPHA})", metavar="ALPHA"),
    Option("report", _path_text, None, "write results.json, report.html and summary.md into DIR",
           path=True, metavar="DIR"),
)

def adapter_option_names() -> tuple[str, ...]:
    """Names of the options passed to the adapters in ``AdapterOptions.extra``."""
    return tuple(o.name for o in OPTIONS if o.adapter)


#: ini keys of the repeatable options (plural, as they hold a list).
_LIST_INI = {"threshold": "violin_thresholds", "header": "violin_headers"}


def ini_key(option: Option) -> str:
    """The ini key of ``option``."""
    return _LIST_INI.get(option.name, option.ini)


def add_options(parser) -> None:
    """Declare every option of :data:`OPTIONS` and its ini key with pytest."""
    group = parser.getgroup("violin", "pytest-violin: visual obedience benchmark")
    for opt in OPTIONS:
        key = ini_key(opt)
        if opt.kind == "flag":
            group.addoption(opt.flag, dest=opt.dest, action="store_true", default=None,
                            help=f"{opt.help} [ini: {key}]")
            parser.addini(key, opt.help + " (true/false)", type="string", default=None)
        elif opt.kind == "list":
            group.addoption(opt.flag, dest=opt.dest, action="append", default=[], type=opt.convert,
                            metavar=opt.metavar, help=f"{opt.help}")
            parser.addini(key, opt.help, type="linelist", default=[])
        else:
            group.addoption(opt.flag, dest=opt.dest, default=None, type=opt.convert,
                            metavar=opt.metavar or opt.name.upper(), help=f"{opt.help} [ini: {key}]")
            parser.addini(key, opt.help, type=opt.ini_type, default=None)


def option(name: str) -> Option:
    """The :class:`Option` called ``name``."""
    for opt in OPTIONS:
        if opt.name == name:
            return opt
    raise InternalError(f"no option {name!r}; accepted: {', '.join(o.name for o in OPTIONS)}")


def _from_ini(config, opt: Option):
    try:
        raw = config.getini(ini_key(opt))
    except ValueError:  # an ini key no plugin declared (the plugin is being unloaded)
        return None
    if raw is None or (isinstance(raw, str) and not raw.strip()) or (isinstance(raw, list) and not raw
                                                                      and opt.kind != "list"):
        return None
    return raw


def _convert_ini(opt: Option, raw):
    try:
        return opt.convert(raw)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini key {ini_key(opt)}: {exc}") from None


def read_option(config, name: str) -> tuple[Any, bool]:
    """The value of option ``name`` and whether it came from the ini file.

    The command line wins; an ini value goes through the option's converter
    (a bad one is a :class:`pytest.UsageError` naming the ini key); a
    repeatable option is the ini lines followed by the command-line values.
    Path options are returned resolved (see :func:`resolve_path`).
    """
    opt = option(name)
    cli = config.getoption(opt.dest, default=None)
    if opt.kind == "list":
        ini_values = [_convert_ini(opt, line) for line in (_from_ini(config, opt) or [])]
        values = tuple(v for v in [*ini_values, *(cli or [])] if v is not None)
        return values, False
    if opt.kind == "flag" and cli:
        return True, False
    if cli is not None and opt.kind != "flag":
        value, from_ini = cli, False
    else:
        raw = _from_ini(config, opt)
        if raw is None:
            return opt.default, True
        value, from_ini = _convert_ini(opt, raw), True
    if opt.path and value is not None:
        value = resolve_path(config, value, from_ini=from_ini)
        _check_path(opt, value)
    return value, from_ini


def _check_path(opt: Option, path: Path) -> None:
    """A path the file system refuses to look at (a name too long, no permission on a folder
    above it) is a usage error now, not an ``OSError`` from the first ``is_file()``."""
    import errno

    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return  # missing: each option says what it needs
        raise pytest.UsageError(f"{opt.flag}={_cut(repr(str(path)))}: the path cannot be looked "
                                f"at ({exc.strerror or exc}); accepted: a usable path") from None


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
