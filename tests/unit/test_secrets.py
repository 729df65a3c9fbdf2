"""Secrets never appear in messages, identities, logs or cache files."""

from __future__ import annotations

import base64
import dataclasses
import logging
import socket
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.execution.cache import ImageCache
from pytest_violin.errors import GenerationError
from pytest_violin.models import AdapterOptions, resolve_model
from pytest_violin.execution.runner import Runner
from pytest_violin.redaction import RedactingFilter, is_registered, redact, redact_url, register_secret

from _servers import FaultServer, Reply, solid
from conftest import FakeSample

#: Every character UTF-8 can encode (all but the surrogates): what st.text() draws by default,
#: without its per-codec table, which costs a fresh clone (no .hypothesis/) 3-6 s per process.
UTF8_CHARS = st.characters(exclude_categories=("Cs",))

HEADER_SECRET = "plant-hdr-7f3a9c1e5b"
OPENAI_SECRET = "sk-plant-4d2e8a7b9c11"
URL_PASSWORD = "plant-pw-6b1f0e3d"
ALL = (HEADER_SECRET, OPENAI_SECRET, URL_PASSWORD)


def forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [secret, quote(secret, safe=""), base64.b64encode(raw).decode().rstrip("=")]


def assert_clean(text: str, what: str) -> None:
    for secret in ALL:
        for form in forms(secret):
            assert form not in text, f"{what} leaks {form!r}: {text[:300]!r}"
    basic = base64.b64encode(f"user:{URL_PASSWORD}".encode()).decode().rstrip("=")
    assert basic not in text, f"{what} leaks the Basic auth header"


def test_register_and_redact_forms():
    register_secret("unit-secret-a1b2c3/+?")
    text = ("x unit-secret-a1b2c3/+? y " + quote("unit-secret-a1b2c3/+?", safe="") + " "
            + base64.b64encode(b"unit-secret-a1b2c3/+?").decode())
    out = redact(text)
    assert "unit-secret" not in out and out.count("***") == 3
    assert is_registered("unit-secret-a1b2c3/+?")


def test_short_and_empty_values_are_ignored():
    for value in ("", "   ", "ab", None, 12345):
        register_secret(value)
    assert redact("ab 12345 x") == "ab 12345 x"


def test_redact_url_drops_credentials():
    assert redact_url("https://u:p@host:8443/a?b=1") == "https://host:8443/a?b=1"
    assert redact_url("http://host/x") == "http://host/x"


def test_query_credentials_are_registered_by_adapters(tmp_path):
    adapter = resolve_model("http://127.0.0.1:9/gen?api_key=query-secret-998877&mode=fast",
                            AdapterOptions(rootdir=tmp_path))
    adapter.close()
    assert "query-secret-998877" not in adapter.identity
    assert "mode=fast" in adapter.identity


def test_logging_filter_redacts_args():
    register_secret("log-secret-5566778899")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token=%s", ("log-secret-5566778899",), None)
    RedactingFilter().filter(record)
    assert record.getMessage() == "token=***"


def test_logging_filter_redacts_tracebacks():
    register_secret("trace-secret-1029384756")
    try:
        raise ValueError("bad url http://h/x?key=trace-secret-1029384756")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    RedactingFilter().filter(record)
    text = logging.Formatter().format(record)
    assert "ValueError" in text and "key=***" in text
    assert "trace-secret-1029384756" not in text


def test_urllib3_request_lines_are_redacted_in_debug_logs(tmp_path, caplog):
    """urllib3 logs '"POST /gen?key=... HTTP/1.1" 200' at DEBUG; the key must not reach a log."""
    caplog.set_level(logging.DEBUG)
    secret = "debug-query-key-5f4e3d2c1b"
    with FaultServer([Reply.png(solid(2, 2))]) as server:
        adapter = resolve_model(f"{server.url}/gen?api_key={secret}", AdapterOptions(rootdir=tmp_path))
        from pytest_violin.models import GenerationRequest

        adapter.generate(GenerationRequest(prompt="p", width=2, height=2, seed=1, sample_id="s", task="color"))
        adapter.close()
    assert server.requests[0].path == f"/gen?api_key={secret}"  # the server did get it
    assert '"POST /gen?api_key=*** HTTP/1.1" 200' in caplog.text
    assert secret not in caplog.text


