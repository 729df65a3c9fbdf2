"""End to end: a run against a server that echoes credentials leaks them nowhere.

Every artifact of a run is searched for a planted secret. Each
run below plants credentials (a URL password, a query key, a header token
from ``${ENV}``, ``OPENAI_API_KEY``) and talks to a local fault server that
answers some samples with images and the others with errors (500, 401, an
HTML page, JSON without an image, an image URL that 404s) whose bodies, and
even the URLs it hands out, repeat every credential it received. Then every
artifact of the run is searched for the planted values in all the forms
:func:`pytest_violin.redaction.redact` promises to hide: the terminal output
(stdout and stderr, ``-rA``), the JUnit XML (with captured logs), every file
under the report directory, the baseline, the step summary, every file name
and file in the image cache, and the DEBUG log file.
"""

from __future__ import annotations

import base64
import re
import zlib
from urllib.parse import quote

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest

from _servers import FaultServer, Reply, secret_forms, solid

URL_PASSWORD = "e2e-urlpw-5c81d2a7f3"
QUERY_KEY = "e2e-qkey-90b7e4c2d1"
HEADER_TOKEN = "e2e-hdrtok-3f6a1b8e27"
OPENAI_KEY = "sk-e2e-plant-71c4a9d0e5b3"
USER = "violinuser"


def _preload():
    """Import what the runs need before pytester snapshots sys.modules.

    In-process pytester runs drop the modules first imported during a run;
    a second run would import ``requests`` again and its new classes would
    not match the old ones (``ValueError: You can only merge into
    CookieJar``). So the HTTP stack, the adapters and the suite (with its
    photo loaders) are imported here, once.
    """
    import importlib

    import requests

    from pytest_violin.suite import drawing as photos, load_suite

    for name in ("http", "openai", "a1111"):
        importlib.import_module(f"pytest_violin.models.{name}")
    requests.Session().close()

    for name in photos.SKIMAGE_PHOTOS:
        photos.load_photo("skimage", name)
    for sample in load_suite("violin", limit=6):
        sample.score(sample.expected())


_preload()


