"""The slowest tests of a run, printed at its end so growth is seen.

tests/conftest.py loads this plugin for the project's own runs. Each test's
time is its setup, call and teardown together, summed from the reports the
terminal reporter sees: under xdist those are the controller's (the workers
forward every report), so one list covers the whole run. A worker prints
nothing. Nothing is printed for a run that ran no test.

``pytest --durations=N`` lists phases separately; this list answers "which
tests make the run long" in one place, every run, without an option.
"""

from __future__ import annotations

#: How many tests the list names.
SHOWN = 10

#: Section title, with the number shown (tests/meta/test_package.py looks for it).
TITLE = "slowest {} tests (setup + call + teardown)"


class SlowestTests:
    """Sums the phase durations per test and prints the slowest :data:`SHOWN` at the end."""

    def __init__(self, shown: int = SHOWN):
        self.shown = shown
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report):
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + float(report.duration)

    def slowest(self) -> list[tuple[float, str]]:
        """``(seconds, node id)`` of the slowest tests, slowest first (ties by node id)."""
        ranked = sorted(((s, n) for n, s in self.seconds.items()), key=lambda item: (-item[0], item[1]))
        return ranked[: self.shown]

    def pytest_terminal_summary(self, terminalreporter):
        rows = self.slowest()
        if not rows:
            return
        terminalreporter.write_sep("=", TITLE.format(len(rows)))
        for seconds, nodeid in rows:
            terminalreporter.write_line(f"{seconds:8.2f}s  {nodeid}")


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prints the list
        return
    config.pluginmanager.register(SlowestTests(), "violin-tests-slowest")
