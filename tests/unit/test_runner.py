import signal
import sys
import threading
import time

import numpy as np
import pytest

from pytest_violin.errors import GenerationError, GenerationRefused
from pytest_violin.models.request import derive_seed
from pytest_violin.execution.runner import Runner
from pytest_violin.models.directory import output_path
from pytest_violin.redaction import register_secret

from conftest import FakeSample


class RecordingModel:
    """Returns the expected image; records every request; optional delay / failures."""

    identity = "test:recording"
    cacheable = True

    def __init__(self, delay=0.0, fail=(), exc=None):
        self.delay = delay
        self.fail = set(fail)
        self.exc = exc
        self.requests = []
        self.lock = threading.Lock()
        self.arrived = threading.Condition()
        self.active = 0
        self.max_active = 0

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.requests) >= n, timeout)

    def generate(self, request):
        with self.lock:
            self.requests.append(request)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        with self.arrived:
            self.arrived.notify_all()
        try:
            threading.Event().wait(self.delay)  # the model's latency
            if request.sample_id in self.fail:
                raise self.exc or RuntimeError(f"model exploded on {request.sample_id}")
            return request.sample.expected()
        finally:
            with self.lock:
                self.active -= 1


class DictCache:
    def __init__(self):
        self.data = {}
        self.puts = 0

    def key(self, identity, request):
        return f"{identity}|{request.sample_id}|{request.seed}|{request.repeat}"

    def get(self, key):
        return self.data.get(key)

    def put(self, key, image):
        self.puts += 1
        self.data[key] = image


def test_get_returns_images_seeds_and_timing(fake_samples):
    model = RecordingModel()
    runner = Runner(model, concurrency=2, base_seed=7)
    try:
        runner.plan(fake_samples)
        for s in fake_samples:
            gen = runner.get(s)
            assert gen.error is None and len(gen.images) == 1
            assert gen.images[0].dtype == np.uint8 and gen.images[0].shape == (8, 8, 3)
            assert gen.attempts == 1 and gen.seconds >= 0 and not gen.cached
    finally:
        runner.close()
    seeds = {r.sample_id: r.seed for r in model.requests}
    assert seeds == {s.id: derive_seed(7, s.id, 0) for s in fake_samples}


def test_prefetch_is_bounded_and_concurrent():
    samples = [FakeSample(id=f"c/v/s{i:03d}") for i in range(40)]
    model = RecordingModel(delay=0.02)
    runner = Runner(model, concurrency=4)
    try:
        runner.plan(samples)
        # nothing consumed yet: 2 x concurrency were submitted, and no more
        assert runner.generated == 8
        assert model.wait_for_requests(8)
        assert runner.generated == 8 and len(model.requests) == 8
        for s in samples:
            assert runner.get(s).error is None
        assert model.max_active <= 4 and model.max_active >= 2
        assert len(model.requests) == 40
    finally:
        runner.close()


def test_prefetch_follows_plan_order_and_skips_stale():
    samples = [FakeSample(id=f"c/v/s{i:02d}") for i in range(10)]
    model = RecordingModel()
    runner = Runner(model, concurrency=1)
    try:
        runner.plan(samples)
        # consume sample 5 first: 0-4 prefetches (if any) are dropped, not kept forever
        runner.get(samples[5])
        for s in samples[6:]:
            runner.get(s)
        assert len(runner._futures) == 0
        order = [r.sample_id for r in model.requests]
        assert order[-4:] == [s.id for s in samples[6:]]
        assert len(order) == len(set(order))
    finally:
        runner.close()


def test_unplanned_sample_is_generated_on_demand(fake_samples):
    model = RecordingModel()
    runner = Runner(model)
    try:
        assert runner.get(fake_samples[0]).error is None
        assert [r.sample_id for r in model.requests] == [fake_samples[0].id]
    finally:
        runner.close()


def test_failure_is_one_sample_and_redacted(fake_samples):
    register_secret("sk-test-SECRET-123456")
    bad = fake_samples[2].id
    model = RecordingModel(fail={bad}, exc=GenerationError("401 for key sk-test-SECRET-123456"))
    runner = Runner(model, concurrency=2)
    try:
        runner.plan(fake_samples)
        gens = [runner.get(s) for s in fake_samples]
    finally:
        runner.close()
    errors = [g.error for g in gens]
    assert [e is not None for e in errors] == [s.id == bad for s in fake_samples]
    err = errors[2]
    assert isinstance(err, GenerationError) and gens[2].fault is None
    assert "sk-test-SECRET" not in str(err) and "***" in str(err)


