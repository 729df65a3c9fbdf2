"""Every ``--violin-*`` option and ini key, declared once, and the settings derived from them."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from ..errors import InternalError
from ..execution.bounds import MAX_CONCURRENCY, MAX_DIGITS, MAX_REPEATS, PASS_RULES, PROFILES, RUN_BOUNDS, Bound
from ..execution.usage import DEFAULT_BILLED_MAX_CALLS
from ..gating.evidence import DEFAULT_POWER
from ..gating.policy import (DEFAULT_ALPHA, DEFAULT_MAX_PASS_DROP, DEFAULT_MAX_REFUSAL_RISE, DEFAULT_MAX_REGRESSION,
                             MAX_ALPHA)

__all__ = [
    "DEFAULT_MAX_ANSWER_MB", "DEFAULT_NETWORK_MAX_CALLS", "MAX_ANSWER_MB", "MAX_ECHOED", "OPTIONS", "GateSettings",
    "Option", "ViolinSettings", "add_options", "adapter_option_names", "parse_gate_settings", "parse_settings",
    "read_option", "resolve_path",
]

# ----------------------------------------------------------------------------- echoed values

#: Characters of an option value echoed in an error message, at most (after redaction).
MAX_ECHOED = 200
#: Characters of a converter's whole error message, at most.
MAX_MESSAGE = 1000


def cut(text: str, limit: int = MAX_ECHOED) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def bounded_messages(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert`` whose :class:`argparse.ArgumentTypeError` echoes at most :data:`MAX_ECHOED` characters of the value (a
    100,000-character value is cut, not printed whole).
    """
    def run(value):
        try:
            return convert(value)
        except argparse.ArgumentTypeError as exc:
            message = str(exc)
            text = str(value)
            for form in sorted({repr(text), text, repr(text.strip()), text.strip()}, key=len,
                               reverse=True):
                if len(form) > MAX_ECHOED and form in message:
                    message = message.replace(form, cut(form))
            if len(message) > MAX_MESSAGE:
                head, sep, tail = message.rpartition("; accepted:")
                tail = (sep + tail) if sep else message[-MAX_MESSAGE // 4:]
                message = cut(head if sep else message, MAX_MESSAGE // 2) + cut(tail, MAX_MESSAGE // 2)
            raise argparse.ArgumentTypeError(message) from None
        except (TypeError, ValueError) as exc:  # argparse would echo the whole value
            raise argparse.ArgumentTypeError(
                f"{cut(repr(str(value)))} is invalid ({type(exc).__name__})") from None

    run.__name__ = getattr(convert, "__name__", "convert")  # argparse names the type in its messages
    return run


# ----------------------------------------------------------------------------- converters

def _text(value) -> str:
    return str(value).strip()


def integer(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A converter to an integer in ``[minimum, maximum]``."""
    accepted = Bound(minimum, maximum).accepted

    def convert(value) -> int:
        text = _text(value)
        if not re.fullmatch(r"[+-]?[0-9]+", text):  # ASCII digits only (int() takes any script's)
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; accepted: {accepted}")
        if len(text) > MAX_DIGITS:  # int() refuses over 4,300 digits with a ValueError
            raise argparse.ArgumentTypeError(f"{text!r} is out of range; accepted: {accepted}")
        number = int(text)
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is below {minimum}; accepted: {accepted}")
        if maximum is not None and number > maximum:
            raise argparse.ArgumentTypeError(f"{text!r} is above {maximum}; accepted: {accepted}")
        return number

    return convert


def number(low: float, high: float, *, low_open: bool, what: str, high_open: bool = False) -> Callable[[str], float]:
    """A converter to a finite float in ``(low, high]``, ``[low, high]`` or, ``high_open``, ``[low, high)``."""
    accepted = (f"{what} {'>' if low_open else '>='} {low:g} and < {high:g}" if high_open else
                Bound(low, high, integer=False, low_open=low_open, what=what).accepted)

    def convert(value) -> float:
        text = _text(value)
        try:
            x = float(text)
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and (x > low if low_open else x >= low) and (x < high if high_open else x <= high)):
            raise argparse.ArgumentTypeError(f"{text!r} is invalid; accepted: {accepted}")
        return x

    return convert


def bounded(name: str) -> Callable[[str], Any]:
    """The converter of the run setting ``name``, bounded as ``evaluate()`` bounds it
    (:data:`~pytest_violin.execution.bounds.RUN_BOUNDS`)."""
    bound = RUN_BOUNDS[name]
    if bound.integer:
        return integer(bound.low, bound.high)
    return number(bound.low, bound.high, low_open=bound.low_open, what=bound.what)


def choice(options: tuple) -> Callable[[str], str]:
    """A converter to one of ``options`` (case-insensitive)."""

    def convert(value) -> str:
        text = _text(value).lower()
        if text not in options:
            raise argparse.ArgumentTypeError(f"{text!r} is unknown; accepted: {', '.join(options)}")
        return text

    return convert


def nonempty(value) -> str:
    """A converter to a non-blank string."""
    text = _text(value)
    if not text:
        raise argparse.ArgumentTypeError("an empty value; accepted: a non-empty string")
    return text


def task_list(value) -> tuple:
    """``"color,shape"`` or a list ``["color", "shape"]`` as a tuple of task names."""
    parts = [str(p) for p in value] if isinstance(value, (list, tuple)) else [str(value)]
    tasks = tuple(t.strip().lower() for p in parts for t in p.split(",") if t.strip())
    if not tasks:
        raise argparse.ArgumentTypeError(
            f"{value!r} names no task; accepted: comma-separated task names such as color,shape,mask")
    return tasks


def calls_limit(value) -> float:
    """A number of generations, or ``none`` for no limit (``math.inf``)."""
    if _text(value).lower() in ("none", "unlimited"):
        return math.inf
    return bounded("max_calls")(value)


def threshold(value) -> str:
    """One ``TASK.METRIC=VALUE`` override, checked for syntax (names are checked against the suite)."""
    from ..errors import ThresholdError
    from ..thresholds import parse_thresholds
    text = str(value)
    try:
        parse_thresholds([text], None)
    except ThresholdError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _mask_header(text: str) -> str:
    """A malformed header as it may be shown: its name at most, never a value."""
    name, sep, value = text.partition(":")
    if sep:
        return f"{name}:***" if value.strip() else text
    words = text.split()
    first = words[0] if words else ""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]{0,39}", first) or any(c.isdigit() for c in first):
        return "***"
    return first + (" ***" if len(words) > 1 else "")


def header(value) -> tuple | None:
    """``'Name: value'`` as ``(name, value)``; blank lines are ``None``."""
    text = str(value)
    if not text.strip():
        return None
    name, sep, rest = text.partition(":")
    if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
        raise argparse.ArgumentTypeError(
            f"{_mask_header(text)!r} is malformed (no 'Name:' before the value); accepted: "
            f"'Name: value' (value may reference ${{ENV_VAR}})")
    return name.strip(), rest.strip()


_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f", "")


def boolean(value) -> bool:
    """true/false, yes/no, on/off, 1/0."""
    if isinstance(value, bool):
        return value
    text = _text(value).lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"{value!r} is not a boolean; accepted: true/false, yes/no, on/off, 1/0")


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``2h`` or ``1d`` (0 to 7 days)."""
    text = _text(value).strip().lower()
    unit = _UNITS.get(text[-1:]) if text else None
    try:
        seconds = float(text[:-1] if unit is not None else text) * (unit or 1)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 <= seconds <= 7 * 86400):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid; accepted: a duration such as 90s, 30m, 2h "
                                         f"or 1d (a bare number is seconds), from 0 to 7d")
    return seconds


# ----------------------------------------------------------------------------- the table

#: Default ``--violin-max-answer-mb``: the largest model answer read, in MiB.
DEFAULT_MAX_ANSWER_MB = 64
#: Largest ``--violin-max-answer-mb``.
MAX_ANSWER_MB = 1024
#: Default ``--violin-max-calls`` of adapters that bill (execution.usage.adapter_bills).
DEFAULT_NETWORK_MAX_CALLS = DEFAULT_BILLED_MAX_CALLS
#: Default ``--violin-batch-wait``: the providers' completion window.
DEFAULT_BATCH_WAIT = "24h"


@dataclass(frozen=True)
class Option:
    """One ``--violin-*`` option and its ini key."""

    name: str  # ``limit`` for ``--violin-limit`` / ini ``violin_limit``
    convert: Callable[[Any], Any]  # string (or ini list) -> value; raises ``ArgumentTypeError``
    default: Any
    help: str
    kind: str = "value"  # ``value``, ``list`` (repeatable; an ini line list) or ``flag`` (an ini boolean)
    path: bool = False  # resolved by :func:`resolve_path`
    ini_type: str = "string"  # pytest's ini type (``args`` accepts a TOML list)
    metavar: str | None = None
    adapter: bool = False  # reaches the adapters as ``AdapterOptions.extra[name]``, not the settings
    gate: bool = False  # a field of :class:`GateSettings` (else of :class:`ViolinSettings`)
    attr: str = ""  # the settings' field (default: ``name``)

    def __post_init__(self):
        # the one place every converter's message is bounded (command line and ini alike)
        object.__setattr__(self, "convert", bounded_messages(self.convert))
        object.__setattr__(self, "attr", self.attr or self.name)

    @property
    def flag(self) -> str:
        return f"--violin-{self.name.replace('_', '-')}"

    @property
    def dest(self) -> str:
        return f"violin_{self.name}"

    @property
    def ini(self) -> str:
        return _LIST_INI.get(self.name, self.dest)


#: ini keys of the repeatable options (plural, as they hold a list).
_LIST_INI = {"threshold": "violin_thresholds", "header": "violin_headers"}


def _rate(value) -> str:
    """``N/s`` or ``N/min`` (checked here; the HTTP client reads it)."""
    from ..errors import ModelSpecError
    from ..models._transport.bounds import parse_rate
    try:
        parse_rate(_text(value))
    except ModelSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return _text(value)


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
    Option("metadata", nonempty, None,
           "the official Violin data's folder of metadata CSVs (prompts by id; default: "
           "metadata/ beside the parquet or the converted folder)", path=True, metavar="DIR"),
    Option("tasks", task_list, None,
           "comma-separated tasks to run (default: all); in pyproject.toml also a list",
           ini_type="args", metavar="LIST"),
    Option("limit", bounded("limit"), None, "run a stratified subset of N samples", metavar="N"),
    Option("shard", _shard, None,
           "run part K of N of the selection (after --violin-tasks and --violin-limit): a split "
           "stratified by task and variation, the same on every machine; merge the parts' "
           "--violin-report folders with 'python -m pytest_violin merge'", metavar="K/N"),
    Option("seed", bounded("seed"), 0, "run seed; per-sample seeds derive from it (default 0)", metavar="N"),
    Option("profile", choice(PROFILES), "violin", "metric profile: violin or strict"),
    Option("repeats", bounded("repeats"), 1, f"images per sample (default 1, at most {MAX_REPEATS})",
           metavar="K"),
    Option("pass_rule", choice(PASS_RULES), "mean",
           "with repeats: pass on the mean over repeats or on the worst repeat (mean|worst)"),
    Option("save_outputs", nonempty, None, "write every generated image as DIR/<sample id>.png",
           path=True, metavar="DIR"),
    Option("concurrency", bounded("concurrency"), 4,
           f"generations in flight per process (default 4, at most {MAX_CONCURRENCY})", metavar="N"),
    Option("timeout", bounded("timeout"), 120.0,
           "deadline in seconds for one HTTP attempt, connection and whole body included; one "
           "sample's attempts and retry waits together take at most twice that; also the longest "
           "wait for one call of a python: model (default 120)",
           metavar="S"),
    Option("retries", bounded("retries"), 3, "retries on transient HTTP failures (default 3)",
           metavar="N"),
    Option("request_template", nonempty, None, "JSON body template FILE for the http adapter",
           path=True, metavar="FILE"),
    Option("response_path", nonempty, None, "where the image is in a JSON response, e.g. data.0.b64_json",
           metavar="PATH"),
    Option("cache_dir", nonempty, None, "image cache directory (default: pytest cache dir/violin-images)",
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
           "one per line)", kind="list", metavar="TASK.METRIC=VALUE", attr="thresholds"),
    Option("header", header, (),
           "extra HTTP header (repeatable); VALUE may use ${ENV_VAR} (ini: violin_headers, one per line)",
           kind="list", metavar="'NAME: VALUE'", attr="headers"),
    # generic job polling (http adapter):
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
    # comfyui, replicate:
    Option("workflow", nonempty, None,
           "ComfyUI workflow FILE (API format) with placeholders {prompt}, {seed}, {width}, {height}, "
           "{image}, {mask} for the comfyui adapter", path=True, adapter=True, metavar="FILE"),
    Option("replicate_input", nonempty, None,
           "JSON FILE of the replicate adapter's input object, with --violin-request-template "
           "placeholders ({images[N]} is a data URI)", path=True, adapter=True, metavar="FILE"),
    # money:
    Option("price", bounded("price"), None,
           "estimated price in USD of one generated image: the plan line states the estimated cost of "
           "the uncached generations, the reports the cost of those made (no default)", metavar="USD"),
    Option("max_cost", bounded("max_cost"), None,
           "refuse to start when the estimated cost of the uncached generations (--violin-price) "
           "exceeds USD", metavar="USD"),
    # compare this run with others (and the paper's rows)
    Option("compare", nonempty, (),
           "print this run side by side with RUN (a --violin-report folder or results.json, or a "
           "baseline file; 'paper' for the paper's published rows) after the summary, and add it to "
           "summary.md and report.html (repeatable)", kind="list", metavar="RUN", gate=True),
    # the regression gate and reports
    Option("save_baseline", nonempty, None, "write a baseline of this run to PATH (JSON)", path=True,
           metavar="PATH", gate=True),
    Option("baseline", nonempty, None,
           "compare this run with the baseline at PATH; credible regressions fail the session",
           path=True, metavar="PATH", gate=True),
    Option("max_regression", number(0.0, 1.0, low_open=False, what="a number"), DEFAULT_MAX_REGRESSION,
           "the margin of the mean metric: a task or variation regresses when its mean is shown to "
           f"worsen by more than this (default {DEFAULT_MAX_REGRESSION})", metavar="FLOAT", gate=True),
    Option("max_pass_drop", number(0.0, 1.0, low_open=False, what="a share"), DEFAULT_MAX_PASS_DROP,
           "the margin of the pass rate: a task or variation regresses when its share of samples within "
           f"their limits is shown to fall by more than this (default {DEFAULT_MAX_PASS_DROP}: 5 points)",
           metavar="SHARE", gate=True),
    Option("max_refusal_rise", number(0.0, 1.0, low_open=False, what="a share"), DEFAULT_MAX_REFUSAL_RISE,
           "the margin of the refusal rate: a task regresses when its share of refused samples is shown to "
           f"rise by more than this (default {DEFAULT_MAX_REFUSAL_RISE}: 1 point; a guardrail of tasks of at "
           "least 3/SHARE samples, a harm test elsewhere)", metavar="SHARE", gate=True),
    Option("power", number(0.5, 1.0, low_open=False, high_open=True, what="a probability"), DEFAULT_POWER,
           "the power the gate plans sample sizes for: the chance that an unchanged model is shown within "
           f"the margins (default {DEFAULT_POWER})", metavar="P", gate=True),
    Option("accept_not_shown", boolean, False,
           "with --violin-baseline: pass a run in which nothing regressed even though some guardrail was "
           "not shown within its margin (too few samples for the noise); the gate's verdict names it",
           kind="flag", gate=True),
    Option("allow_mismatch", boolean, False,
           "with --violin-baseline: decide even when a task shares too few samples with the baseline "
           "to show a regression of the margins (another seed, suite or selection; docs/gating.md)",
           kind="flag", gate=True),
    Option("sequential", boolean, False,
           "with --violin-baseline: generate the samples in a seeded random order and stop as soon as "
           "an anytime-valid test decides every task and variation (docs/gating.md); samples not "
           "needed are skipped", kind="flag", gate=True),
    Option("alpha", number(0.0, MAX_ALPHA, low_open=True, what="an error rate"), DEFAULT_ALPHA,
           "the gate's error rate over all its groups and statistics together: the chance of failing a "
           "model that did not get worse, and (sequential) of passing one that did "
           f"(default {DEFAULT_ALPHA})", metavar="ALPHA", gate=True),
    Option("report", nonempty, None, "write results.json, report.html and summary.md into DIR",
           path=True, metavar="DIR", gate=True),
    Option("batch", boolean, False,
           "make the uncached generations through the provider's batch API (openai:, gemini:, or an "
           "adapter with batch_api()): half price, answers within the provider's window; batches are "
           "recorded in the cache folder and the same command collects them (docs/models.md, Batch)",
           kind="flag"),
    Option("batch_wait", duration, duration(DEFAULT_BATCH_WAIT),
           "with --violin-batch: how long this run waits for its batches (90s, 30m, 2h, 1d; default "
           f"{DEFAULT_BATCH_WAIT}); then it ends with exit code 8 and the batches keep running",
           metavar="DURATION"),
    Option("batch_discount", number(0.0, 1.0, low_open=False, what="a share of the price"), None,
           "with --violin-batch and --violin-price: the share the provider takes off a batch request "
           "(default: the adapter's, 0.5 for openai: and gemini:)", metavar="SHARE"),
)


