"""The sequential gate in a pytest run: ``--violin-sequential`` (ini ``violin_sequential``).

The statistics are :mod:`pytest_violin.gating.sequential`; this module wires
them to pytest and pytest-xdist (public hooks only):

* the order: computed once from the suite, the baseline and the cache, by
  the one process or the xdist controller, before any sample runs. xdist
  workers receive it in ``workerinput`` and sort their items by it, so every
  worker collects the same order (as xdist requires) and the load scheduler
  hands the samples out in it;
* the decision: the process that receives every report (the one process, or
  the controller) feeds each sample's result to the gate;
* the stop: a sample the gate no longer needs is never prefetched and is
  skipped in setup ("gate decided after N of M samples"); under xdist the
  controller writes the decisions to a file in a private folder, which each
  worker reads (a small regular file) before each sample. Generations already in
  flight when the gate decides were paid for: they are scored as usual;
* the budget: under ``--violin-sequential`` the plan does not refuse a run
  over ``--violin-max-calls`` / ``--violin-max-cost``; the cap ends the gate
  *undecided* instead, and the samples left are skipped.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from .state import STATE_KEY

__all__ = ["INPUT_KEY", "SEQUENTIAL_KEY", "SequentialRun", "register", "skip_reason", "spend"]

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
    """The sequential gate of one process (``config.stash[SEQUENTIAL_KEY]``)."""

    def __init__(self, config, state, gate_state):
        self.config = config
        self.state = state
        self.gate_state = gate_state
        self.worker = hasattr(config, "workerinput")
        self.order: list | None = None
        self.outside: set = set()      # suite ids outside the population (they run last, ungated)
        self.members: dict = {}        # the population over the suite (controller)
        self.cached: set = set()
        self.gate = None               # gating.sequential.SequentialGate (controller / one process)
        self.total = 0                 # Violin samples in the run
        self.received = 0              # their results (each a generation made, or a cached image)
        self.errors = 0                # of which ended in an error (population samples)
        self.folder: Path | None = None
        self.decided_after: int | None = None
        self._mtime = None
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
        from ..gating.sequential import population, sequential_order
        from ..gating.records import sample_definition
        from .planning import cached_repeats

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
                                   max_pass_drop=float(settings.max_pass_drop), alpha=float(settings.alpha))
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
        """An xdist worker crashed running ``sample_id`` (pytest-xdist reports it with ``when="???"``).

        The sample is an error (an error record on the report: the results store, results.json
        and the gate count it); the samples the dead worker held are handed out again only after
        all the others, so the streams do not wait for them (:meth:`defer`)."""
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
        if self.gate.finished is None and getattr(self.gate_state, "interrupted", False):
            # -x, --maxfail, Ctrl-C, a dead endpoint: undecided, and the summary says why
            from .signals import stop_reason

            why = stop_reason(getattr(self.gate_state, "session", None))
            self.gate.stop(why if why.startswith("interrupted") else f"the run was interrupted ({why})")
        if self.gate.finished is None:  # every sample ran or was left out, and a group is undecided
            self.gate.stop(f"the run ended before the gate decided {', '.join(self.gate.undecided) or 'every group'} "
                           f"(samples ended in errors or were left out)")
        repeats = int(self.state.settings.repeats)
        out = self.gate.to_dict(total=self.total, generated=self.received, price=price, repeats=repeats)
        out["not_in_baseline"] = self.total - len(self.gate.members)  # run as ordinary tests
        usage = getattr(self.state, "usage", None)
        if usage is not None and "generations_saved" in out:
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
        """Write the decisions file atomically; False when it cannot be (a directory put in its
        place): the workers cannot be told to stop, so the gate ends undecided with a line saying
        why (the fixed-sample rule judges the run), never an INTERNALERROR."""
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
        """The controller's decisions as this worker last read them (re-read at every look).

        Not only when the file's mtime changed: with coarse file timestamps (a jiffy on Linux
        before 6.13) two decisions written within one tick have the same ``st_mtime_ns`` (and
        ``os.replace`` alternates between two inodes), and the write that ends the gate is the
        last one: a worker that kept the one before would generate the rest of the suite. The
        file is a few hundred bytes, read at most once per look.
        """
        if self.folder is None:
            return {}
        from .._fs import read_option_bytes
        from ..errors import ViolinError

        try:
            # a regular file only, opened without blocking (a FIFO put there would block the
            # worker for ever), its size bounded
            self._seen = json.loads(read_option_bytes(self.folder / STATE_FILE, what="decisions file",
                                                      limit=STATE_MAX_BYTES))
        except (ViolinError, ValueError):
            pass  # not written yet, being replaced, or not a decisions file: the last view stands
        return self._seen if isinstance(self._seen, dict) else {}


def _decided(used, total) -> str:
    return f"gate decided after {used} of {total} samples"


def skip_text(run: SequentialRun, sample_id: str) -> str | None:
    """Why ``sample_id`` is not needed, or None while it is."""
    # a sample outside the population (not in the baseline, redefined, an error there) is no
    # part of the gate's decision but is still a test of the run: it runs (last) and its limits
    # judge it, as in the ordinary gate
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


SEQUENTIAL_KEY = pytest.StashKey[SequentialRun]()


def get_run(config) -> SequentialRun | None:
    return config.stash.get(SEQUENTIAL_KEY, None)


def skip_reason(config, sample) -> str | None:
    """For :class:`~.items.ViolinItem`: why the gate does not need ``sample`` (then skip it), or None."""
    run = get_run(config)
    if run is None:
        return None
    if str(sample.id) in run.judged:
        return None  # a rerun (pytest-rerunfailures) of a sample scored here: judged again, not hidden as a skip
    return skip_text(run, str(sample.id))


def plan_note(limit, max_cost, config=None) -> str:
    """The plan line's words for a sequential run: what ends it early, what caps it."""
    caps = []
    if limit is not None:
        caps.append(f"{limit} calls")
    if max_cost is not None:
        caps.append(f"${max_cost:g}")
    budget = (f"; the budget ({' / '.join(caps)}) ends it undecided" if caps else "")
    dist = getattr(getattr(config, "option", None), "dist", "no")
    if dist == "load" and getattr(config.option, "maxschedchunk", None) == 1:
        budget += "; " + ONE_BY_ONE
    elif dist not in ("no", "load", None):
        budget += (f"; --dist {dist} hands the samples out in blocks: workers may answer samples the "
                   f"gate cannot use yet (--dist load is the one that keeps its order)")
    return (f"; sequential: samples in a seeded random order, no more generated once the gate "
            f"decides{budget}")


