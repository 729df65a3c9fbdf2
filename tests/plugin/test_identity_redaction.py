"""Redaction masks secrets, never identities.

An adapter's identity (``openai:gpt-image-1@https://api.openai.com/v1``) names
the model and its endpoint: two models of one provider must be told apart in
the plan line, ``results.json`` (``metadata.adapter``), ``summary.md`` and
``report.html``. Only the password of a URL's user-info part
(``scheme://user:password@host``) and registered secrets (API keys) are
masked. Every spec shape of :data:`pytest_violin.models.registry.BUILTIN_SCHEMES`
is covered, with ``@``, ``:`` and ``/`` in model names where the adapter
accepts them.
"""

from __future__ import annotations

import html
import json
import re

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest

from _servers import FaultServer, Reply, secret_forms
from pytest_violin.models.registry import BUILTIN_SCHEMES, AdapterOptions, resolve_model
from pytest_violin.pytest_plugin._session import redact
from pytest_violin.redaction import MASK, redact_userinfo, register_secret

# the HTTP stack and the adapters, imported once outside pytester's in-process runs
import pytest_violin.models.a1111  # noqa: F401
import pytest_violin.models.ark  # noqa: F401
import pytest_violin.models.bfl  # noqa: F401
import pytest_violin.models.fal  # noqa: F401
import pytest_violin.models.gemini  # noqa: F401
import pytest_violin.models.http  # noqa: F401
import pytest_violin.models.openai  # noqa: F401
import pytest_violin.models.replicate  # noqa: F401

URL_PASSWORD = "idpw-planted-4e9a1c7b"
USER = "violinuser"

