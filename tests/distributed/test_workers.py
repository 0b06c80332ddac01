"""Distributed runs on a real PostgreSQL: ``fathom scan --enqueue`` and three ``fathom worker`` processes.

Runs only when ``FATHOM_TEST_POSTGRES_URL`` names a scratch database (its public schema is dropped), as
``tests/store/test_postgres.py`` does; skipped otherwise. Servers are real MCP servers on loopback: the demo host
(many servers on one port) and the hostile host's ``/hang`` path, which holds a job until the client's deadline.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from scanner.demo.server import DemoHost, synthetic_sites
from scanner.distributed.queue import entry_from_payload, entry_payload
from scanner.errors import WriterBusy
from scanner.mcp import ClientLimits
from scanner.models import ServerEntry, Transport
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, run_scan
from scanner.store import open_store
from scanner.store.engine import create_store_engine
from tests.servers.launch import RunningServer

URL = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")
needs_postgres = pytest.mark.skipif(not URL, reason="set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")

DEMO_SERVERS = 160
HANGING = 3  # first in the list, so the first worker holds them when it is killed
TIMEOUT = 10.0  # the survivors' and the reference scan's per-server deadline (a loaded machine is slow)
STALL = 3.0


@pytest.fixture
def postgres() -> Iterator[str]:
    pytest.importorskip("procrastinate")
    engine = create_store_engine(URL)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    with open_store(URL):  # migrated: Fathom's tables and the queue's
        pass
    yield URL


def _queue(sql: str) -> list[Any]:
    engine = create_store_engine(URL)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text(sql)).all())
    finally:
        engine.dispose()


def _worker(name: str, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "scanner", "worker", "--db", URL, "--name", name, "--allow-private"]
    argv += ["--stall-timeout", str(STALL), "--per-host", "64", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _written(run_id: int, worker: str) -> int:
    rows = _queue(f"SELECT scans FROM run_workers WHERE run_id = {run_id} AND worker = '{worker}'")
    return rows[0][0] if rows else 0


def _status(run_id: int) -> str:
    return str(_queue(f"SELECT status FROM runs WHERE id = {run_id}")[0][0])


def _board(db_url: str, run_id: int) -> dict[str, dict[str, Any]]:
    """The run's leaderboard by server, without what differs between two databases (scan ids)."""
    with open_store(db_url) as store:
        rows = store.leaderboard(run_id)
    return {row.server: {**dataclasses.asdict(row), "scan_id": None} for row in rows}


def _listing(tmp_path: Path, demo: DemoHost, hostile: RunningServer) -> Path:
    servers = [{"name": f"slow/h{n}", "url": hostile.url("/hang")} for n in range(HANGING)]
    servers += [{"name": f"demo/s{n:05d}", "url": demo.url(f"s{n:05d}")} for n in range(DEMO_SERVERS)]
    listing = tmp_path / "servers.json"
    listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    return listing


