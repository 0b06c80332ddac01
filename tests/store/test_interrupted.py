"""A crawl killed mid-way: every finished server is kept, the run is marked interrupted, and resume scans the rest."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from scanner.errors import InputError
from scanner.store import open_store
from tests.store.conftest import entry, local_measure, ok, tool

NAMES = [f"io.example/server-{i:02d}" for i in range(10)]
ROOT = Path(__file__).resolve().parents[2]

# Written to a file and run as its own process, so the kill is a real SIGKILL with no cleanup at all.
KILLED_CRAWL = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from scanner.store import open_store
    from tests.store.conftest import entry, local_measure, ok, tool

    store = open_store({url!r})
    run_id = store.start_run("list.txt", "1", {{"concurrency": 4}})
    for i, name in enumerate({names!r}):
        if i == 6:
            os.kill(os.getpid(), signal.SIGKILL)
        store.record_scan(run_id, entry(name), ok([tool("t" + str(i), "A tool with a number " + str(i))]),
                          local_measure)
    """
)


def test_killed_run_is_consistent_marked_interrupted_and_resumable(tmp_path: Path) -> None:
    db = tmp_path / "fathom.db"
    url = f"sqlite:///{db}"
    script = tmp_path / "crawl.py"
    script.write_text(KILLED_CRAWL.format(root=str(ROOT), url=url, names=NAMES), encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == -signal.SIGKILL, result.stderr

    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []

    store = open_store(url)
    (run,) = store.runs()
    assert run.status == "running" and run.servers_scanned == 6
    assert store.scanned_server_names(run.id) == set(NAMES[:6])
    # Every kept server is whole: its scan, toolset, tokens and finding events.
    assert all(row.tools_count == 1 and row.tokens for row in store.servers())

    assert store.mark_stale_runs_interrupted(older_than=timedelta(hours=1)) == []  # still fresh
    assert store.mark_stale_runs_interrupted() == [run.id]
    assert [r.id for r in store.interrupted_runs()] == [run.id]
    assert store.resumable_run("list.txt") == run.id
    assert store.resumable_run("another-source") is None
    (partial,) = store.trends(include_interrupted=True)
    assert partial.status == "interrupted" and partial.servers_scanned == 6
    assert store.trends() == []  # trend charts use finished runs only

    done = store.resume_run(run.id)
    assert store.runs()[0].status == "running"
    for i, name in enumerate(NAMES):
        if name not in done:
            store.record_scan(run.id, entry(name), ok([tool(f"t{i}", f"A tool with a number {i}")]), local_measure)
    store.finish_run(run.id)

    (finished,) = store.runs()
    assert finished.status == "finished" and finished.servers_scanned == 10 and finished.servers_ok == 10
    assert {row.server for row in store.leaderboard(run.id)} == set(NAMES)
    assert store.interrupted_runs() == []
    store.close()


def test_finished_run_cannot_be_resumed(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'f.db'}")
    run = store.start_run("list.txt", "1", {})
    store.finish_run(run)
    with pytest.raises(InputError, match="is finished"):
        store.resume_run(run)
    assert store.runs()[0].status == "finished"
    store.close()