def test_unexpected_exception_is_a_fault_not_a_model_failure(fake_samples):
    # a bug (here a KeyError inside the adapter, as requests raised when
    # os.environ changed under it) must not be scored as the model's failure
    register_secret("sk-test-SECRET-654321")
    bad = fake_samples[2].id
    model = RecordingModel(fail={bad}, exc=KeyError("PYTEST_CURRENT_TEST sk-test-SECRET-654321"))
    runner = Runner(model, concurrency=2)
    try:
        runner.plan(fake_samples)
        gens = [runner.get(s) for s in fake_samples]
    finally:
        runner.close()
    assert [g.fault is not None for g in gens] == [s.id == bad for s in fake_samples]
    assert all(g.error is None for g in gens)
    fault = gens[2].fault
    assert fault.startswith("KeyError") and "sk-test-SECRET" not in fault and "\n" not in fault


def test_save_outputs_failure_is_a_fault(tmp_path, fake_samples):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    runner = Runner(RecordingModel(), save_outputs=blocker / "sub")
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    assert gen.error is None and gen.fault is not None and gen.images == []


class _DeadModel:
    identity = "test:dead"

    def __init__(self):
        self.calls = 0
        self.lock = threading.Lock()

    def generate(self, request):
        with self.lock:
            self.calls += 1
        raise GenerationError("connection refused", attempts=4, transport=True)


def test_dead_endpoint_stops_after_consecutive_transport_failures():
    samples = [FakeSample(id=f"c/v/s{i:03d}") for i in range(60)]
    model = _DeadModel()
    runner = Runner(model, concurrency=1, dead_after=10, dead_window=0)
    try:
        runner.plan(samples)
        gens = [runner.get(s) for s in samples]
    finally:
        runner.close()
    assert model.calls == 10
    assert all(g.error is not None for g in gens)
    assert runner.unreachable is not None and "10 consecutive" in runner.unreachable
    assert all("endpoint unreachable" in str(g.error) for g in gens[10:])
    assert all(g.attempts == 0 for g in gens[10:])


def test_an_answer_resets_the_dead_endpoint_count():
    class Flaky:
        identity = "test:flaky"
        n = 0

        def generate(self, request):
            self.n += 1
            if self.n % 5 == 0:
                return np.zeros((8, 8, 3), np.uint8)
            raise GenerationError("timed out", transport=True)

    samples = [FakeSample(id=f"c/v/s{i:03d}") for i in range(40)]
    runner = Runner(Flaky(), concurrency=1, dead_after=10, dead_window=0)
    try:
        gens = [runner.get(s) for s in samples]
    finally:
        runner.close()
    assert runner.unreachable is None
    assert sum(g.error is None for g in gens) == 8


def test_http_status_failures_do_not_count_as_dead():
    class Busy:
        identity = "test:busy"

        def generate(self, request):
            raise GenerationError("HTTP 503", status=503)

    samples = [FakeSample(id=f"c/v/s{i:03d}") for i in range(15)]
    runner = Runner(Busy(), concurrency=1, dead_after=3, dead_window=0)
    try:
        [runner.get(s) for s in samples]
    finally:
        runner.close()
    assert runner.unreachable is None


def test_close_without_wait_abandons_in_flight_generations(fake_samples):
    release = threading.Event()
    started = threading.Event()

    class Hanging:
        identity = "test:hanging"

        def generate(self, request):
            started.set()
            release.wait(30)
            raise GenerationError("hung")

    runner = Runner(Hanging(), concurrency=2)
    runner.plan(fake_samples)
    assert started.wait(5)
    t0 = time.monotonic()
    runner.close(wait=False)
    assert time.monotonic() - t0 < 1.0
    assert runner.cancel.is_set()
    release.set()


def test_cancel_event_stops_new_generations(fake_samples):
    model = RecordingModel()
    cancel = threading.Event()
    cancel.set()
    runner = Runner(model, cancel=cancel)
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    assert model.requests == [] and gen.error is not None


