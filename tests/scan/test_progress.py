"""The scan's progress: a bar on a terminal, a plain line every few seconds in a log (a cron job's output)."""

from __future__ import annotations

import io

from scanner.models import Outcome
from scanner.scan.progress import Progress


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
        "fathom: 10/120 servers (8%) in 0m10s · 1.0/s · about 1m50s left: ok 7 · timeout 3",
        "fathom: 20/120 servers (16%) in 0m20s · 1.0/s · about 1m40s left: ok 14 · timeout 6",
        "fathom: 30/120 servers (25%) in 0m30s · 1.0/s · about 1m30s left: ok 20 · timeout 10",
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


def test_the_log_line_comes_while_nothing_finishes_and_names_the_slowest_in_flight() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(None, stream=stream, enabled=False, interval=10.0, clock=clock)
    clock.now += 10
    progress.tick()  # the registry is still being read
    progress.set_total(4)
    for name in ("fast", "slow\x1b[31m", "slower"):
        clock.now += 1
        progress.begin(name)
    clock.now += 1
    progress.advance(Outcome.OK, "fast")
    clock.now += 30
    progress.tick()  # nothing finished for 30 s: the line still comes, naming who is slow, oldest first
    lines = stream.getvalue().splitlines()
    assert lines[0] == "fathom: reading the entries… 0m10s"
    assert lines[1] == (
        "fathom: 1/4 servers (25%) in 0m44s · 1.4/min · about 2m12s left: ok 1 · slowest: slow\\u001b[31m 32s, "
        "slower 31s"
    )
    progress.close()


def test_a_terminal_bar_is_drawn_before_the_first_result() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(None, stream=stream, enabled=True, interval=10.0, clock=clock)
    progress.set_total(2)
    progress.begin("only")
    clock.now += 3
    progress.tick()
    assert stream.getvalue().rstrip().endswith("0/2 servers (0%) in 0m03s · slowest: only 3s")
    progress.message("fathom: a warning")
    assert "\nfathom: a warning\n" in stream.getvalue().replace("\r", "\n")
    progress.close()


def test_the_spinner_says_what_it_waits_for_on_a_terminal_and_nothing_in_a_log() -> None:
    import time

    from scanner.scan.progress import spinner

    stream = io.StringIO()
    with spinner("waiting for npx -y pkg to list its tools", stream=stream, enabled=True):
        deadline = time.monotonic() + 30
        while "waiting for npx -y pkg to list its tools… 0s" not in stream.getvalue():
            assert time.monotonic() < deadline, stream.getvalue()
            time.sleep(0.05)
    assert stream.getvalue().endswith("\r")  # the line is wiped: the command's own output starts clean
    quiet = io.StringIO()
    with spinner("waiting", stream=quiet, enabled=False):
        pass
    assert quiet.getvalue() == ""


def test_counts_over_a_thousand_read_with_separators() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(20_000, stream=stream, enabled=False, interval=10.0, clock=clock)
    for _ in range(1_500):
        clock.now += 0.005
        progress.advance(Outcome.OK)
    assert progress.status(clock.now).startswith("1,500/20,000 servers (7%) in 0m07s")
    assert progress.status(clock.now).endswith(": ok 1,500")


def test_housekeeping_after_the_last_server_is_a_step_of_its_own() -> None:
    """Issue 36: 19-68 s of housekeeping after the last server showed the bar repeating "120/120 (100%)"."""
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(120, stream=stream, enabled=False, interval=10.0, clock=clock)
    for _ in range(120):
        clock.now += 0.5
        progress.advance(Outcome.OK)
    progress.phase("housekeeping: pruning the package cache and holding --cache-max-mb")
    clock.now += 25
    progress.tick()
    lines = stream.getvalue().splitlines()
    step = "fathom: housekeeping: pruning the package cache and holding --cache-max-mb…"
    assert lines[-2:] == [
        f"{step} 0m00s (after 120 servers in 1m00s)",
        f"{step} 0m25s (after 120 servers in 1m00s)",
    ]
    assert "120/120" not in "".join(lines[-2:])
    terminal = io.StringIO()
    bar = Progress(2, stream=terminal, enabled=True, clock=clock)
    bar.advance(Outcome.OK)
    bar.advance(Outcome.OK)
    bar.phase("housekeeping: pruning the package cache and holding --cache-max-mb")
    last = terminal.getvalue().rsplit("\r", 1)[-1]
    assert last.startswith("housekeeping: pruning the package cache") and "█" not in last
