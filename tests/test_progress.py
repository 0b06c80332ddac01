"""The scan's progress: a bar on a terminal, a plain line every few seconds in a log (a cron job's output)."""

from __future__ import annotations

import io

from scanner.models import Outcome
from scanner.progress import Progress


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_line_every_interval_with_counts_so_far() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(120, stream=stream, enabled=False, interval=10.0, clock=clock)
    for second in range(1, 31):  # one server a second for 30 s
        clock.now += 1
        progress.advance(Outcome.OK if second % 3 else Outcome.TIMEOUT)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "fathom: 10/120 servers (8%) in 0m10s: ok 7 · timeout 3",
        "fathom: 20/120 servers (16%) in 0m20s: ok 14 · timeout 6",
        "fathom: 30/120 servers (25%) in 0m30s: ok 20 · timeout 10",
    ]
    progress.close()
    assert stream.getvalue().count("\n") == 3  # no bar, no stray newline in a log


def test_a_short_scan_writes_nothing_to_a_log() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(3, stream=stream, enabled=False, interval=10.0, clock=clock)
    for _ in range(3):
        clock.now += 0.5
        progress.advance(Outcome.OK)
    progress.close()
    assert stream.getvalue() == ""


def test_a_terminal_gets_the_bar_not_log_lines() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(2, stream=stream, enabled=True, interval=10.0, clock=clock)
    clock.now += 20
    progress.advance(Outcome.OK)
    clock.now += 20
    progress.advance(Outcome.CONNECT_ERROR)
    progress.close()
    text = stream.getvalue()
    assert "\r" in text and "2/2" in text and "fathom:" not in text
