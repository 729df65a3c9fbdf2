"""Fault injection: every failure retried or explained, never a crash."""

from __future__ import annotations

import email.utils
import socket
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.models._transport.answers import server_message
from pytest_violin.models._transport.client import HttpClient
from pytest_violin.models._transport.retries import RetryPolicy, parse_retry_after
from pytest_violin.errors import GenerationCancelled, GenerationError
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model
from pytest_violin.models.http import HttpAdapter
from pytest_violin.imaging import as_rgb8

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


def test_each_retry_waits_the_one_backoff_it_drew():
    """The wait checked against the sample's budget is the wait slept: one draw per retry."""
    draws = iter([0.25, 0.75])
    policy = RetryPolicy(retries=3, backoff_base=0.01, sleep=(sleeps := []).append, rng=lambda: next(draws))
    with FaultServer([Reply(503, "busy"), Reply(502, "busy"), Reply.png(IMG)]) as server:
        client = HttpClient(timeout=5.0, policy=policy)
        out = HttpAdapter(server.url + "/gen", client).generate(REQ)
        client.close()
    assert np.array_equal(out, IMG)
    assert sleeps == pytest.approx([0.01 * 0.25, 0.02 * 0.75])
    assert next(draws, None) is None  # both draws used, none wasted


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


def test_an_exception_class_comes_with_its_words():
    # the A1111 web UI's answer to every failure: the class under "error", the words under "errors"
    answer = (b'{"error": "OutOfMemoryError", "detail": "", "body": "", "errors": "CUDA out of memory. '
              b'Tried to allocate 20.00 MiB"}')
    assert server_message(answer) == "OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"
    assert server_message(b'{"error": "OutOfMemoryError", "detail": "", "errors": ""}') == "OutOfMemoryError"
    assert server_message(b'{"error": {"message": "bad size", "code": "invalid_size"}}') == "bad size [invalid_size]"


# ------------------------------------------------------------- bounded time


def _bytes_forever(piece=b"x"):
    while True:
        yield piece


def test_trickling_body_is_cut_at_the_attempt_deadline(tmp_path):
    """One byte at a time never trips a per-read timeout: the deadline covers the body."""
    trickle = Reply(stream=lambda: _bytes_forever(b"7"), interval=0.1, length=10_000,
                    content_type="image/png")
    with FaultServer([trickle]) as server:
        adapter = resolve_model(server.url, AdapterOptions(rootdir=tmp_path, timeout=1.0, retries=0))
        start = time.monotonic()
        with pytest.raises(GenerationError) as info:
            adapter.generate(REQ)
        elapsed = time.monotonic() - start
        adapter.close()
    assert elapsed < 2.5, elapsed
    assert "timed out after 1 s reading the response" in str(info.value)
    assert info.value.transport and info.value.status == 200


def test_endless_body_without_length_is_cut_at_the_deadline(tmp_path):
    endless = Reply(stream=lambda: _bytes_forever(b"{" * 100), interval=0.05,
                    content_type="application/json")
    with FaultServer([endless]) as server:
        adapter = resolve_model(server.url, AdapterOptions(rootdir=tmp_path, timeout=1.0, retries=0))
        start = time.monotonic()
        with pytest.raises(GenerationError, match="timed out"):
            adapter.generate(REQ)
        assert time.monotonic() - start < 2.5
        adapter.close()


def test_huge_retry_after_does_not_hold_the_sample(tmp_path):
    """503 Retry-After: 100000 ends the sample at once (real waits, default policy)."""
    with FaultServer(default=Reply(503, "busy", headers={"Retry-After": "100000"})) as server:
        adapter = resolve_model(server.url, AdapterOptions(rootdir=tmp_path, timeout=1.0, retries=3))
        start = time.monotonic()
        with pytest.raises(GenerationError) as info:
            adapter.generate(REQ)
        elapsed = time.monotonic() - start
        adapter.close()
    assert elapsed < 2.0, elapsed
    assert info.value.status == 503 and "100000 s" in str(info.value)
    assert not info.value.transport