def spend(item, reason) -> bool:
    """The call cap refused ``item``'s generation: end the gate undecided; False without one.

    Under xdist the controller learns it from the item's skip report (a user property).
    """
    run = get_run(item.config)
    if run is None:
        return False
    text = str(reason or "the call limit is reached")
    item.user_properties.append((BUDGET_PROPERTY, text))
    if not run.worker:
        run.spent(text)
    return True


def _is_violin(item) -> bool:
    """A built-in ``violin::`` item (items.ViolinItem; the fixtures' tests are not ordered)."""
    return getattr(item, "violin_sample", None) is not None and item.nodeid.startswith("violin::")


class _Hooks:
    """The sequential gate's hooks (registered only with ``--violin-sequential``)."""

    def __init__(self, run: SequentialRun):
        self.run = run

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        order = self.run.ensure_order()
        rank = {sid: i for i, sid in enumerate(order)}
        slots = [i for i, item in enumerate(items) if _is_violin(item)]
        violin = sorted((items[i] for i in slots),
                        key=lambda item: rank.get(item.violin_sample.id, len(rank)))
        for i, item in zip(slots, violin):
            items[i] = item

    def pytest_collection_finish(self, session):
        if self.run.worker or self.run.state.is_xdist_controller:
            return
        self.run.start(item.violin_sample.id for item in session.items if _is_violin(item))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        nodeid = str(getattr(report, "nodeid", ""))
        if (not self.run.worker and report.when not in ("setup", "call", "teardown")
                and nodeid.startswith("violin::") and not getattr(report, "violin_result", None)):
            crashed = self.run.crashed(nodeid[len("violin::"):], report)  # before the store reads it
        else:
            crashed = False
        text = getattr(report, "violin_result", None)
        if text and nodeid.startswith("violin::"):
            self.run.judged.add(nodeid[len("violin::"):])
        if self.run.worker:
            return
        if text and report.when in ("setup", "call"):
            try:
                record = json.loads(text)
            except ValueError:  # only the JSON: an error of the gate itself is no reason to go on silently
                record = None
            self.run.add(record)
            self.run.crashes += bool(crashed)
            if self.run.crashes:
                self.run.defer()
        if self.run.worker is False and report.when == "setup" and self.run.state.is_xdist_controller:
            for name, value in getattr(report, "user_properties", ()) or ():
                if name == BUDGET_PROPERTY:
                    self.run.spent(str(value))
        if not text and nodeid.startswith("violin::") and (
                (report.when == "setup" and not report.passed) or report.when not in ("setup", "call", "teardown")):
            self.run.lost(nodeid[len("violin::"):])  # skipped or failed outside the gate, a crashed worker

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """A gate that compared nothing is a usage error (exit 4), as in the ordinary gate, not a
        green run of skips: a baseline that shares no sample with the run, or a budget spent
        before one sample's images were made (the ordinary plan refuses such a run up front)."""
        run = self.run
        gate = run.gate
        if run.worker or gate is None or not run.total or (gate.groups and run.received):
            return
        if (getattr(run.gate_state, "interrupted", False) or session.exitstatus != 0
                or getattr(session.config.option, "collectonly", False)):
            return
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if not gate.groups:
            why = (f"none of the {run.total} samples of this run is in the baseline (same id and "
                   f"definition, no error there)")
        else:
            why = f"no sample of this run was generated ({gate.finished or 'none ran'})"
        messages = getattr(run.gate_state, "messages", None)
        if isinstance(messages, list):
            messages.append(f"sequential gate: {why}: nothing was compared; the session fails as a "
                            f"usage error")


