"""One writer per database (issue 8, item 13 and deliver 3).

Two ``fathom scan`` processes on one SQLite file used to collide inside the store (``IntegrityError`` on
``servers.name``, a traceback, exit 1). Now the second stops at once with one line and exit 4 while the first
finishes; a SIGKILLed scan's lock does not block the next run. The lock's rules (live holder refused, dead pid and
silent heartbeat taken over, a holder that lost its lock stops) are checked on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text, update

from scanner.demo.server import DemoHost, synthetic_sites
from scanner.errors import WriterBusy
from scanner.store import open_store
from scanner.store.engine import create_store_engine
from scanner.store.lock import _TABLE, STALE_AFTER, WriterLock, writer_lock

ROOT = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")
HOST = socket.gethostname()


class Hanging:
    """A loopback listener that accepts connections and never answers: a server that keeps a scan busy."""

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
                self.held.append(self.sock.accept()[0])
            except TimeoutError:
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Path]:
    """Two quick demo servers and one that hangs until the per-server deadline."""
    sites = synthetic_sites(2, tools_per_server=2)
    with DemoHost(sites) as quick:
        hanging = Hanging()
        try:
            servers = [{"name": site.name, "url": quick.url(site.name)} for site in sites]
            servers.append({"name": "slow", "url": f"http://localhost:{hanging.port}/mcp"})
            path = tmp_path / "servers.json"
            path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
            yield path
        finally:
            hanging.close()


def scan_command(registry: Path, db: Path, timeout: float) -> list[str]:
    deadline = str(timeout)
    return [
        *(sys.executable, "-m", "scanner", "scan", str(registry), "--db", str(db), "--allow-private"),
        *("--timeout", deadline, "--connect-timeout", deadline),
    ]


def start_scan(registry: Path, db: Path, timeout: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = scan_command(registry, db, timeout)
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def lock_row(db: Path) -> tuple[Any, ...] | None:
    """The writer_lock row as a reader sees it (read-only; None while there is no file, table or row)."""
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
            return connection.execute("SELECT pid, host, purpose FROM writer_lock").fetchone()
    except sqlite3.OperationalError:
        return None


def wait_for_lock(process: subprocess.Popen[str], db: Path) -> tuple[Any, ...]:
    deadline = time.monotonic() + 180  # generous: a loaded machine is slow, not wrong
    while (row := lock_row(db)) is None:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the scan never took the writer lock"
        time.sleep(0.05)
    return row


@pytest.mark.timeout(600)  # generous: a loaded machine is slow, not wrong
def test_a_second_scan_on_the_same_file_is_refused_in_one_line_and_the_first_finishes(
    registry: Path, tmp_path: Path
) -> None:
    db = tmp_path / "f.db"
    first = start_scan(registry, db, timeout=10)  # its slow server keeps it writing for 10 s
    try:
        assert wait_for_lock(first, db) == (first.pid, HOST, "scan")

        second = subprocess.run(
            scan_command(registry, db, timeout=10), cwd=ROOT, capture_output=True, text=True, timeout=60
        )

        assert second.returncode == 4, second.stderr
        assert "Traceback" not in second.stderr and second.stdout == ""
        (line,) = second.stderr.splitlines()
        expected = (
            rf"fathom: another scan is writing to {re.escape(str(db))} since \d\d:\d\d UTC "
            rf"\(pid {first.pid} on {re.escape(HOST)}\); let it finish or stop it"
        )
        assert re.fullmatch(expected, line), line
        out, err = first.communicate(timeout=60)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert out.startswith("run 1 finished: 3 servers")
    with open_store(f"sqlite:///{db}") as store:
        (run,) = store.runs()  # the refused scan started no run
        assert run.status == "finished" and run.servers_scanned == 3
    assert lock_row(db) is None  # released


@pytest.mark.timeout(600)  # generous: a loaded machine is slow, not wrong
def test_a_sigkilled_scans_lock_does_not_block_the_next_run(registry: Path, tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    first = start_scan(registry, db, timeout=60)
    try:
        wait_for_lock(first, db)
    finally:
        first.kill()  # SIGKILL: no cleanup runs
        first.communicate(timeout=120)
    assert lock_row(db) == (first.pid, HOST, "scan")  # left behind by the dead process

    quick = tmp_path / "quick.json"
    servers = json.loads(registry.read_text(encoding="utf-8"))["servers"][:2]
    quick.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    second = subprocess.run(scan_command(quick, db, timeout=10), cwd=ROOT, capture_output=True, text=True, timeout=60)

    assert second.returncode == 0, second.stderr
    assert re.match(r"run \d+ finished: 2 servers", second.stdout), second.stdout
    assert lock_row(db) is None


# --- the lock's rules, on both backends -----------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'f.db'}"
    else:
        if not PG_URL:
            pytest.skip("set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")
        pytest.importorskip("psycopg")
        scratch = create_store_engine(PG_URL)
        with scratch.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
        scratch.dispose()
        url = PG_URL
    store = open_store(url)
    yield store.engine
    store.close()


def put_holder(engine: Any, *, pid: int, host: str, age: timedelta = timedelta(0)) -> None:
    """Write a lock row as another process would have left it, heartbeat ``age`` ago."""
    from datetime import UTC, datetime

    moment = datetime.now(UTC) - age
    row = {"id": 1, "token": "someone-else", "purpose": "scan", "pid": pid, "host": host}
    with engine.begin() as connection:
        connection.execute(_TABLE.insert().values(**row, started_at=moment, heartbeat_at=moment))


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()  # reaped: the pid is gone
    return process.pid


def test_a_live_holder_is_named_and_refused_then_released(engine: Any) -> None:
    with writer_lock(engine, "scan"):
        with pytest.raises(WriterBusy) as refused:
            WriterLock(engine, "rescore").acquire()
        message = str(refused.value)
        assert re.search(rf"another scan is writing to .+ since \d\d:\d\d UTC \(pid {os.getpid()} on ", message)
        assert "\n" not in message and refused.value.exit_code == 4
    with writer_lock(engine, "rescore") as lock:  # released on exit: free again
        assert lock.took_over is None


def test_a_dead_pid_on_this_host_is_taken_over_at_once(engine: Any) -> None:
    pid = dead_pid()
    put_holder(engine, pid=pid, host=HOST)
    with writer_lock(engine) as lock:
        assert lock.took_over is not None and lock.took_over["pid"] == pid


def test_another_hosts_lock_holds_while_its_heartbeat_is_fresh_and_is_taken_over_when_silent(engine: Any) -> None:
    put_holder(engine, pid=4242, host="elsewhere")
    with pytest.raises(WriterBusy, match=r"\(pid 4242 on elsewhere\)"):
        WriterLock(engine).acquire()
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM writer_lock"))
    put_holder(engine, pid=4242, host="elsewhere", age=STALE_AFTER + timedelta(seconds=5))
    with writer_lock(engine) as lock:
        assert lock.took_over is not None and lock.took_over["host"] == "elsewhere"


def test_a_holder_whose_lock_was_taken_over_stops_and_does_not_release_the_new_one(engine: Any) -> None:
    lock = WriterLock(engine)
    lock.acquire()
    lock.check()  # still ours
    with engine.begin() as connection:  # another process judged it stale and took it
        connection.execute(update(_TABLE).values(token="newcomer", pid=4242, host="elsewhere"))
    lock.refresh()
    with pytest.raises(WriterBusy, match="lost the writer lock"):
        lock.check()
    lock.release()
    with engine.connect() as connection:
        assert connection.execute(text("SELECT token FROM writer_lock")).scalar_one() == "newcomer"


def test_rescore_is_refused_while_a_scan_writes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from scanner.cli import app

    db = tmp_path / "f.db"
    with open_store(f"sqlite:///{db}") as store, writer_lock(store.engine, "scan"):
        result = CliRunner().invoke(app, ["rescore", "--db", str(db)])
    assert result.exit_code == 4 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"fathom: another scan is writing to {db} since ") and f"(pid {os.getpid()} on " in line
    assert CliRunner().invoke(app, ["rescore", "--db", str(db)]).exit_code == 0  # free once the scan is done


def test_a_scan_is_refused_before_it_starts_a_run_on_either_backend(engine: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from scanner.cli import app

    url = engine.url.render_as_string(hide_password=False)
    servers = tmp_path / "servers.json"
    servers.write_text('{"servers": [{"name": "x", "url": "http://127.0.0.1:9/mcp"}]}', encoding="utf-8")
    put_holder(engine, pid=os.getpid(), host=HOST)  # a live process on this host: this one

    result = CliRunner().invoke(app, ["scan", str(servers), "--db", url, "--allow-private"])

    assert result.exit_code == 4 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert re.fullmatch(rf"fathom: another scan is writing to .+ since \d\d:\d\d UTC \(pid {os.getpid()} on .+", line)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM runs")).scalar_one() == 0  # no run was started
