"""The Violin suites: deterministic samples, prompts and ground truth.

``load_suite(name_or_path="violin", *, tasks=None, limit=None, seed=0, photos_dir=None)`` returns a list of
:class:`Sample`. Suites:

* ``violin`` (7,745): color v1/v2, shape, mask (inpaint/outpaint/random);
* ``violin-absolute`` (522): hex codes, quadrants, fuzzy ranges, Chinese and French prompts,
  ``rgb()``/``hsl()`` notations;
* ``violin-extra`` (84): area ratio, pixel border, dot counting;
* ``violin-probes`` (235): negation, semantic gravity, aesthetic inertia, each probe naming its control.

A path to a ``manifest.jsonl`` (or its folder) loads an exported suite; the published dataset loads from
``violin-test.parquet``, the authors' converted folder or ``hf:Perkzi/VIOLIN[@REVISION]`` (:mod:`.official`;
the result then carries ``.dataset``, what was loaded from what).
"""

from __future__ import annotations

import functools
import gc
import importlib
from collections import OrderedDict
from pathlib import Path

from ..errors import SuiteError
from .builders import block_sample, color_sample, mask_sample, ratio_sample, shape_sample
from .colors import ISCC_NBS_COLORS, format_color, parse_color
from .ids import stable_seed, validate_sample_id
from .drawing import photos_dir_from_env
from .sample import Sample

__all__ = ["SUITES", "Sample", "load_suite", "export_samples", "load_manifest", "parse_color",
           "format_color", "ISCC_NBS_COLORS", "validate_sample_id", "color_sample", "block_sample",
           "ratio_sample", "shape_sample", "mask_sample"]

#: Built-in suite name -> the module under ``builtin`` that builds it (imported when loaded).
_BUILDERS = {"violin": "violin", "violin-absolute": "absolute", "violin-extra": "violin_extra",
             "violin-probes": "probes"}
#: Names loaded on first use: a run of a built-in suite reads no manifest and no official data.
_LAZY = {"export_samples": ".manifest", "load_manifest": ".manifest", "manifest": ".manifest",
         "OfficialSamples": ".official", "is_official_source": ".official", "load_official": ".official"}


def __getattr__(name):
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(home, __name__)
    return module if name == "manifest" else getattr(module, name)


#: Names of the built-in suites.
SUITES = tuple(_BUILDERS)


@functools.lru_cache(maxsize=16)
def _built(name: str, photos_dir) -> tuple:
    # Thousands of small immutable objects and no cycles: pausing the cyclic garbage collector while building
    # roughly halves the load time.
    enabled = gc.isenabled()
    gc.disable()
    try:
        module = importlib.import_module(f"{__name__}.builtin.{_BUILDERS[name]}")
        return tuple(module.build(photos_dir=photos_dir))
    finally:
        if enabled:
            gc.enable()


@functools.lru_cache(maxsize=64)
def _built_selection(name: str, photos_dir, tasks, limit, seed) -> tuple:
    # a session (and every evaluate() call) selects again from the same built suite: about 20 ms
    # for the full one, kept here; an error is raised each time, never kept
    samples = filter_tasks(_built(name, photos_dir), tasks, f"suite {name!r}")
    return tuple(select_stratified(samples, limit, seed))


def load_suite(name_or_path="violin", *, tasks=None, limit=None, seed: int = 0,
               photos_dir=None, metadata=None) -> list:
    """Load a built-in suite or an exported manifest.

    Parameters
    ----------
    name_or_path : str or path
        One of :data:`SUITES`, or a ``manifest.jsonl`` file / export folder.
    tasks : str or iterable of str, optional
        Keep only these tasks (``color``, ``shape``, ``mask``, ``ratio``, ``border``, ``count``).
    limit : int, optional
        Return a deterministic stratified subset of at most ``limit`` samples covering every task and
        variation present before repeating any (see :func:`select_stratified`).
    seed : int
        Changes which subset ``limit`` draws; the samples themselves never change.
    photos_dir : path, optional
        Folder of the user's own base photographs for the mask task of ``violin`` (default:
        ``$VIOLIN_PHOTOS_DIR``, else scikit-image's bundled photos).
    metadata : path, optional
        The official data's folder of metadata CSVs (default: ``metadata/`` beside the parquet or the
        converted folder).

    Returns
    -------
    list of Sample

    Raises
    ------
    SuiteError
        Unknown suite name or path, unknown task, bad limit.
    ManifestError
        A malformed manifest (file, line and field in the message).
    """
    if isinstance(name_or_path, str) and name_or_path in _BUILDERS:
        folder = photos_dir if photos_dir is not None else photos_dir_from_env()
        folder = None if folder is None else str(Path(folder).resolve())
        if name_or_path != "violin":
            folder = None
        wanted = (tasks,) if isinstance(tasks, str) else None if tasks is None else tuple(tasks)
        try:
            return list(_built_selection(name_or_path, folder, wanted, limit, seed))
        except TypeError:  # an unhashable argument: validated below, with its message
            pass
        samples = list(_built(name_or_path, folder))
        label = f"suite {name_or_path!r}"
    elif (official := importlib.import_module(".official", __name__)).is_official_source(name_or_path):
        OfficialSamples = official.OfficialSamples
        official = official.load_official(name_or_path, metadata=metadata)
        picked = OfficialSamples(select_stratified(
            filter_tasks(official, tasks, f"official data {str(name_or_path)!r}"), limit, seed))
        picked.dataset = official.dataset
        return picked
    else:
        path = Path(name_or_path)
        if not path.exists():
            raise SuiteError(f"unknown suite {str(name_or_path)!r}: not a built-in suite "
                             f"({', '.join(SUITES)}), no such manifest file or folder, and no "
                             f"official data (a .parquet, a converted data/Task_* folder or "
                             f"hf:OWNER/NAME)")
        samples = importlib.import_module(".manifest", __name__).load_manifest(path)
        label = f"manifest {str(path)!r}"
    samples = filter_tasks(samples, tasks, label)
    return select_stratified(samples, limit, seed)


