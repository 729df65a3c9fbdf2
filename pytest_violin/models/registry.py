"""Turn a ``--violin-model`` spec into a model adapter.

A spec is ``SCHEME`` or ``SCHEME:TARGET`` (``http://`` and ``https://`` URLs
are their own scheme, the URL the target). Built-in schemes are listed in
:data:`BUILTIN_SCHEMES`; third-party packages add schemes with the entry
point group ``pytest_violin.models``, whose objects are factories
``factory(target: str, options: AdapterOptions) -> ModelAdapter``.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable, Mapping

from ..errors import ModelSpecError

__all__ = [
    "AdapterOptions",
    "BUILTIN_SCHEMES",
    "ENTRY_POINT_GROUP",
    "available_schemes",
    "parse_spec",
    "resolve_model",
]

ENTRY_POINT_GROUP = "pytest_violin.models"

#: scheme -> "module:factory" of the adapters shipped with the package.
BUILTIN_SCHEMES: Mapping[str, str] = {
    "oracle": "pytest_violin.models.oracle:create",
    "python": "pytest_violin.models.python:create",
    "dir": "pytest_violin.models.directory:create",
    "http": "pytest_violin.models.http:create",
    "https": "pytest_violin.models.http:create",
    "openai": "pytest_violin.models.openai:create",
    "a1111": "pytest_violin.models.a1111:create",
    "diffusers": "pytest_violin.models.diffusers:create",
    # providers' image APIs
    "gemini": "pytest_violin.models.gemini:create",
    "ark": "pytest_violin.models.ark:create",
    "bfl": "pytest_violin.models.bfl:create",
    "fal": "pytest_violin.models.fal:create",
    "replicate": "pytest_violin.models.replicate:create",
    "comfyui": "pytest_violin.models.comfyui:create",
}

SPEC_FORMS = (
    "oracle, python:MODULE:ATTR, dir:PATH, http://URL, https://URL, openai:MODEL, "
    "a1111:URL, diffusers:PATH_OR_ID, gemini:MODEL, ark:MODEL, bfl:MODEL, fal:APP, "
    "replicate:OWNER/NAME[:VERSION], comfyui:URL, or SCHEME:TARGET of an installed "
    f"'{ENTRY_POINT_GROUP}' entry point"
)


@dataclass(frozen=True)
class AdapterOptions:
    """Settings every adapter factory receives.

    * ``rootdir``: the pytest rootdir (relative paths and ``python:`` modules resolve against it).
    * ``headers``: extra HTTP headers; values may contain ``${ENV_VAR}`` references, expanded by the HTTP
      adapters, never logged.
    * ``timeout``: seconds per HTTP request.
    * ``retries``: retries after the first attempt on transient failures.
    * ``request_template``: JSON body template for the generic HTTP adapter.
    * ``response_path``: where the image is in a JSON response (``data.0.b64_json``).
    * ``concurrency``: requests in flight at once (adapters may size their pools by it).
    * ``extra``: free-form settings for third-party adapters.
    * ``basedir``: where relative paths in the model spec (``dir:PATH``, ``diffusers:PATH``) resolve: the
      directory pytest was started in for a command-line spec, the ini file's directory for an ini spec.
      ``None``: the rootdir.
    * ``max_answer_bytes``: largest model answer read, in bytes after decompression (default 64 MiB,
      ``--violin-max-answer-mb``): ``Content-Length`` is checked first, then the body while it streams; image
      URL downloads too.
    * ``cancel``: set by the runner when the run is interrupted: adapters start no new request, retry or poll
      once it is set, wait on it instead of sleeping, and raise
      :class:`~pytest_violin.errors.GenerationCancelled`.
    """

    rootdir: Path = field(default_factory=Path.cwd)
    headers: tuple = ()
    timeout: float = 120.0
    retries: int = 3
    request_template: Path | None = None
    response_path: str | None = None
    concurrency: int = 4
    extra: Mapping = field(default_factory=dict)
    basedir: Path | None = None
    max_answer_bytes: int = 64 * 2**20
    cancel: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)

    @property
    def spec_base(self) -> Path:
        """The directory relative spec paths resolve against."""
        return Path(self.basedir if self.basedir is not None else self.rootdir)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a model spec into ``(scheme, target)``.

    Raises :class:`ModelSpecError`: for an empty or malformed spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ModelSpecError(f"empty model spec {spec!r}; accepted: {SPEC_FORMS}")
    spec = spec.strip()
    lowered = spec.lower()
    if lowered.startswith(("http://", "https://")):
        return lowered.split(":", 1)[0], spec
    scheme, _, target = spec.partition(":")
    return scheme.lower(), target


def _entry_point_factories() -> dict[str, object]:
    return {ep.name.lower(): ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_schemes() -> list[str]:
    """All schemes a spec may use: built-in and installed third-party ones."""
    return sorted(set(BUILTIN_SCHEMES) | set(_entry_point_factories()))


def _load_factory(scheme: str) -> Callable:
    if scheme in BUILTIN_SCHEMES:
        module_name, _, attr = BUILTIN_SCHEMES[scheme].partition(":")
        return getattr(importlib.import_module(module_name), attr)
    eps = _entry_point_factories()
    if scheme in eps:
        return eps[scheme].load()
    raise ModelSpecError(
        f"unknown model scheme {scheme!r}; accepted: {SPEC_FORMS} "
        f"(installed schemes: {', '.join(available_schemes())})"
    )


def resolve_model(spec: str, options: AdapterOptions | None = None):
    """Build the model adapter ``spec`` names (:data:`SPEC_FORMS`).

    Raises :class:`ModelSpecError` (a ``ValueError``) naming the spec and the accepted forms.
    """
    scheme, target = parse_spec(spec)
    factory = _load_factory(scheme)
    return factory(target, options or AdapterOptions())
