"""The sequential gate in a pytest run: ``--violin-sequential`` (ini ``violin_sequential``)."""

from __future__ import annotations

import json
import shutil
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..gating.sequential import SequentialGate

__all__ = ["INPUT_KEY", "SequentialRun"]

#: ``workerinput`` key: the order, the ids outside the population, the decisions' folder.
INPUT_KEY = "violin_sequential"
#: The decisions file in that folder (written atomically by the controller).
STATE_FILE = "gate.json"
#: The decisions file is a few hundred bytes per decided group: anything larger is not ours.
STATE_MAX_BYTES = 1_000_000
#: Errors among the gate's samples after which it stops generating: more than this many and
#: more than this share of its population (an error keeps the run from green whatever comes next).
ERRORS_STOP, ERRORS_STOP_SHARE = 10, 0.02
#: After a worker crash, a sample the gate waits for is taken as stranded (handed out again only
#: at the end of the run) once this many later samples of its order have arrived: more than the
#: live workers hold at a time (about two each, one at a time in the gate's order).
STALL_SLACK = 16
#: The user property a skipped item carries when the call cap refused its generation.
BUDGET_PROPERTY = "violin.sequential_budget"


class SequentialRun:
    """The sequential gate of one process: a part of its :class:`~._session.ViolinSession`."""

    def __init__(self, config, state):
        self.config = config
        self.state = state
        self.gate_state = state.gate
        self.worker = hasattr(config, "workerinput")
        self.order: list | None = None
        self.outside: set = set()      # suite ids outside the population (they run last, ungated)
        self.members: dict = {}        # the population over the suite (controller)
        self.cached: set = set()
        self.gate: SequentialGate | None = None  # controller / one process
        self.total = 0                 # Violin samples in the run
        self.received = 0              # their results (each a generation made, or a cached image)
        self.errors = 0                # of which ended in an error (population samples)
        self.folder: Path | None = None
        self.decided_after: int | None = None
        self._seen: dict = {}          # the decisions as this worker read them
        self._told = ""
        self.judged: set = set()       # ids this process scored (a rerun of one is never skipped)
        self.crashes = 0               # xdist workers that crashed running a sample of this run
        if self.worker:
            info = config.workerinput.get(INPUT_KEY) or {}
            self.order = [str(x) for x in info.get("order") or ()]
            self.outside = {str(x) for x in info.get("outside") or ()}
            self.folder = Path(info["dir"]) if info.get("dir") else None

    # -- the order (controller / one process) -------------------------------
    def ensure_order(self) -> list:
        if self.order is not None:
            return self.order
        from ..gating.records import sample_definition
        from ..gating.sequential import population, sequential_order
        from ._planning import cached_repeats
        samples = list(self.state.samples or ())
        baseline = self.gate_state.baseline_doc or {}
        self.members = population(baseline, ((s.id, s.task, getattr(s, "variation", None),
                                              sample_definition(s))
                                             for s in samples))
        repeats = int(self.state.settings.repeats)
        inside = [s for s in samples if s.id in self.members]
        self.cached = {sid for sid, n in cached_repeats(self.state, inside).items() if n >= repeats}
        # strata are the tasks: within a task the order must be one uniform random permutation
        # (the confidence sequence's premise: each next sample is equally likely any remaining
        # one), so a variation's samples, a part of it, come in random order too
        groups = {sid: m.task for sid, m in self.members.items()}
        self.order = sequential_order([s.id for s in samples], groups, seed=int(self.state.settings.seed),
                                      cached=self.cached)
        self.outside = {s.id for s in samples} - set(self.members)
        return self.order

    def start(self, run_ids) -> None:
        """Build the gate over the samples this run holds (after -k, --deselect, a path)."""
        from ..gating.sequential import SequentialGate
        self.ensure_order()
        run_ids = [str(x) for x in run_ids]
        self.total = len(run_ids)
        inside = set(run_ids) & set(self.members)
        settings = self.gate_state.settings
        self.gate = SequentialGate({k: self.members[k] for k in inside}, self.order,
                                   cached=self.cached & inside, margin=float(settings.max_regression),
                                   max_pass_drop=float(settings.max_pass_drop), alpha=float(settings.alpha),
                                   max_refusal_rise=float(settings.max_refusal_rise))
        self._publish()

    # -- what a sample may do (any process) -----------------------------------
    def admit(self, sample_id: str) -> bool:
        return skip_text(self, str(sample_id)) is None

    def add(self, record: dict) -> None:
        if self.gate is None or not isinstance(record, dict):
            return
        from ..results import Outcome, sample_value
        self.received += 1
        outcome = Outcome(record.get("outcome") or Outcome.FAILED)
        value = sample_value(record.get("metrics") or {}) if outcome.judged else None
        sid = str(record.get("id") or record.get("sample_id"))
        if value is None and sid in self.gate.members and self.gate.finished is None:
            self.errors += 1
            if self.errors > max(ERRORS_STOP, ERRORS_STOP_SHARE * len(self.gate.members)):
                # an error keeps the gate from green whatever comes next: stop paying
                self.gate.stop(f"{self.errors} samples ended in an error (no answer, a time-out, a "
                               f"setup fault): the gate stops, an error keeps it from green; fix the "
                               f"cause and run again (the images made are cached)")
        self.gate.add(sid, value, outcome)
        self._publish()

    def lost(self, sample_id: str) -> None:
        """A sample the gate still needed ended without a result (a team's own skip, a setup
        failure outside the plugin, a crashed xdist worker): it leaves the population as an error
        does; else its group's stream would wait for it for ever and never decide."""
        gate = self.gate
        if gate is None or sample_id not in gate.members or skip_text(self, sample_id) is not None:
            return  # not the gate's, or skipped by the gate itself (decided, budget)
        gate.add(sample_id, None)
        self._publish()

    def crashed(self, sample_id: str, report) -> bool:
        """An xdist worker crashed running ``sample_id`` (pytest-xdist reports it with ``when="???"``)."""
        state = self.state
        index = state.index.get(sample_id) if state is not None else None
        if index is None or not state.samples or sample_id in self.judged:
            return False  # not ours, or its result came before the crash (in its teardown)
        from ..report.text import printable
        from ..results import error_result
        why = printable(str(getattr(report, "longrepr", "") or "the xdist worker crashed"))[:300]
        result = error_result(state.samples[index], None, state.settings, index=index, reason=why)
        report.violin_result = result.to_json()
        # the results store (and this gate) take a sample's record from its setup or call report
        report.when = "call"
        return True

    def defer(self) -> None:
        """After a worker crashed: let no stream wait for a sample stranded at the end of xdist's queue."""
        if self.gate is not None and self.gate.defer_stalled(STALL_SLACK):
            self._publish()

    def summary(self, *, price=None) -> dict:
        """The gate's summary for the reports and the baseline (``to_dict``)."""
        if self.gate.finished is None and self.gate_state.interrupted:
            # -x, --maxfail, Ctrl-C, a dead endpoint: undecided, and the summary says why
            from ._signals import stop_reason
            why = stop_reason(self.state.signals.session)
            self.gate.stop(why if why.startswith("interrupted") else f"the run was interrupted ({why})")
        if self.gate.finished is None:  # every sample ran or was left out, and a group is undecided
            self.gate.stop(f"the run ended before the gate decided {', '.join(self.gate.undecided) or 'every group'} "
                           f"(samples ended in errors or were left out)")
        repeats = int(self.state.settings.repeats)
        out = self.gate.to_dict(total=self.total, generated=self.received, price=price, repeats=repeats)
        out["not_in_baseline"] = self.total - len(self.gate.members)  # run as ordinary tests
        usage = self.state.usage
        if "generations_saved" in out:
            # a sample skipped after some of its images were paid for (the cap refused its next
            # repeat) has no result, but its calls were made: never count them as saved
            counted = usage.snapshot()
            made = int(counted.get("calls", 0) or 0) + int(counted.get("cache_hits", 0) or 0)
            honest = max(0, self.total * repeats - made)
            if honest < out["generations_saved"]:
                out["generations_saved"] = honest
                if "usd_saved" in out:
                    out["usd_saved"] = round(honest * float(price), 2)
        return out

    def spent(self, reason: str) -> None:
        """The call cap refused a generation: the gate ends undecided."""
        if self.gate is not None:
            self.gate.stop(f"budget spent: {reason}")
            self._publish()

    # -- called by the session's hooks --------------------------------------
    def sort(self, items) -> None:
        """Put the built-in items in the gate's order (after every other plugin's order)."""
        rank = {sid: i for i, sid in enumerate(self.ensure_order())}
        from ._items import is_violin
        slots = [i for i, item in enumerate(items) if is_violin(item)]
        violin = sorted((items[i] for i in slots), key=lambda item: rank.get(item.violin_sample.id, len(rank)))
        for i, item in zip(slots, violin):
            items[i] = item

    def worker_input(self) -> dict:
        """xdist controller, per worker: the order, the ids outside the population, the decisions' folder."""
        if self.folder is None:
            self.folder = folder = Path(tempfile.mkdtemp(prefix="violin-gate-"))
            self.config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        return {INPUT_KEY: {"order": self.ensure_order(), "outside": sorted(self.outside),
                            "dir": str(self.folder)}}

    def logreport(self, report) -> None:
        """Feed a report to the gate (the process that receives every report)."""
        nodeid = str(getattr(report, "nodeid", ""))
        ours = nodeid.startswith("violin::")
        sample_id = nodeid[len("violin::"):]
        phase = report.when in ("setup", "call", "teardown")
        crashed = (not self.worker and not phase and ours and not getattr(report, "violin_result", None)
                   and self.crashed(sample_id, report))  # before the store reads it
        text = getattr(report, "violin_result", None)
        if text and ours:
            self.judged.add(sample_id)
        if self.worker:
            return
        if text and report.when in ("setup", "call"):
            try:
                record = json.loads(text)
            except ValueError:  # only the JSON: an error of the gate itself is no reason to go on silently
                record = None
            self.add(record)
            self.crashes += bool(crashed)
            if self.crashes:
                self.defer()
        if report.when == "setup" and self.state.is_xdist_controller:
            for name, value in getattr(report, "user_properties", ()) or ():
                if name == BUDGET_PROPERTY:
                    self.spent(str(value))
        if not text and ours and ((report.when == "setup" and not report.passed) or not phase):
            self.lost(sample_id)  # skipped or failed outside the gate, a crashed worker

    def finish(self, session) -> None:
        """A gate that compared nothing is a usage error (exit 4), not a green run of skips."""
        gate = self.gate
        if self.worker or gate is None or not self.total or (gate.groups and self.received):
            return
        if self.gate_state.interrupted or session.exitstatus != 0 or session.config.option.collectonly:
            return
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if not gate.groups:
            why = (f"none of the {self.total} samples of this run is in the baseline (same id and "
                   f"definition, no error there)")
        else:
            why = f"no sample of this run was generated ({gate.finished or 'none ran'})"
        self.gate_state.messages.append(f"sequential gate: {why}: nothing was compared; the session "
                                        f"fails as a usage error")

    def skip_reason(self, sample) -> str | None:
        """For :class:`~._items.ViolinItem`: why the gate does not need ``sample`` (then skip it), or None."""
        if str(sample.id) in self.judged:
            return None  # a rerun (pytest-rerunfailures) of a sample scored here: judged again, not hidden as a skip
        return skip_text(self, str(sample.id))

    def spend(self, item, reason) -> None:
        """The call cap refused ``item``'s generation: end the gate undecided."""
        text = str(reason or "the call limit is reached")
        item.user_properties.append((BUDGET_PROPERTY, text))
        if not self.worker:
            self.spent(text)

    def one_by_one(self) -> None:
        """Under ``--dist load``, hand the samples to the workers one at a time, in the gate's order."""
        option = self.config.option
        if getattr(option, "dist", "load") == "load" and getattr(option, "maxschedchunk", 0) is None:
            option.maxschedchunk = 1

    def _publish(self) -> None:
        gate = self.gate
        if gate is None:
            return
        if gate.finished is not None and self.decided_after is None:
            self.decided_after = gate.used
        done = [[task, variation] for task, variation in gate.done()]
        told = json.dumps({"finished": gate.finished, "done": done, "used": gate.used,
                           "decided_after": self.decided_after, "total": self.total}, sort_keys=True)
        if told == self._told:
            return
        self._told = told
        if self.folder is not None and not self._write_decisions(told):
            return  # the gate was ended undecided: published again below
        runner = self.state.runner
        if runner is not None and hasattr(runner, "drop_unadmitted"):
            runner.drop_unadmitted()  # queued prefetches the gate no longer needs

    def _write_decisions(self, text: str) -> bool:
        """Write the decisions file atomically; False (the gate ended undecided) when it cannot be."""
        from .._fs import atomic_write
        from ..report.text import printable
        try:
            if not self.folder.exists():  # removed under us (a tmp cleaner): made again, private
                self.folder.mkdir(mode=0o700)
            atomic_write(self.folder / STATE_FILE, text)
            return True
        except OSError as exc:
            if self.gate.finished is None:
                self.gate.stop(f"the decisions file for the xdist workers could not be written "
                               f"({printable(str(exc))[:300]}): the workers cannot be told to stop")
                self._publish()
            return False

    def worker_view(self) -> dict:
        """The controller's decisions as this worker last read them (re-read at every look)."""
        if self.folder is None:
            return {}
        from .._fs import read_option_bytes
        from ..errors import ViolinError
        with suppress(ViolinError, ValueError):
            # a regular file only, opened without blocking (a FIFO put there would block the
            # worker for ever), its size bounded
            self._seen = json.loads(read_option_bytes(self.folder / STATE_FILE, what="decisions file",
                                                      limit=STATE_MAX_BYTES))
        return self._seen if isinstance(self._seen, dict) else {}


