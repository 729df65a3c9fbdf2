"""A job API at capacity: submit / poll / fetch with adaptive concurrency.

A local job API on 127.0.0.1 (``POST /submit`` -> ``{"id", "status_url"}``,
``GET /status/ID`` -> ``{"status": "running"}`` with ``Retry-After`` set to
the time the job still needs, then ``{"status": "done", "image": <base64
PNG>}``) runs every job for 1 s and at most 8 jobs at once; a submit beyond
that is answered ``429 Too Many Requests`` (no ``Retry-After``). Tiny 8x8
samples go through the real path: ``Runner`` -> the generic ``http://``
adapter in job mode (``--violin-poll-url-path=status_url``) -> the shared
HTTP client (adaptive concurrency, retries) -> PNG decode.

Targets (issue 15): 200 samples with ``--violin-concurrency=32`` finish
within 1.3x of the ideal 200 x 1 s / 8 = 25 s, no sample fails, and the
polling overhead is under 5%: the mean time from a job's end at the server
to the poll that sees it, over the job's time at the client (submit to
that poll).

Run: ``python benchmarks/bench_jobs.py [--samples 200] [--concurrency 32]``
(about 30 s). Prints the numbers; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from pytest_violin.execution.runner import Runner
from pytest_violin.imaging import encode_png
from pytest_violin.models import AdapterOptions, resolve_model

JOB_SECONDS = 1.0
CAPACITY = 8


class JobApi(ThreadingHTTPServer):
    """The job API; counts what happened for the report."""

    daemon_threads = True

    def __init__(self, job_seconds: float = JOB_SECONDS, capacity: int = CAPACITY):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.job_seconds = job_seconds
        self.capacity = capacity
        self.lock = threading.Lock()
        self.jobs: dict[str, dict] = {}
        self.submits = self.rejected = self.polls = 0
        self.peak = 0
        self.poll_seconds = 0.0
        self.png = base64.b64encode(encode_png(np.full((8, 8, 3), (217, 180, 81), np.uint8))).decode()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def running(self, now: float) -> int:
        return sum(1 for job in self.jobs.values() if job["end"] > now)


class _Handler(BaseHTTPRequestHandler):
    server: JobApi
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _send(self, code: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        api = self.server
        now = time.monotonic()
        with api.lock:
            if api.running(now) >= api.capacity:
                api.rejected += 1
                code = 429
            else:
                api.submits += 1
                job_id = f"j{api.submits}"
                api.jobs[job_id] = {"start": now, "end": now + api.job_seconds, "seen": None}
                api.peak = max(api.peak, api.running(now))
                code = 202
        if code == 429:
            self._send(429, {"error": {"message": f"at most {api.capacity} jobs at once"}})
        else:
            self._send(202, {"id": job_id, "status_url": f"/status/{job_id}"},
                       {"Retry-After": f"{api.job_seconds:.3f}"})

    def do_GET(self):
        api = self.server
        start = time.monotonic()
        job_id = self.path.rsplit("/", 1)[-1]
        with api.lock:
            api.polls += 1
            job = api.jobs.get(job_id)
            if job is not None and job["end"] <= start and job["seen"] is None:
                job["seen"] = start
        if job is None:
            self._send(404, {"error": {"message": "no such job"}})
        elif job["end"] > start:
            self._send(200, {"status": "running"}, {"Retry-After": f"{job['end'] - start + 0.005:.3f}"})
        else:
            self._send(200, {"status": "done", "image": api.png})
        with api.lock:
            api.poll_seconds += time.monotonic() - start


@dataclass(frozen=True)
class TinySample:
    id: str
    prompt: str = "a pure #D9B451 image"
    width: int = 8
    height: int = 8
    task: str = "color"
    inputs: tuple = ()


def run(api: JobApi, concurrency: int, count: int):
    """Run ``count`` samples; return (seconds, failure reasons, the client's adaptive limit)."""
    samples = [TinySample(f"color/v1/bench/j{i:04d}") for i in range(count)]
    extra = {"poll_url_path": "status_url"}
    options = AdapterOptions(rootdir=Path(tempfile.gettempdir()), concurrency=concurrency, retries=3,
                             timeout=60, response_path="image", extra=extra)
    adapter = resolve_model(api.url + "/submit", options)
    runner = Runner(adapter, concurrency=concurrency, cache=None)
    start = time.perf_counter()
    runner.plan(samples)
    results = [runner.get(s) for s in samples]
    elapsed = time.perf_counter() - start
    failures = [r.error for r in results if r.error is not None]
    limit = adapter.client.limit
    runner.close()
    adapter.close()
    return elapsed, failures, limit


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args(argv)

    api = JobApi()
    thread = threading.Thread(target=api.serve_forever, daemon=True)
    thread.start()
    try:
        elapsed, failures, limit = run(api, args.concurrency, args.samples)
    finally:
        api.shutdown()
        api.server_close()

    ideal = args.samples * JOB_SECONDS / CAPACITY
    jobs = [j for j in api.jobs.values() if j["seen"] is not None]
    lag = sum(j["seen"] - j["end"] for j in jobs) / max(len(jobs), 1)
    # a job's time at the client, from its submit to the poll that sees it done
    per_sample = JOB_SECONDS + lag
    overhead = lag / per_sample
    ratio = elapsed / ideal
    print(f"samples {args.samples}, concurrency {args.concurrency}, job API: {JOB_SECONDS:g} s per job, "
          f"{CAPACITY} at once")
    print(f"wall time            {elapsed:.2f} s (ideal {ideal:.2f} s): {ratio:.2f}x (target <= 1.3x) "
          f"{'PASS' if ratio <= 1.3 else 'FAIL'}")
    print(f"failed samples       {len(failures)} {'PASS' if not failures else 'FAIL'}")
    for reason in failures[:5]:
        print(f"  {reason}")
    print(f"polling overhead     {100 * overhead:.2f}% (mean {1000 * lag:.1f} ms from a job's end to the poll "
          f"that sees it, over {per_sample:.3f} s per job at the client; target < 5%) "
          f"{'PASS' if overhead < 0.05 else 'FAIL'}")
    print(f"requests             {api.submits} jobs, {api.rejected} submits answered 429, {api.polls} polls "
          f"({api.polls / max(api.submits, 1):.2f} per job); server time in polls "
          f"{100 * api.poll_seconds / elapsed:.2f}% of wall")
    print(f"concurrency          peak jobs at the server {api.peak}; client limit at the end "
          f"{limit.limit:.1f} (lowest {limit.lowest:.1f}, {limit.overloads} answers 429)")
    return 0 if ratio <= 1.3 and not failures and overhead < 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
