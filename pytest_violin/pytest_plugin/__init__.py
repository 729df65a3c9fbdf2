"""The pytest plugin: options, settings, run state, items, fixtures, the gate.

The top layer of the package: it wires everything below it to pytest
(``pytest11`` entry point ``violin = pytest_violin.pytest_plugin.plugin``).
Nothing below imports it.
"""
