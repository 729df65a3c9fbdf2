"""The built-in suites, one module per suite: ``violin``, ``violin-absolute``,
``violin-extra`` and ``violin-probes`` (each has ``NAME`` and ``build()``)."""
