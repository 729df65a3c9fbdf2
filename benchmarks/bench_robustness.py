"""Robustness figures: memory, Ctrl-C, dead endpoints, environment churn, paid-call limit.

Five measurements, each against a local server on 127.0.0.1 (nothing
leaves the machine); the ones about a whole process run it fresh:

a. **memory** - peak RSS (``VmHWM``, reported by the process itself) of
   one fresh process running the real ``Runner`` at concurrency 16 against a
   server answering the worst answers: 300 MB of text/plain, 300 MB of JSON,
   300 MB of image/png (no length), a gzip bomb (256 MiB of zeros) and a
   16-bit RGBA 8192x8192 PNG (512 MiB of pixels). 16 samples per answer
   kind, then the worst mix (all five kinds, 16 samples). Then answers the
   caps let through whole: a 59 MB JPEG of noise (8192x8064, 198 MB of RGB)
   at concurrency 1, 16 and 32 (32 samples at 32), and a 41 MB JSON object
   of 2,000,000 keys (no image) at 1 and 16. The driver is
   ``tests/_memory_driver.py`` and the answers are ``tests/e2e/test_memory_bounds.py``'s,
   so the benchmark measures exactly what the test guards. Target < 1 GB.
b. **Ctrl-C and SIGTERM** - seconds from the signal to exit of ``python -m pytest
   --violin-model=http://127.0.0.1:PORT/generate --violin-tasks=color
   --violin-limit=12`` (default timeout and retries) against an endpoint that
   accepts connections and never answers, started with SIGINT and SIGTERM at
   their defaults (whatever this script inherited). The signal is sent once
   the first request arrived: SIGINT to the process group as a terminal's
   Ctrl-C does, SIGINT or SIGTERM to the pytest process alone (``kill PID``,
   ``timeout``), and a double Ctrl-C (two SIGINTs to the group 0.3 s apart,
   timed from the second). Without and with ``-n 2``; with it also SIGINT to
   one worker's pid alone (the other worker's requests must not hold the
   run). Targets: < 5 s after the first (< 1 s after a second), exit code 2,
   ``results.json`` marked
   interrupted (not after a double Ctrl-C), no INTERNALERROR or traceback, and
   no process of the run's group alive once pytest has exited (an xdist
   worker outliving its controller). The rows name the Python that ran them:
   run the script with each interpreter to compare.
c. **dead endpoint** - seconds until a run of the full ``violin`` suite with
   ``--violin-max-calls=none`` against a closed port ends. Target < 30 s,
   exit code 2 (the run is stopped as unreachable).
d. **environment churn** - 2,000 generations at concurrency 16 against a
   local server while the main thread sets and deletes
   ``PYTEST_CURRENT_TEST`` ten times per sample (as pytest does; see
   ``tests/unit/test_env_stress.py``). Target: 0 spurious failures; wall time
   reported.
e. **paid-call limit** - seconds until a full-suite run of a network
   adapter is refused by the default ``--violin-max-calls`` (exit 4), and the
   number of requests the listening server received (target 0).

Run: ``python benchmarks/bench_robustness.py [--only a,b,c,d,e] [--repeat 3] [--generations 2000]``
(about 2 minutes with ``--repeat 3`` on two cores, plus about 1.5 minutes
per repeat for b's eight cases). Run b with each interpreter to compare
Pythons: ``/path/to/venv-3.N/bin/python benchmarks/bench_robustness.py --only b``.
``--repeat`` repeats the timed process runs (b, c, e) and prints the
median and the range. Prints a markdown table (what / target / measured);
exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test suite's fault server, memory driver and worst answers

MIB = 2**20
GB = 10**9
KINDS = ("text", "json", "png", "gzip", "rgba16")
INTERRUPTED, USAGE_ERROR = 2, 4  # pytest.ExitCode values


# --------------------------------------------------------------------- servers


class HangingServer:
    """Accepts HTTP connections, reads the request and never answers.

    ``arrived`` is set by the first request. Used as a context manager.
    """

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.arrived = threading.Event()
        self.requests = 0
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "HangingServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._conns:
            conn.close()
        self.sock.close()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self._conns.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            if conn.recv(65536):
                self.requests += 1
                self.arrived.set()
        except OSError:
            pass


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------- helpers


def pytest_cmd(url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
            f"--violin-model={url}", *extra]


def clean_env() -> dict:
    """The environment without this process's pytest variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def spread(values: list[float]) -> str:
    """``median s`` or ``median s (min-max, n runs)``."""
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.2f} s"
    return f"{med:.2f} s (median; {min(values):.2f}-{max(values):.2f}, {len(values)} runs)"