def _decided(used, total) -> str:
    return f"gate decided after {used} of {total} samples"


def skip_text(run: SequentialRun, sample_id: str) -> str | None:
    """Why ``sample_id`` is not needed, or None while it is."""
    # a sample outside the population (not in the baseline, redefined, an error there) is no part of the gate's
    # decision but is still a test of the run: it runs (last) and its limits judge it, as in the ordinary gate
    if sample_id in run.outside:
        return None
    if run.worker:
        view = run.worker_view()
        total = view.get("total") or "?"
        finished = view.get("finished")
        if finished:
            return f"{_decided(view.get('decided_after'), total)}: {finished}"
        state = run.state
        index = state.index.get(sample_id)
        sample = state.samples[index] if index is not None and state.samples else None
        if sample is not None:
            pair = [sample.task, getattr(sample, "variation", None)]
            if any(isinstance(p, list) and p == pair for p in view.get("done") or ()):
                return f"{_decided(view.get('used'), total)}: {_done_words(*pair)}"
        return None
    gate = run.gate
    if gate is None or sample_id not in gate.members:
        return None
    if gate.finished is not None:
        return f"{_decided(run.decided_after, run.total)}: {gate.finished}"
    if not gate.needed(sample_id):
        m = gate.members[sample_id]
        return f"{_decided(gate.used, run.total)}: {_done_words(m.task, m.variation)}"
    return None


def _done_words(task, variation) -> str:
    if variation is None:
        return f"task {task} is shown not to have regressed"
    return f"task {task} and its variation {variation} are shown not to have regressed"
