"""The README's "Two commands", as a new user pastes them into one shell.

``.ci/run`` runs them from this file, so CI runs exactly what the README says,
and ``tests/meta/test_readme_commands.py`` checks them without installing anything.

Usage::

    python .ci/readme_commands.py            # the command blocks, one per line
    python .ci/readme_commands.py --script   # a bash script running them in order

Standard library only: it runs before the project is installed.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

__all__ = ["SECTION", "readme_commands", "paste_script"]

#: The README heading whose fenced ``bash`` blocks are the commands.
SECTION = "Two commands"

#: How many command blocks the section must hold.
EXPECTED_BLOCKS = 2

_FENCE = re.compile(r"^```bash[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


class ReadmeCommandsError(ValueError):
    """The README's command section is missing or malformed."""


def readme_commands(readme: str) -> list[str]:
    """Return the fenced ``bash`` blocks of the README's "Two commands" section.

    Parameters
    ----------
    readme : str
        The README's text (Markdown).

    Returns
    -------
    list of str
        The blocks' contents, in order, without trailing blank lines.

    Raises
    ------
    ReadmeCommandsError
        When the section is missing or does not hold exactly
        :data:`EXPECTED_BLOCKS` ``bash`` blocks.
    """
    match = re.search(rf"^## {re.escape(SECTION)}[ \t]*\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    if match is None:
        raise ReadmeCommandsError(f"README has no '## {SECTION}' section; accepted: a level-2 "
                                  f"heading '{SECTION}' followed by {EXPECTED_BLOCKS} ```bash blocks")
    blocks = [b.rstrip() for b in _FENCE.findall(match.group(1))]
    if len(blocks) != EXPECTED_BLOCKS or not all(blocks):
        raise ReadmeCommandsError(f"README section '{SECTION}' holds {len(blocks)} bash blocks; "
                                  f"accepted: exactly {EXPECTED_BLOCKS} non-empty ones")
    return blocks


def paste_script(blocks: list[str]) -> str:
    """A bash script that runs ``blocks`` one after the other in one shell.

    As if pasted into one interactive shell, except that it stops at the
    first block that fails, and fails when a block leaves the shell in
    another directory than the one it started in (the next block would
    then run in the wrong place).

    Parameters
    ----------
    blocks : list of str
        Command blocks, e.g. from :func:`readme_commands`.

    Returns
    -------
    str
        The script (run it with ``bash -c`` from the repository root).
    """
    lines = ["start=\"$PWD\""]
    for number, block in enumerate(blocks, 1):
        lines += [
            f"echo {shlex.quote(f'ci: README command {number}:')} {shlex.quote(block)}",
            "{",
            block,
            f"}} || {{ status=$?; echo \"ci: README command {number} failed (exit $status)\" >&2; "
            f"exit $status; }}",
            f"if [ \"$PWD\" != \"$start\" ]; then echo \"ci: README command {number} left the "
            f"shell in $PWD instead of $start\" >&2; exit 1; fi",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Print the README's commands, or with ``--script`` the script that runs them."""
    readme = Path(__file__).resolve().parents[1] / "README.md"
    try:
        blocks = readme_commands(readme.read_text(encoding="utf-8"))
    except ReadmeCommandsError as exc:
        print(f"{readme}: {exc}", file=sys.stderr)
        return 2
    if argv[1:] == ["--script"]:
        sys.stdout.write(paste_script(blocks))
    else:
        sys.stdout.write("\n".join(blocks) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
