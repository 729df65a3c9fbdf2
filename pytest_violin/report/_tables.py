"""One table, four text formats: terminal columns, Markdown, LaTeX (booktabs) and CSV.

A :class:`Table` is a header, rows of cells and one alignment letter per column. Cells are plain text: each
renderer passes every text cell through the escape it is given (the format's one escape), except a
:class:`Raw` cell, markup its caller assembled from parts it escaped itself (a Markdown ``**all**``, a LaTeX
``\\textbf{0.050}``). Numbers that are not text (a CSV's floats and counts) are written as they are.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

__all__ = ["Raw", "Table", "csv_text", "latex_lines", "markdown_lines", "text_lines"]


class Raw(str):
    """A cell already in its output format: rendered without the format's escape."""

    __slots__ = ()


@dataclass(frozen=True)
class Table:
    """A header, rows of cells, and each column's alignment.

    Attributes
    ----------
    header : tuple
        The column titles.
    rows : tuple of tuple
        The cells, one tuple per row, as long as ``header``.
    align : str
        ``"l"`` or ``"r"`` per column (``"llrr"``).
    """

    header: tuple
    rows: tuple
    align: str

    @classmethod
    def make(cls, header, rows, *, left: int = 1) -> Table:
        """A table whose first ``left`` columns are left-aligned and the rest right-aligned."""
        header = tuple(header)
        return cls(header, tuple(tuple(r) for r in rows), "l" * left + "r" * (len(header) - left))


def _same(text: str) -> str:
    return text


def _cells(cells, esc) -> list:
    return [c if isinstance(c, Raw) else esc(c) if isinstance(c, str) else str(c) for c in cells]


def text_lines(table: Table, *, esc=_same, indent: str = "", rule: bool = False) -> list[str]:
    """Columns padded to their widest cell, two spaces apart (trailing spaces cut).

    ``rule`` puts a line of dashes under the header.
    """
    lines = [_cells(table.header, esc), *(_cells(r, esc) for r in table.rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(table.header))]

    def join(cells):
        return (indent + "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                                   for c, w, a in zip(cells, widths, table.align))).rstrip()

    out = [join(lines[0])]
    if rule:
        out.append(indent + "  ".join("-" * w for w in widths))
    return out + [join(cells) for cells in lines[1:]]


def markdown_lines(table: Table, *, esc) -> list[str]:
    """A GitHub-flavoured Markdown table (``---:`` under right-aligned columns)."""
    rule = "|" + "|".join("---" if a == "l" else "---:" for a in table.align) + "|"
    return ["| " + " | ".join(_cells(table.header, esc)) + " |", rule,
            *("| " + " | ".join(_cells(r, esc)) + " |" for r in table.rows)]


def latex_lines(table: Table, *, esc, caption: str, footer=(), midrule_before=()) -> list[str]:
    r"""A ``table`` float holding a booktabs ``tabular`` (needs ``\usepackage{booktabs}``).

    ``caption`` is LaTeX already (its caller escapes what came from outside);
    ``footer`` lines go under the tabular; a ``\midrule`` precedes each row
    index in ``midrule_before``.
    """
    out = [r"\begin{table}[t]", r"\centering", r"\small", r"\caption{" + caption + "}",
           r"\begin{tabular}{" + table.align + "}", r"\toprule",
           " & ".join(_cells(table.header, esc)) + r" \\", r"\midrule"]
    for i, row in enumerate(table.rows):
        if i in midrule_before:
            out.append(r"\midrule")
        out.append(" & ".join(_cells(row, esc)) + r" \\")
    return out + [r"\bottomrule", r"\end{tabular}", *footer, r"\end{table}"]


def csv_text(table: Table, *, esc) -> str:
    """CSV (``\\n`` line ends); text cells through ``esc``, numbers written as Python writes them."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c if isinstance(c, Raw) or not isinstance(c, str) else esc(c) for c in table.header])
    for row in table.rows:
        writer.writerow([c if isinstance(c, Raw) or not isinstance(c, str) else esc(c) for c in row])
    return buf.getvalue()
