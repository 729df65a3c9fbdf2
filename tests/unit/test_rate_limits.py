"""--violin-rate (a token bucket per process) and adaptive concurrency on 429."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest
import requests

from pytest_violin.errors import ModelSpecError
from pytest_violin.execution.runner import Runner
from pytest_violin.models import AdapterOptions, resolve_model
from pytest_violin.models._transport.client import HttpClient, client_from_options
from pytest_violin.models._transport.bounds import AdaptiveLimit, RateLimiter, parse_rate

from _servers import FaultServer, Reply, solid

requests.Session().close()  # the HTTP stack is imported before pytester snapshots sys.modules


@pytest.mark.parametrize("text, per_second", [("5/s", 5.0), ("300/min", 5.0), (" 0.5 / sec ", 0.5),
                                              ("90/Minute", 1.5), (2.5, 2.5)])
def test_parse_rate(text, per_second):
    assert parse_rate(text) == pytest.approx(per_second)


@pytest.mark.parametrize("text", ["5", "fast", "0/s", "-1/s", "5/h", "1e9/s", ""])
def test_bad_rates_name_the_value_and_the_accepted_forms(text):
    with pytest.raises(ModelSpecError, match="accepted"):
        parse_rate(text)


def test_bucket_spaces_starts_evenly_and_refuses_past_the_deadline():
    now = [100.0]
    bucket = RateLimiter(4.0, clock=lambda: now[0])
    assert [bucket.reserve(deadline=200.0) for _ in range(3)] == [0.0, 0.25, 0.5]
    assert bucket.reserve(deadline=100.6) is None  # the next start (100.75) is after the deadline
    now[0] = 105.0  # idle time is not saved up: no burst after a pause
    assert [bucket.reserve(deadline=200.0) for _ in range(2)] == [0.0, 0.25]


def test_rate_caps_request_starts_across_threads(tmp_path):
    # The booked starts are spaced by the limiter's clock, so the check holds however late the
    # threads or the server are scheduled on a loaded machine; a request may leave late, never early.
    options = AdapterOptions(rootdir=tmp_path, concurrency=8, extra={"rate": "40/s"})
    booked, sent = [], []
    with FaultServer(default=Reply.json({"ok": True})) as server:
        client = client_from_options(options)
        limiter = client.rate_limiter
        reserve, lock = limiter.reserve, threading.Lock()

        def recording_reserve(deadline):
            with lock:  # the booked start is read before another thread books the next
                wait = reserve(deadline)
                booked.append(limiter._next - limiter.interval)
            return wait

        limiter.reserve = recording_reserve

        def request():
            client.request("GET", server.url + "/x")
            sent.append(time.monotonic())

        threads = [threading.Thread(target=request) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client.close()
    assert len(server.requests) == 8 and len(booked) == 8
    gaps = [b - a for a, b in zip(sorted(booked), sorted(booked)[1:])]
    # one bucket shared by the eight threads: starts at least 25 ms apart (more where a thread came late)
    assert min(gaps) >= 1 / 40 - 1e-9
    assert sorted(sent)[-1] >= sorted(booked)[-1]  # the last request waited for its booked start


def test_rate_reaches_the_client_from_the_options(tmp_path):
    assert client_from_options(AdapterOptions(rootdir=tmp_path)).rate_limiter is None
    client = client_from_options(AdapterOptions(rootdir=tmp_path, extra={"rate": "120/min"}))
    assert client.rate_limiter.rate == 2.0
    with pytest.raises(ModelSpecError, match="rate 'lots'"):
        client_from_options(AdapterOptions(rootdir=tmp_path, extra={"rate": "lots"}))


def test_adaptive_limit_lowers_to_the_others_in_flight_and_grows_back():
    cancel = threading.Event()
    limit = AdaptiveLimit(8)
    for _ in range(5):
        assert limit.acquire(cancel)
    limit.overloaded()  # five in flight, one got 429: the endpoint holds four
    assert limit.limit == 4.0
    limit.release()
    assert not limit.acquire(cancel, deadline=time.monotonic())  # four in flight: full
    for _ in range(4):
        limit.succeeded()
    assert limit.limit == pytest.approx(5.0, abs=0.1)
    cancel.set()
    assert not limit.acquire(cancel)


class Capacity:
    """An endpoint that runs 2 requests at once for 50 ms each and answers 429 beyond."""

    def __init__(self, capacity=2, seconds=0.05):
        self.capacity, self.seconds = capacity, seconds
        self.ends: list[float] = []
        self.lock = threading.Lock()
        self.rejected = 0
        self.peak = 0

    def handler(self, rec):
        now = time.monotonic()
        with self.lock:
            self.ends = [e for e in self.ends if e > now]
            if len(self.ends) >= self.capacity:
                self.rejected += 1
                return Reply.json({"error": "too many requests"}, status=429)
            self.ends.append(now + self.seconds)
            self.peak = max(self.peak, len(self.ends))
        return Reply.png(solid(8, 8), delay=self.seconds)


@dataclass(frozen=True)
class Tiny:
    id: str
    prompt: str = "a pure #D9B451 image"
    width: int = 8
    height: int = 8
    task: str = "color"
    inputs: tuple = ()


def test_high_concurrency_against_a_small_endpoint_backs_off_instead_of_failing(tmp_path):
    endpoint = Capacity()
    samples = [Tiny(f"color/v1/t/{i}") for i in range(24)]
    with FaultServer(handler=endpoint.handler) as server:
        options = AdapterOptions(rootdir=tmp_path, concurrency=16, retries=3, timeout=10)
        adapter = resolve_model(server.url + "/generate", options)
        runner = Runner(adapter, concurrency=16, cache=None)
        runner.plan(samples)
        errors = [runner.get(s).error for s in samples]
        runner.close()
        adapter.close()
    assert errors == [None] * 24
    assert endpoint.rejected >= 1
    limit = adapter.client.limit
    assert limit.overloads == endpoint.rejected
    assert limit.lowest <= endpoint.capacity  # it found the endpoint's size instead of failing samples


def test_without_adaptive_limit_the_same_run_fails_samples(tmp_path):
    """The control: the same retries without the limit run out (why the limit exists)."""
    endpoint = Capacity()
    with FaultServer(handler=endpoint.handler) as server:
        client = HttpClient(concurrency=16, timeout=10, adaptive=False)
        client.policy.retries = 1
        client.policy.backoff_base = 0.0
        failures = []

        def one():
            try:
                with client.sample():
                    client.request("POST", server.url + "/generate", data=b"{}")
            except Exception as exc:  # noqa: BLE001 - counted
                failures.append(exc)

        threads = [threading.Thread(target=one) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client.close()
    assert failures


def test_bad_rate_option_is_a_usage_error(pytester):
    result = pytester.runpytest("--violin-model=oracle", "--violin-rate=fast", "-p", "no:randomly")
    assert result.ret == 4
    assert "N/s or N/min" in result.stderr.str()


def _until(predicate):
    while not predicate():
        threading.Event().wait(0.001)


def test_a_sample_back_from_a_429_goes_before_new_ones():
    cancel = threading.Event()
    limit = AdaptiveLimit(1)
    assert limit.acquire(cancel)
    order = []

    def take(name, urgent):
        assert limit.acquire(cancel, time.monotonic() + 10, urgent=urgent)
        order.append(name)
        limit.release()

    new = threading.Thread(target=take, args=("new", False))
    new.start()  # queued first
    _until(lambda: len(limit._cond._waiters) == 1)  # noqa: SLF001 - waiting on the condition
    urgent = threading.Thread(target=take, args=("urgent", True))
    urgent.start()
    _until(lambda: limit._urgent == 1 and len(limit._cond._waiters) == 2)  # noqa: SLF001
    limit.release()
    new.join()
    urgent.join()
    assert order == ["urgent", "new"]