def test_image_urls_on_other_origins_get_no_credentials(tmp_path, monkeypatch):
    """An answer's image URL on another host is fetched without the endpoint's credentials."""
    monkeypatch.setenv("VIOLIN_PLANTED_TOKEN", HEADER_SECRET)
    image = solid(3, 3, (7, 8, 9))
    with FaultServer(routes={"/blob/x.png": Reply.png(image)}) as blob, \
            FaultServer(routes={"/files/y.png": Reply.png(image)}) as api:
        api.push(Reply.json({"data": [{"url": blob.url + "/blob/x.png?se=2030&sig=abc"}]}),
                 Reply.json({"url": "/files/y.png"}),
                 Reply.json({"data": [{"url": blob.url + "/blob/x.png"}]}))
        hostport = api.url.split("//", 1)[1]
        headers = AdapterOptions(rootdir=tmp_path, retries=0, headers=(
            "Authorization: Bearer ${VIOLIN_PLANTED_TOKEN}", "X-Api-Token: ${VIOLIN_PLANTED_TOKEN}",
            "Accept: image/png"))
        from pytest_violin.models import GenerationRequest

        req = GenerationRequest(prompt="p", width=3, height=3, seed=1, sample_id="s", task="color")
        adapter = resolve_model(api.url + "/gen", headers)
        assert (adapter.generate(req) == image).all()  # other origin
        assert (adapter.generate(req) == image).all()  # same origin (relative URL)
        adapter.close()
        basic = resolve_model(f"http://user:{URL_PASSWORD}@{hostport}/gen",
                              AdapterOptions(rootdir=tmp_path, retries=0))
        assert (basic.generate(req) == image).all()  # other origin, Basic auth from the URL
        basic.close()
    posts = [r for r in api.requests if r.method == "POST"]
    assert all("Authorization" in r.headers for r in posts)
    assert posts[0].headers["X-Api-Token"] == HEADER_SECRET
    same = [r for r in api.requests if r.method == "GET"]
    assert len(same) == 1 and same[0].headers["Authorization"] == f"Bearer {HEADER_SECRET}"
    assert same[0].headers["X-Api-Token"] == HEADER_SECRET
    assert len(blob.requests) == 2
    for r in blob.requests:
        assert "Authorization" not in r.headers and "X-Api-Token" not in r.headers, r.headers
    assert blob.requests[0].headers["Accept"] == "image/png"  # public headers stay


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20),
       st.text(UTF8_CHARS, max_size=20), st.text(UTF8_CHARS, max_size=20))
def test_registered_secret_never_survives_redaction(body, before, after):
    secret = f"hyp-secret-{body}"
    register_secret(secret)
    out = redact(before + secret + after)
    assert secret.strip() not in out


