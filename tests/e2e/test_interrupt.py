"""Ctrl-C and SIGTERM against a hanging endpoint end the run within seconds, with its reports.

The pytest processes these tests start get SIGINT's default disposition
(:func:`_default_signals`), so the tests pass also when the test run itself
was started with SIGINT ignored (``nohup``, a background job of a shell).
They wait on events (the endpoint's first request, a line on stdout), never
on a sleep. The xdist ones start three processes and are marked slow.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from _processes import alive_in_group  # tests/_processes.py

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

INTERRUPTED = int(pytest.ExitCode.INTERRUPTED)


class HangingServer:
    """Accepts HTTP requests and never answers; ``arrived`` is set by the first one.

    ``requests`` counts the requests that arrived (:meth:`wait_for_requests`).
    """

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.arrived = threading.Event()
        self.requests = 0
        self._counted = threading.Condition()
        self.stop = threading.Event()
        self.conns = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn):
        conn.settimeout(5)
        try:
            if conn.recv(65536):
                self.arrived.set()
                with self._counted:
                    self.requests += 1
                    self._counted.notify_all()
        except OSError:
            pass

    def wait_for_requests(self, count, timeout):
        """Whether ``count`` requests arrived within ``timeout`` seconds."""
        with self._counted:
            return self._counted.wait_for(lambda: self.requests >= count, timeout)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.fixture
def hanging():
    server = HangingServer()
    yield server
    server.close()


def _default_signals():
    """In the child before exec: SIGINT and SIGTERM as a terminal's shell gives them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _start(tmp_path, port, *extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
           f"--violin-model=http://127.0.0.1:{port}/generate", "--violin-tasks=color",
           "--violin-limit=12", "--violin-no-cache", f"--violin-report={tmp_path / 'report'}", *extra]
    # its own process group: a signal to the group reaches it and its xdist workers only
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=_default_signals, start_new_session=True)


class Output:
    """Reads a child's output in a thread; ``wait_for(text)`` waits for a line with ``text``."""

    def __init__(self, proc):
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc):
        for line in proc.stdout:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()

    def wait_for(self, text, timeout):
        with self._cond:
            return self._cond.wait_for(lambda: any(text in line for line in self.lines), timeout)

    def text(self):
        self._thread.join(10)
        return "".join(self.lines)


def _finish(proc, t0, timeout=30):
    """Wait for ``proc``; seconds since ``t0``. A process still running is killed (group and all)."""
    try:
        proc.wait(timeout=timeout)
        return time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _results(tmp_path):
    return json.loads((tmp_path / "report" / "results.json").read_text())


def test_first_ctrl_c_ends_a_hanging_run_within_seconds(tmp_path, hanging):
    proc = _start(tmp_path, hanging.port)  # default timeout (120 s) and retries (3)
    out = Output(proc)
    assert hanging.arrived.wait(60), "the run never called the endpoint"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    elapsed = _finish(proc, t0)
    assert proc.returncode == INTERRUPTED, out.text()
    assert elapsed < 5.0, f"took {elapsed:.1f} s after SIGINT"
    meta = _results(tmp_path)["metadata"]
    assert meta["interrupted"] is True
    assert meta["stop_reason"] == "interrupted (Ctrl-C)"


def test_sigterm_ends_the_run_like_the_first_ctrl_c(tmp_path, hanging):
    proc = _start(tmp_path, hanging.port)
    out = Output(proc)
    assert hanging.arrived.wait(60), "the run never called the endpoint"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    elapsed = _finish(proc, t0)
    text = out.text()
    assert proc.returncode == INTERRUPTED, text
    assert elapsed < 5.0, f"took {elapsed:.1f} s after SIGTERM"
    meta = _results(tmp_path)["metadata"]  # the reports are written, marked interrupted
    assert meta["interrupted"] is True
    assert meta["stop_reason"] == "interrupted (SIGTERM)"
    assert (tmp_path / "report" / "summary.md").is_file()
    assert "INTERNALERROR" not in text


#: Seconds the slow end of the session takes (it says when it is over: SLOW-END-DONE).
SLOW_END_S = 60


def _slow_end(tmp_path):
    # a conftest that makes the end of the session slow (as a huge report would)
    (tmp_path / "conftest.py").write_text(
        "import sys, threading\n"
        "def pytest_violin_session_results(config, store):\n"
        "    sys.__stderr__.write('SLOW-END-STARTED\\n'); sys.__stderr__.flush()\n"
        f"    threading.Event().wait({SLOW_END_S})\n"
        "    sys.__stderr__.write('SLOW-END-DONE\\n'); sys.__stderr__.flush()\n")


