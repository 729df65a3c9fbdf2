"""Batched generation (execution/batching.py): per-sample results, seeds, counts, caps and Ctrl-C."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_violin.errors import GenerationCancelled, GenerationCrashed, GenerationError
from pytest_violin.execution.batching import Batcher
from pytest_violin.execution.runner import Runner
from pytest_violin.execution.usage import CallCounter, CountingAdapter
from pytest_violin.suite import load_suite


def _image(request):
    """An image that depends on the request's seed and prompt only (never on its neighbours)."""
    rng = np.random.default_rng([int(request.seed), len(request.prompt)])
    return rng.integers(0, 256, (request.height, request.width, 3), dtype=np.uint8)


class BatchModel:
    identity = "test:batch"
    cacheable = True

    def __init__(self, batch_size=4, fail_ids=(), raise_in_batch=None):
        self.batch_size = batch_size
        self.fail_ids = set(fail_ids)
        self.raise_in_batch = raise_in_batch
        self.batches = []
        self.singles = 0
        self.lock = threading.Lock()

    def generate(self, request):
        with self.lock:
            self.singles += 1
        return _image(request)

    def generate_batch(self, requests):
        with self.lock:
            self.batches.append([r.sample.id for r in requests])
        if self.raise_in_batch is not None:
            raise self.raise_in_batch
        return [GenerationError("no image for this one") if r.sample.id in self.fail_ids else _image(r)
                for r in requests]


@pytest.fixture(scope="module")
def samples():
    return load_suite("violin", tasks=["color", "shape"], limit=24)


def _run(model, samples, *, counter=None, concurrency=4, cancel=None):
    adapter = CountingAdapter(model, counter or CallCounter())
    runner = Runner(adapter, concurrency=concurrency, cancel=cancel)
    runner.plan(samples)
    try:
        return {s.id: runner.get(s) for s in samples}, runner
    finally:
        runner.close()


def test_batched_images_equal_one_at_a_time(samples):
    model = BatchModel(batch_size=4)
    batched, runner = _run(model, samples)
    assert runner._batcher is not None and runner.concurrency == 8  # 2 x batch: one gathers, one runs
    alone, _ = _run(BatchModel(batch_size=1), samples)
    for sid in batched:
        assert batched[sid].error is None and batched[sid].fault is None
        assert np.array_equal(batched[sid].images[0], alone[sid].images[0])
    assert model.singles == 0 and sum(map(len, model.batches)) == len(samples)
    assert max(map(len, model.batches)) == 4 and len(model.batches) < len(samples)
    # a batch holds compatible requests only: one task, one size
    by_id = {s.id: s for s in samples}
    for batch in model.batches:
        assert len({(by_id[i].task, by_id[i].width, by_id[i].height) for i in batch}) == 1


def test_one_failure_in_a_batch_is_that_sample_alone(samples):
    bad = samples[3].id
    gens, _ = _run(BatchModel(fail_ids={bad}), samples)
    assert gens[bad].error is not None and "no image for this one" in gens[bad].error.reason
    assert all(g.error is None for sid, g in gens.items() if sid != bad)


def test_a_raising_batch_fails_each_of_its_samples(samples):
    gens, _ = _run(BatchModel(raise_in_batch=GenerationError("pipeline out of memory")), samples[:6])
    assert all(g.error is not None and "out of memory" in g.error.reason for g in gens.values())
    gens, _ = _run(BatchModel(raise_in_batch=KeyError("steps")), samples[:6])
    assert all(g.fault is not None and "KeyError" in g.fault for g in gens.values())  # a bug: an error


def test_every_request_is_a_counted_call_and_the_cap_refuses_per_sample(samples):
    counter = CallCounter()
    counter.set_limit(10, "--violin-max-calls=10")
    gens, _ = _run(BatchModel(), samples, counter=counter)
    made = [g for g in gens.values() if g.images]
    capped = [g for g in gens.values() if g.capped]
    assert len(made) == 10 and len(capped) == len(samples) - 10
    assert counter.snapshot()["calls"] == 10 and all(g.attempts == 1 for g in made)


def test_cached_samples_never_reach_a_batch(samples):
    class Cache(dict):
        def key(self, identity, request):
            return (identity, request.sample.id, request.seed)

        def put(self, key, image):
            self[key] = image

        def is_empty(self):
            return not self

    cache = Cache()
    first = Runner(CountingAdapter(BatchModel(), CallCounter()), cache=cache)
    first.plan(samples[:8])
    for s in samples[:8]:
        first.get(s)
    first.close()
    model = BatchModel()
    second = Runner(CountingAdapter(model, CallCounter()), cache=cache)
    second.plan(samples[:12])
    gens = {s.id: second.get(s) for s in samples[:12]}
    second.close()
    assert sum(g.cached for g in gens.values()) == 8
    assert sorted(i for b in model.batches for i in b) == sorted(s.id for s in samples[8:12])


def test_no_batch_starts_once_cancelled(samples):
    cancel = threading.Event()
    cancel.set()
    model = BatchModel()
    gens, _ = _run(model, samples[:6], cancel=cancel)
    assert model.batches == [] and all(g.images == [] for g in gens.values())
    # a request already waiting for its batch when Ctrl-C comes: the batch never starts
    batcher = Batcher(model, 4, threads=8, cancel=cancel, linger=0.01)
    with pytest.raises(GenerationCancelled):
        batcher.generate(SimpleNamespace(task="color", width=8, height=8, images=()))
    assert model.batches == [] and batcher.calls == 0


