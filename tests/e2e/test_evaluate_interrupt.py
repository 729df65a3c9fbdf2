"""Ctrl-C inside evaluate(): control back within seconds, no generation thread left (a real SIGINT)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pytest_violin

CHILD = textwrap.dedent("""
    import json, signal, sys, threading, time
    from pytest_violin.evaluation import evaluate

    arrived = []

    def on_sigint(signum, frame):  # Python's own handler, noting when the signal came
        arrived.append(time.monotonic())
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    print("READY", flush=True)
    try:
        evaluate(f"http://127.0.0.1:{sys.argv[1]}/generate", tasks="color", limit=6, concurrency=3,
                 cache=False, progress=False, retries=0, timeout=300)
    except KeyboardInterrupt:
        took = time.monotonic() - arrived[0]
        # every violin thread ends: the generations' at once, the HTTP watchdog once idle (about 1 s)
        for t in threading.enumerate():
            if t.name.startswith("violin"):
                t.join(10)
        alive = [t.name for t in threading.enumerate() if t.name.startswith("violin") and t.is_alive()]
        print("INTERRUPTED " + json.dumps({"took": took, "alive": alive}), flush=True)
    else:
        print("RETURNED", flush=True)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_returns_within_seconds_and_leaves_no_generation_thread(tmp_path):
    from test_interrupt import HangingServer, Output, _default_signals  # tests/e2e/test_interrupt.py

    server = HangingServer()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    here = str(Path(pytest_violin.__file__).resolve().parents[1])  # the package this test run imports
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, str(script), str(server.port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, preexec_fn=_default_signals,
                            start_new_session=True)
    try:
        out = Output(proc)
        assert server.wait_for_requests(3, 120), out.text()  # every generation thread is in a socket read
        os.kill(proc.pid, signal.SIGINT)
        assert out.wait_for("INTERRUPTED", 60), out.text()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        server.close()
    line = next(line for line in out.text().splitlines() if line.startswith("INTERRUPTED"))
    report = json.loads(line.split(" ", 1)[1])
    assert report["alive"] == []
    assert report["took"] < 5.0  # bounded by the run's grace (4 s), not by the machine
