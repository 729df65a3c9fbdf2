"""Fault injection: every failure retried or explained, never a crash."""

from __future__ import annotations

import email.utils
import socket
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin._decode import server_message
from pytest_violin._http import HttpClient, RetryPolicy, parse_retry_after
from pytest_violin.errors import GenerationError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models.http import HttpAdapter

from _servers import FaultServer, Reply, bomb_png, png_bytes, solid

IMG = solid(8, 6, (20, 40, 60))
NOISE = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
REQ = GenerationRequest(prompt="p", width=8, height=6, seed=7, sample_id="s/1", task="color")


def adapter_for(server, *, retries=3, timeout=5.0, sleeps=None, base=0.01, ra_cap=60.0):
    sleeps = [] if sleeps is None else sleeps
    policy = RetryPolicy(retries=retries, backoff_base=base, retry_after_cap=ra_cap,
                         sleep=sleeps.append, rng=lambda: 1.0)
    return HttpAdapter(server.url + "/gen", HttpClient(timeout=timeout, policy=policy))


def run(script, **kw):
    sleeps = []
    with FaultServer(script) as server:
        adapter = adapter_for(server, sleeps=sleeps, **kw)
        try:
            return adapter.generate(REQ), server.requests, sleeps
        finally:
            adapter.close()


def fail(script, **kw) -> tuple[GenerationError, list, list]:
    sleeps = []
    with FaultServer(script) as server:
        adapter = adapter_for(server, sleeps=sleeps, **kw)
        try:
            with pytest.raises(GenerationError) as info:
                adapter.generate(REQ)
        finally:
            adapter.close()
        return info.value, server.requests, sleeps


# ------------------------------------------------------------------ retried


def test_429_with_retry_after_seconds_is_honoured():
    out, reqs, sleeps = run([Reply(429, "slow down", headers={"Retry-After": "7"}), Reply.png(IMG)])
    assert np.array_equal(out, IMG) and len(reqs) == 2
    assert sleeps == [7.0]


def test_retry_after_within_the_cap_is_waited():
    _, _, sleeps = run([Reply(503, headers={"Retry-After": "2"}), Reply.png(IMG)], ra_cap=2.5)
    assert sleeps == [2.0]


def test_retry_after_beyond_the_cap_fails_at_once():
    """Waiting 60 s when the server asked for an hour only wastes the run's time."""
    err, reqs, sleeps = fail([Reply(503, headers={"Retry-After": "3600"}), Reply.png(IMG)], ra_cap=2.5)
    assert len(reqs) == 1 and sleeps == [] and err.attempts == 1 and err.status == 503
    assert "retry after 3600 s" in str(err) and "2.5 s" in str(err)


def test_retry_after_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    _, _, sleeps = run([Reply(429, headers={"Retry-After": when}), Reply.png(IMG)], timeout=60)
    assert 25 <= sleeps[0] <= 31


def test_429_without_retry_after_backs_off_exponentially():
    script = [Reply(429, "busy")] * 3 + [Reply.png(IMG)]
    out, reqs, sleeps = run(script, base=0.01)
    assert len(reqs) == 4
    assert sleeps == pytest.approx([0.01, 0.02, 0.04])  # rng() == 1.0: the full ceiling


def test_retry_after_one_second_really_waits(tmp_path):
    """One real wait: the default sleep honours a 1 s Retry-After."""
    with FaultServer([Reply(429, headers={"Retry-After": "1"}), Reply.png(IMG)]) as server:
        adapter = resolve_model(server.url, AdapterOptions(rootdir=tmp_path, retries=1))
        start = time.monotonic()
        adapter.generate(REQ)
        elapsed = time.monotonic() - start
        adapter.close()
        gap = server.requests[1].started - server.requests[0].started
    assert gap >= 1.0 and elapsed >= 1.0


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504])
def test_transient_status_then_success(status):
    out, reqs, _ = run([Reply(status, {"error": "try later"}), Reply.png(IMG)])
    assert np.array_equal(out, IMG) and len(reqs) == 2


def test_timeout_then_success():
    out, reqs, _ = run([Reply.png(IMG, delay=2.0), Reply.png(IMG)], timeout=0.3)
    assert np.array_equal(out, IMG) and len(reqs) == 2


