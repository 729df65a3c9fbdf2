"""``hf:OWNER/NAME[@REVISION]``: the dataset's files through huggingface_hub and its cache.

``snapshot_download`` fetches the parquet files and any ``metadata/*.csv`` of the dataset repository once,
with its progress bars, into the normal Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
``~/.cache/huggingface/hub``); later runs read the cache. With ``HF_HUB_OFFLINE=1`` nothing is fetched: a
snapshot not in the cache is a one-line error. The cache folder, the offline switch and the hub's address
(``HF_ENDPOINT``) are read from the environment at each call (huggingface_hub reads them once, at import).

Nothing is downloaded unbounded: online, the repository's file list with sizes
(``HfApi.dataset_info(files_metadata=True)``, one request) is read first, the sizes of the files the patterns
select are summed and a sum over :data:`MAX_HUB_BYTES` (or a file of no stated size) is refused; the download
is then pinned to the commit whose sizes were checked. Offline, the cached snapshot's files are summed the
same way before any of them is read.
"""

from __future__ import annotations

import os
import re
from contextlib import suppress
from pathlib import Path

from ..._fs import atomic_write
from ...errors import SuiteError
from ._paths import shown
from .parquet import EXTRA_HINT

__all__ = ["parse_hub_spec", "hub_cache_dir", "offline", "download", "repo_cache",
           "MAX_HUB_BYTES", "HUB_TIMEOUT_S"]

_SPEC = re.compile(r"hf:([A-Za-z0-9][\w.-]{0,95})/([\w.-]{1,96})(?:@([\w./-]{1,128}))?")
ALLOW = ["*.parquet", "**/*.parquet", "metadata/*.csv", "*metadata*.csv", "**/*metadata*.csv"]
#: Largest sum of the sizes of the files a hub dataset is downloaded with (the ones :data:`ALLOW` selects), in
#: bytes: 16 GiB. The official data (7,745 samples of 512x512 PNGs) is a few GB.
MAX_HUB_BYTES = 16 << 30
#: Seconds the hub's answer about the repository's files may take.
HUB_TIMEOUT_S = 30.0


def parse_hub_spec(spec: str):
    """``hf:Perkzi/VIOLIN@main`` -> ``("Perkzi/VIOLIN", "main")``; revision None when absent."""
    m = _SPEC.fullmatch(spec.strip())
    if m is None:
        raise SuiteError(f"hub dataset {spec!r} is not of the form hf:OWNER/NAME[@REVISION] "
                         f"(e.g. hf:Perkzi/VIOLIN)")
    return f"{m.group(1)}/{m.group(2)}", m.group(3)


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps downloads, from the environment as it is now."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    return Path(home).expanduser() / "hub"


