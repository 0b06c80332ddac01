"""A ``fathom scan`` process stopped mid-crawl (SIGINT, SIGKILL), then finished with ``--resume``.

The registry has six quick servers on a demo host and five that hang (a loopback listener that accepts and never
answers, on ``localhost`` so the per-host limit does not make the quick ones wait behind them). The scan runs as
a real subprocess; once the quick servers are in the database it is stopped. Then the listener's port is taken
over by a demo host that answers, and ``--resume`` must finish the same run with only the five others.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scanner.demo.server import DemoHost, Site, synthetic_sites
from scanner.store import open_store
from tests.mcp.helpers import recorded_pids
from tests.servers.launch import hostile_stdio_command

pytestmark = pytest.mark.timeout(600)  # generous: a loaded machine is slow, not wrong
ROOT = Path(__file__).resolve().parents[2]
QUICK = [f"quick/{site.name}" for site in synthetic_sites(6)]
SLOW = [f"slow/h{number}" for number in range(5)]


class HangingListener:
    """Accepts connections on 127.0.0.1 and holds them open, never answering, until closed."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = int(self.sock.getsockname()[1])
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.held.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


def slow_sites() -> list[Site]:
    tools = [
        {
            "name": "wait_for_it",
            "description": "Return the current queue position of one ticket, waiting until it moves.",
            "inputSchema": {"type": "object", "properties": {"ticket": {"type": "string"}}, "required": ["ticket"]},
        }
    ]
    return [Site(name.split("/")[1], "1.0.0", tools) for name in SLOW]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The quick host, the hanging listener, and the list file naming all eleven servers."""
    with DemoHost(synthetic_sites(6, tools_per_server=2)) as quick:
        hanging = HangingListener()
        try:
            servers = [{"name": f"quick/{name.split('/')[1]}", "url": quick.url(name.split("/")[1])} for name in QUICK]
            servers += [{"name": name, "url": f"http://localhost:{hanging.port}/{name[5:]}/mcp"} for name in SLOW]
            registry = tmp_path / "servers.json"
            registry.write_text(json.dumps({"servers": servers}), encoding="utf-8")
            yield {"registry": registry, "db": tmp_path / "f.db", "hanging": hanging}
        finally:
            hanging.close()


def scan_command(registry: Path, db: Path, *extra: str) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "scanner",
        "scan",
        str(registry),
        "--db",
        str(db),
        "--allow-private",
        "--run-commands",
    ]
    # Deadlines far beyond every wait below: a stop that waited for them would be seen, on a loaded machine too.
    return [*command, "--timeout", "300", "--connect-timeout", "300", "--concurrency", "8", "--per-host", "8", *extra]


def start_scan(registry: Path, db: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        scan_command(registry, db, *extra),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def scanned_names(db: Path) -> set[str]:
    """What a reader sees while the scan runs (read-only; the file may not exist yet)."""
    if not db.exists():
        return set()
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as connection:
            rows = connection.execute("SELECT servers.name FROM scans JOIN servers ON servers.id = scans.server_id")
            return {name for (name,) in rows}
    except sqlite3.OperationalError:
        return set()  # tables not created yet


def wait_for_quick_results(process: subprocess.Popen[str], db: Path) -> None:
    deadline = time.monotonic() + 120
    while scanned_names(db) != set(QUICK):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"only {sorted(scanned_names(db))} after 120 s"
        time.sleep(0.1)


def assert_consistent(db: Path) -> None:
    """The file is whole and every scanned server is complete: scan, toolset, tokens per provider, per-tool rows."""
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
    store = open_store(f"sqlite:///{db}")
    try:
        for row in store.servers():
            assert row.last_outcome == "ok" and row.toolset_sha256, row
            assert set(row.tokens) == {"anthropic", "anthropic-v3", "openai", "gemini"}, row
            assert len(store.toolset_costs(row.toolset_sha256)) == row.tools_count, row
    finally:
        store.close()


def hint_command(err: str) -> list[str]:
    """The resume command the interruption message prints, as this test runs it (``fathom`` is this package)."""
    match = re.search(r"`fathom (scan [^`]*)` finishes the run", err)
    assert match, err
    return [sys.executable, "-m", "scanner", *shlex.split(match.group(1))]


def resume_and_check(setup: dict[str, Any], run_id: int, command: list[str] | None = None) -> None:
    """Replace the hanging listener by servers that answer, ``--resume``, and check only the rest were scanned.

    ``command`` is the resume command as printed; without it, the full scan command plus ``--resume``. Either way
    it runs from another directory, so a relative default database would not be found."""
    db: Path = setup["db"]
    store = open_store(f"sqlite:///{db}")
    before = {row.name: row.last_scanned_at for row in store.servers()}
    store.close()
    port = setup["hanging"].port
    setup["hanging"].close()
    with DemoHost(slow_sites(), port=port):
        args = [*command, "--format", "json"] if command else scan_command(setup["registry"], db, "--resume")
        if not command:
            args += ["--format", "json"]
        process = subprocess.Popen(
            args,
            cwd=db.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    summary = json.loads(out)
    assert (summary["run_id"], summary["resumed"], summary["already_done"]) == (run_id, True, len(QUICK))
    assert (summary["total"], summary["counts"]) == (len(SLOW), {"ok": len(SLOW)})
    store = open_store(f"sqlite:///{db}")
    try:
        (run,) = store.runs()
        assert (run.id, run.status, run.servers_scanned, run.servers_ok) == (run_id, "finished", 11, 11)
        rows = {row.name: row for row in store.servers()}
        assert set(rows) == set(QUICK) | set(SLOW)
        assert {name: rows[name].last_scanned_at for name in QUICK} == before  # not scanned again
        assert all(len(store.history(name)) == 1 for name in rows)
    finally:
        store.close()
    assert_consistent(db)


def test_sigint_marks_the_run_interrupted_and_resume_finishes_it(setup: dict[str, Any]) -> None:
    db: Path = setup["db"]
    process = start_scan(setup["registry"], db, "--format", "json")
    wait_for_quick_results(process, db)
    time.sleep(0.3)  # the hanging five are connected and waiting
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (out, err)
    hint = f"fathom: interrupted; `fathom scan --run-commands --allow-private --resume --db {db}` finishes the run\n"
    assert err.endswith(hint), err
    summary = json.loads(out)
    assert summary["interrupted"] is True and summary["counts"] == {"ok": len(QUICK)}
    assert (summary["scanned"], summary["total"]) == (len(QUICK), len(QUICK) + len(SLOW))
    store = open_store(f"sqlite:///{db}")
    try:
        (run,) = store.runs()
        assert (run.status, run.servers_scanned, run.servers_ok) == ("interrupted", len(QUICK), len(QUICK))
        assert run.finished_at is not None
        assert store.scanned_server_names(run.id) == set(QUICK)
    finally:
        store.close()
    assert_consistent(db)
    # Followed as printed, from another directory: --db alone brings back the run's source and every option
    # (without its stored --allow-private the five loopback servers would be refused, not ok).
    resume_and_check(setup, run.id, hint_command(err))


def test_sigterm_stops_as_cleanly_as_ctrl_c(setup: dict[str, Any]) -> None:
    db: Path = setup["db"]
    process = start_scan(setup["registry"], db)
    wait_for_quick_results(process, db)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    # The summary counts what was done, not what the registry lists.
    assert out == f"run 1 interrupted: {len(QUICK)} of {len(QUICK) + len(SLOW)} servers scanned · ok {len(QUICK)}\n"
    store = open_store(f"sqlite:///{db}")
    try:
        assert [run.status for run in store.runs()] == ["interrupted"]
    finally:
        store.close()
    assert_consistent(db)


def test_sigkill_leaves_a_consistent_database_that_resume_finishes(setup: dict[str, Any]) -> None:
    db: Path = setup["db"]
    process = start_scan(setup["registry"], db)
    wait_for_quick_results(process, db)
    process.kill()
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL
    store = open_store(f"sqlite:///{db}")
    try:
        (run,) = store.runs()
        assert run.status == "running"  # nobody was left to say otherwise
        assert store.scanned_server_names(run.id) == set(QUICK)
    finally:
        store.close()
    assert_consistent(db)
    resume_and_check(setup, run.id)


def age_run(db: Path, run_id: int, hours: int) -> None:
    """Move a run's start and its scans back in time, as if the kill had happened ``hours`` ago."""
    with sqlite3.connect(db) as connection:
        shift = f"-{hours} hours"
        connection.execute("UPDATE runs SET started_at = datetime(started_at, ?) WHERE id = ?", (shift, run_id))
        connection.execute("UPDATE scans SET scanned_at = datetime(scanned_at, ?) WHERE run_id = ?", (shift, run_id))


