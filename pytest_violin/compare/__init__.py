"""Compare runs side by side, and with the paper's published tables.

``model`` holds the shared data types (a loaded run, a published row, the comparison). ``runs`` loads a RUN (a
report folder or ``results.json``, a baseline file, or a ``dir:`` folder of saved images plus a suite, scored
on the fly); ``paper`` the published rows; ``table`` builds the paper-layout comparison and the pairwise
paired-bootstrap statements, ``modes`` the failure modes per task and run; ``formats`` renders it all
(terminal, Markdown, LaTeX, CSV) through one table renderer (:mod:`pytest_violin.report.tables`); ``html`` the
self-contained page with the gallery (jinja2 templates). ``python -m pytest_violin compare`` and
``--violin-compare`` use them.
"""