def test_planted_secrets_never_leak(tmp_path, monkeypatch, caplog):
    """Header via ${ENV}, OPENAI_API_KEY and a URL password; failing requests."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("VIOLIN_PLANTED_TOKEN", HEADER_SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_SECRET)

    def echo_credentials(rec):
        # the worst server: it echoes the credentials it received
        auth = rec.headers.get("Authorization", "")
        token = rec.headers.get("X-Api-Token", "")
        if rec.path.endswith("/ok"):
            return Reply.png(solid(4, 4))
        return Reply(401 if "bad" in rec.path else 503,
                     {"error": {"message": f"invalid credentials {auth} {token} for {rec.path}"}})

    strings: list[str] = []
    options = AdapterOptions(
        rootdir=tmp_path, retries=1, extra={"backoff_base": 0.001},
        headers=("X-Api-Token: ${VIOLIN_PLANTED_TOKEN}", "Authorization: Bearer ${VIOLIN_PLANTED_TOKEN}"),
    )
    with FaultServer(handler=echo_credentials) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1bad")
        hostport = server.url.split("//", 1)[1]
        specs = [
            f"http://user:{URL_PASSWORD}@{hostport}/bad",
            f"a1111:http://user:{URL_PASSWORD}@{hostport}/retry",
            "openai:gpt-image-1",
            f"http://{hostport}/retry",
        ]
        adapters = []
        for spec in specs:
            opts = options if not spec.startswith("a1111") else dataclasses.replace(options, headers=())
            adapter = resolve_model(spec, opts)
            adapters.append(adapter)
            strings += [adapter.identity, repr(adapter)]
            from pytest_violin.models import GenerationRequest

            req = GenerationRequest(prompt=f"p {OPENAI_SECRET}", width=4, height=4, seed=1,
                                    sample_id="s/1", task="color")
            with pytest.raises(GenerationError) as info:
                adapter.generate(req)
            strings += [str(info.value), info.value.reason, repr(info.value)]

        # through the runner (the plugin's path), with a cache
        cache = ImageCache(tmp_path / "cache")
        ok = resolve_model(f"http://user:{URL_PASSWORD}@{hostport}/ok", options)
        for adapter in (adapters[1], ok):
            runner = Runner(adapter, concurrency=2, cache=cache)
            runner.plan([FakeSample("a/1"), FakeSample("a/2")])
            for s in (FakeSample("a/1"), FakeSample("a/2")):
                gen = runner.get(s)
                strings.append(str(gen.error))
            runner.close()
        strings.append(ok.identity)
        for adapter in adapters + [ok]:
            adapter.close()

    # a dead port: connection errors carry the URL
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    dead = resolve_model(f"http://user:{URL_PASSWORD}@127.0.0.1:{port}/x", options)
    with pytest.raises(GenerationError) as info:
        from pytest_violin.models import GenerationRequest

        dead.generate(GenerationRequest(prompt="p", width=4, height=4, seed=1, sample_id="s", task="color"))
    strings.append(str(info.value))
    dead.close()

    assert len(server.requests) > 6
    # the server really received the secrets (so the test can fail)
    assert any(HEADER_SECRET in r.headers.get("X-Api-Token", "") for r in server.requests)
    for text in strings:
        assert_clean(text, "message/identity")
    assert any("***" in text for text in strings)
    assert_clean(caplog.text, "log output")
    files = list((tmp_path / "cache").rglob("*"))
    assert any(f.suffix == ".png" for f in files)
    for f in files:
        assert_clean(str(f), "cache path")
        if f.is_file():
            assert_clean(f.read_bytes().decode("latin-1"), "cache file")


def test_password_in_a_malformed_url_is_hidden(tmp_path):
    from pytest_violin.errors import ModelSpecError

    with pytest.raises(ModelSpecError) as info:
        resolve_model("http://me:malformed-pw-31337@127.0.0.1:99999/x", AdapterOptions(rootdir=tmp_path))
    assert "malformed-pw-31337" not in str(info.value)
    assert "malformed-pw-31337" not in redact("--violin-model=http://me:malformed-pw-31337@h")


# ----------------------------------------------------- redirects leave the origin

KEY_SECRET = "plant-key-93be5d0c7a"
CRED_HEADERS = ("Authorization", "X-Api-Key", "X-Custom-Auth", "Cookie")


def _req():
    from pytest_violin.models import GenerationRequest

    return GenerationRequest(prompt="p", width=3, height=3, seed=1, sample_id="s", task="color")


def _leak_free(requests_seen):
    for r in requests_seen:
        for name in CRED_HEADERS:
            assert name not in r.headers, (name, r.path, r.headers)
        assert KEY_SECRET not in str(r.headers) and KEY_SECRET not in r.path


@pytest.mark.parametrize("status", [302, 307])
def test_redirect_to_another_origin_drops_every_credential_header(tmp_path, monkeypatch, status):
    monkeypatch.setenv("VIOLIN_PLANTED_KEY", KEY_SECRET)
    image = solid(3, 3, (1, 2, 3))
    with FaultServer(routes={"/gen": Reply.png(image)}) as other, FaultServer() as api:
        api.push(Reply(status, headers={"Location": other.url + "/gen"}))
        options = AdapterOptions(rootdir=tmp_path, retries=0, headers=(
            "X-Api-Key: ${VIOLIN_PLANTED_KEY}", "X-Custom-Auth: plain-configured-value-42",
            "Authorization: Bearer ${VIOLIN_PLANTED_KEY}", "Cookie: session=${VIOLIN_PLANTED_KEY}",
            "Accept: image/png"))
        adapter = resolve_model(api.url + "/gen", options)
        assert (adapter.generate(_req()) == image).all()
        adapter.close()
    assert api.requests[0].headers["X-Api-Key"] == KEY_SECRET  # the endpoint itself gets them
    assert len(other.requests) == 1
    _leak_free(other.requests)
    assert other.requests[0].headers["Accept"] == "image/png"  # public headers stay
    if status == 307:
        assert other.requests[0].method == "POST"


def test_redirect_within_the_origin_keeps_the_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("VIOLIN_PLANTED_KEY", KEY_SECRET)
    image = solid(3, 3, (1, 2, 3))
    with FaultServer(routes={"/v2/gen": Reply.png(image)}) as api:
        api.push(Reply(307, headers={"Location": "/v2/gen"}))
        adapter = resolve_model(api.url + "/gen", AdapterOptions(
            rootdir=tmp_path, retries=0, headers=("X-Api-Key: ${VIOLIN_PLANTED_KEY}",)))
        adapter.generate(_req())
        adapter.close()
    assert [r.headers.get("X-Api-Key") for r in api.requests] == [KEY_SECRET, KEY_SECRET]


def test_redirected_image_url_drops_credentials_and_openai_key(tmp_path, monkeypatch):
    """An image URL on the endpoint's origin that redirects elsewhere: nothing follows."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY_SECRET)
    image = solid(3, 3, (4, 5, 6))
    with FaultServer(routes={"/blob.png": Reply.png(image)}) as other, FaultServer() as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.url + "/v1")
        api.routes["/files/1.png"] = Reply(302, headers={"Location": other.url + "/blob.png"})
        api.push(Reply.json({"data": [{"url": api.url + "/files/1.png"}]}))
        adapter = resolve_model("openai:gpt-image-1", AdapterOptions(
            rootdir=tmp_path, retries=0, headers=("X-Custom-Auth: ${OPENAI_API_KEY}",)))
        assert (adapter.generate(_req()) == image).all()
        adapter.close()
    gets = [r for r in api.requests if r.method == "GET"]
    assert gets and gets[0].headers["Authorization"] == f"Bearer {KEY_SECRET}"  # same origin
    assert len(other.requests) == 1
    _leak_free(other.requests)


