"""Interrupts of one pytest session: Ctrl-C, a second Ctrl-C, SIGTERM, xdist workers."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import suppress
from pathlib import Path

import pytest

__all__ = ["WATCH_INTERVAL", "SessionSignals", "drop_lineless_frames", "stop_reason"]

#: Seconds between two looks of a worker at its controller.
WATCH_INTERVAL = 0.1
#: ``workerinput`` keys (set by the controller, read by its workers).
CONTROL_KEY, CONTROLLER_PID_KEY = "violin_control", "violin_controller_pid"
_FLAG = "interrupted"
_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


def stop_reason(session) -> str:
    """What stopped an interrupted session: -x / --maxfail, a signal, the plugin's own stop, or Ctrl-C."""
    reason = (session.shouldstop or session.shouldfail) if session is not None else None
    return str(reason or "interrupted (Ctrl-C)")


class SessionSignals:
    """The interrupt handling of one config (see the module docstring)."""

    def __init__(self, config, state):
        self.config = config
        self.state = state
        self.session = None
        self.count = 0                       # interrupts seen by this session
        self.worker = hasattr(config, "workerinput")
        self._previous: dict = {}            # signum -> handler before ours
        self._ignore_external = False        # SIGINT was ignored in this worker
        self._forwarding = False             # the watcher is interrupting its worker
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self.control: Path | None = None     # controller: the folder its workers watch
        self._owns_control = False
        self._pidfile: Path | None = None    # worker: its worker-PID file in the control folder
        self._signalled = False              # the first interrupt was a signal to this process
        self._finished = False               # unconfigure ran

    # -- called by the session's hooks (this config's only) -----------------
    def keyboard_interrupt(self, excinfo) -> None:
        # pytest calls this on the config whose session was interrupted: a KeyboardInterrupt that did not come
        # through our handler (raised by a test, an inner pytester session, a handler of someone else) counts as the
        # first interrupt too
        session = self.session
        if (type(excinfo.value) is not KeyboardInterrupt and str(excinfo.value) and session is not None
                and not session.shouldstop and not self._signalled):
            # not Ctrl-C: pytest-xdist's controller ends -x / --maxfail with a KeyboardInterrupt
            # subclass saying "stopping after N failures" (its session's shouldstop stays empty),
            # pytest.exit with its message: the reports say that, as without -n
            from ..report.text import printable
            session.shouldstop = printable(str(excinfo.value))[:300]
        self._interrupted(signal.SIGINT if self.count == 0 else None)
        drop_lineless_frames(getattr(excinfo, "tb", None))

    def worker_input(self) -> dict:  # xdist controller, per worker
        if self.control is None:
            return {}
        return {CONTROL_KEY: str(self.control), CONTROLLER_PID_KEY: os.getpid()}

    def node_down(self, node, error) -> None:  # xdist controller, per worker that ended
        # a worker interrupted alone (``kill -INT`` of its pid): xdist waits for the other
        # workers' tests, whose requests in flight could run to their time-out, and starts a
        # replacement worker; the run is interrupted as by a Ctrl-C of the controller instead
        output = getattr(node, "workeroutput", None) or {}
        interrupted = error == "keyboard-interrupt" or output.get("exitstatus") == int(pytest.ExitCode.INTERRUPTED)
        if interrupted and self.control is not None and self.count == 0:
            self._interrupted(signal.SIGINT)
            # in the controller's main thread (xdist's loop): pytest ends the session as interrupted
            name = getattr(getattr(node, "gateway", None), "id", None) or "?"
            raise KeyboardInterrupt(f"xdist worker {name} was interrupted")

    def unconfigure(self) -> None:
        self.close()
        if self.worker and self.count and self._watcher is not None:
            # an interrupted worker has sent what it had (workerfinished, in its sessionfinish): nothing is left for
            # it to do, and its controller waits for the process to end; skip the interpreter's finalization
            _say("", flush_only=True)
            os._exit(int(pytest.ExitCode.INTERRUPTED))

    # -- setup ------------------------------------------------------------
    def start(self) -> None:
        """Install the handlers (main thread only) and, under xdist, the control folder or watcher."""
        if self.state.is_xdist_controller:
            self.control = Path(tempfile.mkdtemp(prefix="violin-control-"))
            self._owns_control = True
            # also when a hook fails before ours (a usage error raised in the controller)
            self.config.add_cleanup(lambda: shutil.rmtree(self.control, ignore_errors=True))
        elif self.worker:
            self._start_watcher()
        if threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGINT)
        ours = getattr(current, "__self__", None)
        if current is signal.default_int_handler or isinstance(ours, SessionSignals):
            self._install(signal.SIGINT)
        elif self.worker and current == signal.SIG_IGN:
            # the controller was started ignoring SIGINT: its workers ignore a
            # terminal's SIGINT too, and still obey their controller
            self._ignore_external = True
            self._install(signal.SIGINT)
        current = signal.getsignal(signal.SIGTERM)
        if current == signal.SIG_DFL or isinstance(getattr(current, "__self__", None), SessionSignals):
            self._install(signal.SIGTERM)

    def _install(self, signum) -> None:
        with suppress(ValueError, OSError):  # not the main thread of the main interpreter
            self._previous[signum] = signal.signal(signum, self._handle)

    def close(self) -> None:
        """Restore the handlers this session replaced; stop the watcher; remove the control folder."""
        self._stop.set()
        self._finished = True
        nested = any(isinstance(getattr(p, "__self__", None), SessionSignals) for p in self._previous.values())
        if self._signalled and not nested:
            self._previous.clear()
            # at the interpreter's exit Python puts SIG_DFL back: a signal then
            # would kill the process (exit -2) although its exit status is set
            atexit.register(_ignore_late_signals)
        for signum, previous in self._previous.items():
            with suppress(ValueError, OSError):
                if getattr(signal.getsignal(signum), "__self__", None) is self:
                    signal.signal(signum, previous)
        self._previous.clear()
        if self._pidfile is not None:
            with suppress(OSError):
                self._pidfile.unlink()
            self._pidfile = None
        if self._owns_control and self.control is not None:
            shutil.rmtree(self.control, ignore_errors=True)
            self._owns_control = False

    # -- interrupts -------------------------------------------------------
    def _handle(self, signum, frame):
        with self._lock:
            forwarded, self._forwarding = self._forwarding, False
        if self._ignore_external and not forwarded:
            return
        if self.count == 0:
            self._signalled = True
            self._interrupted(signum)
            raise KeyboardInterrupt(_NAMES.get(signum, f"signal {signum}"))
        if self.worker:
            return  # the controller ends its workers (or they see it gone)
        _say(f"violin: second interrupt ({_NAMES.get(signum, signum)}): exiting now"
             + ("" if self._finished else "; the reports of this run may be missing or incomplete"))
        self._kill_workers()
        os._exit(int(pytest.ExitCode.INTERRUPTED))

    def _kill_workers(self) -> None:
        """Controller: end the workers that announced themselves (``worker-PID`` files) at once."""
        if self.control is None:
            return
        try:
            names = [p.name for p in self.control.iterdir()]
        except OSError:
            return
        killed = []
        for name in names:
            if name.startswith("worker-") and name[7:].isdigit():
                with suppress(OSError):
                    os.kill(int(name[7:]), signal.SIGKILL)
                    killed.append(int(name[7:]))
        # SIGKILL is delivered asynchronously: reap them (they are our children), 0.5 s at most
        deadline = time.monotonic() + 0.5
        for pid in killed:
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        break
                except OSError:  # not (or no longer) our child
                    break
                time.sleep(0.002)
        if self._owns_control:
            shutil.rmtree(self.control, ignore_errors=True)

    def _interrupted(self, signum) -> None:
        """The first interrupt of this session: cancel its generations and tell its workers."""
        self.count += 1
        if self.count > 1:
            return
        self.state.cancel.set()
        session = self.session
        if session is not None and not session.shouldstop and signum is not None:
            with suppress(Exception):
                session.shouldstop = f"interrupted ({_NAMES.get(signum, f'signal {signum}')})"
        if signum == signal.SIGTERM:
            _say("violin: SIGTERM: stopping as after Ctrl-C (no new request; reports of what finished)")
        if self.control is not None:
            with suppress(OSError):
                (self.control / _FLAG).touch()

    # -- xdist worker -----------------------------------------------------
    def _start_watcher(self) -> None:
        info = getattr(self.config, "workerinput", {}) or {}
        control = info.get(CONTROL_KEY)
        controller = info.get(CONTROLLER_PID_KEY)
        if not control:
            return
        # watch the parent only where the controller is the parent (a popen worker)
        parent = controller if controller == os.getppid() else None
        if parent is not None:  # only a child of the controller may be killed by it
            try:
                self._pidfile = Path(control) / f"worker-{os.getpid()}"
                self._pidfile.touch()
            except OSError:
                self._pidfile = None
        self._watcher = threading.Thread(target=self._watch, args=(Path(control), parent),
                                         daemon=True, name="violin-controller-watch")
        self._watcher.start()

    def _watch(self, control: Path, parent) -> None:
        flag = control / _FLAG
        while not self._stop.wait(WATCH_INTERVAL):
            if parent is not None and os.getppid() != parent:
                _say(f"violin: worker {os.getpid()}: its controller (pid {parent}) is gone; exiting")
                shutil.rmtree(control, ignore_errors=True)  # what the controller could not remove
                os._exit(2)
            if self.count == 0 and flag.exists():
                self.state.cancel.set()
                with self._lock:
                    self._forwarding = True
                with suppress(OSError):
                    os.kill(os.getpid(), signal.SIGINT)  # our handler: the first interrupt
                self._stop.wait(1.0)  # once: the handler counts it


def _ignore_late_signals() -> None:
    """At exit after a signal: the run is over and its status set; later signals change nothing."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        with suppress(ValueError, OSError):
            signal.signal(signum, signal.SIG_IGN)


def drop_lineless_frames(tb) -> None:
    """Unlink the entries of traceback ``tb`` (after the first) that have no line number."""
    while tb is not None:
        nxt = tb.tb_next
        while nxt is not None and nxt.tb_lineno is None:
            nxt = nxt.tb_next
        try:
            tb.tb_next = nxt
        except (TypeError, ValueError):
            return
        tb = nxt


def _say(line: str, *, flush_only: bool = False) -> None:
    """Flush the output streams and write ``line`` to the process's stderr (never raises)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with suppress(Exception):
            stream.flush()
    if not flush_only:
        with suppress(Exception):
            sys.__stderr__.write(line + "\n")
            sys.__stderr__.flush()