# Deterministic, stratified selection of a subset of a suite (``limit`` and ``seed``):
#
# ``limit=N`` must still touch every task and variation (and spread colors, shapes, photos) in a small smoke
# run, and ``seed`` picks another subset.
#
# Algorithm: samples are grouped into *units* (a probe control together with all of its probes, otherwise one
# sample). Units are grouped by ``(task, variation)`` and, inside a group, into buckets by a *stratum* (first
# color, anchor, photo, ...). Every list is shuffled by a stable hash of ``(seed, id)``; buckets are
# interleaved round-robin, then groups are interleaved round-robin; units are taken in that order while they
# fit into ``N``. The result keeps suite order. A probe is never selected without its control.


def stratum(sample) -> str:
    """The key that spreads a selection inside one (task, variation) group."""
    spec = sample.spec
    kind = spec.get("kind")
    if kind in ("blocks", "fuzzy", "ratio") and spec.get("colors"):
        return str(tuple(spec["colors"][0]))
    if kind == "shape":
        return f"{spec.get('anchor')}/{spec.get('size')}"
    if kind == "mask" and "photo" in spec:
        return str(spec["photo"].get("name"))
    if kind == "border":
        return str(spec.get("thickness"))
    if kind == "dots":
        return str(spec.get("count"))
    return sample.id.rsplit("/", 1)[0]


def _interleave(lists):
    """Round-robin merge: first items of every list, then second items, ..."""
    out = []
    longest = max((len(lst) for lst in lists), default=0)
    for i in range(longest):
        for lst in lists:
            if i < len(lst):
                out.append(lst[i])
    return out


def filter_tasks(samples, tasks, suite_name="suite") -> list:
    """Keep the samples whose task is in ``tasks`` (a name or an iterable of names)."""
    if tasks is None:
        return list(samples)
    wanted = (tasks,) if isinstance(tasks, str) else tuple(tasks)
    present = sorted({s.task for s in samples})
    unknown = [t for t in wanted if t not in present]
    if unknown:
        raise SuiteError(f"{suite_name} has no task {', '.join(map(repr, unknown))}; "
                         f"its tasks are: {', '.join(present)}")
    keep = set(wanted)
    return [s for s in samples if s.task in keep]


def select_stratified(samples, limit, seed: int = 0) -> list:
    """A stratified, deterministic subset of at most ``limit`` samples, in suite order.

    Exactly ``limit`` samples (fewer only when the suite has fewer; None or ``>= len(samples)``: all of them);
    ``seed`` changes which subset is drawn. Where no whole unit (a control with all its probes) fits the room
    left, a control comes with as many of its probes as fit.
    """
    samples = list(samples)
    if limit is None:
        return samples
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise SuiteError(f"limit {limit!r} must be a positive integer or None")
    if limit >= len(samples):
        return samples
    index = {s.id: i for i, s in enumerate(samples)}
    units = OrderedDict()
    for s in samples:
        root = s.control if (s.control is not None and s.control in index) else s.id
        units.setdefault(root, []).append(s)

    def key(uid):
        return stable_seed("select", seed, uid)

    groups = OrderedDict()
    for uid, members in units.items():
        head = samples[index[uid]]
        groups.setdefault((head.task, head.variation), {}).setdefault(stratum(head), []).append(uid)
    ordered_groups = []
    for gkey in sorted(groups, key=lambda g: stable_seed("group", seed, *g)):
        buckets = groups[gkey]
        blists = [sorted(b, key=key) for _, b in sorted(buckets.items(),
                                                        key=lambda kv: stable_seed("b", seed, kv[0]))]
        ordered_groups.append(_interleave(blists))
    chosen, total = [], 0
    order = _interleave(ordered_groups)
    for uid in order:
        size = len(units[uid])
        if total + size <= limit:
            chosen.extend(units[uid])
            total += size
        if total >= limit:
            break
    if total < limit:
        # no whole unit fits the room left (e.g. limit=1 in a suite of probes): fill it with controls, each
        # with as many of its probes as fit
        taken = {s.id for s in chosen}
        for uid in order:
            if uid in taken:
                continue
            members = sorted(units[uid], key=lambda s: (s.id != uid, index[s.id]))
            part = members[: limit - total]
            chosen.extend(part)
            total += len(part)
            if total >= limit:
                break
    return sorted(chosen, key=lambda s: index[s.id])