def offline() -> bool:
    """``HF_HUB_OFFLINE`` (or ``HF_DATASETS_OFFLINE``) set to a true value."""
    return any(os.environ.get(n, "").strip().lower() in ("1", "true", "yes", "on")
               for n in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def endpoint() -> str | None:
    """``HF_ENDPOINT`` as it is now (None: the hub client's default)."""
    return (os.environ.get("HF_ENDPOINT") or "").rstrip("/") or None


def _refuse_over_cap(spec: str, sizes: dict, where: str) -> None:
    """SuiteError when the file sizes (name -> bytes or None) sum over :data:`MAX_HUB_BYTES`."""
    unknown = sorted(name for name, size in sizes.items() if size is None or size < 0)
    if unknown:
        raise SuiteError(f"{spec}: {where} states no size for {unknown[0]!r}; expected every "
                         f"file's size, to keep the download under {MAX_HUB_BYTES:,} bytes")
    total = sum(sizes.values())
    if total > MAX_HUB_BYTES:
        raise SuiteError(f"{spec}: {len(sizes)} files of {total:,} bytes ({where}), over the "
                         f"cap of {MAX_HUB_BYTES:,} bytes per hub dataset; expected the parquet "
                         f"and metadata CSVs of at most that size (download a part of it "
                         f"yourself and give its folder)")


def _sibling_size(sibling):
    lfs = getattr(sibling, "lfs", None)
    sizes = [getattr(sibling, "size", None)]
    if lfs is not None:
        sizes.append(lfs.get("size") if isinstance(lfs, dict) else getattr(lfs, "size", None))
    known = [n for n in sizes if isinstance(n, int)]
    return max(known) if known else None


def _checked_commit(huggingface_hub, spec: str, repo_id: str, revision):
    """The commit of ``revision`` whose selected files sum to at most :data:`MAX_HUB_BYTES`."""
    from huggingface_hub.utils import filter_repo_objects

    api = huggingface_hub.HfApi(endpoint=endpoint())
    info = api.dataset_info(repo_id, revision=revision, files_metadata=True,
                            timeout=HUB_TIMEOUT_S)
    siblings = {s.rfilename: s for s in (info.siblings or [])}
    chosen = filter_repo_objects(items=sorted(siblings), allow_patterns=ALLOW)
    _refuse_over_cap(spec, {name: _sibling_size(siblings[name]) for name in chosen},
                     "by the hub's file list")
    return info.sha or revision


def _cached_sizes(folder: Path) -> dict:
    """The files of a cached snapshot that :data:`ALLOW` selects, by name, with their sizes."""
    from huggingface_hub.utils import filter_repo_objects

    names = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return {name: (folder / name).stat().st_size
            for name in filter_repo_objects(items=sorted(names), allow_patterns=ALLOW)}


def _keep_ref(cache: Path, repo_id: str, revision, commit: str) -> None:
    """Point ``refs/<revision>`` of the cached dataset at ``commit``, as the client does.

    A download pinned to a commit hash writes no ref; without it a later offline load of the branch would not
    find the snapshot.
    """
    name = revision or "main"
    if name == commit:
        return
    ref = repo_cache(cache, repo_id) / "refs" / name
    with suppress(OSError):  # the snapshot still serves this run
        if not ref.is_file() or ref.read_text().strip() != commit:
            atomic_write(ref, commit)


def _commit_of(snapshot: Path) -> str:
    return snapshot.name if re.fullmatch(r"[0-9a-f]{40}", snapshot.name) else ""


def repo_cache(cache: Path, repo_id: str) -> Path:
    """The cache folder of a dataset repository (its ``refs/``, ``snapshots/`` and ``blobs/``)."""
    return cache / ("datasets--" + repo_id.replace("/", "--"))


def _one_snapshot(spec: str, cache: Path, repo_id: str, revision, folder: Path) -> Path:
    """``folder`` when it is exactly one cached commit's snapshot of the repository, else refused.

    The hub client turns ``refs/<branch>`` into a folder name as it reads it: an empty ref gives
    ``snapshots/`` itself (every cached revision at once), a ref holding ``..`` a folder outside the cache.
    """
    snapshots = repo_cache(cache, repo_id) / "snapshots"
    real = Path(os.path.realpath(folder))
    if real.parent == Path(os.path.realpath(snapshots)) and _commit_of(real):
        return folder
    try:
        cached = sorted(p.name for p in snapshots.iterdir() if _commit_of(p))
    except OSError:
        cached = []
    ref = repo_cache(cache, repo_id) / "refs" / (revision or "main")
    try:
        said = ref.read_text(encoding="utf-8", errors="replace")[:100]
    except OSError:
        said = "(none)"
    listed = ", ".join(c[:12] for c in cached[:5]) + (" ..." if len(cached) > 5 else "")
    raise SuiteError(f"{spec}: the Hugging Face cache does not resolve {revision or 'main'!r} to "
                     f"one snapshot (refs/{revision or 'main'} holds {shown(said, 60)}; cached "
                     f"revisions: {listed or 'none'}); expected one revision: give "
                     f"hf:{repo_id}@<commit> or download it once online")


def download(spec: str) -> tuple[Path, str, str]:
    """The local snapshot folder of a hub dataset: ``(folder, repo_id, commit)``.

    A :class:`~pytest_violin.errors.SuiteError` in one line when huggingface_hub is missing (naming the
    extra), offline and not cached, the repository or revision does not exist, or the network fails, the files
    sum over :data:`MAX_HUB_BYTES` or one states no size.
    """
    repo_id, revision = parse_hub_spec(spec)
    try:
        import huggingface_hub
    except ImportError:
        raise SuiteError(f"--violin-suite={spec}: downloading from the Hugging Face hub needs "
                         f"huggingface_hub: {EXTRA_HINT}") from None
    cache = hub_cache_dir()
    local_only, unreachable = offline(), None
    pinned = revision
    if not local_only:
        try:
            pinned = _checked_commit(huggingface_hub, spec, repo_id, revision)
        except SuiteError:
            raise
        except Exception as exc:  # no answer: a cached snapshot still serves, as the client's own
            local_only, unreachable = True, exc
    try:
        folder = huggingface_hub.snapshot_download(
            repo_id=repo_id, repo_type="dataset", revision=pinned, cache_dir=str(cache),
            allow_patterns=ALLOW, local_files_only=local_only, endpoint=endpoint())
    except Exception as exc:  # the hub client's errors differ between releases
        if unreachable is not None:
            exc = unreachable
        elif local_only:
            raise SuiteError(f"{spec}: not in the Hugging Face cache {str(cache)!r} and "
                             f"HF_HUB_OFFLINE is set; download it once online (or unset "
                             f"HF_HUB_OFFLINE)") from None
        first = (str(exc).splitlines() or [""])[0][:200]
        raise SuiteError(f"{spec}: the Hugging Face hub download failed "
                         f"({type(exc).__name__}: {first})") from None
    folder = _one_snapshot(spec, cache, repo_id, revision, Path(folder))
    if pinned != revision and _commit_of(folder) == pinned:
        _keep_ref(cache, repo_id, revision, pinned)
    if local_only:
        _refuse_over_cap(spec, _cached_sizes(folder), f"in the cache {shown(folder)}")
    return folder, repo_id, _commit_of(Path(os.path.realpath(folder)))