#: (spec, key variable, base-URL variable, base path on the fake server): one
#: per provider adapter, with the most unusual model name the adapter accepts.
PROVIDERS = [
    ("openai:org@team/gpt:image-1", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"),
    ("openai:gpt-image-1", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"),
    ("gemini:gemini-2.5-flash-image", "GEMINI_API_KEY", "GEMINI_BASE_URL", "/v1beta"),
    ("ark:seedream-4-0-250828", "ARK_API_KEY", "ARK_BASE_URL", "/api/v3"),
    ("bfl:flux-pro-1.1", "BFL_API_KEY", "BFL_BASE_URL", "/v1"),
    ("fal:fal-ai/flux/dev", "FAL_KEY", "FAL_BASE_URL", ""),
    ("replicate:owner/name:abc123", "REPLICATE_API_TOKEN", "REPLICATE_BASE_URL", "/v1"),
]

#: schemes whose adapters need what CI does not install or files the test does not write
NOT_RUN = {"diffusers": "needs torch and diffusers", "comfyui": "needs a workflow file",
           "https": "the same adapter as http"}


def _key(var: str) -> str:
    return f"key-planted-{var.lower()}-8d2f" if var != "FAL_KEY" else "fal-id-planted:fal-secret-planted-8d2f"


def _identities(tmp_path, monkeypatch, base: str) -> dict[str, str]:
    """spec -> identity of every built-in adapter that can be built here."""
    for _, var, base_var, path in PROVIDERS:
        monkeypatch.setenv(var, _key(var))
        monkeypatch.setenv(base_var, base + path)
    folder = tmp_path / "out@v2:x"
    folder.mkdir()
    specs = [p[0] for p in PROVIDERS] + [
        "oracle", "python:os:getcwd", f"dir:{folder}",
        f"a1111:http://{USER}:{URL_PASSWORD}@127.0.0.1:9",
        f"http://{USER}:{URL_PASSWORD}@127.0.0.1:9/gen",
    ]
    out = {}
    for spec in specs:
        adapter = resolve_model(spec, AdapterOptions(rootdir=tmp_path, retries=0))
        try:
            out[spec] = adapter.identity
        finally:
            close = getattr(adapter, "close", None)
            if callable(close):
                close()
    return out


def test_every_adapter_identity_survives_redaction(tmp_path, monkeypatch):
    identities = _identities(tmp_path, monkeypatch, "https://api.example.invalid")
    covered = {spec.partition(":")[0] for spec in identities}
    assert set(BUILTIN_SCHEMES) - covered - set(NOT_RUN) == set(), "a scheme of the registry is not covered"
    for spec, identity in identities.items():
        # the model name is in the identity, and redaction leaves it whole
        if "@" in spec and "://" not in spec:
            assert spec.partition(":")[2] in identity
        assert redact(identity) == identity, (spec, redact(identity))
        assert redact_userinfo(identity) == identity
        assert URL_PASSWORD not in identity
    assert identities["openai:gpt-image-1"] == "openai:gpt-image-1@https://api.example.invalid/v1"


@pytest.fixture
def no_registered_secrets(monkeypatch):
    """An empty secret registry for this test only.

    The registry is process-wide, and a key another test registered on the same
    worker masks its own cut copies too: ``google-fallback-key-...`` (the gemini
    adapter's tests) makes ``google`` in ``googleapis.com`` a masked prefix. This
    test is about the user-info rule alone.
    """
    import pytest_violin.redaction as redaction

    monkeypatch.setattr(redaction, "_secrets", set())
    monkeypatch.setattr(redaction, "_ordered", ())
    monkeypatch.setattr(redaction, "_prefix_rules", {})
    monkeypatch.setattr(redaction, "_ordered_prefixes", ())


@pytest.mark.parametrize("text, masked", [
    ("https://alice:pw-1234@host.example/gen", "https://alice:***@host.example/gen"),
    ("a1111:http://alice:pw-1234@127.0.0.1:7860", "a1111:http://alice:***@127.0.0.1:7860"),
    ("see https://:tok-1234@[::1]:80/x.", "see https://:***@[::1]:80/x."),
    ("openai:org@team/gpt:image-1@https://api.openai.com/v1", None),
    ("replicate:owner/name:abc123@https://api.replicate.com/v1 input=de6487ab764c", None),
    ("gemini:gemini-2.5-flash-image@https://generativelanguage.googleapis.com/v1beta", None),
    ("dir:/data/out@v2:x", None),
    ("https://user@host.example/path:with@signs", None),
])
def test_only_url_passwords_are_masked(text, masked, no_registered_secrets):
    assert redact_userinfo(text) == (text if masked is None else masked)


@pytest.mark.parametrize("text", ["htp://alice:pw-1234@example.invalid/gen",
                                  "http//alice:pw-1234@example.invalid/gen",
                                  "alice:pw-1234@example.invalid/gen"])
def test_a_spec_that_did_not_parse_still_hides_its_password(text):
    out = redact_userinfo(text, loose=True)
    assert "pw-1234" not in out and "example.invalid" in out and MASK in out
    # loosely read, a model name followed by a URL is still no password
    assert redact_userinfo("openai:gpt-image-1@https://api.openai.com/v1", loose=True) == \
        "openai:gpt-image-1@https://api.openai.com/v1"


def test_a_registered_secret_is_masked_inside_an_identity():
    register_secret("modelkey-planted-51aa")
    assert redact("custom:modelkey-planted-51aa@https://h.example/v1") == f"custom:{MASK}@https://h.example/v1"


def _bad_request(rec):
    # what the providers answer a request they refuse: an error status with a
    # JSON error body; this one echoes the headers (the key) back
    echoed = "; ".join(f"{k}={v}" for k, v in rec.headers.items())
    return Reply(400, {"error": {"message": f"invalid request, you sent {echoed}"}})


def _check_reports(pytester, result, identity: str, planted: set[str]) -> None:
    out = result.stdout.str()
    plan = [line for line in out.splitlines() if line.startswith("violin plan:")]
    # the identity, whole, then the next field (", suite" or " (bills: ...)")
    assert plan and re.search(f"adapter {re.escape(identity)}[ ,]", plan[0]), plan
    report = pytester.path / "report"
    meta = json.loads((report / "results.json").read_text())["metadata"]
    assert meta["adapter"] == identity
    assert identity in (report / "summary.md").read_text()
    assert html.escape(identity) in (report / "report.html").read_text()
    texts = {"stdout": out, "stderr": result.stderr.str()}
    for path in report.rglob("*"):
        if path.is_file():
            texts[path.name] = path.read_text(encoding="utf-8", errors="replace")
    leaks = [(where, form) for where, text in texts.items() for form in planted if form in text]
    assert not leaks, leaks


def _run(pytester, spec):
    return pytester.runpytest(f"--violin-model={spec}", "--violin-limit=1", "--violin-retries=0",
                              "--violin-timeout=10", "--violin-no-cache", "--violin-report=report",
                              "-p", "no:randomly")


@pytest.mark.parametrize("spec, key_var, base_var, base_path", PROVIDERS,
                         ids=[p[0].partition(":")[0] + ("-odd-name" if "@" in p[0] else "") for p in PROVIDERS])
def test_provider_identity_is_readable_in_every_report(pytester, monkeypatch, spec, key_var, base_var, base_path):
    key = _key(key_var)
    monkeypatch.setenv(key_var, key)
    with FaultServer(handler=_bad_request) as server:
        monkeypatch.setenv(base_var, server.url + base_path)
        result = _run(pytester, spec)
    assert server.requests, "the adapter never called the fake server"
    identity = f"{spec}@{server.url}{base_path}"
    if spec.startswith("replicate:"):
        identity += " input="  # the identity names a digest of the default input too
        meta = json.loads((pytester.path / "report" / "results.json").read_text())["metadata"]
        identity = meta["adapter"] if meta["adapter"].startswith(identity) else identity
    _check_reports(pytester, result, identity, secret_forms(key) | {key.partition(":")[2] or key})


@pytest.mark.parametrize("form", ["a1111", "http"])
def test_url_password_is_masked_and_the_host_stays(pytester, form):
    with FaultServer(handler=_bad_request) as server:
        netloc = f"{USER}:{URL_PASSWORD}@127.0.0.1:{server.port}"
        spec = f"a1111:http://{netloc}" if form == "a1111" else f"http://{netloc}/gen"
        result = _run(pytester, spec)
    assert server.requests, "the adapter never called the fake server"
    identity = (f"a1111:http://127.0.0.1:{server.port}" if form == "a1111"
                else f"http://127.0.0.1:{server.port}/gen")
    _check_reports(pytester, result, identity, secret_forms(URL_PASSWORD))