@needs_postgres
@pytest.mark.timeout(600)  # generous: a loaded machine (CI beside other jobs) is slow, not wrong
def test_three_workers_one_killed_finish_the_run_like_one_process(
    postgres: str, tmp_path: Path, hostile_http: RunningServer
) -> None:
    from scanner.distributed import enqueue_scan

    crawl = CrawlSettings(allow_private=True, per_host=64, limits=ClientLimits(timeout=TIMEOUT))
    with DemoHost(synthetic_sites(DEMO_SERVERS, tools_per_server=3)) as demo:
        listing = _listing(tmp_path, demo, hostile_http)
        reference_db = f"sqlite:///{tmp_path / 'one.db'}"
        reference = run_scan(ScanConfig(source=str(listing), db_url=reference_db, crawl=crawl))

        queued = enqueue_scan(ScanConfig(source=str(listing), db_url=postgres, crawl=crawl))
        assert queued.queued == DEMO_SERVERS + HANGING
        # The database's writer lock is the run's now: a local scan is refused while the workers write.
        with pytest.raises(WriterBusy, match=f"distributed run {queued.run_id} is writing"):
            run_scan(ScanConfig(source=str(listing), db_url=postgres, crawl=crawl))
        # The victim takes the hanging servers first and would wait a minute on each; it is killed holding them,
        # once both other workers are up (it may have written every other server by then: they still take its
        # jobs back after the stall timeout).
        victim = _worker("victim", "--concurrency", "4", "--timeout", "60")
        survivors: list[subprocess.Popen[str]] = []
        try:
            _wait(lambda: _written(queued.run_id, "victim") >= 5, 120, "the first worker's first scans")
            survivors = [_worker(f"w{n}", "--concurrency", "8", "--timeout", str(TIMEOUT)) for n in (1, 2)]
            _wait(lambda: _queue("SELECT count(*) FROM procrastinate_workers")[0][0] == 3, 120, "three workers")
            doing = _queue("SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'")[0][0]
            assert doing >= HANGING  # the victim holds at least the hanging servers
            assert _status(queued.run_id) == "running"
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            _wait(lambda: _status(queued.run_id) == "finished", 180, "the run to finish")
            # The closing job still releases the run's lease and says so after the status flips: stopping the
            # workers before it ends would hand that job back unfinished (SIGTERM aborts running jobs at once).
            left = "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
            _wait(lambda: _queue(left)[0][0] == 0, 120, "the queue to drain")
        finally:
            for process in [victim, *survivors]:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            outputs = [process.communicate(timeout=60) for process in [victim, *survivors]]
        assert [process.returncode for process in survivors] == [0, 0], outputs
        assert any("run" in out and "finished" in out for out, _err in outputs[1:])

        with open_store(postgres) as store:
            run = next(row for row in store.runs() if row.id == queued.run_id)
            names = [row.server for row in store.leaderboard(queued.run_id)]
        assert run.status == "finished"
        assert run.planned == run.servers_scanned == DEMO_SERVERS + HANGING
        assert "victim" in run.workers and {"w1", "w2"} & set(run.workers)
        # Exactly one scan per server: the killed worker's jobs were taken again and written once.
        assert sorted(names) == sorted(set(names)) and len(names) == DEMO_SERVERS + HANGING
        assert _queue("SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')")[0][0] == 0
        assert _queue("SELECT count(*) FROM writer_lock")[0][0] == 0  # released by the worker that closed the run
        hung = {name: row["outcome"] for name, row in _board(postgres, queued.run_id).items() if "slow/" in name}
        assert hung == {f"slow/h{n}": "timeout" for n in range(HANGING)}

        assert _board(postgres, queued.run_id) == _board(reference_db, reference.run_id)


@needs_postgres
@pytest.mark.timeout(400)
def test_ctrl_c_hands_a_workers_jobs_back_at_once(postgres: str, tmp_path: Path, hostile_http: RunningServer) -> None:
    from scanner.distributed import enqueue_scan

    listing = tmp_path / "servers.json"
    servers = [{"name": f"slow/h{n}", "url": hostile_http.url("/hang")} for n in range(2)]
    listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    queued = enqueue_scan(ScanConfig(source=str(listing), db_url=postgres))
    worker = _worker("interrupted", "--timeout", "120")
    try:
        _wait(
            lambda: _queue("SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'")[0][0] == 2,
            120,
            "both jobs taken",
        )
        started = time.monotonic()
        worker.send_signal(signal.SIGINT)
        worker.wait(55)
        # Not after the servers' deadline (--timeout 120 below): generous, since a loaded machine is slow to exit.
        assert time.monotonic() - started < 55
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate()
    assert worker.returncode == 0
    jobs = _queue("SELECT status, attempts FROM procrastinate_jobs ORDER BY id")
    assert [(str(status), attempts) for status, attempts in jobs] == [("todo", 1), ("todo", 1)]
    assert _status(queued.run_id) == "running"


@needs_postgres
def test_the_queue_tables_migrate_both_ways(postgres: str) -> None:
    from scanner.store.engine import downgrade, migrate

    def engine_objects() -> list[str]:
        return [
            row[0]
            for row in _queue(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'procrastinate%' UNION ALL "
                "SELECT proname FROM pg_proc WHERE proname LIKE 'procrastinate%' UNION ALL "
                "SELECT typname FROM pg_type WHERE typname LIKE 'procrastinate%' AND typtype IN ('e', 'c')"
            )
        ]

    assert {"procrastinate_jobs", "procrastinate_workers", "procrastinate_events"} <= set(engine_objects())
    assert "procrastinate_fetch_job_v2" in engine_objects()
    engine = create_store_engine(postgres)
    try:
        downgrade(engine, "0004")
        assert engine_objects() == []
        assert _queue("SELECT count(*) FROM pg_tables WHERE tablename = 'run_workers'")[0][0] == 0
        migrate(engine)
    finally:
        engine.dispose()
    assert "procrastinate_jobs" in engine_objects()
    with open_store(postgres) as store:  # and the engine itself agrees its schema is there
        from scanner.distributed.queue import make_app

        app = make_app(postgres)
        with app.open():
            assert app.check_connection()
        assert store.runs() == []