def test_generation_error_keeps_attempts_and_status(fake_samples):
    model = RecordingModel(fail={fake_samples[0].id}, exc=GenerationError("HTTP 503: busy", attempts=4, status=503))
    runner = Runner(model)
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    assert gen.error.attempts == 4 and gen.error.status == 503 and "busy" in str(gen.error)


class _QuotaRefused(GenerationRefused):
    """An adapter's own refusal, built from other arguments than GenerationError's."""

    def __init__(self, account, used):
        super().__init__(f"account {account} over its quota ({used} images)", attempts=1, status=429)
        self.account = account
        self.used = used


def test_an_adapters_error_subclass_keeps_its_class_and_fields_redacted(fake_samples):
    register_secret("sk-quota-SECRET-7890")
    model = RecordingModel(fail={fake_samples[0].id}, exc=_QuotaRefused("sk-quota-SECRET-7890", 500))
    runner = Runner(model)
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    err = gen.error
    assert gen.fault is None and type(err) is _QuotaRefused  # a refusal still, not a fault
    assert (err.attempts, err.status, err.transport, err.used) == (1, 429, False, 500)
    assert "sk-quota-SECRET" not in str(err) + err.reason + err.account and "***" in err.reason


def test_the_transports_url_refusal_stays_itself(fake_samples):
    from pytest_violin.models._transport.origins import UrlRefused  # its own constructor: no transport=

    model = RecordingModel(fail={fake_samples[0].id}, exc=UrlRefused("image URL is not http(s)"))
    runner = Runner(model)
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    assert type(gen.error) is UrlRefused and gen.error.unjudged and gen.fault is None


def test_invalid_image_becomes_generation_error(fake_samples):
    class Garbage:
        identity = "garbage"

        def generate(self, request):
            return b"<html>not an image</html>"

    runner = Runner(Garbage())
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    assert gen.images == [] and "not an image" in str(gen.error)


def test_cache_hit_skips_model_and_non_cacheable_skips_cache(fake_samples):
    cache = DictCache()
    model = RecordingModel()
    for _ in range(2):
        runner = Runner(model, cache=cache)
        gens = [runner.get(s) for s in fake_samples]
        runner.close()
    assert len(model.requests) == len(fake_samples)
    assert all(g.cached for g in gens) and cache.puts == len(fake_samples)

    model2 = RecordingModel()
    model2.cacheable = False
    runner = Runner(model2, cache=cache)
    assert runner.cache is None
    runner.get(fake_samples[0])
    runner.close()
    assert len(model2.requests) == 1


def test_repeats_use_derived_seeds_and_save_outputs(tmp_path, fake_samples):
    model = RecordingModel()
    runner = Runner(model, repeats=3, base_seed=1, save_outputs=tmp_path / "out")
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    assert len(gen.images) == 3
    sid = fake_samples[0].id
    assert [r.seed for r in model.requests] == [derive_seed(1, sid, k) for k in range(3)]
    assert [r.repeat for r in model.requests] == [0, 1, 2]
    for k in range(3):
        path = output_path(tmp_path / "out", sid, k)
        assert path.is_file()
    assert output_path(tmp_path, "a/b", 0).name == "b.png"
    assert output_path(tmp_path, "a/b", 2).name == "b.r2.png"


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_arguments(bad):
    with pytest.raises(ValueError, match="concurrency"):
        Runner(RecordingModel(), concurrency=bad)
    with pytest.raises(ValueError, match="repeats"):
        Runner(RecordingModel(), repeats=bad)


def test_adapter_max_concurrency_bounds_threads_not_the_prefetch_window():
    class Serial(RecordingModel):
        max_concurrency = 1

    samples = [FakeSample(id=f"c/v/s{i:03d}") for i in range(12)]
    model = Serial(delay=0.01)
    runner = Runner(model, concurrency=4)
    try:
        assert runner.concurrency == 1 and runner.window == 8
        runner.plan(samples)
        for s in samples:
            gen = runner.get(s)
            assert gen.error is None
            # one at a time: a sample's time is its own generation, no wait on a lock inside
            assert gen.seconds < 0.5
        assert model.max_active == 1
        names = [t.name for t in threading.enumerate() if t.name.startswith("violin-gen")]
        assert len(names) == 1
    finally:
        runner.close()