def test_second_ctrl_c_exits_at_once(tmp_path, hanging):
    # "at once": without waiting for the slow end, which says when it is done; the events
    # decide (its line never comes, the process is gone), not how fast the machine is
    _slow_end(tmp_path)
    proc = _start(tmp_path, hanging.port)
    out = Output(proc)
    assert hanging.arrived.wait(120), "the run never called the endpoint"
    proc.send_signal(signal.SIGINT)
    assert out.wait_for("SLOW-END-STARTED", 120), out.text()  # the subprocess says when its slow end began
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    elapsed = _finish(proc, t0, timeout=2 * SLOW_END_S)
    text = out.text()
    assert "SLOW-END-DONE" not in text, f"waited for the slow end ({elapsed:.2f} s after the second SIGINT)"
    assert proc.returncode == INTERRUPTED, text
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    # one line says what happened; no report claims the run was not interrupted
    assert sum("second interrupt" in line for line in text.splitlines()) == 1, text
    if (tmp_path / "report" / "results.json").exists():
        assert _results(tmp_path)["metadata"]["interrupted"] is True


@pytest.mark.slow
def test_two_quick_ctrl_c_exit_at_once_without_a_report_that_says_not_interrupted(tmp_path, hanging):
    # the second SIGINT lands while pytest still handles the first one (the 0.3 s apart)
    proc = _start(tmp_path, hanging.port)
    out = Output(proc)
    assert hanging.arrived.wait(60), "the run never called the endpoint"
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    os.killpg(proc.pid, signal.SIGINT)
    elapsed = _finish(proc, t0)
    text = out.text()
    assert elapsed < 5.0, f"took {elapsed:.2f} s"
    assert proc.returncode == INTERRUPTED, text
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    results = tmp_path / "report" / "results.json"
    if results.exists():  # the first interrupt was handled before the second came
        assert _results(tmp_path)["metadata"]["interrupted"] is True


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_xdist_controller_alone_signalled_ends_its_workers(tmp_path, hanging, signum):
    # only the controller gets the signal (kill PID, `timeout`, a CI runner): it
    # interrupts its workers, and none of them outlives it
    proc = _start(tmp_path, hanging.port, "-n", "2")
    out = Output(proc)
    assert hanging.arrived.wait(120), "the run never called the endpoint"
    t0 = time.monotonic()
    proc.send_signal(signum)
    elapsed = _finish(proc, t0, timeout=60)
    text = out.text()
    assert proc.returncode == INTERRUPTED, text
    # far below the endpoint's 120 s time-out (before: up to 235 s); the 5 s
    # target is measured on a quiet machine by benchmarks/bench_robustness.py
    assert elapsed < 20.0, f"took {elapsed:.1f} s"
    assert alive_in_group(proc.pid) == [], "a worker outlived its controller"
    assert _results(tmp_path)["metadata"]["interrupted"] is True
    assert "INTERNALERROR" not in text