def adapter_option_names() -> tuple[str, ...]:
    """Names of the options passed to the adapters in ``AdapterOptions.extra``."""
    return tuple(o.name for o in OPTIONS if o.adapter)


def add_options(parser) -> None:
    """Declare every option of :data:`OPTIONS` and its ini key with pytest."""
    group = parser.getgroup("violin", "pytest-violin: visual obedience benchmark")
    for opt in OPTIONS:
        key = opt.ini
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
        raw = config.getini(opt.ini)
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
        raise pytest.UsageError(f"ini key {opt.ini}: {exc}") from None


def read_option(config, name: str) -> tuple[Any, bool]:
    """The value of option ``name`` and whether it came from the ini file."""
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
        raise pytest.UsageError(f"{opt.flag}={cut(repr(str(path)))}: the path cannot be looked "
                                f"at ({exc.strerror or exc}); accepted: a usable path") from None


def resolve_path(config, value, *, from_ini: bool = False) -> Path:
    """``value`` as an absolute path."""
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

# ----------------------------------------------------------------------------- the settings


def _settings_class(name: str, gate: bool, derived: list, doc: str, **namespace) -> type:
    """A frozen dataclass with one field per option of the table (``gate`` or not, adapters'
    options apart), with the option's default, and the ``derived`` fields."""
    fields = [(o.attr, Any, dataclasses.field(default=o.default)) for o in OPTIONS
              if o.gate == gate and not o.adapter]
    return dataclasses.make_dataclass(name, fields + derived, frozen=True,
                                      namespace={"__doc__": doc, "__module__": __name__, **namespace})


