"""Compare runs side by side, and with the paper's published tables (``python -m pytest_violin compare``,
``--violin-compare``): load a RUN, build the comparison, render it (terminal, Markdown, LaTeX, CSV, HTML).
"""