def _connected_to(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a TCP connection to 127.0.0.1:``port`` (Linux ``/proc``)."""
    try:
        inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")}
        table = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    for line in table:
        fields = line.split()  # sl local_address rem_address st ... inode
        if fields[2] == f"0100007F:{port:04X}" and fields[9] in inodes:
            return True
    return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_one_xdist_worker_alone_signalled_ends_the_others_requests_in_flight(tmp_path, hanging):
    # SIGINT to one worker's pid only: the other worker's requests to an endpoint that
    # never answers (default time-out 120 s, 3 retries) must not hold the run
    proc = _start(tmp_path, hanging.port, "-n", "2")
    out = Output(proc)
    assert hanging.wait_for_requests(2, 120), f"{hanging.requests} requests arrived"
    workers = sorted(pid for pid in alive_in_group(proc.pid) if pid != proc.pid)
    assert len(workers) == 2, workers
    deadline = time.monotonic() + 120
    while not all(_connected_to(pid, hanging.port) for pid in workers) and time.monotonic() < deadline:
        threading.Event().wait(0.1)  # the second worker's first request is on its way
    assert all(_connected_to(pid, hanging.port) for pid in workers), "a worker sent no request"
    t0 = time.monotonic()
    os.kill(workers[0], signal.SIGINT)
    elapsed = _finish(proc, t0, timeout=60)
    text = out.text()
    assert proc.returncode == INTERRUPTED, text
    # far below the endpoint's time-out (before: still running after 90 s)
    assert elapsed < 20.0, f"took {elapsed:.1f} s"
    assert alive_in_group(proc.pid) == [], "a worker outlived the run"
    assert "INTERNALERROR" not in text and "replacing crashed worker" not in text, text
    assert _results(tmp_path)["metadata"]["interrupted"] is True


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_xdist_workers_end_when_their_controller_is_killed(tmp_path, hanging):
    proc = _start(tmp_path, hanging.port, "-n", "2")
    out = Output(proc)
    assert hanging.arrived.wait(120), "the run never called the endpoint"
    assert out.wait_for("violin plan:", 60)
    proc.kill()  # SIGKILL: nothing of the controller runs
    proc.wait(30)
    deadline = time.monotonic() + 10
    while alive_in_group(proc.pid) and time.monotonic() < deadline:
        threading.Event().wait(0.1)  # the workers check their parent every 0.1 s
    assert alive_in_group(proc.pid) == [], "a worker outlived its killed controller"


# --------------------------------------------------------------------------- per session


def test_an_interrupted_inner_session_cancels_only_itself(pytester):
    # an outer run whose own tests run a pytester session that is interrupted:
    # the outer run's samples are generated after that and must all pass
    pytester.makepyfile(test_nested="""
        import pytest

        def test_inner_interrupted(pytester):
            pytester.makepyfile(test_x="def test_x():\\n    raise KeyboardInterrupt\\n")
            result = pytester.inline_run("--violin-model=oracle", "--violin-limit=1",
                                         "-p", "no:cacheprovider", no_reraise_ctrlc=True)
            assert result.ret == pytest.ExitCode.INTERRUPTED
    """)
    # one generation thread and a prefetch window of 2: the outer samples are
    # generated after the inner session ended
    result = pytester.runpytest("-p", "pytester", "-p", "no:cacheprovider", "--violin-model=oracle",
                                "--violin-limit=8", "--violin-concurrency=1", "--violin-tasks=color",
                                "--violin-no-cache", f"--violin-report={pytester.path / 'report'}")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 9, result.stdout.lines[-30:]
    assert result.ret == 0
    meta = json.loads((pytester.path / "report" / "results.json").read_text())["metadata"]
    assert meta["interrupted"] is False


def test_handlers_are_installed_for_a_model_run_and_restored_after(pytester):
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    # a SIGINT ignored by the whole test run (nohup) stays ignored; SIGTERM's default is replaced
    ours = {"SIGINT": before[0] is signal.default_int_handler, "SIGTERM": before[1] == signal.SIG_DFL}
    pytester.makepyfile(test_handlers=f"""
        import signal
        from pytest_violin.pytest_plugin._signals import SessionSignals

        def test_ours():
            for name, expected in {ours!r}.items():
                handler = signal.getsignal(getattr(signal, name))
                assert isinstance(getattr(handler, "__self__", None), SessionSignals) is expected, name
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--violin-model=oracle", "test_handlers.py")
    result.assert_outcomes(passed=1)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_no_model_no_handler(pytester):
    # without a model the plugin changes nothing in a pytest run, signals included
    names = {signal.default_int_handler: "default_int_handler", signal.SIG_IGN: "SIG_IGN",
             signal.SIG_DFL: "SIG_DFL"}
    before = {name: names.get(signal.getsignal(getattr(signal, name)))
              for name in ("SIGINT", "SIGTERM")}
    if None in before.values():
        pytest.skip(f"this test run was started with its own signal handlers: {before}")
    pytester.makepyfile(test_plain=f"""
        import signal

        def test_unchanged():
            for name, handler in {before!r}.items():
                assert signal.getsignal(getattr(signal, name)) is getattr(signal, handler), name
    """)
    pytester.runpytest("-p", "no:cacheprovider", "test_plain.py").assert_outcomes(passed=1)


def test_a_cancelled_generation_is_an_error_never_the_models_failure():
    from pytest_violin.errors import GenerationCancelled, GenerationError
    from pytest_violin.execution.runner import Runner
    from pytest_violin.models import AdapterOptions, resolve_model

    from conftest import FakeSample

    cancel = threading.Event()
    adapter = resolve_model("oracle", AdapterOptions(rootdir=Path.cwd(), cancel=cancel))
    runner = Runner(adapter, concurrency=1, cancel=cancel)
    try:
        cancel.set()
        generation = runner.get(FakeSample("color/0"))
    finally:
        runner.close(wait=False)
    assert isinstance(generation.error, GenerationCancelled)
    assert generation.error.unjudged  # an *error* outcome, never scored
    assert not GenerationError("the model said no").unjudged


def test_traceback_entries_without_a_line_are_left_out():
    # what CPython 3.11+ can give a KeyboardInterrupt raised at an instruction without a line
    from types import SimpleNamespace

    from pytest_violin.pytest_plugin._signals import drop_lineless_frames

    last = SimpleNamespace(tb_next=None, tb_lineno=7)
    lineless = SimpleNamespace(tb_next=last, tb_lineno=None)
    head = SimpleNamespace(tb_next=SimpleNamespace(tb_next=lineless, tb_lineno=None), tb_lineno=3)
    drop_lineless_frames(head)
    assert head.tb_next is last and last.tb_next is None