def test_retries_and_waits_share_one_budget_per_sample(tmp_path):
    """Many retries with honoured waits stop at 2 x the timeout in total."""
    with FaultServer(default=Reply(503, "busy", headers={"Retry-After": "0.3"})) as server:
        adapter = resolve_model(server.url, AdapterOptions(rootdir=tmp_path, timeout=1.0, retries=100))
        start = time.monotonic()
        with pytest.raises(GenerationError) as info:
            adapter.generate(REQ)
        elapsed = time.monotonic() - start
        adapter.close()
        sent = len(server.requests)
    assert elapsed <= 2.0 + 0.5, elapsed
    assert 3 <= sent <= 8 and info.value.attempts == sent
    assert "budget of 2 s" in str(info.value)


def test_cancel_ends_a_hanging_attempt_and_a_retry_wait(tmp_path):
    cancel = threading.Event()
    options = AdapterOptions(rootdir=tmp_path, timeout=60.0, retries=3, cancel=cancel)
    for script in ([Reply.png(IMG, delay=30)], [Reply(503, headers={"Retry-After": "30"})]):
        cancel.clear()
        with FaultServer(script) as server:
            adapter = resolve_model(server.url, options)
            timer = threading.Timer(0.3, cancel.set)
            timer.start()
            start = time.monotonic()
            with pytest.raises(GenerationCancelled):
                adapter.generate(REQ)
            assert time.monotonic() - start < 1.5
            timer.join()
            # nothing starts once the run is cancelled
            with pytest.raises(GenerationCancelled):
                adapter.generate(REQ)
            assert len(server.requests) == 1
            adapter.close()


