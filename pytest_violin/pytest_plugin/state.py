"""Per-process run state of the plugin, kept in ``config.stash[STATE_KEY]``.

The state holds the parsed settings, the selected samples, the limits, the
model adapter and runner (built on first use) and the results store.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..results import ResultsStore
from .settings import ViolinSettings, parse_settings, resolve_path

__all__ = ["ViolinState", "STATE_KEY", "get_state", "redact"]


@dataclass(eq=False)
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
    scope: object = None
    network: bool = False
    #: the default --violin-max-calls applies (pytest_plugin.planning.adapter_bills)
    bills: bool = False
    cacheable: bool = True
    cancel: threading.Event = field(default_factory=threading.Event)
    #: the image reader in use before this run set its profile's (restored by close)
    previous_reader: str | None = None
    #: every model call of this process, counted and capped where it is made
    #: (pytest_violin.execution.usage); see counted() and the plan's call cap
    usage: object = field(default_factory=lambda: _call_counter())
    #: ``admit(sample_id) -> bool`` for the runner's prefetch (the sequential gate's; None: all)
    admit: object = None
    #: sample id -> images the cache holds, asked before the run (planning.cached_repeats); None
    #: once the runner exists, when the cache starts to change
    cache_lookups: dict | None = field(default_factory=dict)
    #: ``--violin-shard``: the whole selection this run is a part of (``shard``, ``selected``,
    #: ``digest``, for results.json), and each sample's position in it; None when not sharded
    shard_meta: dict | None = None
    positions: dict | None = None
    #: lines the adapter gives about where it runs (diffusers' device=auto: a worker's GPU)
    placement: tuple = ()

    def take_shard(self, samples, *, record: bool = False) -> list:
        """The part of ``samples`` that ``--violin-shard`` asks for (all of them without it).

        With ``record``, ``samples`` is the run's built-in selection: what it is (its size and
        digest) goes into results.json, so that ``python -m pytest_violin merge`` can check that
        the parts it is given are those of one run, and the samples keep their positions in it
        (the merged run lists them as one run would).
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

    def counted(self, adapter):
        """``adapter`` with every ``generate`` counted and capped by :attr:`usage`."""
        from ..execution.usage import CountingAdapter

        return adapter if isinstance(adapter, CountingAdapter) else CountingAdapter(adapter, self.usage)

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @property
    def is_xdist_controller(self) -> bool:
        """True in the controller of a pytest-xdist run (``xdist.is_xdist_controller``)."""
        if not self.config.pluginmanager.hasplugin("xdist"):
            return False
        import xdist

        return bool(xdist.is_xdist_controller(_ConfigHolder(self.config)))

    def adapter_options(self):
        from ..models.registry import AdapterOptions

        cfg, s = self.config, self.settings
        paths = [str(cfg.rootpath), str(cfg.invocation_params.dir)]
        for arg in getattr(cfg, "args", ()) or ():
            p = resolve_path(cfg, str(arg).split("::")[0])
            paths.append(str(p if p.is_dir() else p.parent))
        for tp in cfg.getini("testpaths") or ():
            paths.append(str(cfg.rootpath / tp))
        from .options import adapter_option_names, read_option

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
            self.runner = Runner(self.get_adapter(), concurrency=s.concurrency, cache=self.make_cache(),
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
        from ..thresholds import KNOWN_METRICS

        table = {k: tuple(v) for k, v in KNOWN_METRICS.items()}
        for s in samples if samples is not None else (self.samples or ()):
            table.setdefault(s.task, tuple(s.metric_names))
        return table

    def use_profile_reader(self) -> None:
        """Read images as the profile says: ``violin`` as the reference does (``cv2.imread``)."""
        from ..imaging import set_reader

        reader = "opencv" if self.settings.profile == "violin" else "pillow"
        previous = set_reader(reader)
        if self.previous_reader is None:
            self.previous_reader = previous

    def close(self, *, wait: bool = True):
        """Stop the runner (abandoning generations in flight unless ``wait``) and close the adapter."""
        if self.previous_reader is not None:
            from ..imaging import set_reader

            set_reader(self.previous_reader)
            self.previous_reader = None
        if not wait:
            self.cancel.set()
        if self.runner is not None:
            self.runner.close(wait=wait and not self.cancel.is_set())
            self.runner = None
        if self.adapter is not None:
            close = getattr(self.adapter, "close", None)
            self.adapter = None
            if callable(close):
                try:
                    close()
                except Exception:
                    pass


def _call_counter():
    from ..execution.usage import CallCounter

    return CallCounter()


class _ConfigHolder:
    """What ``xdist.is_xdist_controller`` reads of a session or request: ``.config``."""

    def __init__(self, config):
        self.config = config


STATE_KEY = pytest.StashKey[ViolinState]()


def get_state(config) -> ViolinState:
    """The :class:`ViolinState` of ``config`` (created on first use)."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        state = ViolinState(config=config, settings=parse_settings(config))
        config.stash[STATE_KEY] = state
    return state


def redact(text: str, *, loose: bool = False) -> str:
    """``text`` without URL passwords and with every registered secret replaced.

    See :func:`pytest_violin.redaction.redact_userinfo`: model names, paths
    and hosts stay readable (``openai:gpt-image-1@https://api.openai.com/v1``);
    ``loose`` (a model spec that did not parse) also masks the password
    after a mistyped scheme (``htp://alice:pw@host/``) or none.
    """
    from ..redaction import redact_userinfo

    return redact_userinfo(text, loose=loose)


def _load_suite(settings, tasks, limit, config):
    from ..errors import SuiteError
    from ..suite import SUITES, load_suite

    name = settings.suite
    target = name
    candidate = resolve_path(config, name, from_ini=settings.suite_from_ini)
    # any name that is not a built-in suite is a path: relative to the ini
    # file when it comes from there (an export folder has no '/' in its name)
    if name not in SUITES and candidate.exists():
        target = str(candidate)
    try:
        return load_suite(target, tasks=tasks, limit=limit, seed=settings.seed,
                          metadata=settings.metadata)
    except (SuiteError, ValueError, OSError) as exc:
        opt = f"--violin-suite={name!r}"
        if tasks:
            opt += f" --violin-tasks={','.join(tasks)!r}"
        if limit is not None:
            opt += f" --violin-limit={limit}"
        raise pytest.UsageError(f"{opt}: {exc}") from None


def official_dataset(state) -> dict | None:
    """What the run's official data is (``load_suite(...).dataset``), or None for other suites.

    Read from the loaded samples, else (the xdist controller collects
    nothing) from a load of the whole suite, which reads its cached index.
    """
    from ..suite import SUITES

    if state is None or state.settings.suite in SUITES:
        return None
    found = getattr(state.samples, "dataset", None)
    if found:
        return found
    from ..suite.official import is_official_source

    name = state.settings.suite
    if not (name.startswith("hf:") or is_official_source(
            resolve_path(state.config, name, from_ini=state.settings.suite_from_ini))):
        return None  # a manifest: not loaded again just to learn it is none
    try:
        return getattr(state.load(None, None), "dataset", None) or None
    except pytest.UsageError:
        return None


def dataset_lines(state) -> list:
    """``violin: official data ...`` lines: what the official data loaded (none for other suites)."""
    from ..suite.official import describe_dataset

    return [f"violin: {text}" for text in describe_dataset(official_dataset(state) or {})]
