"""The HTML pages' templates: report.html and the comparison page.

One jinja2 environment with autoescape on, so every value a template shows (prompts, labels, sample ids,
server messages, metadata) is escaped where it is written; only values made as :class:`markupsafe.Markup` here
(inline SVG charts, whose text :mod:`~pytest_violin.report._svg` escapes) go in as they are. The templates
live in ``templates/``: one base page, one stylesheet (``violin.css``) and each page's script. The base page
pins its script by the SHA-256 of the text rendered between its ``<script>`` tags in the
Content-Security-Policy, which forbids everything else (no external resource, no other script; images only as
``data:`` URIs).
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from ..verdict import Outcome
from .json_report import fmt, fmt_pct, fmt_signed

__all__ = ["BADGES", "Markup", "badge", "capital", "csp", "render_page"]

#: The class of an outcome's badge (its colours in ``violin.css``); any other outcome is a failure (``fail``).
BADGES = {Outcome.PASSED: "pass", Outcome.ERROR: "err", Outcome.REFUSED: "ref"}


def badge(outcome) -> tuple[str, str]:
    """``(class, label)`` of an outcome's badge; anything unknown reads as a failure."""
    cls = BADGES.get(outcome)
    return (cls, str(outcome)) if cls else ("fail", "failed")


def csp(script: str) -> str:
    """The page's Content-Security-Policy: nothing external, only ``script`` (by its hash) may run."""
    digest = base64.b64encode(hashlib.sha256(str(script).encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")


class _Escaped(str):
    """Text :func:`_escape` made safe (a ``str`` made without Markup's Python-level ``__new__``)."""

    __slots__ = ()

    def __html__(self):
        return self


def _escape(value):
    """Every value a template writes: markup as it is, anything else through :func:`html.escape`
    (``&quot;`` and ``&#x27;`` for quotes, as the pages always wrote them)."""
    if hasattr(value, "__html__"):
        return value
    return _Escaped(escape(str(value), quote=True))


def capital(text) -> str:
    """A sentence from a clause: its first letter upper-cased."""
    text = str(text)
    return text[:1].upper() + text[1:]


_ENV = Environment(loader=PackageLoader("pytest_violin.report", "templates"), autoescape=True,
                   undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                   finalize=_escape)
# the policy is markup: its quotes must stay quotes (it holds nothing from outside)
_ENV.filters.update(fmt=fmt, fmt_pct=fmt_pct, fmt_signed=fmt_signed, capital=capital,
                    csp=lambda script: Markup(csp(script)))


def render_page(template: str, **context) -> str:
    """Render ``template`` (a file of ``templates/``) with ``context``."""
    return _ENV.get_template(template).render(**context)
