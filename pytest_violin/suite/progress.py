"""A dependency-free text progress bar for stderr."""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressBar"]


class ProgressBar:
    """``label [#######.......] 123/7745  1.6%  12.3/s`` on one line of ``stream`` (default stderr).

    On a terminal the line is redrawn at most 10 times a second; when the
    stream is not a terminal (CI logs) one line is written per 10 %. ``width``
    is the bar's width in characters.
    """

    def __init__(self, total: int, stream=None, label: str = "", width: int = 30):
        self.total = max(0, int(total))
        self.stream = sys.stderr if stream is None else stream
        self.label = label
        self.width = width
        self.done = 0
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._last_decile = -1
        try:
            self._tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self._tty = False

    def _line(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        rate = self.done / elapsed
        bar = "#" * filled + "." * (self.width - filled)
        prefix = f"{self.label} " if self.label else ""
        return f"{prefix}[{bar}] {self.done}/{self.total} {frac * 100:5.1f}% {rate:7.1f}/s"

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` steps and redraw if it is time to."""
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        now = time.perf_counter()
        if self._tty:
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self.stream.write("\r" + self._line())
                self.stream.flush()
                self._last_draw = now
        else:
            decile = int(10 * self.done / self.total) if self.total else 10
            if decile != self._last_decile:
                self._last_decile = decile
                self.stream.write(self._line() + "\n")
                self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self._tty:
            self.stream.write("\r" + self._line() + "\n")
        elif self._last_decile != 10 and self.total:
            self.stream.write(self._line() + "\n")
        self.stream.flush()