# ---------------------------------------------------- redact first, then cut


def test_cut_secret_prefixes_are_redacted():
    secret = "s3cr3t-planted-token-0a9b8c7d"
    register_secret(secret)
    for cut in (6, 10, 13, 20, len(secret) - 1):
        text = f"bad token: Bearer {secret[:cut]}..."
        out = redact(text)
        assert secret[:cut] not in out and secret[:6] not in out, out
        assert out.startswith("bad token: Bearer ***")
    # too short to identify the secret: ordinary words survive
    assert redact("s3cr3 is fine") == "s3cr3 is fine"


def test_scheme_word_and_user_name_are_not_secret_prefixes(tmp_path, monkeypatch):
    monkeypatch.setenv("VIOLIN_PLANTED_KEY", KEY_SECRET)
    resolve_model("http://alice-in-chains:pw-8c7d6e5f4a@127.0.0.1:9/gen", AdapterOptions(
        rootdir=tmp_path, headers=("Authorization: Bearer ${VIOLIN_PLANTED_KEY}",))).close()
    assert redact("send a Bearer token as alice-in-chains") == "send a Bearer token as alice-in-chains"
    assert redact(f"Bearer {KEY_SECRET[:9]}") == "Bearer ***"
    assert "pw-8c7d" not in redact("alice-in-chains:pw-8c7d...")


def test_server_echo_of_a_cut_token_never_shows(tmp_path, monkeypatch):
    """The server cuts the token itself; our own cut falls inside it too."""
    monkeypatch.setenv("VIOLIN_PLANTED_KEY", KEY_SECRET)
    echo = {"error": {"message": f"Incorrect API key provided: Bearer {KEY_SECRET[:12]}..."}}
    long_echo = {"error": "x" * 190 + " key " + KEY_SECRET + " rejected"}
    with FaultServer([Reply.json(echo, status=401), Reply.json(long_echo, status=401)]) as api:
        adapter = resolve_model(api.url + "/gen", AdapterOptions(
            rootdir=tmp_path, retries=0, headers=("Authorization: Bearer ${VIOLIN_PLANTED_KEY}",)))
        messages = []
        for _ in range(2):
            with pytest.raises(GenerationError) as info:
                adapter.generate(_req())
            messages.append(str(info.value))
        adapter.close()
    for message in messages:
        assert KEY_SECRET[:6] not in message, message
    assert "Incorrect API key provided: Bearer ***" in messages[0]