class _ControllerHooks:
    """pytest-xdist controller: hand the order to the workers, start the gate on their collection."""

    def __init__(self, run: SequentialRun):
        self.run = run
        self.started = False

    def pytest_configure_node(self, node):
        run = self.run
        if run.folder is None:
            run.folder = Path(tempfile.mkdtemp(prefix="violin-gate-"))
            folder = run.folder
            run.config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        node.workerinput[INPUT_KEY] = {"order": run.ensure_order(), "outside": sorted(run.outside),
                                       "dir": str(run.folder)}

    def pytest_xdist_node_collection_finished(self, node, ids):
        if self.started:
            return
        self.started = True
        self.run.start(i[len("violin::"):] for i in ids if i.startswith("violin::"))


def register(config, gate_state) -> None:
    """Set up the sequential gate of this process (``--violin-sequential`` given)."""
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.settings.model:
        raise pytest.UsageError("--violin-sequential decides on generated images; accepted: "
                                "--violin-model=SPEC beside it, or no --violin-sequential")
    run = SequentialRun(config, state, gate_state)
    config.stash[SEQUENTIAL_KEY] = run
    state.admit = run.admit
    config.pluginmanager.register(_Hooks(run), "violin-sequential")
    if state.is_xdist_controller:
        config.pluginmanager.register(_ControllerHooks(run), "violin-sequential-controller")
        _one_by_one(config)


#: Why a sequential run hands the samples out one at a time under ``-n`` (for the plan line).
ONE_BY_ONE = ("under -n the samples are handed to the workers one at a time (--maxschedchunk=1), "
              "so they run in the gate's order")


def _one_by_one(config) -> None:
    """Under ``--dist load``, hand the samples to the workers one at a time, in the gate's order.

    xdist's load scheduler first gives each worker a contiguous quarter of its share (968
    samples each of the full suite with two workers): the second worker would answer samples
    the gate can only use once the first has reached them, and under the default a run that
    decides after 1,238 samples made 1,852 generations; one at a time it made 1,223. The
    option is xdist's own (``--maxschedchunk``); a value the user gave is kept, and other
    ``--dist`` modes get a note in the plan line instead.
    """
    if getattr(config.option, "dist", "load") == "load" and getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 1
