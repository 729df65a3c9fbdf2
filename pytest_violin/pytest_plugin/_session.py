"""The plugin's session: the run's state and the home of its hooks."""

from __future__ import annotations

import itertools
import threading
from contextlib import suppress
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from ..execution.usage import CallCounter
from ..redaction import redact_userinfo as redact  # URL passwords and registered secrets masked
from ..report.text import printable
from ..results import ResultsStore, SampleResult
from ._gate import GateState
from ._items import (RESULT_KEY, BuiltinScope, builtin_scope, dataset_lines, is_violin, load_suite, make_items,
                     official_dataset)
from ._options import GateSettings, ViolinSettings, resolve_path
from ._planning import announce_plan
from ._signals import SessionSignals

if TYPE_CHECKING:
    from ..execution.runner import Runner
    from ..execution.usage import CountingAdapter
    from ._sequential import SequentialRun

__all__ = ["SESSION_KEY", "ViolinSession", "redact", "session_of"]

#: Seconds the end of a stopped run (``-x``, a cap) waits for calls in flight to end,
#: so the totals count what the server received; none after Ctrl-C.
_SETTLE_SECONDS = 5.0
#: ``workerinput`` key: the folder of claims through which xdist workers share the call cap.
_CALLS_DIR = "violin_calls_dir"