@dataclass
class Row:
    what: str
    target: str
    measured: str
    ok: bool


# --------------------------------------------------------------------- a. memory


def quiet_resets(server_class) -> None:
    """Keep socketserver from printing a traceback when the client hangs up.

    Refusing an answer means closing its connection mid-body: expected here,
    so a reset seen by the server is not worth a traceback on stderr.
    """
    default = server_class.handle_error

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            default(self, request, client_address)

    server_class.handle_error = handle_error


def measure_memory(kinds: list[str], concurrency: int = 16) -> dict:
    """Peak RSS and outcomes of one fresh driver process (see tests/_memory_driver.py)."""
    import _servers
    from _servers import FaultServer
    from test_memory_bounds import DRIVER, answers

    if not getattr(_servers._Server.handle_error, "quiet", False):
        quiet_resets(_servers._Server)
        _servers._Server.handle_error.quiet = True

    replies = answers(set(kinds))

    def handler(rec):
        return replies[rec.json()["sample_id"].split("/")[0]]

    with FaultServer(handler=handler) as server:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(DRIVER), server.url + "/gen", ",".join(kinds), str(concurrency),
             str(6 * 2**30)],  # RLIMIT_AS: a runaway answer fails with MemoryError, not the machine
            capture_output=True, text=True, timeout=600, cwd=str(DRIVER.parent), env=clean_env(),
        )
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"memory driver failed ({proc.returncode}): {proc.stderr[-2000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    report["wall"] = wall
    return report


def bench_memory(args) -> list[Row]:
    rows = []
    mixes = [(kind, [kind] * 16, 16) for kind in KINDS]
    mixes.append(("worst mix (all five kinds)", [KINDS[i % len(KINDS)] for i in range(16)], 16))
    # answers inside every cap, decoded or parsed whole: the peak must not follow the concurrency
    mixes += [("59 MB JPEG", ["jpeg"] * n, n) for n in (1, 16, 32)]
    mixes += [("41 MB JSON of 2,000,000 keys", ["keys"] * n, n) for n in (1, 16)]
    for label, kinds, concurrency in mixes:
        report = measure_memory(kinds, concurrency)
        peak = report["peak_rss"]
        refused = sum(outcome != "ok" for outcome in report["outcomes"].values())
        memory_errors = sum("MemoryError" in outcome for outcome in report["outcomes"].values())
        ok = peak < GB and memory_errors == 0
        reasons = sorted({outcome[:110] for outcome in report["outcomes"].values() if outcome != "ok"})
        print(f"  a. {label} at {concurrency}: peak RSS {peak / MIB:.0f} MiB, {refused}/{len(kinds)} "
              f"answers refused, {memory_errors} MemoryError, {report['wall']:.1f} s", flush=True)
        for reason in reasons[:5]:
            print(f"     {reason}")
        rows.append(Row(f"peak RSS, {len(kinds)} x {label} answers at concurrency {concurrency}", "< 1 GB",
                        f"{peak / MIB:.0f} MiB", ok))
    return rows


# --------------------------------------------------------------------- b. Ctrl-C