def test_a_new_scan_marks_a_long_dead_run_interrupted(setup: dict[str, Any], tmp_path: Path) -> None:
    db: Path = setup["db"]
    process = start_scan(setup["registry"], db)
    wait_for_quick_results(process, db)
    process.kill()
    process.communicate(timeout=120)
    store = open_store(f"sqlite:///{db}")
    (killed,) = store.runs()
    store.close()
    other = tmp_path / "other.json"
    missing = {"name": "x", "command": [str(tmp_path / "no-such-program")]}
    other.write_text(json.dumps({"servers": [missing]}), encoding="utf-8")
    # Killed a moment ago, but its process is gone (scanner/store/owner.py): the next scan marks it at once.
    assert subprocess.run(scan_command(other, db), capture_output=True, timeout=180, cwd=ROOT).returncode == 0
    store = open_store(f"sqlite:///{db}")
    assert [run.status for run in store.runs()] == ["interrupted", "finished"]
    store.close()
    # A run whose process cannot be told (an older version's, or another host's) waits for the age margin.
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?", (killed.id,))
        connection.execute("UPDATE runs SET options = json_remove(options, '$._process') WHERE id = ?", (killed.id,))
    assert subprocess.run(scan_command(other, db), capture_output=True, timeout=180, cwd=ROOT).returncode == 0
    store = open_store(f"sqlite:///{db}")
    assert [run.status for run in store.runs()] == ["running", "finished", "finished"]
    store.close()
    age_run(db, killed.id, hours=1)
    assert subprocess.run(scan_command(other, db), capture_output=True, timeout=180, cwd=ROOT).returncode == 0
    store = open_store(f"sqlite:///{db}")
    try:
        runs = store.runs()
        assert [(run.id, run.status) for run in runs] == [
            (killed.id, "interrupted"),
            (2, "finished"),
            (3, "finished"),
            (4, "finished"),
        ]
        assert runs[0].servers_scanned == len(QUICK) and runs[0].finished_at is not None
    finally:
        store.close()


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for a parent to reap it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_ctrl_c_leaves_no_stdio_server_running(tmp_path: Path) -> None:
    # A server that ignores SIGTERM and forks a child that ignores it too: Ctrl-C must still end both.
    pid_files = [tmp_path / f"pids-{number}" for number in range(2)]
    servers = [
        {
            "name": f"stubborn/{number}",
            "command": list(hostile_stdio_command("fork-ignore-term", "--pid-file", str(path))),
        }
        for number, path in enumerate(pid_files)
    ]
    registry = tmp_path / "servers.json"
    registry.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    process = start_scan(registry, tmp_path / "f.db")
    deadline = time.monotonic() + 120
    while not all(path.exists() and path.read_text(encoding="utf-8").strip() for path in pid_files):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    pids = [pid for path in pid_files for pid in recorded_pids(path)]
    assert all(alive(pid) for pid in pids)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:  # do not leave them behind whatever the verdict
        os.kill(pid, signal.SIGKILL)
    assert left == []


