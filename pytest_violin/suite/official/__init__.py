"""The published Violin dataset (Hugging Face ``Perkzi/VIOLIN``) as a suite.

Three forms load (:func:`load_official`), each with its ``metadata/`` folder of prompt CSVs (beside the data,
or given as ``metadata=``):

* ``violin-test.parquet`` (or a folder holding ``*.parquet``, such as a ``git clone`` of the dataset):
  streamed with pyarrow, its images written once into the official-data cache in the authors' converted
  layout;
* the converted folder (``data/Task_*`` + ``metadata/``) that the authors' ``parquet_to_violin_data.py``
  writes;
* ``hf:OWNER/NAME[@REVISION]``: downloaded once through huggingface_hub into its normal cache
  (``HF_HUB_OFFLINE=1`` honoured).

Samples are ``official/color/v1/id_N``, ``official/color/v2/id_N``, ``official/shape/id_N`` and
``official/mask/<mask_type>/id_N``; their ground truth is read as the reference reads it (``cv2.imread``).
What no column states (the var-2 split, the shape class, the mask polarity) is read from the ground truth
(:mod:`.infer`); every such reading that is not clear is counted and reported in
:attr:`OfficialSamples.dataset`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import warnings
from contextlib import suppress
from pathlib import Path

from ..._fs import atomic_write, load_json_text, read_option_file
from ...errors import ManifestError, SuiteError
from ...report.text import printable
from ..sample import Sample
from ._paths import require_inside, shown, shown_path
from .loader import INDEX_VERSION, build_index, cache_root, write_json
from .metadata import read_metadata
from .schema import sample_id
from .sources import data_dir_of, folder_rows, parquet_rows

__all__ = ["OfficialSamples", "is_official_source", "load_official", "describe_dataset",
           "SUITE_NAME"]

SUITE_NAME = "official"


class OfficialSamples(list):
    """A list of samples that also carries ``dataset``: what was loaded, from what."""

    dataset: dict = {}


def _parquets(folder: Path, root: Path | None = None) -> list:
    """The ``*.parquet`` files of ``folder`` (``violin-test.parquet`` when there is one).

    Each must resolve to a regular file inside ``root`` (default ``folder``): a clone holding a link out of
    itself is refused, naming the link.
    """
    root = folder if root is None else root
    found = sorted(p for p in folder.rglob("*.parquet") if ".cache" not in p.parts)
    for p in found:
        require_inside(p, root, "parquet")
    preferred = [p for p in found if p.name == "violin-test.parquet"]
    return preferred or found


def is_official_source(name_or_path) -> bool:
    """Whether ``--violin-suite`` names official data (``hf:``, a parquet, a converted folder).

    A path ending ``.parquet`` is official data whether or not it exists, so that a missing one is "file not
    found", not "unknown suite".
    """
    text = str(name_or_path)
    if text.startswith("hf:"):
        return True
    path = Path(text)
    if path.suffix.lower() == ".parquet" and not path.is_dir():
        return True
    if path.is_dir() and not (path / "manifest.jsonl").exists():
        return data_dir_of(path) is not None or bool(_parquets(path))
    return False


def _metadata_dir(explicit, *candidates):
    """``(metadata folder or None, the folder its files must resolve into)``."""
    if explicit is not None:
        return Path(explicit), Path(explicit)
    for cand in candidates:
        if cand is not None and (cand / "metadata").is_dir():
            return cand / "metadata", cand
    return None, None


def _sha_memo(path: Path) -> str:
    """SHA-256 of a (large) file, remembered by its identity in the file system.

    The key is every field of ``stat`` that a rewrite of the file changes and that nobody can set back: the
    device and inode (a new file replacing it), the size and the inode change time ``st_ctime_ns`` (a rewrite
    in place sets it to now, and ``touch -d`` or ``os.utime`` restoring the mtime sets it again). Size and
    mtime alone were restored in a minute.
    """
    from .parquet import sha256_file

    info = path.stat()
    ident = (f"{path.resolve()}|{info.st_dev}|{info.st_ino}|{info.st_size}|{info.st_mtime_ns}|"
             f"{info.st_ctime_ns}")
    key = hashlib.blake2b(ident.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
    memo = cache_root() / "sha256" / key
    with suppress(OSError):
        text = memo.read_text().strip()
        if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
            return text
    digest = sha256_file(path)
    with suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(memo, digest.encode())
    return digest


#: Largest cached index read back (a few hundred bytes per sample; larger is not ours).
MAX_INDEX_BYTES = 64 * 2**20

# what _samples reads from each record of an index: field -> accepted types
_RECORD = {"group": str, "number": int, "sha": str, "expected": str, "inputs": list, "task": str,
           "variation": str, "prompt": str, "w": int, "h": int, "layout": (str, type(None))}


def _index_problem(doc) -> str | None:
    """What is wrong with the shape of a cached index of this version, or None."""
    if not isinstance(doc.get("rows"), int) or not isinstance(doc.get("records"), list):
        return "'rows' is not a number or 'records' not a list"
    for name in ("skipped", "notes"):
        table = doc.get(name)
        if not isinstance(table, dict) or not all(isinstance(v, int) for v in table.values()):
            return f"{name!r} is not an object of counts"
    for i, rec in enumerate(doc["records"]):
        bad = (not isinstance(rec, dict) or next((k for k, t in _RECORD.items()
                                                  if not isinstance(rec.get(k), t)), None))
        if bad or not all(isinstance(p, str) for p in rec["inputs"]):
            return f"record {i} is not a sample record (field {bad or 'inputs'!r})"
    return None


def _load_index(index: Path):
    """The cached index at ``index``; None when there is none of this version to use.

    A cached index that cannot be used (a special or oversized file, not JSON, not the shape this version
    writes) is deleted with a warning, so it is built again, never an error of every later run.
    """
    if not os.path.lexists(index):
        return None
    if os.path.islink(index):  # the cache writes files, never links: not ours to follow
        return _drop_index(index, f"cached index {str(index)!r} is a symbolic link")
    try:
        text = read_option_file(index, what="cached index", limit=MAX_INDEX_BYTES, error=SuiteError)
        doc = load_json_text(text, what="cached index", path=index, error=SuiteError)
        if not isinstance(doc, dict):
            raise SuiteError(f"cached index {str(index)!r} is not a JSON object")
    except SuiteError as exc:
        return _drop_index(index, str(exc))
    if doc.get("version") != INDEX_VERSION:
        return None
    problem = _index_problem(doc)
    return doc if problem is None else _drop_index(index, f"{str(index)!r}: {problem}")


def _drop_index(index: Path, why: str) -> None:
    # ``why`` names the file and what is wrong with it, never its content
    warnings.warn(f"pytest-violin: the official data's cached index was dropped and is built "
                  f"again: {why}", RuntimeWarning, stacklevel=3)
    try:
        index.unlink()
    except IsADirectoryError:
        shutil.rmtree(index, ignore_errors=True)
    except OSError:
        pass
    return None


def _progress(total):
    from ..manifest import ProgressBar

    return ProgressBar(total, label="official data")


def _from_parquets(files, meta, identity: dict):
    from .parquet import require_pyarrow

    pq = require_pyarrow()
    shas = [_sha_memo(p) for p in files]
    key = hashlib.sha256("".join(shas).encode()).hexdigest()[:16]
    root = cache_root() / key
    index = root / f"index-v{INDEX_VERSION}-{meta.digest[:16] or 'none'}.json"
    identity["files"] = [{"name": p.name, "sha256": s} for p, s in zip(files, shas)]
    identity["sha256"] = shas[0] if len(shas) == 1 else key
    doc = _load_index(index)
    if doc is None:
        skipped = {}
        total = sum(pq.ParquetFile(str(p)).metadata.num_rows for p in files)
        bar = _progress(total)

        seen = {}  # one id in two files is refused, not written over the first one's images

        def rows():
            for p in files:
                yield from parquet_rows(p, root / "data", skipped, seen)

        records, notes = build_index(rows(), meta, root / "masks-normalized", skipped, bar)
        bar.close()
        doc = {"version": INDEX_VERSION, "rows": total, "records": records, "skipped": skipped,
               "notes": notes}
        write_json(index, doc)
    return doc


def _folder_key(root: Path, data: Path, meta) -> str:
    """The key of a converted folder's index: every file's identity (as :func:`_sha_memo`'s)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(root.resolve()).encode("utf-8", "surrogateescape") + meta.digest.encode())
    for dirpath, dirnames, filenames in os.walk(data):
        dirnames.sort()
        for name in sorted(filenames):
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:  # a dangling link: the pass over the rows names it, if it is read
                continue
            digest.update(f"{dirpath}/{name}|{st.st_dev}|{st.st_ino}|{st.st_size}|"
                          f"{st.st_mtime_ns}|{st.st_ctime_ns}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _from_folder(root: Path, data: Path, meta):
    key = _folder_key(root, data, meta)
    cache = cache_root() / "folders" / key[:16]
    index = cache / f"index-v{INDEX_VERSION}.json"
    doc = _load_index(index)
    if doc is None:
        skipped = {}
        records, notes = build_index(folder_rows(root, data, meta, skipped), meta,
                                     cache / "masks-normalized", skipped, None)
        doc = {"version": INDEX_VERSION, "rows": len(records) + sum(skipped.values()),
               "records": records, "skipped": skipped, "notes": notes}
        write_json(index, doc)
    return doc, key


def _samples(doc, identity: dict) -> OfficialSamples:
    out = OfficialSamples()
    for r in doc["records"]:
        # the ground truth's hash: the suite fingerprint covers the data, whatever its form
        spec = {"kind": "official", "group": r["group"], "number": r["number"],
                "sha256": r["sha"], "reader": "opencv"}
        if r.get("polarity"):
            spec["mask_polarity"] = r["polarity"]
        files = {"expected": r["expected"]}
        if r["inputs"]:
            files["inputs"] = list(r["inputs"])
        out.append(Sample(sample_id(r["group"], r["number"]), SUITE_NAME, r["task"],
                          r["variation"], r["prompt"], r["w"], r["h"], layout=r["layout"],
                          spec=spec, files=files))
    order = {"color/v1": 0, "color/v2": 1, "shape": 2}
    out.sort(key=lambda s: (order.get(s.spec["group"], 3), s.spec["group"], s.spec["number"]))
    per = {}
    for s in out:
        per[s.spec["group"]] = per.get(s.spec["group"], 0) + 1
    info = dict(identity)
    info.update(rows=int(doc["rows"]), samples=len(out), per_task=per,
                skipped=dict(doc["skipped"]), notes=dict(doc["notes"]))
    out.dataset = info
    return out


def load_official(source, *, metadata=None) -> OfficialSamples:
    """Load the official Violin data from a parquet, a converted folder or ``hf:REPO[@REV]``.

    ``source`` is ``violin-test.parquet``, a folder holding it (a clone of the hub repository), the converted
    folder, or ``hf:OWNER/NAME[@REVISION]``; ``metadata`` the folder of metadata CSVs (default: ``metadata/``
    beside the data). The samples carry ``.dataset``: ``form``, ``source``, ``sha256`` or ``revision``,
    ``rows``, ``samples``, ``per_task``, ``skipped`` (reason -> rows), ``notes`` (reading -> rows),
    ``metadata``.

    A missing extra (naming ``pip install 'pytest-violin[hub]'``) or a hub dataset offline and not cached is a
    :class:`~pytest_violin.errors.SuiteError`; bad data a :class:`~pytest_violin.errors.ManifestError` naming
    the file, the row or id and what was expected.
    """
    try:
        return _load(str(source), metadata)
    except (ManifestError, SuiteError) as exc:
        # the one boundary: whatever a message quotes of the dataset leaves it printable
        text = str(exc)
        if text.isprintable() and len(text) <= _MAX_MESSAGE:
            raise
        raise type(exc)(_one_line(text)) from None


#: Characters of a loader error, at most (its start and its "expected ..." end are kept).
_MAX_MESSAGE = 2000


def _one_line(text: str) -> str:
    if len(text) > _MAX_MESSAGE:
        text = f"{text[:_MAX_MESSAGE // 2]} ... {text[-_MAX_MESSAGE // 2:]}"
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def _load(text: str, metadata) -> OfficialSamples:
    identity = {"source": text}
    if text.startswith("hf:"):
        from .hub import download, hub_cache_dir, repo_cache

        folder, repo, commit = download(text)
        identity.update(form="hub", repo=repo, revision=commit)
        # the snapshot's files are links into the repository's blobs/: that folder bounds them
        bound = repo_cache(hub_cache_dir(), repo)
        files = _parquets(folder, bound)
        if not files:
            raise ManifestError("the hub snapshot holds no .parquet file; expected "
                                "violin-test.parquet", path=shown_path(folder))
        folder_meta, root = _metadata_dir(metadata, folder, files[0].parent)
        meta = read_metadata(folder_meta, root=bound if metadata is None else root)
        identity["metadata"] = {g: shown_path(p.name) for g, p in meta.files.items()}
        return _samples(_from_parquets(files, meta, identity), identity)
    path = Path(text)
    if not path.exists():
        what = "file" if path.suffix.lower() == ".parquet" else "file or folder"
        raise SuiteError(f"official data {shown(text)}: {what} not found; expected "
                         f"violin-test.parquet, a folder holding it, the converted folder "
                         f"(data/Task_*) or hf:OWNER/NAME")
    if path.is_file():
        files, base = [path], path.parent
    elif path.suffix.lower() == ".parquet" and not path.is_dir():
        raise SuiteError(f"official data {shown(text)} is not a regular file; expected a .parquet "
                         f"file")
    else:
        data = data_dir_of(path)
        if data is not None:
            meta = read_metadata(*_metadata_dir(metadata, path, data.parent))
            identity.update(form="folder",
                            metadata={g: shown_path(p.name) for g, p in meta.files.items()})
            doc, key = _from_folder(path, data, meta)
            identity["key"] = key[:16]
            return _samples(doc, identity)
        files, base = _parquets(path), path
        if not files:
            raise ManifestError("no .parquet file and no data/Task_* folder; expected "
                                "violin-test.parquet or the converted folder",
                                path=shown_path(path))
    identity["form"] = "parquet"
    meta = read_metadata(*_metadata_dir(metadata, base, files[0].parent))
    identity["metadata"] = {g: shown_path(p.name) for g, p in meta.files.items()}
    return _samples(_from_parquets(files, meta, identity), identity)


def describe_dataset(info: dict) -> list:
    """The lines a run prints about what it loaded: rows per task, rows skipped and why."""
    if not info:
        return []
    what = info.get("repo") or info.get("source")
    ident = (f"revision {info['revision'][:12]}" if info.get("revision")
             else f"sha256 {info.get('sha256', '')[:12]}" if info.get("sha256")
             else f"folder key {info.get('key', '')}")
    per = ", ".join(f"{g} {n}" for g, n in info.get("per_task", {}).items()) or "none"
    lines = [f"official data {what} ({info.get('form')}, {ident}): {info.get('rows', 0)} rows, "
             f"{info.get('samples', 0)} samples loaded: {per}"]
    for reason, n in sorted(info.get("skipped", {}).items()):
        lines.append(f"  skipped {n}: {reason}")
    for note, n in sorted(info.get("notes", {}).items()):
        lines.append(f"  noted {n}: {note}")
    return lines
