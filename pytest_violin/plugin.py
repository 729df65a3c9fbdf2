"""pytest plugin entry point (``pytest11: violin``).

Without a configured model (``--violin-model`` or the ``violin_model`` ini
key) this module changes nothing in a pytest run: it declares its options,
its marker and its fixtures, and imports nothing heavy (numpy, OpenCV, the
suite) until a hook actually needs it. All run state lives in
``config.stash``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .results import RESULTS_KEY, ResultsStore, SampleResult

__all__ = ["ViolinSettings", "ViolinState", "STATE_KEY", "parse_settings", "get_state"]

PROFILES = ("violin", "strict")
PASS_RULES = ("mean", "worst")

# (option, ini name, ini type, default, help)
_OPTIONS = [
    ("model", "violin_model", "string", None,
     "model SPEC: oracle, python:MODULE:ATTR, dir:PATH, http(s)://URL, openai:MODEL, a1111:URL, "
     "diffusers:PATH_OR_ID or a third-party SCHEME:TARGET. Turns the Violin suite into tests."),
    ("suite", "violin_suite", "string", "violin",
     "suite name (violin, violin-extra) or manifest path (default: violin)"),
    ("tasks", "violin_tasks", "string", None, "comma-separated tasks to run (default: all)"),
    ("limit", "violin_limit", "string", None, "run a stratified subset of N samples"),
    ("seed", "violin_seed", "string", "0", "run seed; per-sample seeds derive from it (default 0)"),
    ("profile", "violin_profile", "string", "violin", "metric profile: violin or strict"),
    ("repeats", "violin_repeats", "string", "1", "images per sample (default 1)"),
    ("pass_rule", "violin_pass_rule", "string", "mean",
     "with repeats: pass on the mean over repeats or on the worst repeat (mean|worst)"),
    ("save_outputs", "violin_save_outputs", "string", None,
     "write every generated image as DIR/<sample id>.png"),
    ("concurrency", "violin_concurrency", "string", "4", "generations in flight (default 4)"),
    ("timeout", "violin_timeout", "string", "120", "seconds per HTTP request (default 120)"),
    ("retries", "violin_retries", "string", "3", "retries on transient HTTP failures (default 3)"),
    ("request_template", "violin_request_template", "string", None,
     "JSON body template FILE for the http adapter"),
    ("response_path", "violin_response_path", "string", None,
     "where the image is in a JSON response, e.g. data.0.b64_json"),
    ("cache_dir", "violin_cache_dir", "string", None,
     "image cache directory (default: pytest cache dir/violin-images)"),
]


def pytest_addoption(parser):
    group = parser.getgroup("violin", "pytest-violin: visual obedience benchmark")
    for name, ini, kind, default, help_text in _OPTIONS:
        group.addoption(f"--violin-{name.replace('_', '-')}", dest=f"violin_{name}", default=None,
                        metavar=name.upper().replace("_", "-"), help=help_text + f" [ini: {ini}]")
        parser.addini(ini, help_text, type=kind, default=default)
    group.addoption("--violin-threshold", dest="violin_threshold", action="append", default=[],
                    metavar="TASK.METRIC=VALUE",
                    help="override a limit, e.g. color.sd=0.02 or shape.mean=0.1 (repeatable) "
                         "[ini: violin_thresholds, one per line]")
    parser.addini("violin_thresholds", "limit overrides TASK.METRIC=VALUE, one per line", type="linelist",
                  default=[])
    group.addoption("--violin-header", dest="violin_header", action="append", default=[],
                    metavar="'NAME: VALUE'",
                    help="extra HTTP header (repeatable); VALUE may use ${ENV_VAR} "
                         "[ini: violin_headers, one per line]")
    parser.addini("violin_headers", "extra HTTP headers 'Name: value', one per line", type="linelist",
                  default=[])
    group.addoption("--violin-no-cache", dest="violin_no_cache", action="store_true", default=None,
                    help="do not read or write the image cache [ini: violin_no_cache]")
    parser.addini("violin_no_cache", "disable the image cache", type="bool", default=False)


def pytest_addhooks(pluginmanager):
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)
    if not pluginmanager.has_plugin("pytest_violin.fixtures"):
        pluginmanager.import_plugin("pytest_violin.fixtures")
    try:
        found = importlib.util.find_spec("pytest_violin.gate_plugin") is not None
    except (ImportError, ValueError):  # pragma: no cover
        found = False
    if found and not pluginmanager.has_plugin("pytest_violin.gate_plugin"):
        pluginmanager.import_plugin("pytest_violin.gate_plugin")


# --------------------------------------------------------------------------- settings
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


def _raw(config, name, ini):
    value = config.getoption(f"violin_{name}", default=None)
    if value is None:
        value = config.getini(ini)
    if isinstance(value, str):
        value = value.strip()
        if value == "":
            return None
    return value


def _int(name, value, minimum):
    flag = f"--violin-{name.replace('_', '-')}"
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{flag}={value!r} is not an integer; accepted: an integer >= {minimum}") from None
    if number < minimum:
        raise pytest.UsageError(f"{flag}={value!r} is below {minimum}; accepted: an integer >= {minimum}")
    return number


def _path(config, value) -> Path:
    path = Path(os.path.expanduser(str(value)))
    if not path.is_absolute():
        path = Path(config.invocation_params.dir) / path
    return path


def parse_settings(config) -> ViolinSettings:
    """Read every ``--violin-*`` option and ini key; raise ``pytest.UsageError`` on bad values."""
    from .thresholds import parse_thresholds
    from .errors import ThresholdError

    model = _raw(config, "model", "violin_model")
    suite = _raw(config, "suite", "violin_suite") or "violin"
    tasks_raw = _raw(config, "tasks", "violin_tasks")
    tasks = None
    if tasks_raw is not None:
        tasks = tuple(t.strip().lower() for t in str(tasks_raw).split(",") if t.strip())
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
    concurrency = 4 if conc_raw is None else _int("concurrency", conc_raw, 1)
    retries_raw = _raw(config, "retries", "violin_retries")
    retries = 3 if retries_raw is None else _int("retries", retries_raw, 0)
    timeout_raw = _raw(config, "timeout", "violin_timeout")
    timeout = 120.0
    if timeout_raw is not None:
        try:
            timeout = float(timeout_raw)
        except (TypeError, ValueError):
            timeout = float("nan")
        if not timeout > 0 or timeout == float("inf"):
            raise pytest.UsageError(
                f"--violin-timeout={timeout_raw!r} is invalid; accepted: a number of seconds > 0")
    save = _raw(config, "save_outputs", "violin_save_outputs")
    save_outputs = None if save is None else _path(config, save)
    if save_outputs is not None and save_outputs.exists() and not save_outputs.is_dir():
        raise pytest.UsageError(
            f"--violin-save-outputs={save!r}: {str(save_outputs)!r} is not a directory; accepted: a "
            f"directory path (created if missing)")
    tmpl = _raw(config, "request_template", "violin_request_template")
    request_template = None
    if tmpl is not None:
        request_template = _path(config, tmpl)
        if not request_template.is_file():
            raise pytest.UsageError(
                f"--violin-request-template={tmpl!r}: file {str(request_template)!r} does not exist; "
                f"accepted: a JSON template file")
    response_path = _raw(config, "response_path", "violin_response_path")
    cache = _raw(config, "cache_dir", "violin_cache_dir")
    cache_dir = None if cache is None else _path(config, cache)
    no_cache = bool(config.getoption("violin_no_cache", default=None) or config.getini("violin_no_cache"))

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
                f"--violin-header={_mask_header(text)!r} is malformed; accepted: 'Name: value' "
                f"(value may reference ${{ENV_VAR}})")
        headers.append((name.strip(), value.strip()))
    return ViolinSettings(
        model=model, suite=suite, tasks=tasks, limit=limit, seed=seed, profile=profile,
        repeats=repeats, pass_rule=rule, save_outputs=save_outputs, concurrency=concurrency,
        timeout=timeout, retries=retries, request_template=request_template,
        response_path=response_path, cache_dir=cache_dir, no_cache=no_cache,
        thresholds=tuple(threshold_texts), headers=tuple(headers),
    )


def _mask_header(text: str) -> str:
    name, sep, value = text.partition(":")
    return f"{name}:***" if sep and value.strip() else text


# --------------------------------------------------------------------------- state
@dataclass
class ViolinState:
    """Run state of one process (kept in ``config.stash[STATE_KEY]``)."""

    config: object
    settings: ViolinSettings
    samples: list | None = None
    limits: dict = field(default_factory=dict)
    adapter: object = None
    runner: object = None
    store: ResultsStore = field(default_factory=ResultsStore)
    suite_cache: dict = field(default_factory=dict)
    index: dict = field(default_factory=dict)
    interactor: object = None
    identity: str | None = None

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @property
    def is_xdist_controller(self) -> bool:
        cfg = self.config
        if self.is_worker:
            return False
        dist = getattr(cfg.option, "dist", "no")
        numproc = getattr(cfg.option, "numprocesses", None)
        tx = getattr(cfg.option, "tx", None)
        return dist != "no" and bool(numproc or tx)

    def adapter_options(self):
        from .models.registry import AdapterOptions

        cfg, s = self.config, self.settings
        paths = [str(cfg.rootpath), str(cfg.invocation_params.dir)]
        for arg in getattr(cfg, "args", ()) or ():
            p = _path(cfg, str(arg).split("::")[0])
            paths.append(str(p if p.is_dir() else p.parent))
        for tp in cfg.getini("testpaths") or ():
            paths.append(str(cfg.rootpath / tp))
        return AdapterOptions(
            rootdir=Path(cfg.rootpath), headers=s.headers, timeout=s.timeout, retries=s.retries,
            request_template=s.request_template, response_path=s.response_path,
            concurrency=s.concurrency, extra={"python_paths": tuple(dict.fromkeys(paths))},
        )

    def resolve_adapter(self, spec: str):
        from .errors import ModelSpecError
        from .models.registry import resolve_model

        try:
            return resolve_model(spec, self.adapter_options())
        except ModelSpecError as exc:
            raise pytest.UsageError(f"--violin-model={_redact(spec)!r}: {_redact(str(exc))}") from None

    def get_adapter(self):
        if self.adapter is None:
            self.adapter = self.resolve_adapter(self.settings.model or "oracle")
            self.identity = _redact(str(getattr(self.adapter, "identity", self.settings.model or "oracle")))
        return self.adapter

    def get_runner(self):
        if self.runner is None:
            from .runner import Runner

            s = self.settings
            self.runner = Runner(self.get_adapter(), concurrency=s.concurrency, cache=self._make_cache(),
                                 base_seed=s.seed, repeats=s.repeats, save_outputs=s.save_outputs)
        return self.runner

    def _make_cache(self):
        s = self.settings
        if s.no_cache or getattr(self.get_adapter(), "cacheable", True) is False:
            return None
        try:
            from .cache import ImageCache
        except ImportError:
            return None
        root = s.cache_dir
        if root is None:
            cache = getattr(self.config, "cache", None)
            if cache is not None:
                root = Path(cache.mkdir("violin-images"))
            else:
                root = Path(self.config.rootpath) / ".pytest_cache" / "violin-images"
        return ImageCache(root)

    def load(self, tasks=None, limit=None):
        """Load (and memoize) a selection of the configured suite."""
        key = (self.settings.suite, tasks, limit, self.settings.seed)
        if key not in self.suite_cache:
            self.suite_cache[key] = _load_suite(self.settings, tasks, limit, self.config)
        return self.suite_cache[key]

    def metric_table(self, samples=None) -> dict:
        from .thresholds import KNOWN_METRICS

        table = {k: tuple(v) for k, v in KNOWN_METRICS.items()}
        for s in samples if samples is not None else (self.samples or ()):
            table.setdefault(s.task, tuple(s.metric_names))
        return table

    def close(self):
        if self.runner is not None:
            self.runner.close()
            self.runner = None
        if self.adapter is not None:
            close = getattr(self.adapter, "close", None)
            self.adapter = None
            if callable(close):
                try:
                    close()
                except Exception:
                    pass


STATE_KEY = pytest.StashKey[ViolinState]()


def get_state(config) -> ViolinState:
    """The :class:`ViolinState` of ``config`` (created on first use)."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        state = ViolinState(config=config, settings=parse_settings(config))
        config.stash[STATE_KEY] = state
    return state


