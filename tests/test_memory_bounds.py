"""Peak memory stays bounded whatever the endpoint answers (issue 11, items 4-6).

A fresh process runs 16 generations at concurrency 16 through the real
Runner against a local server whose answers are the worst ones found:
300 MB of text/plain, 300 MB of JSON, 300 MB of image/png (no length), a
gzip bomb, and a 16-bit RGBA 8192x8192 PNG (0.5 MB on the wire, 512 MiB of
pixels). The process reports its own peak RSS (``ru_maxrss``).
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
DRIVER = Path(__file__).with_name("_memory_driver.py")
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