def _default_signals() -> None:
    """In the child before exec: SIGINT and SIGTERM at their defaults (a background job ignores SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


from _processes import alive_in_group  # noqa: E402  (tests/_processes.py, shared with the interrupt tests)


@dataclass
class Stop:
    seconds: float
    code: int
    interrupted: bool
    survivors: int
    clean: bool  # no INTERNALERROR, no traceback


#: how: (signal, to whom: "group", "pid" or "worker" (one xdist worker alone), double)
HOW = {"ctrl-c": (signal.SIGINT, "group", False), "int-pid": (signal.SIGINT, "pid", False),
       "term-pid": (signal.SIGTERM, "pid", False), "double": (signal.SIGINT, "group", True),
       "int-worker": (signal.SIGINT, "worker", False)}


def signal_to_exit(extra: tuple[str, ...], how: str) -> Stop:
    """One run stopped as ``how`` says (see :data:`HOW`)."""
    signum, group, double = HOW[how]
    with HangingServer() as server, tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report"
        out = Path(tmp) / "out.txt"
        cmd = pytest_cmd(f"http://127.0.0.1:{server.port}/generate", "--violin-tasks=color",
                         "--violin-limit=12", "--violin-no-cache", f"--violin-report={report}", *extra)
        with out.open("w") as sink:
            proc = subprocess.Popen(cmd, cwd=tmp, env=clean_env(), stdout=sink, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_default_signals)
        try:
            if not server.arrived.wait(120):
                raise SystemExit("b: the run never called the endpoint")
            if group == "worker":
                workers = sorted(pid for pid in alive_in_group(proc.pid) if pid != proc.pid)
                if not workers:
                    raise SystemExit("b: no xdist worker to signal")
                send = lambda: os.kill(workers[0], signum)  # noqa: E731
            else:
                send = (lambda: os.killpg(proc.pid, signum)) if group == "group" else (
                    lambda: proc.send_signal(signum))
            send()
            t0 = time.monotonic()
            if double:
                time.sleep(0.3)  # the stimulus: a second Ctrl-C 0.3 s later (the case)
                if proc.poll() is None:
                    send()
                t0 = time.monotonic()
            proc.wait(timeout=300)
            elapsed = time.monotonic() - t0
            survivors = len(alive_in_group(proc.pid))
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            for pid in alive_in_group(proc.pid):
                os.kill(pid, signal.SIGKILL)
        try:
            interrupted = json.loads((report / "results.json").read_text())["metadata"]["interrupted"] is True
        except (OSError, ValueError, KeyError):
            interrupted = False
        text = out.read_text(errors="replace")
    return Stop(elapsed, proc.returncode, interrupted, survivors,
                "INTERNALERROR" not in text and "Traceback" not in text)


def bench_interrupt(args) -> list[Row]:
    rows = []
    py = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
    cases = (("one process, Ctrl-C", (), "ctrl-c"), ("one process, SIGTERM", (), "term-pid"),
             ("one process, double Ctrl-C (second 0.3 s after the first)", (), "double"),
             ("`-n 2`, Ctrl-C (the process group)", ("-n", "2"), "ctrl-c"),
             ("`-n 2`, `kill -INT` of the controller only", ("-n", "2"), "int-pid"),
             ("`-n 2`, SIGTERM to the controller only", ("-n", "2"), "term-pid"),
             ("`-n 2`, double Ctrl-C (second 0.3 s after the first)", ("-n", "2"), "double"),
             ("`-n 2`, `kill -INT` of one worker only", ("-n", "2"), "int-worker"))
    for label, extra, how in cases:
        stops = []
        for _ in range(args.repeat):
            stop = signal_to_exit(extra, how)
            stops.append(stop)
            print(f"  b. {py}, {label}: {stop.seconds:.2f} s, exit {stop.code}, results.json "
                  f"interrupted={stop.interrupted}, {stop.survivors} alive after exit, clean={stop.clean}",
                  flush=True)
        double = how == "double"
        limit = 1.0 if double else 5.0
        times = [st.seconds for st in stops]
        codes = sorted({st.code for st in stops})
        marked = double or all(st.interrupted for st in stops)
        survivors = max(st.survivors for st in stops)
        clean = all(st.clean for st in stops)
        ok = max(times) < limit and codes == [INTERRUPTED] and marked and survivors == 0 and clean
        notes = "" if marked else ", results.json not marked interrupted"
        notes += "" if survivors == 0 else f", {survivors} processes outlived pytest"
        notes += "" if clean else ", INTERNALERROR or traceback"
        rows.append(Row(f"{py}: {'second signal' if double else 'signal'} to exit, endpoint that never answers, "
                        f"{label}", f"< {limit:g} s, exit 2", f"{spread(times)}, exit "
                        f"{'/'.join(map(str, codes))}{notes}", ok))
    return rows


# --------------------------------------------------------------------- c. dead endpoint


def bench_dead_endpoint(args) -> list[Row]:
    times, codes = [], set()
    for _ in range(args.repeat):
        url = f"http://127.0.0.1:{closed_port()}/generate"
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            proc = subprocess.run(pytest_cmd(url, "--violin-max-calls=none", "--violin-no-cache"),
                                  cwd=tmp, env=clean_env(), capture_output=True, text=True, timeout=600)
            elapsed = time.monotonic() - t0
        times.append(elapsed)
        codes.add(proc.returncode)
        stop = next((line.strip() for line in proc.stdout.splitlines() if "unreachable" in line), "")
        print(f"  c. {elapsed:.2f} s, exit {proc.returncode}: {stop[:160]}", flush=True)
    ok = max(times) < 30 and codes == {INTERRUPTED}
    return [Row("full `violin` suite against a closed port, `--violin-max-calls=none`, until the run ends",
                "< 30 s, exit 2", f"{spread(times)}, exit {'/'.join(map(str, sorted(codes)))}", ok)]


# --------------------------------------------------------------------- d. environment churn


@dataclass(frozen=True)
class TinySample:
    id: str
    prompt: str = "a pure red image"
    width: int = 8
    height: int = 8
    task: str = "color"
    inputs: tuple = ()


def bench_env_churn(args) -> list[Row]:
    from _servers import FaultServer, Reply, solid

    from pytest_violin.execution.runner import Runner
    from pytest_violin.models import AdapterOptions, resolve_model

    var = "PYTEST_CURRENT_TEST"
    samples = [TinySample(f"stress/{i:05d}") for i in range(args.generations)]
    failures = []
    with FaultServer(default=Reply.png(solid(8, 8, (200, 40, 40)))) as server, \
            tempfile.TemporaryDirectory() as tmp:
        adapter = resolve_model(server.url + "/gen", AdapterOptions(rootdir=Path(tmp), concurrency=16))
        runner = Runner(adapter, concurrency=16)
        original = os.environ.get(var)
        t0 = time.perf_counter()
        try:
            runner.plan(samples)
            for i, sample in enumerate(samples):
                for k in range(10):  # what pytest does around every test
                    os.environ[var] = f"tests/test_x.py::test_{i}_{k} (call)"
                    del os.environ[var]
                gen = runner.get(sample)
                if gen.error is not None or len(gen.images) != 1:
                    failures.append((sample.id, str(gen.error)[:200]))
            wall = time.perf_counter() - t0
        finally:
            runner.close()
            adapter.close()
            if original is not None:
                os.environ[var] = original
        served = len(server.requests)
    print(f"  d. {args.generations} generations: {len(failures)} failures, {served} served, {wall:.2f} s",
          flush=True)
    for sample_id, error in failures[:5]:
        print(f"     {sample_id}: {error}")
    return [Row(f"{args.generations:,} generations at concurrency 16 while the main thread churns `os.environ`",
                "0 spurious failures",
                f"{len(failures)} failures, {served} requests served, {wall:.2f} s wall", not failures)]


# --------------------------------------------------------------------- e. paid-call limit


def bench_max_calls(args) -> list[Row]:
    times, codes, requests = [], set(), 0
    for _ in range(args.repeat):
        with HangingServer() as server, tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            proc = subprocess.run(pytest_cmd(f"http://127.0.0.1:{server.port}/generate"),
                                  cwd=tmp, env=clean_env(), capture_output=True, text=True, timeout=300)
            elapsed = time.monotonic() - t0
            requests += server.requests
        times.append(elapsed)
        codes.add(proc.returncode)
        print(f"  e. {elapsed:.2f} s, exit {proc.returncode}, {server.requests} requests; "
              f"{proc.stderr.strip().splitlines()[-1][:160] if proc.stderr.strip() else ''}", flush=True)
    ok = codes == {USAGE_ERROR} and requests == 0
    return [Row("full-suite run of a network adapter refused by the default `--violin-max-calls`",
                "exit 4, no request", f"{spread(times)}, exit {'/'.join(map(str, sorted(codes)))}, "
                f"{requests} requests", ok)]


# --------------------------------------------------------------------- main

BENCHES = {"a": bench_memory, "b": bench_interrupt, "c": bench_dead_endpoint, "d": bench_env_churn,
           "e": bench_max_calls}


def parse_only(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCHES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--only={text!r}: accepted: a comma-separated subset of "
                                         f"{','.join(BENCHES)}")
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", type=parse_only, default=list(BENCHES),
                        help="comma-separated subset of a,b,c,d,e (default: all)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="repetitions of the timed process runs b, c, e (default 1)")
    parser.add_argument("--generations", type=int, default=2000, help="generations in d (default 2000)")
    args = parser.parse_args(argv)
    for name in ("repeat", "generations"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)}: accepted: an integer >= 1")

    rows: list[Row] = []
    for name in args.only:
        print(f"{name}. {BENCHES[name].__name__} ...", flush=True)
        rows += BENCHES[name](args)

    print("\n| what | target | measured | |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row.what} | {row.target} | {row.measured} | {'PASS' if row.ok else 'FAIL'} |")
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