def _redact(text: str) -> str:
    from .secrets import redact

    return redact(text)


def _load_suite(settings, tasks, limit, config):
    from .errors import SuiteError
    from .suite import load_suite

    name = settings.suite
    target = name
    candidate = _path(config, name)
    if ("/" in name or name.endswith((".json", ".jsonl", ".yaml", ".yml", ".toml"))) and candidate.exists():
        target = str(candidate)
    try:
        return load_suite(target, tasks=tasks, limit=limit, seed=settings.seed)
    except (SuiteError, ValueError, OSError) as exc:
        opt = f"--violin-suite={name!r}"
        if tasks:
            opt += f" --violin-tasks={','.join(tasks)!r}"
        if limit is not None:
            opt += f" --violin-limit={limit}"
        raise pytest.UsageError(f"{opt}: {exc}") from None


# --------------------------------------------------------------------------- configure
def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "violin(tasks=None, limit=None, thresholds=None): select the Violin samples that the "
        "violin_sample fixture is parametrized over, and the limits violin_check applies",
    )
    state = get_state(config)  # parses and validates every option (UsageError on bad values)
    config.stash[RESULTS_KEY] = state.store
    if not state.is_worker:
        config.pluginmanager.register(_ResultsCollector(state.store), "violin-results-collector")
    if not state.settings.model:
        return
    from .errors import ThresholdError
    from .thresholds import build_limits, parse_thresholds

    adapter = state.resolve_adapter(state.settings.model)
    state.identity = _redact(str(getattr(adapter, "identity", state.settings.model)))
    if state.is_xdist_controller:
        # validated; the workers build their own adapters
        close = getattr(adapter, "close", None)
        if callable(close):
            close()
    else:
        state.adapter = adapter
    state.samples = state.load(state.settings.tasks, state.settings.limit)
    state.index = {s.id: i for i, s in enumerate(state.samples)}
    try:
        overrides = parse_thresholds(state.settings.thresholds, state.metric_table())
    except ThresholdError as exc:
        raise pytest.UsageError(f"--violin-threshold: {exc}") from None
    state.limits = build_limits(overrides)


