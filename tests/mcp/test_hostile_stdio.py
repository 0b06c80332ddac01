"""Every stdio fault ends as the right outcome, in time, and leaves no process behind."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from scanner.mcp import ClientLimits
from scanner.mcp.transports import stdio_env
from scanner.models import Outcome
from tests.mcp.helpers import FAST, alive, names, recorded_pids, stdio_entry, timed_scan
from tests.servers.launch import hostile_stdio_command

pytestmark = pytest.mark.timeout(30)

# A hung stdio server costs the deadline plus up to 3 × shutdown_grace to stop.
BUDGET = FAST.timeout + 3 * FAST.shutdown_grace + 30.0  # generous: a loaded machine is slow, not wrong


def test_banner_lines_are_skipped():
    result, _ = timed_scan(stdio_entry(hostile_stdio_command("banner")))
    assert result.outcome is Outcome.OK, result.detail
    assert names(result) == ["one", "two"]
    assert (result.era, result.protocol_version, result.server_name) == ("legacy", "2025-03-26", "hostile-stdio")
    assert result.extra["skipped_stdout_lines"] == 3
    assert result.extra["skipped_stdout_samples"][0].startswith("Starting hostile server")


def test_exit_reports_code_and_stderr_tail():
    result, elapsed = timed_scan(stdio_entry(hostile_stdio_command("exit")))
    assert result.outcome is Outcome.EXITED, result.detail
    assert result.extra["exit_code"] == 3
    assert result.extra["stderr_tail"][-1] == "error: missing API_KEY"
    assert "missing API_KEY" in result.detail
    assert elapsed < BUDGET


def test_hang_times_out():
    result, elapsed = timed_scan(stdio_entry(hostile_stdio_command("hang")))
    assert result.outcome is Outcome.TIMEOUT
    assert FAST.timeout <= elapsed < BUDGET


def test_forking_server_that_ignores_sigterm_leaves_nothing_behind(tmp_path: Path):
    pid_file = tmp_path / "pids"
    result, elapsed = timed_scan(stdio_entry(hostile_stdio_command("fork-ignore-term", "--pid-file", str(pid_file))))
    assert result.outcome is Outcome.TIMEOUT
    assert elapsed < BUDGET
    parent, child = recorded_pids(pid_file)
    deadline = time.monotonic() + 30  # generous: a loaded machine is slow to reap
    while (alive(parent) or alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(parent) and not alive(child)


def test_huge_line_is_too_large():
    limits = ClientLimits(timeout=3.0, shutdown_grace=0.3, max_line_bytes=1024 * 1024)
    result, _ = timed_scan(stdio_entry(hostile_stdio_command("huge-line")), limits)
    assert result.outcome is Outcome.TOO_LARGE, result.detail
    assert result.extra["limit_bytes"] == 1024 * 1024


def test_a_big_answer_under_the_caps_arrives_whole():
    result, _ = timed_scan(stdio_entry(hostile_stdio_command("big-list")), ClientLimits(timeout=10, shutdown_grace=0.3))
    assert result.outcome is Outcome.OK, result.detail
    assert len(result.tools or ()) == 3000
    assert result.tools is not None and result.tools[-1]["name"] == "t2999"


def test_wrong_id_is_a_protocol_error():
    result, _ = timed_scan(stdio_entry(hostile_stdio_command("wrong-id")))
    assert result.outcome is Outcome.PROTOCOL_ERROR, result.detail
    assert "never sent" in result.detail


def test_a_flood_on_stderr_does_not_block_the_server():
    result, _ = timed_scan(stdio_entry(hostile_stdio_command("noisy-stderr")))
    assert result.outcome is Outcome.OK, result.detail


@pytest.mark.parametrize("command", [("/nonexistent/mcp-server",), ()])
def test_command_that_cannot_start_is_a_spawn_error(command):
    result, elapsed = timed_scan(stdio_entry(command))
    assert result.outcome is Outcome.SPAWN_ERROR
    assert elapsed < 30  # generous: a loaded machine is slow, not wrong


def test_exact_environment_replaces_the_inherited_one():
    entry = stdio_entry((sys.executable,), env={"FROM_ENTRY": "1"})
    assert stdio_env(entry, {"HOME": "/tmp/x"}) == {"HOME": "/tmp/x", "PYTHONHASHSEED": "0"}
    assert stdio_env(entry, {"PYTHONHASHSEED": "random"}) == {"PYTHONHASHSEED": "random"}  # the caller's wins
    merged = stdio_env(entry, None)
    assert merged["FROM_ENTRY"] == "1" and merged["PATH"] == os.environ["PATH"]


def test_exact_environment_reaches_the_server(tmp_path: Path):
    # A server that exits at once, printing its environment to stderr: the tail shows what it got.
    script = "import os, sys; sys.stderr.write(repr(sorted(os.environ)) + '\\n'); sys.exit(5)"
    entry = stdio_entry((sys.executable, "-c", script), env={"FROM_ENTRY": "1"})
    result, _ = timed_scan(entry, env={"ONLY_THIS": "x", "PATH": os.environ["PATH"]})
    assert result.outcome is Outcome.EXITED
    assert "ONLY_THIS" in result.extra["stderr_tail"][-1]
    assert "FROM_ENTRY" not in result.extra["stderr_tail"][-1]
