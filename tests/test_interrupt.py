"""Ctrl-C against a hanging endpoint ends the run within seconds, with its reports."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


class HangingServer:
    """Accepts HTTP requests and never answers; ``arrived`` is set by the first one."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.arrived = threading.Event()
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
            conn.settimeout(5)
            try:
                if conn.recv(65536):
                    self.arrived.set()
            except OSError:
                pass

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


def _start(tmp_path, port, *extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
           f"--violin-model=http://127.0.0.1:{port}/generate", "--violin-tasks=color",
           "--violin-limit=12", "--violin-no-cache", f"--violin-report={tmp_path / 'report'}", *extra]
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def test_first_ctrl_c_ends_a_hanging_run_within_seconds(tmp_path, hanging):
    proc = _start(tmp_path, hanging.port)  # default timeout (120 s) and retries (3)
    try:
        assert hanging.arrived.wait(60), "the run never called the endpoint"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == int(pytest.ExitCode.INTERRUPTED), out
    assert elapsed < 5.0, f"took {elapsed:.1f} s after SIGINT"
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    assert results["metadata"]["interrupted"] is True


def test_second_ctrl_c_exits_at_once(tmp_path, hanging):
    # a conftest that makes the end of the session slow (as a huge report would)
    (tmp_path / "conftest.py").write_text(
        "import sys, threading\n"
        "def pytest_violin_session_results(config, store):\n"
        "    sys.__stderr__.write('SLOW-END-STARTED\\n'); sys.__stderr__.flush()\n"
        "    threading.Event().wait(60)\n")
    proc = _start(tmp_path, hanging.port)
    started = threading.Event()

    def watch():  # the subprocess says when its slow end began: no polling
        for line in proc.stdout:
            if "SLOW-END-STARTED" in line:
                started.set()

    try:
        assert hanging.arrived.wait(60)
        proc.send_signal(signal.SIGINT)
        reader = threading.Thread(target=watch, daemon=True)
        reader.start()
        assert started.wait(20)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        elapsed = time.monotonic() - t0
        reader.join(5)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert elapsed < 3.0
    assert proc.returncode != 0