def pytest_unconfigure(config):
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()


def pytest_report_header(config):
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.settings.model:
        return None
    s = state.settings
    n = len(state.samples or ())
    return (f"violin: model={_redact(s.model)} suite={s.suite} samples={n} profile={s.profile} "
            f"seed={s.seed} repeats={s.repeats}")


# --------------------------------------------------------------------------- collection
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.settings.model or not state.samples:
        return
    from .collect import make_items

    new_items = make_items(session, state.samples)
    items.extend(new_items)
    # tell the terminal (and --lf bookkeeping) about them, like a collected module
    session.ihook.pytest_collectreport(
        report=pytest.CollectReport("violin", "passed", None, new_items))


def pytest_generate_tests(metafunc):
    if "violin_sample" not in metafunc.fixturenames:
        return
    from .fixtures import marker_selection

    state = get_state(metafunc.config)
    tasks, limit, _ = marker_selection(metafunc.definition, state)
    samples = state.load(tasks, limit)
    metafunc.parametrize("violin_sample", samples, ids=[s.id for s in samples])


# --------------------------------------------------------------------------- running
def _planned_sample(item):
    sample = getattr(item, "violin_sample", None)
    if sample is not None:
        return sample
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "violin_generate" in getattr(item, "fixturenames", ()):
        return callspec.params.get("violin_sample")
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    state = session.config.stash.get(STATE_KEY, None)
    if state is None or state.is_worker or session.config.option.collectonly:
        return None
    samples = [s for s in map(_planned_sample, session.items) if s is not None]
    if samples:
        state.get_runner().plan(samples)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    state = item.config.stash.get(STATE_KEY, None)
    if state is None or not state.is_worker:
        return None
    # xdist worker: plan only items this worker has been given (see docs/plugin.md)
    window = [item, nextitem]
    dist = getattr(item.config.option, "dist", "load")
    if dist != "worksteal":
        queue = _worker_queue(state)
        if queue is not None:
            items = item.session.items
            runner_window = 2 * state.settings.concurrency + 2
            with queue.lock() as pending:
                head = list(itertools.islice(pending, runner_window))
            window.extend(items[i] for i in head if isinstance(i, int) and 0 <= i < len(items))
    samples = [s for s in map(_planned_sample, (w for w in window if w is not None)) if s is not None]
    if samples:
        state.get_runner().plan(samples)
    return None


def _worker_queue(state):
    if state.interactor is None:
        for plugin in state.config.pluginmanager.get_plugins():
            if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "torun"):
                state.interactor = plugin
                break
        else:
            state.interactor = False
    if not state.interactor:
        return None
    queue = getattr(state.interactor, "torun", None)
    return queue if hasattr(queue, "lock") else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call":
        text = item.__dict__.pop("_violin_result_json", None)
        if text is not None:
            outcome.get_result().violin_result = text


class _ResultsCollector:
    """Fills the results store from reports (registered per config, not in workers)."""

    def __init__(self, store):
        self.store = store

    def pytest_runtest_logreport(self, report):
        text = getattr(report, "violin_result", None)
        if text and report.when == "call":
            self.store.add(SampleResult.from_json(text))


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    if state.runner is not None:
        state.runner.close()
    if hasattr(config, "workerinput"):
        return
    if len(state.store) or state.settings.model:
        config.hook.pytest_violin_session_results(config=config, store=state.store)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):
        return
    state = config.stash.get(STATE_KEY, None)
    if state is None or not len(state.store):
        return
    from .report.terminal import write_summary

    write_summary(terminalreporter, state.store, settings=state.settings)
