"""Peak memory stays bounded whatever the endpoint answers.

A fresh process runs 16 generations at concurrency 16 through the real
Runner against a local server whose answers are the worst ones found:
300 MB of text/plain, 300 MB of JSON, 300 MB of image/png (no length), a
gzip bomb, and a 16-bit RGBA 8192x8192 PNG (0.5 MB on the wire, 512 MiB of
pixels). The process reports its own peak RSS (``VmHWM``: not ``ru_maxrss``, which
Linux carries over from the parent, this test process holding the answers).
"""

from __future__ import annotations

import functools
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from _servers import FaultServer, Reply

MIB = 2**20
LIMIT = 10**9  # 1 GB per process
DRIVER = Path(__file__).parents[1] / "_memory_driver.py"
BLOCK = b"A" * MIB  # valid base64 text: the worst case for a base64 sniffer


def _repeat(head: bytes, count: int, tail: bytes = b""):
    def stream():
        if head:
            yield head
        for _ in range(count):
            yield BLOCK
        if tail:
            yield tail
    return stream


@functools.lru_cache(maxsize=None)
def _gzip_bomb(mib: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\x00" * MIB
    return b"".join(comp.compress(zeros) for _ in range(mib)) + comp.flush()


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def rgba16_png(side: int = 8192) -> bytes:
    """A valid 16-bit RGBA PNG, all zero: small file, ``side**2 * 8`` bytes of pixels."""
    row = b"\x00" * (1 + side * 8)
    comp = zlib.compressobj(1)
    data = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    ihdr = struct.pack(">IIBBBBB", side, side, 16, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", data) + _png_chunk(b"IEND", b"")


@functools.lru_cache(maxsize=None)
def noise_jpeg(width: int = 8192, height: int = 8064, quality: int = 90) -> bytes:
    """A JPEG of noise, 59 MB on the wire (just under the default answer cap of 64 MiB)
    and 198 MB of RGB pixels, inside the pixel cap: the largest answer the caps let in."""
    import io

    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


@functools.lru_cache(maxsize=None)
def many_keys_json(keys: int = 2_000_000) -> bytes:
    """A 41 MB JSON object of ``keys`` small members and no image."""
    return ("{" + ",".join(f'"k{i:07d}":{i % 10}' for i in range(keys)) + "}").encode()


def answers(kinds) -> dict:
    out = {
        "text": Reply(stream=_repeat(b"", 300), content_type="text/plain"),
        "json": Reply(stream=_repeat(b'{"image": "', 300, b'"}'), content_type="application/json"),
        "png": Reply(stream=_repeat(b"\x89PNG\r\n\x1a\n", 300), content_type="image/png"),
    }
    if "gzip" in kinds:
        out["gzip"] = Reply(200, _gzip_bomb(256), content_type="application/json",
                            headers={"Content-Encoding": "gzip"})
    if "rgba16" in kinds:
        out["rgba16"] = Reply(200, rgba16_png(), content_type="image/png")
    if "jpeg" in kinds:
        out["jpeg"] = Reply(200, noise_jpeg(), content_type="image/jpeg")
    if "keys" in kinds:
        out["keys"] = Reply(200, many_keys_json(), content_type="application/json")
    return out


def measure(kinds: list[str], concurrency: int = 16, *, src: Path | None = None,
            address_limit: int = 6 * 2**30) -> dict:
    """Run the driver (against ``src``, default this checkout); return its report."""
    replies = answers(set(kinds))

    def handler(rec):
        return replies[rec.json()["sample_id"].split("/")[0]]

    with FaultServer(handler=handler) as server:
        env = None
        if src is not None:
            import os

            env = {**os.environ, "PYTHONPATH": str(src)}
        proc = subprocess.run(
            [sys.executable, str(DRIVER), server.url + "/gen", ",".join(kinds), str(concurrency),
             str(address_limit)],
            capture_output=True, text=True, timeout=300, env=env, cwd=str(src or DRIVER.parent),
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a fresh process, a server and gigabytes offered: seconds
def test_worst_answers_at_concurrency_16_stay_under_1_gb():
    kinds = ["text", "json", "png", "gzip"] * 4
    report = measure(kinds)
    print(f"peak RSS {report['peak_rss'] / MIB:.0f} MiB")
    for sample_id, outcome in report["outcomes"].items():
        kind = sample_id.split("/")[0]
        assert outcome != "ok", sample_id
        assert "MemoryError" not in outcome, outcome
        if kind == "text":
            assert "neither an image nor JSON" in outcome or "over the limit" in outcome, outcome
        else:
            assert "over the limit" in outcome, outcome
    assert report["peak_rss"] < LIMIT, f"peak RSS {report['peak_rss'] / MIB:.0f} MiB"


@pytest.mark.slow  # a fresh process decoding 16 bombs: seconds
def test_16_bit_rgba_bomb_inside_the_pixel_limit_stays_under_1_gb():
    """The decoded-bytes bound is pytest_violin.imaging's; measured here end to end."""
    report = measure(["rgba16"] * 16)
    print(f"peak RSS {report['peak_rss'] / MIB:.0f} MiB")
    assert report["peak_rss"] < LIMIT, f"peak RSS {report['peak_rss'] / MIB:.0f} MiB: {report['outcomes']}"


@pytest.mark.slow  # a fresh process and 32 answers of 59 MB: about a minute on two cores
def test_32_jpegs_near_the_answer_cap_at_concurrency_32_stay_under_1_gb():
    """Decoded each to 198 MB of pixels: the answer budget and the one large-work thread hold
    the peak near one answer's, whatever the concurrency (unbounded, 3.2 GB at 32)."""
    report = measure(["jpeg"] * 32, concurrency=32)
    print(f"peak RSS {report['peak_rss'] / MIB:.0f} MiB")
    assert set(report["outcomes"].values()) == {"ok"}, report["outcomes"]
    assert report["peak_rss"] < LIMIT, f"peak RSS {report['peak_rss'] / MIB:.0f} MiB"


@pytest.mark.slow  # a fresh process parsing 16 objects of 2,000,000 keys: about a minute
def test_16_json_answers_of_2_million_keys_at_concurrency_16_stay_under_1_gb():
    report = measure(["keys"] * 16)
    print(f"peak RSS {report['peak_rss'] / MIB:.0f} MiB")
    assert all("JSON without an image" in outcome for outcome in report["outcomes"].values()), report
    assert report["peak_rss"] < LIMIT, f"peak RSS {report['peak_rss'] / MIB:.0f} MiB"


# ------------------------------------------------- what keeps the peak flat: fast, in this process


def _threads_running(monkeypatch, module, name):
    """Record the name of the thread each call of ``module.name`` runs in."""
    import threading

    seen = []
    real = getattr(module, name)

    def wrapper(*args):
        seen.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(module, name, wrapper)
    return seen


def _in_threads(work, count=4):
    import threading

    errors = []

    def run():
        try:
            work()
        except Exception as exc:  # handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads), errors


@pytest.mark.parametrize("reader", ["pillow", "opencv"])
def test_large_decodes_run_in_the_one_large_work_thread_and_small_ones_in_place(monkeypatch, reader):
    """What a thread frees stays in its allocator arena: decodes that allocate more than
    LARGE_WORK_BYTES run in one thread, whichever generation thread asked."""
    import numpy as np

    from pytest_violin.imaging import _bounds as bounds
    from pytest_violin import imaging as _readers
    from pytest_violin.imaging import as_rgb8
    from _servers import png_bytes

    name = "_load_rgb8" if reader == "pillow" else "_cv_rgb8"
    seen = _threads_running(monkeypatch, _readers, name)
    big = np.random.default_rng(0).integers(0, 256, (2048, 1536, 3), np.uint8)
    assert 2048 * 1536 * 7 > bounds.LARGE_WORK_BYTES
    data, small = png_bytes(big), png_bytes(big[:64, :64])
    _in_threads(lambda: np.testing.assert_array_equal(as_rgb8(data, reader=reader), big))
    assert seen == ["violin-large-work"] * 4
    seen.clear()
    as_rgb8(small, reader=reader)
    assert seen == ["MainThread"]


def test_large_json_answers_are_parsed_in_the_large_work_thread(monkeypatch):
    from pytest_violin.models._transport import answers as jsonload

    seen = _threads_running(monkeypatch, jsonload, "_load")
    big = many_keys_json(400_000)
    assert len(big) > jsonload.LARGE_JSON_BYTES
    _in_threads(lambda: jsonload.load_json(big))
    assert seen == ["violin-large-work"] * 4
    seen.clear()
    assert jsonload.load_json(b'{"a": 1}') == {"a": 1} and seen == ["MainThread"]


def test_an_error_in_large_work_reaches_its_caller(monkeypatch):
    from pytest_violin.errors import InvalidImageError
    from pytest_violin.imaging import _bounds as bounds
    from pytest_violin.imaging import as_rgb8
    from _servers import png_bytes

    import numpy as np

    data = png_bytes(np.zeros((2048, 1536, 3), np.uint8))
    with pytest.raises(InvalidImageError, match="truncated or corrupt"):
        as_rgb8(data[: len(data) // 2])
    assert bounds.run_large(bounds.LARGE_WORK_BYTES, lambda: 7) == 7  # the thread lives on


def test_large_answers_share_one_byte_budget():
    """Answers near the cap are held one at a time, answers of a few megabytes many at once;
    a thread waiting for its share stops on cancel, and its wait does not count against the
    endpoint's time-out."""
    import threading
    import time

    from pytest_violin.models._transport.bounds import _AnswerBudget
    from pytest_violin.models._transport.bounds import Attempt, _Stopped

    budget = _AnswerBudget(64 * MIB)
    endless = Attempt(time.monotonic() + 3600, threading.Event())
    held = [budget.acquire(4 * MIB, endless) for _ in range(16)]
    assert budget.used == 64 * MIB
    for n in held:
        budget.release(n)
    first = budget.acquire(59 * 10**6, endless)
    cancel = threading.Event()
    waiting = Attempt(time.monotonic() + 3600, cancel)
    box = []

    def second():
        try:
            box.append(budget.acquire(59 * 10**6, waiting))
        except _Stopped as exc:
            box.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    cancel.set()  # the run is interrupted while the second answer waits for the first
    thread.join(30)
    assert len(box) == 1 and isinstance(box[0], _Stopped) and budget.used == first
    late = threading.Thread(target=second)
    box.clear()
    due = time.monotonic() + 0.2
    waiting.cancel, waiting.fired, waiting.deadline = None, None, due
    late.start()
    threading.Event().wait(0.5)  # the second answer waits past its attempt's deadline ...
    budget.release(first)  # ... until the first sample ends: then it is read
    late.join(30)
    assert box == [59 * 10**6] and budget.peak == 64 * MIB
    assert waiting.fired is None and waiting.deadline > due
    budget.release(box[0])
    assert budget.acquire(10**12, endless) == 64 * MIB  # over the whole budget: held alone
