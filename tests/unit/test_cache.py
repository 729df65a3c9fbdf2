"""The on-disk image cache: keys, atomic writes, corrupt entries, re-runs."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_violin.execution.cache import ImageCache
from pytest_violin.models import AdapterOptions, GenerationRequest, resolve_model

from _servers import FaultServer, Reply, png_bytes, solid
from conftest import FakeSample

#: Every character UTF-8 can encode (all but the surrogates): what st.text() draws by default,
#: without its per-codec table, which costs a fresh clone (no .hypothesis/) 3-6 s per process.
UTF8_CHARS = st.characters(exclude_categories=("Cs",))


def make_request(**kw):
    base = dict(prompt="a pure #D9B451 image", width=8, height=8, seed=3, sample_id="c/1",
                task="color", images=(), repeat=0)
    base.update(kw)
    return GenerationRequest(**base)


def test_round_trip_and_counters(tmp_path):
    cache = ImageCache(tmp_path / "c")
    key = cache.key("http://127.0.0.1:1/x", make_request())
    assert cache.get(key) is None and cache.misses == 1
    image = np.random.default_rng(1).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    path = cache.put(key, image)
    assert path.is_file() and path.suffix == ".png" and key in path.name
    assert key in cache
    assert np.array_equal(cache.get(key), image)
    assert (cache.hits, cache.writes) == (1, 1)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


VARIANTS = {
    "identity": None,
    "prompt": {"prompt": "a pure #D9B452 image"},
    "width": {"width": 9},
    "height": {"height": 9},
    "seed": {"seed": 4},
    "task": {"task": "shape"},
    "repeat": {"repeat": 1},
    "images": {"images": (np.zeros((2, 2, 3), np.uint8),)},
}


@pytest.mark.parametrize("field", sorted(VARIANTS))
def test_every_field_changes_the_key(field):
    base = ImageCache.key("m", make_request())
    if field == "identity":
        other = ImageCache.key("m2", make_request())
    else:
        other = ImageCache.key("m", make_request(**VARIANTS[field]))
    assert other != base and len(other) == 64


@settings(max_examples=40, deadline=None)
@given(st.text(UTF8_CHARS, max_size=30), st.integers(1, 4096), st.integers(0, 2**31 - 1))
def test_key_is_deterministic_and_ignores_sample_id(prompt, size, seed):
    a = make_request(prompt=prompt, width=size, seed=seed, sample_id="a/1")
    b = dataclasses.replace(a, sample_id="b/2", sample=object())
    key = ImageCache.key("openai:m@https://h/v1", a)
    assert key == ImageCache.key("openai:m@https://h/v1", b)
    assert all(c in "0123456789abcdef" for c in key)


def test_the_image_reader_changes_the_key():
    request = make_request()
    keys = {reader: ImageCache.key("m", request, reader=reader) for reader in ("pillow", "opencv")}
    assert keys["pillow"] != keys["opencv"]
    with pytest.raises(ValueError, match="accepted: pillow, opencv"):
        ImageCache.key("m", request, reader="pil")


def test_an_answer_cached_under_one_profile_is_not_served_to_the_other(tmp_path):
    """The readers decode a transparent answer differently (pillow composites it over black,
    opencv, as the reference reads files, drops the alpha): each profile's run asks the model."""
    from pytest_violin.execution.runner import Runner
    from pytest_violin.imaging import restore_reader, use_reader

    rgba = np.zeros((8, 8, 4), np.uint8)
    rgba[:] = (217, 180, 81, 0)  # the color, fully transparent
    sample = FakeSample("color/v1/c0/t01")

    def run_once(reader):
        token = use_reader(reader)
        try:
            adapter = resolve_model(server.url + "/g", AdapterOptions(rootdir=tmp_path, retries=0))
            runner = Runner(adapter, concurrency=1, cache=ImageCache(tmp_path / "cache"))
            gen = runner.get(sample)
            runner.close()
            adapter.close()
        finally:
            restore_reader(token)
        assert gen.error is None and gen.fault is None, gen
        return gen

    with FaultServer(default=Reply.png(rgba)) as server:
        strict = run_once("pillow")
        violin = run_once("opencv")
        assert len(server.requests) == 2 and not violin.cached
        again = run_once("pillow")
        assert len(server.requests) == 2 and again.cached
    assert int(strict.images[0].max()) == 0  # transparent over black
    assert tuple(violin.images[0][0, 0]) == (217, 180, 81)  # the alpha dropped
    assert np.array_equal(again.images[0], strict.images[0])