def test_the_batcher_hands_each_thread_its_own_answer_and_names_a_miscount():
    class Miscount:
        batch_size = 3

        def generate_batch(self, requests):
            return [1]

    batcher = Batcher(Miscount(), 3, threads=3, linger=5.0)
    requests = [SimpleNamespace(task="color", width=8, height=8, images=(), n=i) for i in range(3)]
    errors = []

    def call(r):
        try:
            batcher.generate(r)
        except GenerationCrashed as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=call, args=(r,)) for r in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(errors) == 3 and "returned 1 images for 3 requests" in errors[0]
    assert batcher.calls == 1  # all three threads waiting: one call, no linger


def test_a_lone_request_waits_at_most_the_linger():
    class Echo:
        batch_size = 8

        def generate_batch(self, requests):
            return [r.n for r in requests]

    batcher = Batcher(Echo(), 8, threads=16, linger=0.01)
    assert batcher.generate(SimpleNamespace(task="t", width=1, height=1, images=(), n=7)) == 7


def test_for_adapter_needs_both_the_method_and_a_size():
    assert Batcher.for_adapter(SimpleNamespace(generate_batch=lambda r: r), threads=4) is None
    assert Batcher.for_adapter(SimpleNamespace(batch_size=4), threads=4) is None
    assert Batcher.for_adapter(SimpleNamespace(batch_size=1, generate_batch=len), threads=4) is None
    assert Batcher.for_adapter(SimpleNamespace(batch_size=4, generate_batch=len), threads=4).threads == 8
    with pytest.raises(Exception, match="batch_size is 0"):
        Batcher.for_adapter(SimpleNamespace(batch_size=0, generate_batch=len), threads=4)


MODELS = '''
import numpy as np


def _image(request):
    rng = np.random.default_rng([int(request.seed), len(request.prompt)])
    img = request.sample.expected().astype(np.int16)
    return np.clip(img + rng.integers(-30, 30, img.shape), 0, 255).astype(np.uint8)


class Batched:
    batch_size = 4
    cacheable = True

    def generate(self, request):
        return _image(request)

    def generate_batch(self, requests):
        with open("batches.txt", "a") as fh:
            fh.write(f"{len(requests)}\\n")
        return [_image(r) for r in requests]


class Single:
    def generate(self, request):
        return _image(request)


class NoSize:
    def generate(self, request):
        return _image(request)

    def generate_batch(self, requests):
        return [_image(r) for r in requests]
'''


def test_a_python_model_may_batch_and_scores_as_one_at_a_time(pytester):
    pytester.makepyfile(violin_models=MODELS)
    args = ["--violin-limit=16", "--violin-tasks=color,shape", "-p", "no:cacheprovider"]
    batched = pytester.runpytest("--violin-model=python:violin_models:Batched", "--violin-report=b", *args)
    single = pytester.runpytest("--violin-model=python:violin_models:Single", "--violin-report=s", *args)
    import json

    def rows(folder):
        doc = json.loads((pytester.path / folder / "results.json").read_text())
        return {s["sample_id"]: (s["outcome"], s["metrics"]) for s in doc["samples"]}, doc["metadata"]

    (b, bmeta), (s, _) = rows("b"), rows("s")
    assert b == s and len(b) == 16 and batched.ret == single.ret
    sizes = [int(x) for x in (pytester.path / "batches.txt").read_text().split()]
    assert sum(sizes) == 16 and max(sizes) <= 4 and len(sizes) < 16
    assert bmeta["generations"] == 16  # every sample one counted call
    nosize = pytester.runpytest("--violin-model=python:violin_models:NoSize", *args)
    assert nosize.ret == pytest.ExitCode.USAGE_ERROR
    assert "generate_batch needs a batch_size" in nosize.stderr.str()


def test_diffusers_batches_prompts_with_a_generator_per_request(samples):
    from pytest_violin.models.diffusers import DiffusersAdapter
    from pytest_violin.models.request import GenerationRequest

    calls = []

    class Pipe:
        def __call__(self, prompt, width=64, height=64, generator=None, num_inference_steps=2):
            calls.append({"prompt": prompt, "generator": generator, "steps": num_inference_steps})
            n = len(prompt) if isinstance(prompt, list) else 1
            return SimpleNamespace(images=[np.full((height, width, 3), 7, np.uint8)] * n)

    adapter = DiffusersAdapter({"text2image": Pipe()}, "diffusers:fake", make_generator=lambda seed: ("gen", seed),
                               call_kwargs={"num_inference_steps": 3})
    adapter.batch_size = 3
    colors = [s for s in samples if s.task == "color"][:3]
    requests = [GenerationRequest.from_sample(s, base_seed=0) for s in colors]
    images = adapter.generate_batch(requests)
    assert len(images) == 3 and calls[-1]["steps"] == 3
    assert calls[-1]["prompt"] == [r.prompt for r in requests]
    assert calls[-1]["generator"] == [("gen", r.seed) for r in requests]  # one per request, own seed
    assert len({adapter.batch_key(r) for r in requests}) == 1
    adapter_one = adapter.generate_batch(requests[:1])  # a batch of one is a plain call
    assert len(adapter_one) == 1 and calls[-1]["prompt"] == requests[0].prompt