def test_timeouts_exhaust_retries():
    err, reqs, _ = fail([Reply.png(IMG, delay=2.0)] * 2, timeout=0.2, retries=1)
    # the second attempt has the rest of the sample's budget (2 x 0.2 s)
    assert "timed out after 0.2 s" in str(err) or "the rest of the sample's budget of 0.4 s" in str(err)
    assert err.transport
    assert err.attempts == 2 and err.status is None and len(reqs) == 2


def test_dropped_connection_then_success():
    out, reqs, _ = run([Reply(drop=True), Reply.png(IMG)])
    assert np.array_equal(out, IMG) and len(reqs) == 2


def test_dropped_connections_exhaust_retries():
    err, reqs, _ = fail([Reply(drop=True)] * 3, retries=2)
    assert "closed the connection" in str(err) or "reset" in str(err)
    assert err.attempts == 3 and len(reqs) == 3
    assert "\n" not in str(err)


def test_body_cut_short_is_retried():
    data = png_bytes(IMG)
    out, reqs, _ = run([Reply(200, data, content_type="image/png", truncate=20), Reply.png(IMG)])
    assert np.array_equal(out, IMG) and len(reqs) == 2


def test_connection_refused_is_explained():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    sleeps = []
    policy = RetryPolicy(retries=1, sleep=sleeps.append, rng=lambda: 0.0)
    adapter = HttpAdapter(f"http://127.0.0.1:{port}/gen", HttpClient(timeout=2, policy=policy))
    with pytest.raises(GenerationError, match="connection refused") as info:
        adapter.generate(REQ)
    adapter.close()
    assert info.value.attempts == 2


def test_final_5xx_reports_status_message_and_attempts():
    err, reqs, sleeps = fail([Reply(503, {"error": {"message": "model is loading"}})] * 4)
    assert err.status == 503 and err.attempts == 4 and len(reqs) == 4 and len(sleeps) == 3
    assert "HTTP 503 Service Unavailable: model is loading" in str(err)
    assert str(err).endswith("(after 4 attempts)")


# -------------------------------------------------------------- not retried


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_are_final(status):
    err, reqs, sleeps = fail([Reply(status, {"detail": "nope"})] * 2)
    assert len(reqs) == 1 and sleeps == [] and err.status == status and err.attempts == 1
    assert "nope" in str(err)


def test_safety_refusal_message_is_shown():
    refusal = {"error": {"code": "content_policy_violation", "type": "invalid_request_error",
                         "message": "Your request was rejected as a result of our safety system."}}
    err, reqs, _ = fail([Reply(400, refusal)])
    assert len(reqs) == 1
    assert "rejected as a result of our safety system" in str(err)
    assert "content_policy_violation" in str(err)


def test_long_server_message_is_truncated_to_one_line():
    long = "boom\n" + "x" * 5000
    err, _, _ = fail([Reply(400, long)])
    text = str(err)
    assert "\n" not in text and "..." in text and len(text) < 600
    assert "boom" in text


# ---------------------------------------------------------- not an image


def test_html_error_page():
    html = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    err, _, _ = fail([Reply(200, html, content_type="text/html")])
    assert "HTML page" in str(err) and "502 Bad Gateway" in str(err)
    err, reqs, _ = fail([Reply(502, html, content_type="text/html")] * 2, retries=1)
    assert len(reqs) == 2 and "HTML page: 502 Bad Gateway" in str(err)


def test_json_without_image_lists_keys_and_server_text():
    err, _, _ = fail([Reply.json({"status": "queued", "message": "GPU busy"})])
    text = str(err)
    assert "JSON without an image" in text and "'status'" in text and "GPU busy" in text
    assert err.status == 200 and err.attempts == 1