def test_input_pixels_change_the_key():
    img = np.zeros((4, 4, 3), np.uint8)
    other = img.copy()
    other[0, 0, 0] = 1
    assert ImageCache.key("m", make_request(images=(img,))) != ImageCache.key("m", make_request(images=(other,)))


@pytest.mark.parametrize("damage", [b"", b"not a png", None])
def test_corrupt_entry_is_dropped_and_missed(tmp_path, damage):
    cache = ImageCache(tmp_path)
    key = cache.key("m", make_request())
    path = cache.put(key, solid(4, 4))
    path.write_bytes(path.read_bytes()[:40] if damage is None else damage)
    assert cache.get(key) is None
    assert not path.exists() and cache.dropped == 1


def _entry(tmp_path):
    cache = ImageCache(tmp_path / "c")
    key = cache.key("m", make_request())
    cache.path(key).parent.mkdir(parents=True)
    return cache, key, cache.path(key)


def test_a_symlinked_entry_is_dropped_not_followed(tmp_path, caplog):
    """Entries are written by rename, never as links: a link is not the cache's own file."""
    elsewhere = tmp_path / "elsewhere.png"
    elsewhere.write_bytes(png_bytes(solid(4, 4)))
    cache, key, path = _entry(tmp_path)
    path.symlink_to(elsewhere)
    with caplog.at_level("WARNING", logger="pytest_violin.cache"):
        assert cache.get(key) is None
    assert not path.is_symlink() and elsewhere.is_file()
    assert (cache.dropped, cache.hits) == (1, 0)
    assert any(str(path) in r.getMessage() and "regular file" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")
def test_special_entries_are_dropped_without_blocking(tmp_path):
    cache, key, path = _entry(tmp_path)
    os.mkfifo(path)
    done, box = threading.Event(), []
    # a FIFO without a writer: an open for reading would block (a thread, so the test fails, not hangs)
    threading.Thread(target=lambda: (box.append(cache.get(key)), done.set()), daemon=True).start()
    assert done.wait(30), "reading a FIFO entry blocked"
    assert box == [None]
    assert not path.exists() and cache.dropped == 1
    path.mkdir()
    assert cache.get(key) is None and cache.dropped == 2


def test_an_entry_over_the_size_limit_is_dropped_before_it_is_read(tmp_path, monkeypatch):
    import pytest_violin.execution.cache as cache_module

    cache, key, path = _entry(tmp_path)
    path.write_bytes(png_bytes(np.random.default_rng(0).integers(0, 256, (64, 64, 3), np.uint8)))
    monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", path.stat().st_size - 1)
    assert cache.get(key) is None
    assert not path.exists() and (cache.dropped, cache.hits) == (1, 0)


_DEV_ZERO_PROBE = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
from pytest_violin.execution.cache import ImageCache
cache = ImageCache(sys.argv[1])
print(json.dumps({"image": cache.get(sys.argv[2]) is not None, "dropped": cache.dropped}))
"""


@pytest.mark.skipif(not os.path.exists("/dev/zero") or sys.platform != "linux", reason="needs /dev/zero, RLIMIT_AS")
def test_an_entry_linked_to_dev_zero_is_not_read(tmp_path):
    """In a process capped at 2 GiB of address space: a read of /dev/zero fails it, not the machine."""
    cache, key, path = _entry(tmp_path)
    path.symlink_to("/dev/zero")
    proc = subprocess.run([sys.executable, "-c", _DEV_ZERO_PROBE, str(cache.root), key],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == {"image": False, "dropped": 1}
    assert not path.is_symlink()


def test_bad_keys_are_refused(tmp_path):
    cache = ImageCache(tmp_path)
    for key in ("../../etc/passwd", "ABCDEF0123", "12"):
        with pytest.raises(ValueError, match="not a lowercase hex digest"):
            cache.path(key)


def _writer(root, key, value, rounds):
    cache = ImageCache(root)
    for _ in range(rounds):
        cache.put(key, solid(64, 64, (value, value, value)))


def test_concurrent_writers_never_expose_half_written_entries(tmp_path):
    key = ImageCache.key("m", make_request())
    # spawn, not fork: this process has threads (pytest's, the server's) and forking it can deadlock
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(tmp_path, key, v, 40)) for v in (10, 200)]
    threads = [threading.Thread(target=_writer, args=(tmp_path, key, 90, 40))]
    for worker in procs + threads:
        worker.start()
    reader = ImageCache(tmp_path)
    seen = set()
    while any(p.is_alive() for p in procs) or threads[0].is_alive():
        image = reader.get(key)
        if image is not None:
            assert image.shape == (64, 64, 3)
            values = np.unique(image)
            assert len(values) == 1 and int(values[0]) in (10, 90, 200)
            seen.add(int(values[0]))
    for worker in procs + threads:
        worker.join()
    assert all(p.exitcode == 0 for p in procs)
    assert reader.dropped == 0
    assert reader.get(key) is not None
    assert not [p for p in (tmp_path / key[:2]).iterdir() if p.name.endswith(".tmp")]


def test_rerun_of_unchanged_suite_makes_zero_requests_and_errors_are_not_cached(tmp_path):
    from pytest_violin.execution.runner import Runner

    samples = [FakeSample(f"color/v1/c{i}/t01") for i in range(6)]

    def handler(rec):
        body = rec.json()
        if body["sample_id"].endswith("c5/t01"):
            return Reply(400, {"error": "refused"})
        return Reply.png(solid(8, 8, (len(body["sample_id"]), 0, 0)))

    def run_once():
        adapter = resolve_model(server.url + "/g", AdapterOptions(rootdir=tmp_path, retries=0))
        runner = Runner(adapter, concurrency=3, cache=ImageCache(tmp_path / "cache"))
        runner.plan(samples)
        results = [runner.get(s) for s in samples]
        runner.close()
        adapter.close()
        return results

    with FaultServer(handler=handler) as server:
        first = run_once()
        assert len(server.requests) == 6
        second = run_once()
        assert len(server.requests) == 7  # only the failed sample is asked again
    assert [g.cached for g in second] == [True] * 5 + [False]
    assert second[5].error is not None and "refused" in str(second[5].error)
    for a, b in zip(first[:5], second[:5]):
        assert np.array_equal(a.images[0], b.images[0])
    entries = list((tmp_path / "cache").rglob("*.png"))
    assert len(entries) == 5


def test_is_empty(tmp_path):
    from pytest_violin.execution.cache import ImageCache

    cache = ImageCache(tmp_path / "c")
    assert cache.is_empty()
    key = "ab" * 32
    cache.put(key, np.zeros((4, 4, 3), np.uint8))
    assert not cache.is_empty() and cache.contains(key)


def test_asking_the_server_for_the_cache_identity_holds_up_no_other_generation(tmp_path):
    """cache_identity() may make HTTP calls (ComfyUI): while one thread waits for it, the
    runner's bookkeeping of answers and failures (every other generation thread) goes on."""
    import threading

    from pytest_violin.execution.cache import ImageCache
    from pytest_violin.execution.runner import Runner

    asked, answer = threading.Event(), threading.Event()

    class SlowIdentity:
        identity = "slow"
        cacheable = True

        def cache_identity(self):
            asked.set()
            answer.wait(10)
            return "slow@1"

        def generate(self, request):  # pragma: no cover - not called
            raise AssertionError

    runner = Runner(SlowIdentity(), cache=ImageCache(tmp_path), concurrency=2)
    keyed = threading.Thread(target=runner._key_identity, args=("slow",), daemon=True)
    keyed.start()
    assert asked.wait(10)
    noted = threading.Thread(target=runner._note, args=(None,), daemon=True)  # what an answer does
    noted.start()
    noted.join(5)
    alive = noted.is_alive()
    answer.set()
    keyed.join(10)
    assert not alive
    assert runner._key_identity("slow") == "slow@1"


def test_the_cache_is_looked_up_once_before_the_run_and_again_once_the_runner_exists(tmp_path):
    """The sequential gate's order and the plan line both ask which images are cached: one pass
    over the cache serves both, until the runner starts filling it."""
    from types import SimpleNamespace

    from pytest_violin.execution.cache import ImageCache
    from pytest_violin.models.request import GenerationRequest
    from pytest_violin.pytest_plugin._planning import cached_repeats
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", tasks=["color"])[:4]
    cache = ImageCache(tmp_path)
    first = GenerationRequest.from_sample(samples[0], base_seed=0, repeat=0)
    cache.put(cache.key("m", first), samples[0].expected())
    asked = []

    class Counting(ImageCache):
        def contains(self, key):
            asked.append(key)
            return super().contains(key)

    state = SimpleNamespace(settings=SimpleNamespace(seed=0, repeats=1, model="m"), identity="m",
                            adapter=None, cache_lookups={}, make_cache=lambda: Counting(tmp_path))
    assert cached_repeats(state, samples) == {samples[0].id: 1}
    assert cached_repeats(state, samples[:2]) == {samples[0].id: 1}
    assert len(asked) == 4  # the second question was answered from the first pass
    state.cache_lookups = None  # what get_runner does
    assert cached_repeats(state, samples[:2]) == {samples[0].id: 1}
    assert len(asked) == 6


# --------------------------------------------------------------- the official data's cached index


def _official_index(tmp_path, monkeypatch):
    """A parquet loaded once (its index cached); returns (load, the index's path, the samples)."""
    pytest.importorskip("pyarrow.parquet")
    import _official_data as od

    from pytest_violin import load_suite

    monkeypatch.setenv("VIOLIN_OFFICIAL_CACHE", str(tmp_path / "official-cache"))
    rows = od.make_rows(2)
    parquet = od.write_parquet(tmp_path / "VIOLIN" / "violin-test.parquet", rows, row_group_size=4)
    od.write_metadata(tmp_path / "VIOLIN" / "metadata", rows)
    first = load_suite(str(parquet))
    (index,) = (tmp_path / "official-cache").rglob("index-*.json")
    return (lambda: load_suite(str(parquet))), index, [(s.id, s.prompt, s.width) for s in first]


def _valid_json_of_the_wrong_shape(doc):
    return [dict(doc, records=5), dict(doc, rows="13"), dict(doc, notes=[]),
            dict(doc, records=[{k: v for k, v in r.items() if k != "sha"} for r in doc["records"]]),
            dict(doc, records=doc["records"][:1] + [dict(doc["records"][1], w="64")]),
            dict(doc, records=[dict(doc["records"][0], inputs=[5])])]


def test_a_cached_index_of_the_wrong_shape_is_dropped_and_built_again_with_a_warning(tmp_path, monkeypatch):
    load, index, expected = _official_index(tmp_path, monkeypatch)
    good = json.loads(index.read_text())
    for bad in _valid_json_of_the_wrong_shape(good) + ["[1, 2]", "{not json", "[" * 100_000]:
        index.write_text(bad if isinstance(bad, str) else json.dumps(bad))
        with pytest.warns(RuntimeWarning, match="cached index was dropped and is built again") as seen:
            again = load()
        assert [(s.id, s.prompt, s.width) for s in again] == expected
        assert json.loads(index.read_text()) == good  # rebuilt, and used by the next run
        assert str(index) in str(seen[0].message) and len(str(seen[0].message).splitlines()) == 1


@pytest.mark.skipif(not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"), reason="POSIX")
@pytest.mark.filterwarnings("ignore:pytest-violin. the official data's cached index:RuntimeWarning")
def test_a_cached_index_that_is_a_link_a_device_a_fifo_or_a_folder_is_not_read(tmp_path, monkeypatch):
    load, index, expected = _official_index(tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(index.read_text())
    for make in (lambda: index.symlink_to("/dev/zero"), lambda: os.mkfifo(index), index.mkdir,
                 lambda: index.symlink_to(elsewhere)):
        index.unlink()
        make()
        done, box = threading.Event(), []
        threading.Thread(target=lambda: (box.append(load()), done.set()), daemon=True).start()
        assert done.wait(60), "reading the cached index blocked"
        assert [(s.id, s.prompt, s.width) for s in box[0]] == expected
        assert index.is_file() and not index.is_symlink() and elsewhere.is_file()