def test_answers_of_another_size_are_shrunk_at_once_and_their_size_kept(fake_samples):
    # the runner holds up to 2 x concurrency finished images: they must be the
    # sample's size, not whatever (up to 64 MP) the model answered
    class Big:
        identity = "test:big"

        def generate(self, request):
            return np.full((request.height * 50, request.width * 40, 3), 200, np.uint8)

    runner = Runner(Big(), concurrency=2)
    try:
        gen = runner.get(fake_samples[0])
    finally:
        runner.close()
    assert gen.images[0].shape == (8, 8, 3) and int(gen.images[0][0, 0, 0]) == 200
    assert gen.original_size == (320, 400)


class _CountingModel:
    identity = "counting"
    cacheable = False

    def __init__(self, expect: int):
        self.calls = []
        self._cond = threading.Condition()
        self.expect = expect

    def generate(self, request):
        with self._cond:
            self.calls.append(request.sample_id)
            self._cond.notify_all()
        return np.zeros((request.height, request.width, 3), np.uint8)

    def wait_for_calls(self, n: int, timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.calls) >= n, timeout)


def test_sample_planned_twice_does_not_drop_the_prefetch_in_between():
    # A violin:: item and a user test (violin_sample + violin_generate) of the
    # same sample put it twice in the plan. Consuming the first occurrence
    # must not cancel every prefetch up to the second one, or the samples in
    # between are generated again (paid model calls) and without prefetch.
    a, b, c, d = [FakeSample(id=f"extra/x/s{i}") for i in range(4)]
    order = [a, b, c, a, d]
    model = _CountingModel(expect=4)
    runner = Runner(model, concurrency=2)
    try:
        runner.plan(order)
        assert model.wait_for_calls(4)  # the prefetch window (2 x concurrency) is filled
        for sample in order:
            gen = runner.get(sample)
            assert gen.error is None and len(gen.images) == 1
    finally:
        runner.close()
    assert sorted(model.calls) == sorted(s.id for s in order), model.calls
    assert runner.generated == len(order)


def test_a_burst_of_failures_shorter_than_the_window_is_no_dead_endpoint():
    # the in-flight generations of a server restart fail together: 16 at once,
    # then the server answers again; the run must go on
    answers = threading.Event()

    class Restarting:
        identity = "test:restarting"

        def __init__(self):
            self.n = 0
            self.lock = threading.Lock()

        def generate(self, request):
            with self.lock:
                self.n += 1
                n = self.n
            if n <= 16:
                raise GenerationError("connection reset", transport=True)
            answers.set()
            return np.zeros((8, 8, 3), np.uint8)

    samples = [FakeSample(id=f"c/v/s{i:03d}") for i in range(40)]
    runner = Runner(Restarting(), concurrency=16, dead_after=10, dead_window=5.0)
    try:
        runner.plan(samples)
        gens = [runner.get(s) for s in samples]
    finally:
        runner.close()
    assert runner.unreachable is None and answers.is_set()
    assert sum(g.error is None for g in gens) == 24


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX threads and signals")
def test_a_signal_another_thread_took_still_reaches_the_main_thread_waiting_for_a_generation():
    """The kernel may hand a process's SIGINT to any thread; the main thread waiting for a stuck
    generation must still run the handler (and the pool's threads leave the signal to it)."""
    from pytest_violin.execution.runner import DaemonPool, wait_for

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop

    pool = DaemonPool(1, "signal-test")
    release = threading.Event()
    mask = pool.submit(lambda: signal.pthread_sigmask(signal.SIG_BLOCK, set())).result(timeout=30)
    assert {signal.SIGINT, signal.SIGTERM} <= set(mask)  # the pool's threads never take them
    stuck = pool.submit(release.wait)  # a generation stuck in a socket read
    main = threading.get_ident()

    def signal_from_another_thread():
        # once the main thread waits in wait_for, send the signal to this thread, not to it;
        # a wait that never returns to Python is released later (and the test then fails)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            frame = sys._current_frames().get(main)
            names = []
            while frame is not None:
                names.append(frame.f_code.co_name)
                frame = frame.f_back
            if "wait_for" in names:
                break
            time.sleep(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        stopped.wait(30)
        release.set()

    stopped = threading.Event()
    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        other = threading.Thread(target=signal_from_another_thread, daemon=True)
        with pytest.raises(Stop):
            other.start()
            wait_for(stuck)
        # the handler ran while the generation was still stuck, not once it was released
        assert not stuck.done()
        stopped.set()
        other.join(30)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        release.set()
        pool.shutdown(wait=True)
