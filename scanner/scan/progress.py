"""The progress of long work on standard error: a scan's bar with counts by outcome, and a spinner for one wait.

A scan's :class:`Progress` is drawn in place on a terminal from the first second (while the registry is still
being read it says so), and tells the elapsed time, the rate, an estimate of what is left and the slowest servers
in flight. When standard error is not a terminal (a nightly job's log), it writes a plain line saying the same at
most every ``interval`` seconds, so a cron log shows the scan moving without filling up: a scan shorter than
``interval`` writes nothing, and ``fathom scan`` prints its own one-line summary at the end.

Results arrive from the crawl's single writer and ``begin`` from the event loop; a small lock keeps the two and
the ticker thread (:meth:`Progress.start_ticking`, which redraws while nothing finishes) from interleaving.

Work after the last server (the package cache's housekeeping) is a step of its own (:meth:`Progress.phase`): the
display says what is being done and for how long, not a full bar that seems stuck.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from scanner.models import Outcome
from scanner.textsafe import clean

LOG_INTERVAL_S = 10.0
DRAW_INTERVAL_S = 0.5  # the terminal bar's redraw while nothing finishes (elapsed time, the slowest in flight)
SLOWEST_SHOWN = 3


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def _short(seconds: float) -> str:
    """``45s``, ``3m05s``, ``1h02m``: a duration in a status line."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Counts by outcome; a bar on a terminal (``enabled``), otherwise a log line every ``interval`` seconds.

    ``total`` may be None while the entries are still being read (:meth:`set_total` gives it later)."""

    def __init__(
        self,
        total: int | None,
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
        self.in_flight: dict[str, float] = {}
        self._first_result: float | None = None
        self._last_draw = 0.0
        self._last_line = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._phase: tuple[str, float] | None = None

    def set_total(self, total: int) -> None:
        """The number of servers to scan, once the entries are read."""
        with self._lock:
            self.total = total
            self._draw_or_log(force=self.enabled)

    def begin(self, name: str) -> None:
        """A server's scan started (it counts as in flight until :meth:`advance` names it)."""
        with self._lock:
            self.in_flight.setdefault(name, self.clock())

    def advance(self, outcome: Outcome, name: str | None = None) -> None:
        with self._lock:
            self.done += 1
            self.counts[outcome.value] += 1
            if name is not None:
                self.in_flight.pop(name, None)
            now = self.clock()
            if self._first_result is None:
                self._first_result = now
            self._draw_or_log(force=self.done == self.total)

    def phase(self, what: str) -> None:
        """The servers are done and ``what`` follows (``housekeeping: …``): shown from now on in place of the bar,
        with its own elapsed time; a log gets a line at once."""
        with self._lock:
            self._phase = (what, self.clock())
            if self.enabled:
                self._draw(self.clock())
            else:
                self._last_line = self.clock()
                self.stream.write("fathom: " + self.status() + "\n")
                self.stream.flush()

    def message(self, line: str) -> None:
        """Write ``line`` on a line of its own (a warning during the scan), clearing the bar first."""
        with self._lock:
            if self.enabled:
                width = shutil.get_terminal_size((100, 20)).columns
                self.stream.write("\r" + " " * (width - 1) + "\r")
            self.stream.write(line + "\n")
            self.stream.flush()

    def tick(self) -> None:
        """Redraw (a terminal) or write the periodic line when due (a log), also while nothing finishes."""
        with self._lock:
            self._draw_or_log(force=False)

    def _draw_or_log(self, *, force: bool) -> None:
        now = self.clock()
        if self.enabled:
            if force or now - self._last_draw >= 0.1:
                self._last_draw = now
                self._draw(now)
        elif now - self._last_line >= self.interval:
            self._last_line = now
            self.stream.write("fathom: " + self.status(now) + "\n")
            self.stream.flush()

    def breakdown(self) -> str:
        ordered = sorted(self.counts.items(), key=lambda item: (item[0] != Outcome.OK.value, -item[1], item[0]))
        return " · ".join(f"{name} {count:,}" for name, count in ordered)

    def status(self, now: float | None = None) -> str:
        """``30/120 servers (25%) in 0m30s · 1.0/s · about 1m30s left: ok 20 · timeout 10 · slowest: a 12s``."""
        now = self.clock() if now is None else now
        spent = now - self.started
        if self._phase is not None:
            what, since = self._phase
            noun = "server" if self.done == 1 else "servers"
            return f"{what}… {_elapsed(now - since)} (after {self.done:,} {noun} in {_elapsed(since - self.started)})"
        if self.total is None:
            return f"reading the entries… {_elapsed(spent)}"
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        noun = "server" if self.total == 1 else "servers"
        parts = [f"{self.done:,}/{self.total:,} {noun}{share} in {_elapsed(spent)}"]
        if self.done and self._first_result is not None:
            rate = self.done / max(spent, 1e-9)
            parts.append(f"{rate:.1f}/s" if rate >= 0.95 else f"{rate * 60:.1f}/min")
            left = self.total - self.done
            if left > 0:
                parts.append(f"about {_short(left / rate)} left")
        line = " · ".join(parts)
        if self.counts:
            line += f": {self.breakdown()}"
        slowest = sorted(self.in_flight.items(), key=lambda item: item[1])[:SLOWEST_SHOWN]
        if slowest:
            line += " · slowest: " + ", ".join(f"{clean(name)} {_short(now - began)}" for name, began in slowest)
        return line

    def _draw(self, now: float) -> None:
        width = shutil.get_terminal_size((100, 20)).columns
        if self._phase is not None:
            self.stream.write("\r" + self.status(now)[: width - 1].ljust(width - 1))
            self.stream.flush()
            return
        bar_width = 24
        total = self.total or 0
        filled = int(bar_width * self.done / total) if total else 0
        bar = "█" * filled + "░" * (bar_width - filled)
        line = f"{bar} {self.status(now)}"
        self.stream.write("\r" + line[: width - 1].ljust(width - 1))
        self.stream.flush()

    def start_ticking(self) -> None:
        """Redraw from a daemon thread every :data:`DRAW_INTERVAL_S` (a terminal) or check every second whether
        the periodic line is due (a log), until :meth:`close`."""
        period = DRAW_INTERVAL_S if self.enabled else min(1.0, self.interval)

        def run() -> None:
            while not self._stop.wait(period):
                self.tick()

        self._ticker = threading.Thread(target=run, name="fathom-progress", daemon=True)
        self._ticker.start()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        with self._lock:
            if self.enabled:
                self.stream.write("\n")
                self.stream.flush()


@contextmanager
def spinner(what: str, *, stream: TextIO | None = None, enabled: bool | None = None) -> Iterator[None]:
    """``⠋ connecting to npx -y pkg… 3s`` redrawn in place on a terminal while the block runs, wiped after it;
    nothing at all when standard error is not a terminal."""
    out = stream or sys.stderr
    if not (out.isatty() if enabled is None else enabled):
        yield
        return
    frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    stop = threading.Event()
    started = time.monotonic()
    width = shutil.get_terminal_size((100, 20)).columns

    def run() -> None:
        index = 0
        while True:
            line = f"{frames[index % len(frames)]} {what}… {_short(time.monotonic() - started)}"
            out.write("\r" + line[: width - 1])
            out.flush()
            index += 1
            if stop.wait(0.1):
                break

    thread = threading.Thread(target=run, name="fathom-spinner", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        out.write("\r" + " " * (width - 1) + "\r")
        out.flush()