#: The parsed and validated run options (one field per option of :data:`OPTIONS`, and where the
#: model and suite came from: relative paths in an ini file are relative to it).
ViolinSettings = _settings_class(
    "ViolinSettings", False,
    [("model_from_ini", bool, False), ("suite_from_ini", bool, False), ("max_calls_given", bool, False)],
    "The parsed and validated ``--violin-*`` run options (:data:`OPTIONS`).")

#: The parsed gate and report options (the gate's run state is in ``_gate.GateState``).
GateSettings = _settings_class(
    "GateSettings", True, [("baseline_label", Any, None)],
    "The parsed gate and report options (:data:`OPTIONS` marked ``gate``).",
    active=property(lambda self: bool(self.save_baseline or self.baseline or self.report),
                    doc="True when any gate option was given."))


def _raw_text(config, name: str) -> str:
    """The option's text as the user gave it, for messages."""
    value = config.getoption(f"violin_{name}", default=None)
    return str(value) if value is not None else str(config.getini(f"violin_{name}"))


def _usage(config, name: str, problem: str, accepted: str) -> pytest.UsageError:
    flag = f"--violin-{name.replace('_', '-')}"
    return pytest.UsageError(f"{flag}={cut(repr(_raw_text(config, name)))}: {problem}; "
                             f"accepted: {accepted}")


