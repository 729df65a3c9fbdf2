"""Suffix parameters of model specs: ``openai:gpt-image-1?quality=low&seed=on``.

Shared by the ``openai:``, ``a1111:`` and ``diffusers:`` factories:
:func:`split_params` splits and types them (:func:`coerce`),
:func:`parse_switch` reads on/off switches, :func:`format_params` writes
them into adapter identities and :func:`check_model_name` checks the model
name before them.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from ..errors import ModelSpecError

__all__ = ["check_model_name", "coerce", "format_params", "parse_switch", "split_params"]


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

    ``example``: a spec that works and what names are accepted, such as
    ``"ark:seedream-4-5-251128 (a model ID or an endpoint ID)"``.
    """
    if not model or not pattern.match(model):
        raise ModelSpecError(
            f"{what}: model name {model!r} is not accepted; accepted: {what}:MODEL such as {example}"
        )
    return model
