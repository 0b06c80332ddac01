"""A progress bar for long scans, on standard error, with counts by outcome.

Drawn in place on a terminal. When standard error is not a terminal (a nightly job's log), it writes a plain line
at most every ``interval`` seconds (done/total, elapsed time, outcomes so far), so a cron log shows the scan moving
without filling up: a scan shorter than ``interval`` writes nothing, and ``fathom scan`` prints its own one-line
summary at the end. Only the crawl's single writer calls it, so it needs no locking.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import TextIO

from scanner.models import Outcome

LOG_INTERVAL_S = 10.0


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class Progress:
    """Counts by outcome; a bar on a terminal (``enabled``), otherwise a log line every ``interval`` seconds."""

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        interval: float = LOG_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self._last_draw = 0.0
        self._last_line = self.started

    def advance(self, outcome: Outcome) -> None:
        self.done += 1
        self.counts[outcome.value] += 1
        now = self.clock()
        if self.enabled:
            if now - self._last_draw > 0.1 or self.done == self.total:
                self._last_draw = now
                self._draw()
        elif now - self._last_line >= self.interval:
            self._last_line = now
            self._log_line(now)

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

    def _log_line(self, now: float) -> None:
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        noun = "server" if self.total == 1 else "servers"
        line = f"fathom: {self.done}/{self.total} {noun}{share} in {_elapsed(now - self.started)}: {self.breakdown()}"
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
