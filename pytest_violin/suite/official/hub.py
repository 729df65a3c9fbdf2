"""``hf:OWNER/NAME[@REVISION]``: the dataset's files through huggingface_hub and its cache.

``snapshot_download`` fetches the parquet files and any ``metadata/*.csv``
of the dataset repository once, with its progress bars, into the normal
Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
``~/.cache/huggingface/hub``); later runs read the cache. With
``HF_HUB_OFFLINE=1`` nothing is fetched: a snapshot not in the cache is a
one-line error. The cache folder and the offline switch are read from the
environment at each call (huggingface_hub reads them once, at import).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...errors import SuiteError
from .parquet import EXTRA_HINT

__all__ = ["parse_hub_spec", "hub_cache_dir", "offline", "download"]

_SPEC = re.compile(r"hf:([A-Za-z0-9][\w.-]{0,95})/([\w.-]{1,96})(?:@([\w./-]{1,128}))?")
ALLOW = ["*.parquet", "**/*.parquet", "metadata/*.csv", "*metadata*.csv", "**/*metadata*.csv"]


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


def _commit_of(snapshot: Path) -> str:
    return snapshot.name if re.fullmatch(r"[0-9a-f]{40}", snapshot.name) else ""


def download(spec: str) -> tuple[Path, str, str]:
    """The local snapshot folder of a hub dataset: ``(folder, repo_id, commit)``.

    Raises
    ------
    SuiteError
        huggingface_hub is missing (naming the extra), offline and not
        cached, the repository or revision does not exist, or the network
        fails: one line each.
    """
    repo_id, revision = parse_hub_spec(spec)
    try:
        import huggingface_hub
    except ImportError:
        raise SuiteError(f"--violin-suite={spec}: downloading from the Hugging Face hub needs "
                         f"huggingface_hub: {EXTRA_HINT}") from None
    cache = hub_cache_dir()
    local_only = offline()
    try:
        folder = huggingface_hub.snapshot_download(
            repo_id=repo_id, repo_type="dataset", revision=revision, cache_dir=str(cache),
            allow_patterns=ALLOW, local_files_only=local_only)
    except Exception as exc:  # the hub client's errors differ between releases
        name = type(exc).__name__
        if local_only:
            raise SuiteError(f"{spec}: not in the Hugging Face cache {str(cache)!r} and "
                             f"HF_HUB_OFFLINE is set; download it once online (or unset "
                             f"HF_HUB_OFFLINE)") from None
        first = (str(exc).splitlines() or [""])[0][:200]
        raise SuiteError(f"{spec}: the Hugging Face hub download failed ({name}: {first})") from None
    folder = Path(folder)
    return folder, repo_id, _commit_of(folder) or str(revision or "")