def basic_forms(user: str, password: str) -> set[str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {token, token.rstrip("=")}


def echo_handler(server_url: str):
    """Answers by a hash of the prompt; errors repeat every credential received."""

    def credentials(rec) -> str:
        auth = rec.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        decoded = ""
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(token).decode()
            except ValueError:
                decoded = "?"
        return f"auth={auth!r} decoded={decoded!r} path={rec.path!r}"

    def prompt_of(rec) -> str:
        ctype = rec.headers.get("Content-Type", "")
        if ctype.startswith("application/json"):
            return str(rec.json().get("prompt", ""))
        match = re.search(rb'name="prompt"\r\n\r\n(.*?)\r\n--', rec.body, re.DOTALL)
        return match.group(1).decode("utf-8", "replace") if match else ""

    def handler(rec):
        echo = credentials(rec)
        if rec.path.startswith("/files/"):
            return Reply(404, {"error": {"message": f"no such file; you sent {echo}"}})
        kind = zlib.crc32(prompt_of(rec).encode()) % 6
        if kind in (0, 1):
            return Reply.png(solid(16, 16, (217, 180, 81)))
        if kind == 2:
            return Reply(500, {"error": {"message": f"internal error, you sent {echo}"}},
                         headers={"Retry-After": "0", "X-Echo": echo[:200]})
        if kind == 3:
            return Reply(401, f"<html><head><title>401 bad credentials {echo}</title></head></html>",
                         content_type="text/html")
        if kind == 4:
            return Reply.json({"status": "error", "message": f"no image for {echo}"})
        # an image URL that carries the credentials in its query, and then 404s
        token = rec.headers.get("Authorization", "").partition(" ")[2]
        return Reply.json({"data": [{"url": f"{server_url}/files/1.png?sig={quote(token)}&{rec.path[1:]}"}]})

    return handler


def collect_artifacts(root, result) -> dict[str, str]:
    """Every text a run left behind: name -> content (file names included)."""
    texts = {
        "stdout": result.stdout.str(),
        "stderr": result.stderr.str(),
    }
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        texts[f"name of {rel}"] = rel
        if path.is_file():
            texts[rel] = path.read_bytes().decode("latin-1")
    return texts


def assert_nowhere(texts: dict[str, str], planted: set[str]) -> None:
    leaks = []
    for where, text in texts.items():
        for form in planted:
            at = text.find(form)
            if at >= 0:
                leaks.append(f"{where}: {form!r} in ...{text[max(at - 80, 0):at + 80]!r}...")
    assert not leaks, "planted secrets leaked:\n" + "\n".join(leaks[:20])


def run_violin(pytester, monkeypatch, model: str, *extra: str):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step-summary.md"))
    args = [
        f"--violin-model={model}",
        "--violin-limit=6",
        "--violin-retries=1",
        "--violin-timeout=20",
        "--violin-concurrency=2",
        "--junitxml=junit.xml",
        "-o", "junit_logging=all",
        "--violin-report=report",
        "--violin-save-baseline=baseline.json",
        "--violin-cache-dir=cache",
        "--log-level=DEBUG",
        "--log-file=run.log",
        "--log-file-level=DEBUG",
        "-p", "no:randomly",
        "-rA",
        *extra,
    ]
    return pytester.runpytest(*args)


def check_run(pytester, result, server, planted: set[str], *, sent: set[str]):
    outcomes = result.parseoutcomes()
    # the run really exercised both paths, and the server really received the secrets; the
    # 401 answers (and a 404) are setup errors: the sample ends as an error, unscored
    errors = outcomes.get("errors", 0)
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) + errors == 6, result.stdout.str()
    assert outcomes.get("failed", 0) >= 1 and errors >= 1, result.stdout.str()
    assert result.stdout.str().count("(not scored: not the model's failure)") >= errors, result.stdout.str()
    received = " ".join(f"{r.path} {r.headers.get('Authorization', '')}" for r in server.requests)
    for value in sent:
        assert value in received, f"the server never saw {value!r}: the test would prove nothing"
    texts = collect_artifacts(pytester.path, result)
    for name in ("junit.xml", "run.log", "report/results.json", "report/report.html",
                 "report/summary.md", "step-summary.md"):
        assert name in texts, f"{name} was not written: {sorted(texts)}"
    assert any(k.startswith("cache/") and k.endswith(".png") for k in texts), "nothing was cached"
    assert "***" in texts["stdout"], "no echoed credential reached the output: the test proves nothing"
    assert_nowhere(texts, planted)
    # a (task, variation) whose every generation failed must not stop the baseline
    assert "baseline.json" in texts, texts["stdout"][-2000:]


def test_url_password_and_query_key_never_leak(pytester, monkeypatch):
    """``http://user:PASSWORD@host/gen?key=KEY``: Basic auth, echoed back by every error."""
    planted = secret_forms(URL_PASSWORD) | secret_forms(QUERY_KEY) | basic_forms(USER, URL_PASSWORD)
    with FaultServer() as server:
        server.handler = echo_handler(server.url)
        host = server.url.split("//", 1)[1]
        result = run_violin(pytester, monkeypatch, f"http://{USER}:{URL_PASSWORD}@{host}/gen?key={QUERY_KEY}")
    check_run(pytester, result, server, planted, sent={QUERY_KEY, base64.b64encode(
        f"{USER}:{URL_PASSWORD}".encode()).decode()})


def test_header_token_from_env_and_url_password_never_leak(pytester, monkeypatch):
    """``--violin-header 'Authorization: Bearer ${TOKEN}'`` plus a URL password."""
    monkeypatch.setenv("VIOLIN_E2E_TOKEN", HEADER_TOKEN)
    planted = secret_forms(HEADER_TOKEN) | secret_forms(URL_PASSWORD) | basic_forms(USER, URL_PASSWORD)
    with FaultServer() as server:
        server.handler = echo_handler(server.url)
        host = server.url.split("//", 1)[1]
        result = run_violin(pytester, monkeypatch, f"http://{USER}:{URL_PASSWORD}@{host}/gen",
                            "--violin-header", "Authorization: Bearer ${VIOLIN_E2E_TOKEN}",
                            "--violin-header", "X-Api-Token: ${VIOLIN_E2E_TOKEN}")
    # the configured Authorization header wins over the URL credentials
    assert all(r.headers.get("Authorization") == f"Bearer {HEADER_TOKEN}" for r in server.requests)
    check_run(pytester, result, server, planted, sent={HEADER_TOKEN})