def _read_part(config, gate: bool) -> tuple[dict, dict]:
    """The values of the settings' options (by field) and whether each came from the ini file."""
    values, from_ini = {}, {}
    for opt in OPTIONS:
        if opt.gate == gate and not opt.adapter:
            values[opt.attr], from_ini[opt.attr] = read_option(config, opt.name)
    return values, from_ini


def parse_settings(config) -> ViolinSettings:
    """Read every run option; raise ``pytest.UsageError`` on bad values."""
    values, from_ini = _read_part(config, gate=False)
    for name in ("save_outputs", "cache_dir"):
        folder = values[name]
        if folder is not None and folder.exists() and not folder.is_dir():
            raise _usage(config, name, f"{str(folder)!r} is not a directory", "a directory path (created if missing)")
    template = values["request_template"]
    if template is not None and not template.is_file():
        problem = (f"{str(template)!r} is not a regular file" if template.exists()
                   else f"file {str(template)!r} does not exist")
        raise _usage(config, "request_template", problem, "a JSON template file")
    metadata = values["metadata"]
    if metadata is not None and not metadata.is_dir():
        raise _usage(config, "metadata", f"{str(metadata)!r} is not a directory",
                     "the folder of the official data's *metadata*.csv files")
    if values["max_cost"] is not None and values["price"] is None:
        # a cap with no estimate to hold it against would look like a cap and never trip
        raise pytest.UsageError(
            f"--violin-max-cost={values['max_cost']:g} needs a price to estimate the cost against; "
            f"accepted: --violin-price=USD (per image, e.g. --violin-price=0.04) beside it, or no "
            f"--violin-max-cost")
    max_calls = values["max_calls"]  # None: the adapter's default; inf: 'none', no limit
    values["max_calls"] = None if max_calls in (None, math.inf) else int(max_calls)
    return ViolinSettings(**values, model_from_ini=from_ini["model"], suite_from_ini=from_ini["suite"],
                          max_calls_given=max_calls is not None)


