"""Throughput of prefetching generation against a slow HTTP endpoint.

A local server on 127.0.0.1 answers every request after 200 ms and serves
16 requests at once (a ThreadingHTTPServer with a 16-slot semaphore; the
fault-injecting server of the test suite). Tiny 8x8 samples go through the
real path: ``pytest_violin.execution.runner.Runner`` -> the ``http://`` adapter ->
pooled ``requests`` session -> PNG decode.

* concurrency 16, 200 samples: ideal 200 x 0.2 s / 16 = 2.5 s; target
  within 1.5x of it (<= 3.75 s).
* concurrency 1: run on fewer samples (default 40) and extrapolated
  linearly to 200 (each request is sequential, so time is linear in the
  count); target: concurrency 16 at least 10x faster.

Run: ``python benchmarks/bench_concurrency.py [--samples 200] [--serial-samples 40]``.
Prints a table; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test suite's fault-injecting server

from _servers import FaultServer, Reply, solid  # noqa: E402

from pytest_violin.models import AdapterOptions, resolve_model  # noqa: E402
from pytest_violin.execution.runner import Runner  # noqa: E402

DELAY = 0.2
SERVER_SLOTS = 16


@dataclass(frozen=True)
class TinySample:
    id: str
    prompt: str = "a pure #D9B451 image"
    width: int = 8
    height: int = 8
    task: str = "color"
    inputs: tuple = ()


def run(url: str, concurrency: int, count: int) -> tuple[float, int]:
    """Seconds to get ``count`` samples through a Runner; and failures."""
    samples = [TinySample(f"color/v1/bench/t{i:04d}") for i in range(count)]
    options = AdapterOptions(rootdir=Path(tempfile.gettempdir()), concurrency=concurrency, retries=0,
                             timeout=30)
    adapter = resolve_model(url, options)
    runner = Runner(adapter, concurrency=concurrency, cache=None)
    start = time.perf_counter()
    runner.plan(samples)
    failures = sum(runner.get(s).error is not None for s in samples)
    elapsed = time.perf_counter() - start
    runner.close()
    adapter.close()
    return elapsed, failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--serial-samples", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)

    reply = Reply.png(solid(8, 8), delay=DELAY)
    with FaultServer(default=reply, capacity=SERVER_SLOTS) as server:
        url = server.url + "/generate"
        run(url, 2, 4)  # warm-up: imports, first connections
        fast, fast_fail = run(url, args.concurrency, args.samples)
        peak = server.peak_in_flight
        slow, slow_fail = run(url, 1, args.serial_samples)

    ideal = args.samples * DELAY / min(args.concurrency, SERVER_SLOTS)
    slow_full = slow * args.samples / args.serial_samples
    speedup = slow_full / fast
    rows = [
        ("concurrency", "samples", "seconds", "ms/sample", f"est. {args.samples}", "ideal", "failures"),
        (str(args.concurrency), str(args.samples), f"{fast:.2f}", f"{1000 * fast / args.samples:.1f}",
         f"{fast:.2f}", f"{ideal:.2f}", str(fast_fail)),
        ("1", str(args.serial_samples), f"{slow:.2f}", f"{1000 * slow / args.serial_samples:.1f}",
         f"{slow_full:.2f} (extrapolated)", f"{args.samples * DELAY:.2f}", str(slow_fail)),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    print(f"\npeak requests in flight at the server: {peak}")
    ok_ratio = fast <= 1.5 * ideal
    ok_speedup = speedup >= 10
    print(f"concurrency {args.concurrency} vs ideal: {fast / ideal:.2f}x (target <= 1.5x) "
          f"{'PASS' if ok_ratio else 'FAIL'}")
    print(f"speed-up over concurrency 1: {speedup:.1f}x (target >= 10x) {'PASS' if ok_speedup else 'FAIL'}")
    return 0 if ok_ratio and ok_speedup and not (fast_fail or slow_fail) else 1


if __name__ == "__main__":
    sys.exit(main())