def test_openai_key_never_leaks(pytester, monkeypatch):
    """``openai:MODEL`` with ``OPENAI_API_KEY`` planted and the base URL on the fault server."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    planted = secret_forms(OPENAI_KEY)
    with FaultServer() as server:
        server.handler = echo_handler(server.url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        result = run_violin(pytester, monkeypatch, "openai:gpt-image-1")
    paths = {r.path.split("?")[0] for r in server.requests}
    assert "/v1/images/generations" in paths
    assert "/v1/images/edits" in paths  # the mask samples went through the multipart edits
    check_run(pytester, result, server, planted, sent={OPENAI_KEY})


@pytest.mark.parametrize(
    "header, names",
    [("Authorization: Bearer ${VIOLIN_E2E_UNSET}", "VIOLIN_E2E_UNSET"),
     ("X Bad: " + HEADER_TOKEN, "malformed"),
     ("Authorization Bearer " + HEADER_TOKEN, "malformed")],
    ids=["unset-env", "malformed-header", "header-without-colon"],
)
def test_usage_errors_name_things_never_values(pytester, monkeypatch, header, names):
    """A bad configuration stops the run; the message names the problem, never a credential."""
    monkeypatch.delenv("VIOLIN_E2E_UNSET", raising=False)
    result = pytester.runpytest(f"--violin-model=http://{USER}:{URL_PASSWORD}@127.0.0.1:9/gen",
                                f"--violin-header={header}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert names in text
    assert_nowhere({"output": text}, secret_forms(URL_PASSWORD) | secret_forms(HEADER_TOKEN))


#: (spec, key variable, base-URL variable, base URL path on the fault server) of the provider adapters
PROVIDERS = [
    ("gemini:gemini-2.5-flash-image", "GEMINI_API_KEY", "GEMINI_BASE_URL", ""),
    ("ark:seedream-4-0-250828", "ARK_API_KEY", "ARK_BASE_URL", "/api/v3"),
    ("bfl:flux-pro-1.1", "BFL_API_KEY", "BFL_BASE_URL", "/v1"),
    ("fal:fal-ai/flux/dev", "FAL_KEY", "FAL_BASE_URL", ""),
    ("replicate:black-forest-labs/flux-schnell", "REPLICATE_API_TOKEN", "REPLICATE_BASE_URL", "/v1"),
]


def _echo_every_header(rec):
    # every answer is an error that repeats every header the adapter sent, key included
    echoed = "; ".join(f"{k}={v}" for k, v in rec.headers.items())
    return Reply(401, {"error": {"message": f"bad credentials, you sent {echoed}"},
                       "detail": f"you sent {echoed}"})


@pytest.mark.parametrize("spec, key_var, base_var, base_path", PROVIDERS,
                         ids=[p[0].partition(":")[0] for p in PROVIDERS])
def test_provider_keys_never_leak_from_echoing_errors(pytester, monkeypatch, spec, key_var, base_var, base_path):
    """The planted-secret check for each provider adapter: errors that echo the key back."""
    key = f"plant-{key_var.lower()}-5be0c3a9d1"
    monkeypatch.setenv(key_var, key)
    with FaultServer() as server:
        server.handler = _echo_every_header
        monkeypatch.setenv(base_var, server.url + base_path)
        result = run_violin(pytester, monkeypatch, spec)
    assert server.requests, "the adapter never called the fake server: the test would prove nothing"
    assert any(key in " ".join(r.headers.values()) for r in server.requests), "the key was never sent"
    texts = collect_artifacts(pytester.path, result)
    assert "***" in texts["stdout"], "no echoed credential reached the output: the test proves nothing"
    assert_nowhere(texts, secret_forms(key))