def test_enqueue_needs_postgres_and_says_so(tmp_path: Path) -> None:
    listing = tmp_path / "servers.json"
    listing.write_text(json.dumps({"servers": [{"name": "a", "url": "http://127.0.0.1:9/mcp"}]}), encoding="utf-8")
    db = tmp_path / "f.db"
    result = subprocess.run(
        [sys.executable, "-m", "scanner", "scan", str(listing), "--db", str(db), "--enqueue"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "distributed runs need PostgreSQL" in result.stderr
    assert not db.exists()  # nothing written, not even a run


def _package_server(*variables: dict[str, Any]) -> dict[str, Any]:
    package = {
        "registryType": "npm",
        "identifier": "@acme/db",
        "version": "1.0.0",
        "transport": {"type": "stdio"},
        "environmentVariables": list(variables),
    }
    return {"name": "acme/db", "version": "1.0.0", "packages": [package]}


@pytest.fixture
def bin_dir(tmp_path: Path) -> str:
    """A PATH folder holding an ``npx`` (never run here: it only has to be found)."""
    npx = tmp_path / "npx"
    npx.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    npx.chmod(0o755)
    return str(tmp_path)


def _resolved(server: dict[str, Any], environ: dict[str, str]) -> ServerEntry:
    from scanner.registry.interface import Options
    from scanner.registry.serverjson import resolve_server

    return resolve_server(server, source="test", options=Options(run_packages=True, environ=environ))


def test_a_job_carries_names_never_secret_values(bin_dir: str) -> None:
    coordinator = {"PATH": bin_dir, "FATHOM_SECRET_ACME_DB_ACME_TOKEN": "s3cret-token"}
    entry = _resolved(_package_server({"name": "ACME_TOKEN", "isSecret": True}), coordinator)
    assert entry.env["ACME_TOKEN"] == "s3cret-token"
    payload = entry_payload(dataclasses.replace(entry, headers={"Authorization": "Bearer s3cret-header"}))
    assert "s3cret" not in json.dumps(payload)
    assert payload["env_names"] == ["ACME_TOKEN", "LANG", "PATH"] and payload["header_names"] == ["Authorization"]
    # A worker gives the declared names a value under the naming rule only, and nothing it does not have.
    worker = {"PATH": bin_dir, "ACME_TOKEN": "workers-own", "FATHOM_SECRET_ACME_DB_ACME_TOKEN": "w-token"}
    on_worker = entry_from_payload(payload, worker)
    assert on_worker.skip is None, on_worker.skip
    assert dict(on_worker.env) == {"PATH": bin_dir, "LANG": "C.UTF-8", "ACME_TOKEN": "w-token"}
    assert on_worker.headers == {}
    assert on_worker.command[-1] == "@acme/db@1.0.0" and on_worker.package == entry.package


def test_a_worker_hands_a_package_only_what_the_naming_rule_names(bin_dir: str) -> None:
    """Issue 17 (2): a registry entry declaring AWS_SECRET_ACCESS_KEY, PGPASSWORD or DATABASE_URL got the worker's
    own values on a --run-packages worker."""
    declared = [{"name": name} for name in ("AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "DATABASE_URL")]
    payload = entry_payload(_resolved(_package_server(*declared), {"PATH": bin_dir}))
    worker = {
        "PATH": bin_dir,
        "AWS_SECRET_ACCESS_KEY": "aws-worker-secret",
        "PGPASSWORD": "pg-worker-secret",
        "DATABASE_URL": "postgresql://u:db-worker-secret@h/db",
        "FATHOM_SECRET_ACME_DB_PGPASSWORD": "meant-for-acme",
    }
    on_worker = entry_from_payload(payload, worker)
    assert on_worker.skip is None, on_worker.skip
    assert dict(on_worker.env) == {"PATH": bin_dir, "LANG": "C.UTF-8", "PGPASSWORD": "meant-for-acme"}
    # The same for a queued command (a list's entry): only FATHOM_SECRET_<SERVER>_<VAR>.
    command = entry_payload(ServerEntry(name="acme/db", transport=Transport.STDIO, command=("srv",), env={"X": "1"}))
    command["env_names"] = ["AWS_SECRET_ACCESS_KEY", "PGPASSWORD"]
    assert dict(entry_from_payload(command, worker).env) == {"PGPASSWORD": "meant-for-acme"}


def test_a_planted_job_cannot_choose_the_command_of_a_package(bin_dir: str) -> None:
    """Issue 17 (3): ``package: {"registryType": "npm"}`` with ``command: sh -c ...`` ran the shell on a
    --run-packages worker: the command is rebuilt from the package description, or the job is skipped."""
    planted = entry_payload(
        ServerEntry(name="evil", transport=Transport.STDIO, command=("sh", "-c", "id > /tmp/pwned"))
    )
    planted["package"] = {"registryType": "npm", "identifier": "x", "runner": "npx"}
    entry = entry_from_payload(planted, {"PATH": "/usr/bin"})
    assert entry.skip is not None and "rebuild" in entry.skip and "sh" not in entry.command
    # A description that names a real package runs that package, whatever the job's command says.
    honest = entry_payload(_resolved(_package_server(), {"PATH": bin_dir}))
    honest["command"] = ["sh", "-c", "id > /tmp/pwned"]
    rebuilt = entry_from_payload(honest, {"PATH": bin_dir})
    assert rebuilt.skip is None and rebuilt.command[-3:] == ("npx", "-y", "@acme/db@1.0.0")
    # ... and under the worker's policy: what the description may not pass, it does not pass.
    honest["package_source"]["runtimeArguments"] = [{"type": "named", "name": "--node-options", "value": "-r=/x"}]
    refused = entry_from_payload(honest, {"PATH": bin_dir})
    assert "sh" not in refused.command and refused.skip is not None and "registry data" in refused.skip


def test_a_worker_without_its_database_is_one_line_exit_4() -> None:
    pytest.importorskip("procrastinate")
    result = subprocess.run(
        [sys.executable, "-m", "scanner", "worker", "--db", "postgresql+psycopg://fathom:pw@127.0.0.1:9/fathom"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 4
    assert result.stderr.startswith("fathom: ") and len(result.stderr.strip().splitlines()) == 1
    assert ":pw@" not in result.stderr and ":***@" in result.stderr  # the URL is named without its password
    assert "Traceback" not in result.stderr


@needs_postgres
@pytest.mark.timeout(300)
def test_a_package_worker_keeps_its_package_cache_as_a_scan_does(postgres: str, tmp_path: Path) -> None:
    """Issue 19 (3) for workers: ``fathom worker --run-packages`` clears killed runs' leftovers as it starts and
    holds ``--cache-max-mb`` as it stops; a worker that runs no package leaves the cache alone."""
    cache = tmp_path / "cache"
    dead = subprocess.Popen(["true"])  # its pid names a process that has exited
    dead.wait()
    leftovers = [
        cache / "homes" / f"home-{dead.pid}-x1",  # the HOME of a process that is gone
        cache / "uv",  # an older Fathom's shared folder
        cache / "pkg" / "pypi" / "kept-1.0.0" / "uv" / ".tmpKILLED",  # a killed install's temporary folder
    ]
    for folder in leftovers:
        folder.mkdir(parents=True)
        (folder / "junk").write_bytes(b"x" * 4096)
    old, recent = cache / "pkg" / "npm" / "old-1.0.0", cache / "pkg" / "npm" / "recent-1.0.0"
    for folder, mib, used in ((old, 70, time.time() - 86400), (recent, 1, time.time())):
        folder.mkdir(parents=True)
        (folder / "blob").write_bytes(b"\1" * (mib << 20))
        (folder / ".fathom-used").touch()
        os.utime(folder / ".fathom-used", (used, used))
    flags = ("--until-idle", "--cache-dir", str(cache), "--cache-max-mb", "64")

    plain = _worker("no-packages", *flags)
    _, said = plain.communicate(timeout=120)
    assert plain.returncode == 0, said
    assert all(folder.exists() for folder in (*leftovers, old)) and "package cache" not in said

    keeper = _worker("packages", "--run-packages", *flags)
    _, said = keeper.communicate(timeout=120)
    assert keeper.returncode == 0, said
    assert not any(folder.exists() for folder in leftovers)
    assert "fathom: package cache: removed 3 left-over folder(s) of killed runs" in said
    # Over 64 MiB: the least recently used install goes, the recent one stays.
    assert not old.exists() and (recent / "blob").exists()
    assert "fathom: package cache: over --cache-max-mb 64: removed the 1 least recently used package install(s)" in said