# ------------------------------------------------ a header without a colon


@pytest.mark.parametrize("header", ["Authorization Bearer s3cr3t-typo-5e4d3c2b",
                                    "s3cr3t-typo-5e4d3c2b", "X-Api-Key\ts3cr3t-typo-5e4d3c2b"])
def test_header_without_colon_names_the_problem_not_the_value(tmp_path, header):
    from pytest_violin.models._transport.origins import parse_headers
    from pytest_violin.errors import ModelSpecError

    with pytest.raises(ModelSpecError) as info:
        parse_headers([header])
    text = str(info.value)
    assert "s3cr3t" not in text and "typo-5e4d" not in text
    assert "no ':'" in text and "Name: value" in text


# ------------------------------ empty variables, unsendable headers, escaping ids


@pytest.mark.parametrize("value", ["", "   "])
def test_a_header_variable_set_but_empty_is_a_usage_error_naming_it(value):
    from pytest_violin.errors import ModelSpecError
    from pytest_violin.models._transport.origins import parse_headers

    with pytest.raises(ModelSpecError) as info:
        parse_headers(["Authorization: Bearer ${VIOLIN_FORK_TOKEN}"], environ={"VIOLIN_FORK_TOKEN": value})
    assert "'VIOLIN_FORK_TOKEN'" in str(info.value) and "empty" in str(info.value)
    assert "'Authorization'" in str(info.value)


PROVIDER_KEYS = [("openai:gpt-image-1", ("OPENAI_API_KEY",)), ("bfl:flux-dev", ("BFL_API_KEY",)),
                 ("fal:fal-ai/flux/dev", ("FAL_KEY",)), ("replicate:owner/name", ("REPLICATE_API_TOKEN",)),
                 ("gemini:gemini-2.5-flash-image", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
                 ("ark:seedream-4-5-251128", ("ARK_API_KEY",))]


@pytest.mark.parametrize("spec,names", PROVIDER_KEYS, ids=[s.split(":")[0] for s, _ in PROVIDER_KEYS])
def test_an_empty_provider_key_variable_is_a_usage_error_naming_it(spec, names, tmp_path, monkeypatch):
    from pytest_violin.errors import ModelSpecError

    for name in names:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelSpecError) as unset:
        resolve_model(spec, AdapterOptions(rootdir=tmp_path))
    assert "not set" in str(unset.value)
    monkeypatch.setenv(names[0], "")
    with pytest.raises(ModelSpecError) as empty:
        resolve_model(spec, AdapterOptions(rootdir=tmp_path))
    assert names[0] in str(empty.value) and "set but empty" in str(empty.value)
    if len(names) > 1:  # a later variable with a value still wins
        monkeypatch.setenv(names[1], "fallback-key-5e6f7a8b")
        resolve_model(spec, AdapterOptions(rootdir=tmp_path)).close()


@pytest.mark.parametrize("header,where", [("X-Name: \u2603 snowman", "its value"),
                                          ("X-Name: ${VIOLIN_SNOW}", "expansion")])
def test_a_header_http_cannot_send_is_refused_when_configured(header, where, monkeypatch):
    from pytest_violin.errors import ModelSpecError
    from pytest_violin.models._transport.origins import parse_headers

    monkeypatch.setenv("VIOLIN_SNOW", "\u2603")
    with pytest.raises(ModelSpecError) as info:
        parse_headers([header])
    assert "'X-Name'" in str(info.value) and "latin-1" in str(info.value) and where in str(info.value)
    assert parse_headers(["X-Name: caf\u00e9"]) == {"X-Name": "caf\u00e9"}  # latin-1 is fine


@pytest.mark.parametrize("args,needle", [
    (["--violin-header=Authorization: Bearer ${VIOLIN_FORK_TOKEN}"], "VIOLIN_FORK_TOKEN"),
    (["--violin-header=X-Team: \u00e9quipe \u2603"], "X-Team"),
])
def test_bad_header_values_end_the_run_as_usage_errors_before_any_sample(pytester, monkeypatch, args, needle):
    monkeypatch.setenv("VIOLIN_FORK_TOKEN", "")
    with FaultServer(default=Reply.png(solid(4, 4))) as server:
        result = pytester.runpytest(f"--violin-model={server.url}/gen", "--violin-limit=2", *args)
    assert result.ret == 4, result.stdout.str() + result.stderr.str()
    assert needle in result.stderr.str()
    assert server.requests == []


