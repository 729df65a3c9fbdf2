"""The durable record of the batches a project submitted (``--violin-batch``).

One JSON file per adapter identity in the cache folder
(``.pytest_cache/violin-batches/<digest>.json``), rewritten atomically and
synced to disk (:func:`pytest_violin._fs.atomic_write` with ``fsync``) at
every change, and always *before* the provider is asked to do anything: a
batch is recorded with its tag and its ``custom_id -> request key`` map
before its input is uploaded, and its id as soon as the provider names it.
A run killed at any point (``kill -9``) leaves a record from which the next
run collects instead of submitting again (a record without an id is looked
up by its tag, :meth:`pytest_violin.models.batch.BatchApi.find`).

The record holds no secret: the adapter's identity (secret-free by
contract), tags, ids, request keys (digests), sample ids and counts. It is
read as hostile input: bounded in size and nesting, every field checked; a
record that does not parse is set aside (renamed ``*.bad``) with a warning,
never trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .._fs import atomic_write, read_option_json
from ..errors import InvalidArgumentError

__all__ = ["FORMAT", "MAX_RECORD_BYTES", "BatchRecord", "BatchStore", "store_root"]

log = logging.getLogger("pytest_violin.batch")

FORMAT = "pytest-violin batches"
VERSION = 1
#: Largest record file read (a 50,000-request batch's map is ~6 MB).
MAX_RECORD_BYTES = 256 * 2**20

#: A record's states: recorded but not yet named by the provider; submitted; collected (its
#: answers downloaded next to the record, ``<tag>.jsonl``).
SUBMITTING, SUBMITTED, COLLECTED = "submitting", "submitted", "collected"


@dataclass
class BatchRecord:
    """One batch of the project, as recorded."""

    tag: str
    group: str
    #: custom_id -> request key (the image cache's key of the request)
    requests: dict
    #: custom_id -> "sample id#repeat", for messages and ``batch list``
    samples: dict = field(default_factory=dict)
    id: str | None = None
    state: str = SUBMITTING
    created: float = 0.0
    provider_state: str = ""
    total: int = 0
    completed: int = 0
    failed: int = 0
    reason: str | None = None
    #: whether a run already counted what the provider billed for it (counted once)
    billed: bool = False

    @classmethod
    def from_dict(cls, obj) -> BatchRecord:
        if not isinstance(obj, dict):
            raise InvalidArgumentError("a batch record is not an object")
        text = (lambda v: isinstance(v, str) and 0 < len(v) <= 512)
        if not (text(obj.get("tag")) and text(obj.get("group"))):
            raise InvalidArgumentError("a batch record has no tag or group")
        requests, samples = obj.get("requests"), obj.get("samples", {})
        if not isinstance(requests, dict) or not all(text(k) and text(v) for k, v in requests.items()):
            raise InvalidArgumentError(f"batch record {obj['tag']!r}: its requests are not a map of strings")
        if not isinstance(samples, dict) or not all(text(k) and text(v) for k, v in samples.items()):
            samples = {}
        if obj.get("state") not in (SUBMITTING, SUBMITTED, COLLECTED):
            raise InvalidArgumentError(f"batch record {obj['tag']!r}: unknown state {obj.get('state')!r}")
        ident = obj.get("id")
        num = (lambda v: v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0)
        return cls(tag=obj["tag"], group=obj["group"], requests=dict(requests), samples=dict(samples),
                   id=ident if text(ident) else None, state=obj["state"],
                   created=float(obj["created"]) if isinstance(obj.get("created"), (int, float)) else 0.0,
                   provider_state=str(obj.get("provider_state") or "")[:64], total=num(obj.get("total")),
                   completed=num(obj.get("completed")), failed=num(obj.get("failed")),
                   reason=str(obj["reason"])[:300] if isinstance(obj.get("reason"), str) else None,
                   billed=obj.get("billed") is True)


def store_root(cache_root) -> Path:
    """The folder of the batch records beside the image cache's folder."""
    return Path(cache_root).parent / "violin-batches"


class BatchStore:
    """The records of one adapter identity (thread-safe; one writer process at a time).

    Parameters
    ----------
    root : path-like
        The folder (created on the first write).
    identity : str
        The adapter's secret-free identity.
    """

    def __init__(self, root, identity: str):
        self.root = Path(root)
        self.identity = str(identity)
        digest = hashlib.sha256(self.identity.encode("utf-8")).hexdigest()[:16]
        self.path = self.root / f"{digest}.json"
        self._lock = threading.RLock()
        self.records: list[BatchRecord] = []
        self.loaded = False

    def load(self) -> list:
        """Read the records (none when there is no file; a bad file is set aside)."""
        with self._lock:
            self.records, self.loaded = [], True
            try:
                info = self.path.lstat()
            except OSError:
                return self.records
            try:
                obj = read_option_json(self.path, what="batch record", limit=MAX_RECORD_BYTES)
                if not isinstance(obj, dict) or obj.get("format") != FORMAT or obj.get("version") != VERSION:
                    raise InvalidArgumentError(f"not a {FORMAT!r} file of version {VERSION}")
                if obj.get("adapter") != self.identity:
                    raise InvalidArgumentError("it records another adapter")
                batches = obj.get("batches")
                if not isinstance(batches, list):
                    raise InvalidArgumentError("its batches are not a list")
                self.records = [BatchRecord.from_dict(b) for b in batches]
            except (InvalidArgumentError, ValueError) as exc:
                bad = self.path.with_suffix(".bad")
                log.warning("batch record %s set aside as %s (%s, %d bytes): its batches are not collected",
                            str(self.path), bad.name, str(exc)[:200], info.st_size)
                try:
                    os.replace(self.path, bad)
                except OSError:
                    pass
                self.records = []
            return self.records

    def save(self) -> None:
        """Write every record atomically, synced to disk."""
        with self._lock:
            if not self.records:
                try:
                    self.path.unlink()
                except OSError:
                    pass
                return
            obj = {"format": FORMAT, "version": VERSION, "adapter": self.identity,
                   "batches": [asdict(r) for r in self.records]}
            atomic_write(self.path, json.dumps(obj, indent=1, sort_keys=True) + "\n", fsync=True)

    def add(self, record: BatchRecord) -> None:
        with self._lock:
            self.records.append(record)
            self.save()

    def remove(self, record: BatchRecord) -> None:
        with self._lock:
            self.records = [r for r in self.records if r is not record]
            self.save()
            try:
                self.answers_path(record).unlink()
            except OSError:
                pass

    def answers_path(self, record: BatchRecord) -> Path:
        """Where a collected batch's answers are kept until this project's runs used them."""
        safe = "".join(c for c in record.tag if c.isalnum() or c in "-_")[:64] or "batch"
        return self.root / f"{safe}.jsonl"