PG_URL = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")


@pytest.mark.skipif(not PG_URL, reason="set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")
def test_the_resume_hint_never_prints_a_database_password(setup: dict[str, Any]) -> None:
    pytest.importorskip("psycopg")
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    from scanner.store.engine import create_store_engine

    engine = create_store_engine(PG_URL)
    with engine.begin() as connection:  # a scratch database: start it empty
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    # The test server trusts loopback, so any password is accepted: the point is that none is printed.
    url = make_url(PG_URL).set(password="pw-NOT-PRINTED-42").render_as_string(hide_password=False)
    command = [*scan_command(setup["registry"], Path("unused")), "--db", url]  # the last --db wins
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 120
    with open_store(PG_URL) as store:
        while not any(run.servers_scanned >= len(QUICK) for run in store.runs()):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "pw-NOT-PRINTED-42" not in out + err
    shown = make_url(url).render_as_string(hide_password=True)
    assert err.endswith(
        f"`fathom scan --run-commands --allow-private --resume --db {shlex.quote(shown)}` finishes the run "
        "(with the database password in place of ***)\n"
    ), err


def test_sigint_stops_a_scan_started_with_sigint_ignored_and_resume_prints_the_run_totals(
    setup: dict[str, Any],
) -> None:
    """A background job of a non-interactive shell (a cron wrapper's ``fathom scan &``) inherits SIGINT ignored;
    ``kill -INT`` still stops it cleanly. Resumed, its last line gives the whole run's totals."""
    db: Path = setup["db"]
    process = subprocess.Popen(
        scan_command(setup["registry"], db),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # as sh does for `cmd &`
    )
    wait_for_quick_results(process, db)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 130, (out, err)
    assert out == f"run 1 interrupted: {len(QUICK)} of {len(QUICK) + len(SLOW)} servers scanned · ok {len(QUICK)}\n"
    port = setup["hanging"].port
    setup["hanging"].close()
    with DemoHost(slow_sites(), port=port):
        done = subprocess.run(
            scan_command(setup["registry"], db, "--resume"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 0, done.stderr
    total = len(QUICK) + len(SLOW)
    assert done.stdout == f"run 1 finished: {total} servers ({len(QUICK)} done before this resume) · ok {total}\n"