@pytest.mark.parametrize("spec", ["fal:../../etc", "fal:fal-ai/../../etc", "fal:fal-ai/./flux", "fal:/etc/passwd",
                                  "fal:%2e%2e/%2e%2e/etc", "fal:fal-ai\\..\\x/y", "bfl:..", "bfl:%2e%2e",
                                  "bfl:.hidden"])
def test_a_model_id_that_would_leave_the_base_path_is_a_usage_error(spec, tmp_path, monkeypatch):
    from pytest_violin.errors import ModelSpecError

    monkeypatch.setenv("FAL_KEY", "kit-fal-key-1234")
    monkeypatch.setenv("BFL_API_KEY", "kit-bfl-key-1234")
    with pytest.raises(ModelSpecError) as info:
        resolve_model(spec, AdapterOptions(rootdir=tmp_path))
    assert "accepted" in str(info.value)


@pytest.mark.parametrize("url,why", [("http://evil.test\\@127.0.0.1:9/gen", "backslash"),
                                     ("http://%31%32%37.0.0.1:9/gen", "percent-encoded"),
                                     ("http://127.0.0.1:9/ge n", "whitespace")])
def test_an_endpoint_url_the_parsers_would_read_differently_is_a_usage_error(url, why, tmp_path):
    from pytest_violin.errors import ModelSpecError

    with pytest.raises(ModelSpecError, match=why):
        resolve_model(url, AdapterOptions(rootdir=tmp_path))


# ------------------------------------------------------ deeply nested JSON is not an error

DEEP = b"[" * 200_000 + b"]" * 200_000


def test_depth_bound_reads_strings_as_strings():
    from pytest_violin.models._transport.answers import JsonTooDeep, json_depth_over, load_json

    assert load_json(b'{"a": [1, {"b": "[[[[[[[[[[[[[[[["}]}') == {"a": [1, {"b": "[" * 16}]}
    assert not json_depth_over(b'["' + b"[" * 500 + b'"]', 10)
    assert not json_depth_over(b'["\\"' + b"[" * 500 + b'"]', 10)  # an escaped quote does not end it
    assert json_depth_over(b"[" * 11 + b"]" * 11, 10) and not json_depth_over(b"[" * 10 + b"]" * 10, 10)
    with pytest.raises(JsonTooDeep):
        load_json(DEEP)
    assert isinstance(JsonTooDeep("x"), ValueError)


def test_deeply_nested_json_is_the_models_failure_and_a_503_with_it_is_retried(tmp_path):
    from pytest_violin.errors import GenerationError

    deep = Reply(200, DEEP, content_type="application/json")
    with FaultServer([Reply(503, DEEP, content_type="application/json"), deep,
                      Reply(503, {"error": "busy"}), deep]) as server:
        adapter = resolve_model(server.url + "/gen", AdapterOptions(
            rootdir=tmp_path, retries=1, extra={"backoff_base": 0.001}))
        with pytest.raises(GenerationError) as info:
            adapter.generate(_req())
        assert len(server.requests) == 2  # the 503 was retried
        assert "nested deeper" in str(info.value) and "not an image" in str(info.value)
        assert info.value.status == 200 and not info.value.transport
        with pytest.raises(GenerationError):
            adapter.generate(_req())
        adapter.close()


def test_deeply_nested_job_status_is_the_models_failure(tmp_path):
    from pytest_violin.errors import GenerationError

    with FaultServer(routes={"/status": Reply(200, DEEP, content_type="application/json")}) as server:
        server.push(Reply.json({"status": "queued", "status_url": "/status"}, headers={"Retry-After": "0"}))
        adapter = resolve_model(server.url + "/gen", AdapterOptions(
            rootdir=tmp_path, retries=0, extra={"poll_url_path": "status_url"}))
        with pytest.raises(GenerationError) as info:
            adapter.generate(_req())
        adapter.close()
    assert "not JSON" in str(info.value) or "nested" in str(info.value)
