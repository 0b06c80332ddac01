"""The console-script entry point (``scanner.cli.main``) ends a command without Python's teardown, and loses
nothing by it: the exit code, every byte of output, the exit handlers, a thread still at work, a closed database."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from scanner.rules import RULES

ROOT = Path(__file__).resolve().parents[2]

# Runs ``fathom ARGS`` through ``main()`` with an exit handler that prints (to a pipe: buffered, so it reaches the
# reader only if the output is flushed after it ran); with ``--busy`` a thread starts a piece of work as the command
# ends.
SCRIPT = """
import atexit, sys, threading, time

atexit.register(print, "exit handler ran")
args = sys.argv[1:]
if args[0] == "--busy":
    args = args[1:]
    ended = threading.Event()

    def work():
        ended.wait()
        time.sleep(0.2)
        sys.stderr.write("thread done\\n")

    threading.Thread(target=work).start()
    import scanner.cli

    leave = scanner.cli.leave

    def leave_when_ended(code):
        ended.set()
        leave(code)

    scanner.cli.leave = leave_when_ended
sys.argv = ["fathom", *args]
from scanner.cli import main
main()
"""
HANDLER = "exit handler ran\n"


def fathom(*args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}  # output buffered
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )


def test_a_command_keeps_its_output_and_its_exit_handlers() -> None:
    done = fathom("rules", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(HANDLER)  # the handler ran, and what it printed was flushed
    assert len(json.loads(done.stdout.removesuffix(HANDLER))) == len(RULES)


def test_a_failing_command_ends_with_its_documented_exit_code() -> None:
    usage = fathom("no-such-command")
    assert usage.returncode == 2
    assert "no such command 'no-such-command'" in usage.stderr
    assert usage.stdout == HANDLER
    spawn = fathom("check", "/nonexistent/server")
    assert spawn.returncode == 3, spawn.stderr
    assert "spawn_error" in spawn.stderr


def test_a_thread_still_at_work_is_waited_for() -> None:
    done = fathom("--busy", "rules", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "thread done\n"  # not cut off: Python ended as usual, waiting for the thread
    assert done.stdout.endswith(HANDLER)


def test_a_scan_leaves_its_database_closed(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on: the server's outcome is connect_error
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    listing = tmp_path / "servers.json"
    listing.write_text(json.dumps({"servers": [{"name": "gone", "url": f"http://127.0.0.1:{port}/mcp"}]}))
    database = tmp_path / "fathom.db"
    done = fathom("scan", str(listing), "--db", str(database), "--allow-private", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.removesuffix(HANDLER))["counts"] == {"connect_error": 1}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fathom.db", "servers.json"]  # no -wal, no -shm
    servers = fathom("servers", "--db", str(database), "--format", "json")
    assert servers.returncode == 0, servers.stderr
    rows = json.loads(servers.stdout.removesuffix(HANDLER))
    assert [(row["server"], row["last_outcome"]) for row in rows] == [("gone", "connect_error")]
