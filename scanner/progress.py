"""A progress bar for long scans, on standard error, with counts by outcome.

Drawn in place on a terminal; when standard error is not a terminal (a nightly job's log) it prints nothing, so
logs stay small (``fathom scan`` prints its own one-line summary at the end). Only the crawl's single writer calls
it, so it needs no locking.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter
from typing import TextIO

from scanner.models import Outcome


class Progress:
    def __init__(self, total: int, *, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self._last_draw = 0.0

    def advance(self, outcome: Outcome) -> None:
        self.done += 1
        self.counts[outcome.value] += 1
        now = time.monotonic()
        if self.enabled and (now - self._last_draw > 0.1 or self.done == self.total):
            self._last_draw = now
            self._draw()

    def breakdown(self) -> str:
        ordered = sorted(self.counts.items(), key=lambda item: (item[0] != Outcome.OK.value, -item[1], item[0]))
        return " · ".join(f"{name} {count}" for name, count in ordered)

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns
        bar_width = 24
        filled = int(bar_width * self.done / self.total) if self.total else bar_width
        bar = "█" * filled + "░" * (bar_width - filled)
        line = f"{bar} {self.done}/{self.total}  {self.breakdown()}"
        self.stream.write("\r" + line[: width - 1].ljust(width - 1))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
