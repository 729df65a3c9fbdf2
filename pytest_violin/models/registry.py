"""Turn a ``--violin-model`` spec into a model adapter.

A spec is ``SCHEME`` or ``SCHEME:TARGET`` (``http://`` and ``https://`` URLs are their own scheme, the URL the
target). Built-in schemes are listed in :data:`BUILTIN_SCHEMES`; third-party packages add schemes with the
entry point group ``pytest_violin.models``, whose objects are factories ``factory(target: str, options:
AdapterOptions) -> ModelAdapter``.

Suffix parameters (``openai:gpt-image-1?quality=low&seed=on``), shared by the factories: :func:`split_params`
splits and types them, :func:`parse_switch` reads on/off switches, :func:`format_params` writes them into
identities and :func:`check_model_name` checks the model name before them.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable, Mapping
from urllib.parse import parse_qsl

from ..errors import ModelSpecError

__all__ = ["AdapterOptions", "BUILTIN_SCHEMES", "ENTRY_POINT_GROUP", "available_schemes", "check_model_name",
           "coerce", "format_params", "parse_spec", "parse_switch", "resolve_model", "split_params"]


def coerce(value: str):
    """``"20"`` -> 20, ``"7.5"`` -> 7.5, ``"true"``/``"false"`` -> bool, else the text."""
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def split_params(target: str, *, what: str) -> tuple[str, dict]:
    """Split ``"name?a=1&b=x"`` into ``("name", {"a": 1, "b": "x"})``.

    Raises :class:`ModelSpecError`: for a malformed or repeated parameter.
    """
    head, sep, query = target.partition("?")
    params: dict = {}
    if sep:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise ModelSpecError(
                f"{what}: parameters {query!r} are not of the form name=value&name=value"
            ) from None
        for name, value in pairs:
            if name in params:
                raise ModelSpecError(f"{what}: parameter {name!r} is given twice")
            params[name] = coerce(value)
    return head, params


def parse_switch(value, *, name: str, what: str, allowed=("auto",)) -> object:
    """Read an on/off switch: True/False or one of ``allowed`` strings."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "on", "true", "yes"):
        return True
    if text in ("0", "off", "false", "no"):
        return False
    if text in allowed:
        return text
    raise ModelSpecError(
        f"{what}: {name}={value!r} is not a switch; accepted: on, off" + "".join(f", {a}" for a in allowed)
    )


def format_params(params: dict) -> str:
    """``?a=1&b=x`` for identities (sorted; empty for no parameters)."""
    if not params:
        return ""
    return "?" + "&".join(f"{k}={params[k]}" for k in sorted(params))


def check_model_name(model: str, pattern, *, what: str, example: str) -> str:
    """``model`` when ``pattern`` matches it, else a :class:`ModelSpecError` that names it.

    ``example``: a spec that works and what names are accepted, such as ``"ark:seedream-4-5-251128 (a model ID
    or an endpoint ID)"``.
    """
    if not model or not pattern.match(model):
        raise ModelSpecError(
            f"{what}: model name {model!r} is not accepted; accepted: {what}:MODEL such as {example}"
        )
    return model


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