def test_transport_flag_marks_failures_without_an_answer(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    refused = resolve_model(f"http://127.0.0.1:{port}/gen", AdapterOptions(rootdir=tmp_path, retries=0))
    with pytest.raises(GenerationError) as info:
        refused.generate(REQ)
    refused.close()
    assert info.value.transport and info.value.status is None
    err, _, _ = fail([Reply(500, "boom")], retries=0)
    assert not err.transport and err.status == 500


# ------------------------------------------------------------ bounded bytes

MIB = 2**20


def _limited(server, tmp_path, mib=1, **kw):
    return resolve_model(server.url, AdapterOptions(rootdir=tmp_path, retries=0,
                                                    max_answer_bytes=mib * MIB, **kw))


def test_announced_length_over_the_cap_is_refused_before_reading(tmp_path):
    big = Reply(stream=lambda: _bytes_forever(b"\x89PNG" * 16384), length=50 * MIB,
                content_type="image/png")
    with FaultServer([big]) as server:
        adapter = _limited(server, tmp_path)
        with pytest.raises(GenerationError, match=r"over the limit of 1048576 bytes \(Content-Length 52428800"):
            adapter.generate(REQ)
        adapter.close()
        sent = server.bytes_sent
    assert sent < 8 * MIB  # what the kernel buffers, not the 50 MiB announced


def test_streamed_answer_over_the_cap_is_refused_while_reading(tmp_path):
    big = Reply(stream=lambda: _bytes_forever(b'{"image": "' + b"A" * 65536), content_type="application/json")
    with FaultServer([big]) as server:
        adapter = _limited(server, tmp_path)
        with pytest.raises(GenerationError, match="over the limit of 1048576 bytes") as info:
            adapter.generate(REQ)
        adapter.close()
    assert info.value.attempts == 1 and not info.value.transport


def test_gzip_bomb_is_bounded_by_the_same_cap(tmp_path):
    import gzip

    bomb = gzip.compress(b"\x00" * (200 * MIB), compresslevel=9)
    assert len(bomb) < 300_000
    reply = Reply(200, bomb, content_type="application/json", headers={"Content-Encoding": "gzip"})
    with FaultServer([reply]) as server:
        adapter = _limited(server, tmp_path, mib=4)
        start = time.monotonic()
        with pytest.raises(GenerationError, match="over the limit of 4194304 bytes"):
            adapter.generate(REQ)
        assert time.monotonic() - start < 2
        adapter.close()


def test_gzip_answer_within_the_cap_is_decoded(tmp_path):
    import gzip

    reply = Reply(200, gzip.compress(png_bytes(IMG)), content_type="image/png",
                  headers={"Content-Encoding": "gzip"})
    with FaultServer([reply]) as server:
        adapter = _limited(server, tmp_path)
        assert np.array_equal(adapter.generate(REQ), IMG)
        adapter.close()


def test_unsupported_content_encoding_is_explained(tmp_path):
    reply = Reply(200, b"\x00" * 100, content_type="image/png", headers={"Content-Encoding": "br"})
    with FaultServer([reply]) as server:
        adapter = _limited(server, tmp_path)
        with pytest.raises(GenerationError, match="Content-Encoding 'br'"):
            adapter.generate(REQ)
        adapter.close()


def test_text_body_is_never_decoded_as_base64(tmp_path):
    """Only JSON fields can hold an image; a text/plain body is text."""
    import base64

    text = base64.b64encode(png_bytes(IMG)).decode()
    with FaultServer([Reply(200, text, content_type="text/plain")]) as server:
        adapter = _limited(server, tmp_path)
        with pytest.raises(GenerationError, match="neither an image nor JSON"):
            adapter.generate(REQ)
        adapter.close()


def test_error_bodies_are_read_only_as_far_as_the_message(tmp_path):
    huge = Reply(500, stream=lambda: _bytes_forever(b"x" * 65536), content_type="text/plain")
    with FaultServer([huge]) as server:
        adapter = _limited(server, tmp_path, mib=64)
        with pytest.raises(GenerationError, match="HTTP 500"):
            adapter.generate(REQ)
        adapter.close()
        sent = server.bytes_sent
    assert sent < 16 * MIB


def test_image_download_is_capped_too(tmp_path):
    big = Reply(stream=lambda: _bytes_forever(b"\x89PNG" * 16384), content_type="image/png")
    with FaultServer(routes={"/big.png": big}) as server:
        server.push(Reply.json({"url": server.url + "/big.png"}))
        adapter = _limited(server, tmp_path)
        with pytest.raises(GenerationError, match=r"image download .*big.png failed: answer over the limit"):
            adapter.generate(REQ)
        adapter.close()


@pytest.mark.parametrize("timeout", [1e300, float("inf"), float("nan"), 0, -1, True])
def test_absurd_timeouts_are_refused(timeout):
    from pytest_violin.errors import ModelSpecError

    with pytest.raises(ModelSpecError, match="timeout must be"):
        HttpClient(timeout=timeout)


def test_a_redirect_body_is_never_read():
    # requests reads a redirect's body before following it, outside the byte cap; an
    # endless one would hold the attempt until its deadline (the timeout below)
    def endless():
        while True:
            yield b"x" * 65536

    with FaultServer(routes={"/img.png": Reply.png(IMG)}) as server:
        server.push(Reply(302, headers={"Location": server.url + "/img.png"}, stream=endless, interval=0.01))
        client = HttpClient(timeout=20, policy=RetryPolicy(retries=0), max_bytes=100_000)
        image = HttpAdapter(server.url + "/gen", client).generate(REQ)
        client.close()
    assert as_rgb8(image).shape == IMG.shape


def test_a_redirect_loop_is_an_error_not_the_models_failure():
    with FaultServer(default=Reply(302, headers={"Location": "/gen"})) as server:
        client = HttpClient(timeout=5, policy=RetryPolicy(retries=0))
        with pytest.raises(GenerationError) as info:
            HttpAdapter(server.url + "/gen", client).generate(REQ)
        client.close()
    assert info.value.unjudged and not info.value.transport