def parse_gate_settings(config) -> GateSettings:
    """Read the gate and report options; raise ``pytest.UsageError`` on bad values."""
    values, _ = _read_part(config, gate=True)
    save, report, baseline = values["save_baseline"], values["report"], values["baseline"]
    if save is not None and save.is_dir():
        raise _usage(config, "save_baseline", f"{str(save)!r} is a directory",
                     "a file path (e.g. baselines/violin.json; parent directories are created)")
    if report is not None and report.exists() and not report.is_dir():
        raise _usage(config, "report", f"{str(report)!r} is a file", "a directory (created if missing)")
    if values["sequential"] and baseline is None:
        raise pytest.UsageError("--violin-sequential needs a baseline to decide against; accepted: "
                                "--violin-baseline=PATH beside it (ini violin_baseline), or no "
                                "--violin-sequential")
    shard, _ = read_option(config, "shard")
    if values["sequential"] and shard is not None:
        # each shard would stop on its own evidence: N gates, none deciding the whole run
        raise pytest.UsageError(f"--violin-sequential cannot run in a shard (--violin-shard={shard}): "
                                f"the sequential gate decides on the whole run's samples as they come; "
                                f"accepted: --violin-sequential without --violin-shard, or shards "
                                f"merged and gated with 'python -m pytest_violin merge' and 'gate'")
    return GateSettings(**values, baseline_label=None if baseline is None else _raw_text(config, "baseline"))
