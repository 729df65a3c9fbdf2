"""The pytest plugin: the top layer of the package, wiring everything below it to pytest.

Public: :mod:`.plugin` (the ``pytest11`` entry point ``violin =
pytest_violin.pytest_plugin.plugin``: options, marker, fixtures) and :mod:`.hookspecs` (the
hooks other plugins implement). The modules whose names start with ``_`` are internal: the
run's :class:`~._session.ViolinSession` and its parts. Nothing below imports this package.
"""