@pytest.mark.parametrize(
    "reply, needle",
    [
        (Reply(200, b"", content_type="image/png"), "empty body (0 bytes)"),
        (Reply(200, b"", content_type="application/json"), "empty body (0 bytes)"),
        (Reply(200, png_bytes(NOISE)[:1500], content_type="image/png"), "truncated or corrupt"),
        (Reply(200, b"\x00\x01garbage\xff" * 10, content_type="application/octet-stream"),
         "neither an image nor JSON"),
        (Reply(200, "hello world, no image here", content_type="text/plain"), "neither an image nor JSON"),
        (Reply(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 30, content_type="image/png"),
         "not a recognised image format"),
        (Reply.json({"image": "!!!not base64!!!"}), "neither base64"),
        (Reply.json({"image": "aGVsbG8gd29ybGQ="}), "image"),  # valid base64 of text
        (Reply.json({"images": []}), "JSON without an image"),
        (Reply.json({"image": 5}), "JSON int"),
    ],
    ids=["zero-bytes", "zero-bytes-json", "truncated-png", "garbage", "text", "bad-png-header",
         "bad-base64", "base64-not-image", "empty-list", "number"],
)
def test_bodies_that_are_not_images(reply, needle):
    err, reqs, _ = fail([reply])
    assert needle in str(err)
    assert len(reqs) == 1 and err.attempts == 1
    assert "\n" not in str(err)


@pytest.mark.parametrize("side", [12000, 16384])
def test_decompression_bomb_is_refused_cheaply(side):
    # 12000^2 is over our 64-megapixel limit; 16384^2 is also over Pillow's own
    bomb = bomb_png(side)
    assert len(bomb) < 200_000
    start = time.monotonic()
    err, reqs, _ = fail([Reply(200, bomb, content_type="image/png")])
    assert time.monotonic() - start < 5
    assert "decompression bomb" in str(err)
    if side == 12000:
        assert "over the limit" in str(err) and "12000x12000" in str(err)
    assert len(reqs) == 1


def test_body_over_byte_limit_is_not_retried():
    with FaultServer([Reply(200, b"x" * 5000)] * 2) as server:
        client = HttpClient(policy=RetryPolicy(retries=2, sleep=lambda s: None), max_bytes=1000)
        with pytest.raises(GenerationError, match="over the limit of 1000 bytes") as info:
            HttpAdapter(server.url, client).generate(REQ)
        client.close()
    assert info.value.attempts == 1


def test_failed_url_download_reports_status():
    with FaultServer(routes={"/img.png": Reply(404, "gone")}) as server:
        server.push(Reply.json({"data": [{"url": server.url + "/img.png"}]}))
        adapter = adapter_for(server)
        with pytest.raises(GenerationError, match=r"image download .*img.png failed: HTTP 404") as info:
            adapter.generate(REQ)
        adapter.close()
    assert info.value.status == 404


# ------------------------------------------------------------------ pieces


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10), st.floats(0.001, 5), st.floats(0, 1, exclude_max=True))
def test_backoff_delay_has_full_jitter_bounds(n, base, r):
    policy = RetryPolicy(retries=3, backoff_base=base, backoff_cap=10.0, rng=lambda: r)
    delay = policy.delay(n)
    assert 0 <= delay <= min(10.0, base * 2**n) + 1e-12


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 1e6, allow_nan=False))
def test_retry_after_seconds_round_trip(seconds):
    assert parse_retry_after(repr(seconds)) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [None, "", "soon", "Mon, 99 Foo 2020"])
def test_unreadable_retry_after_is_ignored(value):
    assert parse_retry_after(value) is None


@pytest.mark.parametrize("value", [
    "Sun, 06 Nov 1994 08:49:37 GMT",   # IMF-fixdate
    "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850
    "Sun Nov  6 08:49:37 1994",        # obsolete asctime: no zone, still GMT
    "Sun, 06 Nov 1994 08:49:37 -0000",
])
def test_retry_after_dates_are_gmt_whatever_the_local_zone(monkeypatch, value):
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX only")
    when = 784111777.0  # 1994-11-06 08:49:37 UTC
    monkeypatch.setenv("TZ", "America/New_York")  # 5 hours behind UTC in November
    time.tzset()
    try:
        assert parse_retry_after(value, now=when - 30) == pytest.approx(30.0)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_past_retry_after_date_means_no_wait():
    assert parse_retry_after(email.utils.formatdate(time.time() - 100, usegmt=True)) == 0.0


def test_server_message_prefers_json_error_fields():
    assert server_message(b'{"detail": [{"msg": "field required"}]}') == "field required"
    assert server_message(b"") == "empty body"
    assert server_message(b"<html><h1>Oops</h1></html>", "text/html") == "HTML page: Oops"
