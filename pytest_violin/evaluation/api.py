"""``evaluate()``: one run of a suite against a model, outside pytest.

The same pieces as the plugin, in the same order: the suite's stratified
selection (:func:`~pytest_violin.suite.load_suite`), the limits
(:mod:`pytest_violin.thresholds`), the adapter (:func:`~pytest_violin.models.resolve_model`
for a spec), every call counted and capped (:mod:`pytest_violin.execution.usage`,
:func:`~pytest_violin.execution.usage.call_cap`), the prefetching
:class:`~pytest_violin.execution.runner.Runner` with its image cache, each
sample judged by :func:`~pytest_violin.judging.judge_generation` (metrics,
limits, diagnoses, outcome), and the results aggregated by
:mod:`pytest_violin.results`. A sample therefore gets the same metrics,
diagnoses and outcome here as in ``pytest --violin-model=...``.

Ctrl-C: the run's cancel event is set (adapters start no new request, retry
or poll, and the HTTP transport shuts its sockets), the generation threads
are given a few seconds to end, and :class:`KeyboardInterrupt` propagates:
control is back within :data:`~.session.INTERRUPT_GRACE` seconds plus one wait slice.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import InvalidArgumentError, ViolinWarning
from ..execution.bounds import PASS_RULES, PROFILES, RUN_BOUNDS

__all__ = ["DEFAULT_CACHE_DIR", "evaluate"]

#: The generation cache, relative to the working directory: the plugin's default
#: (``.pytest_cache/violin-images`` of the rootdir), so a notebook started in the
#: project shares its images with ``pytest``.
DEFAULT_CACHE_DIR = Path(".pytest_cache") / "violin-images"


def evaluate(model, *, suite="violin", tasks=None, limit=None, seed: int = 0, repeats: int = 1,
             profile: str = "violin", pass_rule: str = "mean", thresholds=None, concurrency: int = 4,
             cache=True, timeout: float = 120.0, retries: int = 3, headers=(), max_calls="default",
             price: float | None = None, max_cost: float | None = None, save_outputs=None,
             metadata=None, photos_dir=None, thumbnails: bool = True, progress=True,
             label: str | None = None, shard: str | None = None):
    """Run a Violin suite against ``model`` and return an :class:`~.run.EvaluationRun`.

    Parameters
    ----------
    model : str, adapter or callable
        A model spec as ``--violin-model`` takes it (``"oracle"``,
        ``"python:mod:fn"``, ``"http://..."``, ``"openai:gpt-image-1"``...),
        an adapter (an object with ``generate(request)``; ``identity``,
        ``cacheable``, ``close`` are used when present), or any callable
        ``f(request) -> image`` (a diffusers pipeline wrapped in one line).
        Adapters and callables given as objects are not closed here: they are
        the caller's. A callable's images are cached only when it has
        ``cacheable = True`` (the cache cannot see a new checkpoint's weights).
    suite : str or path, optional
        A built-in suite (``"violin"``, ...), a manifest or an export folder,
        or the official data (``hf:...``, a parquet).
    tasks : str or sequence of str, optional
        Keep only these tasks.
    limit : int, optional
        A stratified subset of at most ``limit`` samples (every task and
        variation before repeating any); ``seed`` picks which.
    seed : int, optional
        The run seed: the subset and every request's seed.
    repeats : int, optional
        Images per sample; ``pass_rule`` judges the mean or the worst repeat.
    profile : {"violin", "strict"}, optional
        The metric profile.
    thresholds : mapping or sequence of str, optional
        Limit overrides (``{"color.delta_e": 0.2}`` or ``["color.delta_e=0.2"]``).
    concurrency : int, optional
        Generations in flight at once.
    cache : bool or path, optional
        ``True``: :data:`DEFAULT_CACHE_DIR` (the plugin's); a folder; ``False``: none.
    timeout, retries, headers : optional
        HTTP adapters' seconds per request, retries, extra headers (``("Name", "value")`` pairs);
        ``timeout`` also bounds each call of a callable or ``python:`` model (a call past it is
        abandoned, still running in the background, and its sample an error).
    max_calls : int, None or "default", optional
        The most model calls the run may make: ``"default"`` caps an adapter
        that bills at 2000 calls and leaves others uncapped; ``None``: no cap.
        A run that plans more uncached generations is refused before it starts.
    price, max_cost : float, optional
        USD per image, and the most the run may cost (needs ``price``).
    save_outputs : path, optional
        Write every generated image there as ``<sample id>.png``.
    metadata, photos_dir : path, optional
        The official data's metadata folder; your own photographs for the mask task.
    thumbnails : bool, optional
        Keep the small pictures ``save()``'s report.html shows.
    progress : bool, optional
        A progress bar (tqdm's in a notebook or terminal when it is installed,
        else one line on stderr).
    label : str, optional
        The run's name in tables and trends (default: the adapter's identity).
    shard : str, optional
        ``"K/N"``: only part K of N of the selection, split as ``--violin-shard`` splits it (by
        task and variation, the same on every machine); the saved folders of the N parts are
        what ``python -m pytest_violin merge`` puts back together (one GPU or machine a part).

    Returns
    -------
    EvaluationRun

    Raises
    ------
    InvalidArgumentError, ModelSpecError, SuiteError, ThresholdError
        A bad argument: of another kind than the above, or outside the range the plugin's option of
        the same name accepts (``concurrency`` 1 to 256, ``retries`` 0 to 100, ``repeats`` 1 to 64, ...:
        :data:`pytest_violin.execution.bounds.RUN_BOUNDS`); the message names the value and what is
        accepted.
    CallLimitReached
        The run plans more uncached generations than ``max_calls`` / ``max_cost`` allow.
    KeyboardInterrupt
        Ctrl-C: the generations in flight are cancelled first.
    """
    options = _check(concurrency=concurrency, repeats=repeats, profile=profile, pass_rule=pass_rule,
                     timeout=timeout, retries=retries, max_calls=max_calls, price=price, max_cost=max_cost,
                     label=label, seed=seed, limit=limit)
    _check_kinds(suite=suite, tasks=tasks, thresholds=thresholds, cache=cache, save_outputs=save_outputs,
                 metadata=metadata, photos_dir=photos_dir, thumbnails=thumbnails, progress=progress)
    headers = _headers(headers)
    samples = _load(suite, tasks, limit, seed, metadata, photos_dir)
    dataset = getattr(samples, "dataset", None)
    samples, shard_meta = _shard(shard, samples)
    limits = _limits(thresholds, samples)
    cancel = threading.Event()
    adapter, owned = _adapter(model, cancel=cancel, timeout=float(timeout), retries=int(retries),
                              headers=headers, concurrency=int(concurrency))
    try:
        from .session import Session

        session = Session(adapter, samples=samples, limits=limits, cancel=cancel, seed=int(seed),
                          repeats=int(repeats), profile=profile, pass_rule=pass_rule,
                          concurrency=int(concurrency), cache=_cache(cache, adapter),
                          save_outputs=save_outputs, thumbnails=bool(thumbnails), **options)
        results = session.run(progress=_progress_bar(progress, len(samples)))
    finally:
        if owned:
            close = getattr(adapter, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:  # the results stand; say it
                    warnings.warn(ViolinWarning(f"closing the adapter failed: {type(exc).__name__}: {exc}"),
                                  stacklevel=2)
    from .run import EvaluationRun

    return EvaluationRun._from_session(session, results, suite=suite, dataset=dataset, shard=shard_meta)


def _check(*, concurrency, repeats, profile, pass_rule, timeout, retries, max_calls, price, max_cost,
           label, seed, limit) -> dict:
    """Validate the scalar arguments against the plugin's bounds
    (:data:`~pytest_violin.execution.bounds.RUN_BOUNDS`); return the call-cap ones for the session."""
    optional = {"price": price, "max_cost": max_cost, "limit": limit,
                "max_calls": None if max_calls == "default" else max_calls}
    given = {"concurrency": concurrency, "repeats": repeats, "retries": retries, "timeout": timeout, "seed": seed,
             **{name: value for name, value in optional.items() if value is not None}}
    for name, value in given.items():
        bound = RUN_BOUNDS[name]
        if not bound.holds(value):
            extra = ", None or 'default'" if name == "max_calls" else " or None" if name in optional else ""
            raise InvalidArgumentError(f"{name}={_short(value)}: accepted: {bound.accepted}{extra}")
    for name, value, accepted in (("profile", profile, PROFILES), ("pass_rule", pass_rule, PASS_RULES)):
        if not isinstance(value, str) or value not in accepted:
            raise InvalidArgumentError(f"{name}={_short(value)}: accepted: {', '.join(map(repr, accepted))}")
    if max_cost is not None and price is None:
        raise InvalidArgumentError(f"max_cost={max_cost!r} needs price= (USD per image) to estimate the "
                                   f"cost against")
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise InvalidArgumentError(f"label={_short(label)}: accepted: a non-empty string or None")
    return {"max_calls": max_calls, "price": price, "max_cost": max_cost, "label": label}


def _is_path(value) -> bool:
    return isinstance(value, (str, os.PathLike))


def _is_many(value) -> bool:
    """A list, tuple, generator... of items (not bytes: those are one value)."""
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes, bytearray))


def _check_kinds(*, suite, tasks, thresholds, cache, save_outputs, metadata, photos_dir, thumbnails,
                 progress) -> None:
    """Refuse an argument of the wrong kind before anything is loaded, naming the value and what is
    accepted; the items themselves are checked where they are used (a task name by the suite, ...)."""
    paths = {"save_outputs": save_outputs, "metadata": metadata, "photos_dir": photos_dir}
    wrong = [
        ("suite", suite, not _is_path(suite), "a built-in suite's name, a manifest or folder path, or hf:..."),
        ("tasks", tasks, not (tasks is None or isinstance(tasks, str) or _is_many(tasks)),
         "a task name, a list of them, or None"),
        ("thresholds", thresholds,
         not (thresholds is None or isinstance(thresholds, (str, Mapping)) or _is_many(thresholds)),
         "a mapping such as {'color.delta_e': 0.2}, a list of 'TASK.METRIC=VALUE' strings, or None"),
        ("cache", cache, not (cache is None or isinstance(cache, bool) or _is_path(cache)),
         "True, False or a directory"),
        *((name, value, not (value is None or _is_path(value)), "a path (str or os.PathLike) or None")
          for name, value in paths.items()),
        *((name, value, not isinstance(value, bool), "True or False")
          for name, value in (("thumbnails", thumbnails), ("progress", progress))),
    ]
    for name, value, refused, accepted in wrong:
        if refused:
            raise InvalidArgumentError(f"{name}={_short(value)}: accepted: {accepted}")


def _headers(headers) -> tuple:
    """``headers`` as a tuple of ``"Name: value"`` strings and ``(name, value)`` pairs of strings (the HTTP
    adapters check the names and values)."""
    if headers is None or isinstance(headers, str):
        return () if headers is None else (headers,)
    items = tuple(headers.items() if isinstance(headers, Mapping) else headers) if _is_many(headers) else None

    def header(item) -> bool:
        pair = isinstance(item, (list, tuple)) and len(item) == 2
        return isinstance(item, str) or (pair and all(isinstance(part, str) for part in item))

    if items is None or not all(header(item) for item in items):
        raise InvalidArgumentError(f"headers={_short(headers)}: accepted: ('Name', 'value') pairs of strings, "
                                   f"'Name: value' strings, a mapping of names to values, or None")
    return items


def _load(suite, tasks, limit, seed, metadata, photos_dir):
    from ..suite import load_suite

    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",") if t.strip()]
    samples = load_suite(suite, tasks=tasks, limit=limit, seed=seed, photos_dir=photos_dir, metadata=metadata)
    if not samples:
        raise InvalidArgumentError(f"suite={suite!r} tasks={tasks!r}: no sample selected")
    return samples


def _shard(shard, samples) -> tuple:
    """``(samples, shard record)``: part ``shard`` of ``samples`` and what results.json records of it
    for ``merge`` (the whole selection's size and digest); ``(samples, None)`` without a shard."""
    if shard is None:
        return samples, None
    from ..suite.shard import parse_shard, select_shard, selection_digest
    try:
        part = parse_shard(shard)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"shard={exc}") from None
    chosen = select_shard(samples, part)
    if not chosen:
        raise InvalidArgumentError(f"shard={shard!r}: part {part} of the {len(samples)} samples selected "
                                   f"holds none; accepted: fewer parts than samples")
    return chosen, {"index": part.index, "total": part.total, "selected": len(samples),
                    "digest": selection_digest(samples)}


def _limits(thresholds, samples) -> dict:
    from ..thresholds import KNOWN_METRICS, build_limits, parse_thresholds

    table = {k: tuple(v) for k, v in KNOWN_METRICS.items()}
    for s in samples:
        table.setdefault(s.task, tuple(s.metric_names))
    if isinstance(thresholds, str):
        thresholds = [thresholds]
    return build_limits(parse_thresholds(thresholds or (), table))


def _adapter(model, *, cancel, timeout, retries, headers, concurrency):
    """``(adapter, owned)``: the model as an adapter, and whether it is ours to close."""
    from ..errors import ModelSpecError
    from ..models.python import PythonAdapter

    if isinstance(model, (str, Path)):
        from ..models.registry import AdapterOptions, resolve_model

        from ..redaction import redact_userinfo

        cwd = Path.cwd()
        options = AdapterOptions(rootdir=cwd, basedir=cwd, headers=headers, timeout=timeout, retries=retries,
                                 concurrency=concurrency, cancel=cancel,
                                 extra={"python_paths": (str(cwd),)})
        try:
            return resolve_model(str(model), options), True
        except ModelSpecError as exc:  # a spec may hold a password: never shown
            raise ModelSpecError(f"model={redact_userinfo(str(model), loose=True)!r}: "
                                 f"{redact_userinfo(str(exc), loose=True)}") from None
    if callable(getattr(model, "generate", None)) and isinstance(getattr(model, "identity", None), str):
        return model, False
    if callable(getattr(model, "generate", None)) or callable(model):
        return PythonAdapter(_name(model), model, timeout=timeout, cancel=cancel), False
    raise ModelSpecError(f"model={_short(model)}: accepted: a model spec string (e.g. 'oracle', "
                         f"'python:module:function', 'http://host/path'), an adapter with "
                         f"generate(request), or a callable taking a GenerationRequest")


def _name(obj) -> str:
    """``module:qualname`` of a callable (its class's for an instance), for its identity."""
    target = obj if hasattr(obj, "__qualname__") else type(obj)
    return f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', type(obj).__name__)}"


def _short(value) -> str:
    """``repr(value)`` for a message, cut and made printable; an integer too long for ``repr`` is told by its
    size."""
    from ..report.text import printable

    try:
        text = printable(repr(value))
    except ValueError:  # an integer past Python's digit limit for text
        text = f"<an integer of {value.bit_length():,} bits>"
    return text if len(text) <= 80 else text[:77] + "..."


def _cache(cache, adapter):
    if cache is False or cache is None or getattr(adapter, "cacheable", True) is False:
        return None
    from ..execution.cache import ImageCache

    if cache is True:
        return ImageCache(Path.cwd() / DEFAULT_CACHE_DIR)
    if isinstance(cache, (str, Path)):
        path = Path(cache)
        if path.exists() and not path.is_dir():
            raise InvalidArgumentError(f"cache={str(cache)!r} is not a directory; accepted: True, False or "
                                       f"a directory (created if missing)")
        return ImageCache(path)
    raise InvalidArgumentError(f"cache={_short(cache)}: accepted: True, False or a directory")


def _progress_bar(progress, total: int):
    """A bar with ``update(n)`` and ``close()``, or None."""
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        from ..suite.manifest import ProgressBar

        return ProgressBar(total, stream=sys.stderr, label="violin")
    return tqdm(total=total, desc="violin", unit="sample", leave=True)