class ViolinSession:
    """The run of one process: its state, and its hooks when a model is configured."""

    def __init__(self, config: pytest.Config, settings: ViolinSettings, gate_settings: GateSettings):
        self.config = config
        self.settings = settings
        self.gate = GateState.load(config, gate_settings)
        self.is_worker = hasattr(config, "workerinput")
        self.is_xdist_controller = _is_xdist_controller(config)
        self.samples: list | None = None
        self.limits: dict = {}
        self.adapter: CountingAdapter | None = None
        self.runner: Runner | None = None
        self.store = ResultsStore()
        self.suite_cache: dict = {}
        self.index: dict = {}  # sample id -> its place in self.samples
        self.identity: str | None = None
        self.scope: BuiltinScope | None = None
        self.network = False
        #: the default --violin-max-calls applies (execution.usage.adapter_bills)
        self.bills = False
        self.cacheable = True
        self.cancel = threading.Event()
        #: the token of the profile's image reader (imaging.use_reader), given back by close
        self.reader_token = None
        #: every model call of this process, counted and capped where it is made
        #: (pytest_violin.execution.usage); see counted() and the plan's call cap
        self.usage = CallCounter()
        #: sample id -> images the cache holds, asked before the run (_planning.cached_repeats); None
        #: once the runner exists, when the cache starts to change
        self.cache_lookups: dict | None = {}
        #: ``--violin-shard``: the whole selection this run is a part of (``index``, ``total``,
        #: ``selected``, ``digest``, for results.json), and each sample's place in it; None unsharded
        self.shard_meta: dict | None = None
        self.positions: dict | None = None
        #: lines the adapter gives about where it runs (diffusers' device=auto: a worker's GPU)
        self.placement: tuple = ()
        self.sequential: SequentialRun | None = None
        #: --violin-batch (_batch): the provider's discount and service, the driver, the runner's adapter
        self.batch_discount: float | None = None
        self.batch_name: str | None = None
        self.batch = None
        self.batch_answers = None
        self.signals = SessionSignals(config, self)  # its handlers installed by start()
        self._interactor = None  # xdist's WorkerInteractor (worker), False when there is none
        self._announced = False  # xdist controller: the plan was printed
        self._calls_dir: str | None = None
        if gate_settings.sequential:  # the samples in a seeded order, no more once decided
            if not settings.model:
                raise pytest.UsageError("--violin-sequential decides on generated images; accepted: "
                                        "--violin-model=SPEC beside it, or no --violin-sequential")
            from ._sequential import SequentialRun
            self.sequential = SequentialRun(config, self)

    @property
    def admit(self):
        """``admit(sample_id) -> bool`` for the runner's prefetch (the sequential gate's; None: all)."""
        return None if self.sequential is None else self.sequential.admit

    def counted(self, adapter):
        """``adapter`` with every ``generate`` counted and capped by :attr:`usage`."""
        from ..execution.usage import CountingAdapter
        return adapter if isinstance(adapter, CountingAdapter) else CountingAdapter(adapter, self.usage)

    def adapter_options(self):
        from ..models.registry import AdapterOptions
        cfg, s = self.config, self.settings
        paths = [str(cfg.rootpath), str(cfg.invocation_params.dir)]
        for arg in getattr(cfg, "args", ()) or ():
            p = resolve_path(cfg, str(arg).split("::")[0])
            paths.append(str(p if p.is_dir() else p.parent))
        for tp in cfg.getini("testpaths") or ():
            paths.append(str(cfg.rootpath / tp))
        from ._options import adapter_option_names, read_option
        extra = {"python_paths": tuple(dict.fromkeys(paths)), "xdist": self._xdist_worker()}
        for name in adapter_option_names():  # options declared with adapter=True
            extra[name] = read_option(cfg, name)[0]
        return AdapterOptions(
            rootdir=Path(cfg.rootpath), basedir=resolve_path(cfg, ".", from_ini=s.model_from_ini),
            headers=s.headers, timeout=s.timeout, retries=s.retries,
            request_template=s.request_template, response_path=s.response_path,
            concurrency=s.concurrency, extra=extra,
            cancel=self.cancel, max_answer_bytes=s.max_answer_mb * 2**20,
        )

    def _xdist_worker(self):
        """``(worker id, worker count)`` for adapters that place work per worker (diffusers'
        ``device=auto``): a worker's from ``workerinput``, the controller's count from its
        ``--tx`` list (``-n N``); None without pytest-xdist."""
        given = getattr(self.config, "workerinput", None)
        if given is not None:
            return given.get("workerid"), given.get("workercount")
        if self.is_xdist_controller:
            return None, len(getattr(self.config.option, "tx", None) or ()) or None
        return None

    def run_price(self) -> float | None:
        """USD per image this run pays: ``--violin-price``, less the batch discount in a batch run."""
        price, discount = self.settings.price, self.batch_discount
        return price if price is None or discount is None else float(price) * (1.0 - discount)

    def take_shard(self, samples, *, record: bool = False) -> list:
        """The part of ``samples`` that ``--violin-shard`` asks for (all of them without it).

        With ``record``, ``samples`` is the run's built-in selection: what it is (its size and
        digest) goes into results.json, so that ``python -m pytest_violin merge`` can check that
        the parts it is given are those of one run, and the samples keep their places in it (the
        merged run lists them as one run would).
        """
        shard = self.settings.shard
        if shard is None:
            return list(samples)
        from ..suite.shard import select_shard, selection_digest

        if record:
            self.shard_meta = {"index": shard.index, "total": shard.total, "selected": len(samples),
                               "digest": selection_digest(samples)}
            self.positions = {s.id: i for i, s in enumerate(samples)}
        return select_shard(samples, shard)

    def resolve_adapter(self, spec: str):
        from ..errors import ModelSpecError
        from ..models.registry import resolve_model
        try:
            return resolve_model(spec, self.adapter_options())
        except ModelSpecError as exc:
            raise pytest.UsageError(f"--violin-model={redact(spec, loose=True)!r}: "
                                   f"{redact(str(exc), loose=True)}") from None

    def get_adapter(self):
        if self.adapter is None:
            self.adapter = self.counted(self.resolve_adapter(self.settings.model or "oracle"))
            self.identity = redact(str(getattr(self.adapter, "identity", self.settings.model or "oracle")))
        return self.adapter

    def get_runner(self):
        if self.runner is None:
            from ..execution.runner import Runner
            self.cache_lookups = None  # generations fill the cache from here on
            s = self.settings
            adapter = self.batch_answers if self.batch_answers is not None else self.get_adapter()
            self.runner = Runner(adapter, concurrency=s.concurrency, cache=self.make_cache(),
                                 base_seed=s.seed, repeats=s.repeats, save_outputs=s.save_outputs,
                                 cancel=self.cancel, usage=self.usage)
            self.runner.admit = self.admit
        return self.runner

    def make_cache(self):
        """The generation cache of this run, or None (disabled, or the adapter is not cacheable)."""
        s = self.settings
        adapter = self.adapter
        cacheable = self.cacheable if adapter is None else getattr(adapter, "cacheable", True)
        if s.no_cache or cacheable is False:
            return None
        from ..execution.cache import ImageCache
        root = s.cache_dir
        if root is None:
            cache = getattr(self.config, "cache", None)
            root = (Path(cache.mkdir("violin-images")) if cache is not None
                    else Path(self.config.rootpath) / ".pytest_cache" / "violin-images")
        return ImageCache(root)

    def load(self, tasks=None, limit=None):
        """Load (and memoize) a selection of the configured suite."""
        key = (self.settings.suite, tasks, limit, self.settings.seed)
        if key not in self.suite_cache:
            self.suite_cache[key] = load_suite(self.settings, tasks, limit, self.config)
        return self.suite_cache[key]

    def metric_table(self, samples=None) -> dict:
        from ..thresholds import KNOWN_METRICS
        table = {k: tuple(v) for k, v in KNOWN_METRICS.items()}
        for s in samples if samples is not None else (self.samples or ()):
            table.setdefault(s.task, tuple(s.metric_names))
        return table

    def use_profile_reader(self) -> None:
        """Read images as the profile says: ``violin`` as the reference does (``cv2.imread``); in the main
        thread's context, which the runner's threads copy, so an ``evaluate()`` in another thread keeps its own."""
        from ..imaging import reader_for, use_reader
        token = use_reader(reader_for(self.settings.profile))
        if self.reader_token is None:
            self.reader_token = token

    def close(self, *, wait: bool = True):
        """Stop the runner (abandoning generations in flight unless ``wait``) and close the adapter."""
        if self.reader_token is not None:
            from ..imaging import restore_reader
            restore_reader(self.reader_token)
            self.reader_token = None
        if not wait:
            self.cancel.set()
        if self.runner is not None:
            self.runner.close(wait=wait and not self.cancel.is_set())
            self.runner = None
        if self.adapter is not None:
            close = getattr(self.adapter, "close", None)
            self.adapter = None
            if callable(close):
                with suppress(Exception):
                    close()

    # ----------------------------------------------------------------------- set-up (a model run)
    def start(self) -> None:
        """Resolve the model, select the samples and their limits (``pytest_configure``)."""
        config = self.config
        self.signals.start()
        if config.getoption("htmlpath", None) or config.getoption("allure_report_dir", None):
            from ._attachments import register as register_attachments
            register_attachments(config)  # failing items' images in pytest-html / Allure, when they write
        self.use_profile_reader()  # profile violin reads every image file as cv2.imread does
        adapter = self.resolve_adapter(self.settings.model)
        self.identity = redact(str(getattr(adapter, "identity", self.settings.model)))
        self.network = bool(getattr(adapter, "network", False))
        self.placement = tuple(str(line) for line in getattr(adapter, "placement", ()) or ())
        from ._planning import adapter_bills, call_cap
        self.bills = adapter_bills(adapter, price=self.settings.price)
        if self.settings.batch:
            from ._batch import configure as configure_batch
            configure_batch(config, self, adapter)  # --violin-batch: the adapter's batch API, its price
        # the cap of this process; an xdist worker shares it with the other workers through the
        # claim folder the controller named in workerinput (execution.usage.SharedCalls)
        self.usage.set_limit(*call_cap(self))
        folder = (getattr(config, "workerinput", None) or {}).get(_CALLS_DIR)
        if folder and self.usage.limit is not None:
            from ..execution.usage import SharedCalls
            self.usage.shared = SharedCalls(folder)
        self.cacheable = bool(getattr(adapter, "cacheable", True))
        if self.is_xdist_controller:
            # the controller does not collect: it learns the plan from the first worker; the
            # spec is validated, the workers build their own adapters
            close = getattr(adapter, "close", None)
            if callable(close):
                close()
        else:
            self.adapter = self.counted(adapter)  # every call counted and capped where it is made
        self.scope = builtin_scope(config)
        self.samples = self.take_shard(self._selected_samples(), record=True)  # --violin-shard=K/N
        self.index = {s.id: i for i, s in enumerate(self.samples)}
        self.limits = self._run_limits()
        if self.sequential is not None and self.is_xdist_controller:
            self.sequential.one_by_one()

    def _selected_samples(self) -> list:
        named = self.scope.ids - {""} if self.scope.ids is not None else set()
        if not named:
            return self.load(self.settings.tasks, self.settings.limit) if self.scope.collect else []
        # violin::ID names a sample whatever the ini selection (tasks, limit) says
        everything = self.load(None, None)
        unknown = sorted(named - {s.id for s in everything})
        if unknown:
            raise pytest.UsageError(
                f"violin::{printable(unknown[0])} is not a sample of suite {self.settings.suite!r}; "
                f"accepted: 'violin' or 'violin::ID' with an id that "
                f"'pytest --violin-model=oracle --collect-only -q' lists")
        chosen = named if "" not in self.scope.ids else named | {
            s.id for s in self.load(self.settings.tasks, self.settings.limit)}
        return [s for s in everything if s.id in chosen]

    def _run_limits(self) -> dict:
        from ..errors import ThresholdError
        from ..thresholds import build_limits, parse_thresholds
        try:
            overrides = parse_thresholds(self.settings.thresholds, self.metric_table())
        except ThresholdError:
            # a threshold (e.g. from the ini file) may name a task of the suite that
            # --violin-tasks or a small --violin-limit left out of this run
            try:
                overrides = parse_thresholds(self.settings.thresholds, self.metric_table(self.load(None, None)))
            except ThresholdError as exc:
                raise pytest.UsageError(f"--violin-threshold: {exc}") from None
        return build_limits(overrides)

    def run_metadata(self) -> dict:
        """What the baseline and the reports say of this run (suite, profile, adapter, ...)."""
        settings = self.settings
        identity = self.identity or None
        if identity is None:
            identity = next((r.adapter for r in self.store.results if r.adapter), None)
        if identity is None and settings.model:
            from ..redaction import redact as redact_secrets
            identity = redact_secrets(settings.model)
        from .. import __version__
        dataset = official_dataset(self)
        return {
            **({"dataset": dataset} if dataset else {}),
            "suite": str(settings.suite), "profile": str(settings.profile), "seed": int(settings.seed),
            "repeats": int(settings.repeats), "pass_rule": str(settings.pass_rule),
            "adapter": str(identity or "unknown"), "package_version": __version__,
        }

    # ----------------------------------------------------------------------- hooks
    def pytest_sessionstart(self, session):
        self.signals.session = session

    @pytest.hookimpl(tryfirst=True)  # before the terminal reporter formats the traceback
    def pytest_keyboard_interrupt(self, excinfo):
        self.signals.keyboard_interrupt(excinfo)

    def pytest_report_header(self, config):
        s = self.settings
        line = (f"violin: model={redact(s.model)} suite={s.suite} samples={len(self.samples or ())} "
                f"profile={s.profile} seed={s.seed} repeats={s.repeats}")
        if self.shard_meta is not None:
            line += f" shard={s.shard} (of {self.shard_meta['selected']} selected)"
        lines = [line, *dataset_lines(self), *(f"violin: {redact(p)}" for p in self.placement)]  # the official data: rows per task, skipped and why
        if self.scope is not None and not self.scope.collect:
            return lines + [f"violin: built-in samples not collected: {self.scope.reason}"]
        return lines

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, session, config, items):
        if self.samples:
            new_items = make_items(session, self)
            items.extend(new_items)
            # tell the terminal (and --lf bookkeeping) about them, like a collected module
            session.ihook.pytest_collectreport(report=pytest.CollectReport("violin", "passed", None, new_items))
        result = yield
        if self.sequential is not None:  # after every other plugin's order: the gate's
            self.sequential.sort(items)
        return result

    def pytest_collection_finish(self, session):
        if self.is_worker or self.is_xdist_controller:
            return
        if not self.config.option.collectonly:  # before the first generation, and before the plan is counted
            self.gate.check_comparable(self, (item.violin_sample for item in session.items if is_violin(item)))
        if self.sequential is not None:
            self.sequential.start(item.violin_sample.id for item in session.items if is_violin(item))
        if not self.config.option.collectonly:
            announce_plan(self, _planned_samples(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        """xdist controller, per worker: the call cap's claims, the control folder, the baseline's
        outcomes and the sequential gate's order."""
        if self.usage.limit is not None:
            if self._calls_dir is None:
                import shutil
                import tempfile
                self._calls_dir = folder = tempfile.mkdtemp(prefix="violin-calls-")
                self.config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
            node.workerinput[_CALLS_DIR] = self._calls_dir
        node.workerinput.update(self.signals.worker_input())
        node.workerinput.update(self.gate.worker_input())
        if self.sequential is not None:
            node.workerinput.update(self.sequential.worker_input())

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        # what the worker counted (config.workeroutput, sent when it finished)
        self.usage.add_worker((getattr(node, "workeroutput", None) or {}).get("violin_usage"))
        self.signals.node_down(node, error)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if self._announced:
            return
        self._announced = True
        collectonly = self.config.option.collectonly
        by_id = {} if collectonly else {s.id: s for s in self.load(None, None)}
        builtin = [i[len("violin::"):] for i in ids if i.startswith("violin::")]
        if not collectonly:
            self.gate.check_comparable(self, (by_id[i] for i in builtin if i in by_id))
        if self.sequential is not None:
            self.sequential.start(builtin)
        if collectonly:
            return
        # built-in items are "violin::<id>"; tests parametrized over violin_sample end in
        # "[<id>]" (see pytest_generate_tests); hypothesis tests cannot be counted ahead
        samples = []
        for nodeid in ids:
            if nodeid.startswith("violin::"):
                sample = by_id.get(nodeid[len("violin::"):])
            elif nodeid.endswith("]") and "[" in nodeid:
                sample = by_id.get(nodeid[nodeid.index("[") + 1:-1])
            else:
                sample = None
            if sample is not None:
                samples.append(sample)
        announce_plan(self, samples)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session):
        """Before the loop: the runner learns the plan. After the last sample (and every xdist
        worker's report): the gate decides, and its verdict is the test ``violin::gate``."""
        config = session.config
        if not self.is_worker and not config.option.collectonly:
            if self.batch_discount is not None:  # --violin-batch: the provider's batches first
                from ._batch import start as start_batch
                start_batch(self, _planned_samples(session.items))
            self._plan(session.items)
        try:
            result = yield  # an exception in the loop propagates: no verdict then
        except (KeyboardInterrupt, session.Failed):  # Ctrl-C, -x / --maxfail, a stop (session.Interrupted)
            self._not_judged(session)  # before the JUnit file is written (its pytest_sessionfinish)
            raise
        if session.shouldstop or session.shouldfail:
            self._not_judged(session)
            return result
        if (self.gate.baseline_doc is None or self.is_worker or config.option.collectonly
                or not len(self.store)):
            return result
        self.gate.decide(self)
        if self.gate.comparison is not None:
            self.gate.report_gate(session)
        return result

    def _not_judged(self, session) -> None:
        """A gated run stopped before its end: ``violin::gate`` is reported skipped, and why."""
        gate = self.gate
        if (gate.baseline_doc is None or self.is_worker or self.shard_meta or session.config.option.collectonly
                or not (gate.planned or len(self.store)) or gate.not_judged is not None):
            return
        from ._signals import stop_reason
        gate.report_not_judged(session, stop_reason(session))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not self.is_worker:
            return None
        # xdist worker: plan only items this worker has been given (see docs/plugin.md)
        window = [item, nextitem]
        if getattr(item.config.option, "dist", "load") != "worksteal":
            queue = self._worker_queue()
            if queue is not None:
                items = item.session.items
                with queue.lock() as pending:
                    # 2 x concurrency (2 x threads once a batching runner exists), never building one here
                    reach = self.runner.window if self.runner is not None else 2 * self.settings.concurrency
                    head = list(itertools.islice(pending, reach + 2))
                window.extend(items[i] for i in head if isinstance(i, int) and 0 <= i < len(items))
        self._plan(w for w in window if w is not None)
        return None

    def _plan(self, items) -> None:
        """Tell the runner which samples come next (it prefetches them)."""
        samples = _planned_samples(items)
        if samples:
            self.get_runner().plan(samples)

    def _worker_queue(self):
        if self._interactor is None:
            self._interactor = next((p for p in self.config.pluginmanager.get_plugins()
                                     if type(p).__name__ == "WorkerInteractor" and hasattr(p, "torun")), False)
        queue = getattr(self._interactor, "torun", None) if self._interactor else None
        return queue if hasattr(queue, "lock") else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        entry = item.stash.get(RESULT_KEY, None)
        if entry is not None and entry[0] == call.when:
            del item.stash[RESULT_KEY]
            report.violin_result = entry[1]
        capped = self.usage.capped
        if capped is not None and not item.session.shouldstop and self.sequential is None:
            # a call past --violin-max-calls / --violin-max-cost was refused: stop here (the
            # sequential gate skips the rest itself)
            item.session.shouldstop = f"violin: {capped}; the run stops here"
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if self.sequential is not None:  # before the store reads it: a crashed worker's error record
            self.sequential.logreport(report)
        text = getattr(report, "violin_result", None)
        if text and report.when in ("setup", "call") and not self.is_worker:
            self.store.add(SampleResult.from_json(text))
        if self.batch is not None:
            from ._batch import settled
            settled(self, report)

    def pytest_sessionfinish(self, session, exitstatus):
        config = session.config
        stopped = (int(exitstatus) == int(pytest.ExitCode.INTERRUPTED) or bool(session.shouldstop)
                   or bool(session.shouldfail))
        self.gate.interrupted = stopped
        stopped = stopped or self.cancel.is_set()
        if self.runner is not None:
            # after Ctrl-C or -x nothing waits for the generations still in flight
            self.runner.close(wait=not stopped)
            if stopped:
                self.cancel.set()
        if int(exitstatus) != int(pytest.ExitCode.INTERRUPTED):
            # the calls abandoned after -x end at once (cancelled): count them as they end
            self.usage.settle(_SETTLE_SECONDS)
        if self.is_worker:
            if hasattr(config, "workeroutput"):
                config.workeroutput["violin_usage"] = self.usage.snapshot(local=True)
        else:
            self.gate.finish(self, session)
            config.hook.pytest_violin_session_results(config=config, store=self.store)  # other plugins'
            if self.sequential is not None:
                self.sequential.finish(session)
        if self.batch is not None:  # last: batches still running turn a green or gated run into "pending"
            from ._batch import finish
            finish(self, session)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if self.is_worker:
            return
        if self.batch is not None:
            from ._batch import summary
            summary(self, terminalreporter)
        self.gate.terminal_summary(terminalreporter, config)
        if len(self.store):
            from ..report.terminal import write_summary
            write_summary(terminalreporter, self.store, settings=self.settings, price=self.run_price(),
                          usage=self.usage.snapshot())

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        self.close()
        self.signals.unconfigure()


def _is_xdist_controller(config) -> bool:
    """True in the controller of a pytest-xdist run (``xdist.is_xdist_controller``)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return False
    import xdist
    # what xdist.is_xdist_controller reads of a session or request: .config
    return bool(xdist.is_xdist_controller(SimpleNamespace(config=config)))


def _planned_samples(items) -> list:
    """The samples of ``items``: built-in items', and those of tests that generate one with a fixture."""
    samples = []
    for item in items:
        sample = getattr(item, "violin_sample", None)
        callspec = getattr(item, "callspec", None)
        if sample is None and callspec is not None and "violin_generate" in getattr(item, "fixturenames", ()):
            sample = callspec.params.get("violin_sample")
        if hasattr(sample, "task"):  # a shard may leave a test no sample: pytest's NOTSET (skipped)
            samples.append(sample)
    return samples


SESSION_KEY = pytest.StashKey[ViolinSession]()


def session_of(config) -> ViolinSession:
    """The :class:`ViolinSession` of ``config`` (made by the plugin's ``pytest_configure``)."""
    return config.stash[SESSION_KEY]
