"""Queue rows are data (issue 33, item 3): a job rewritten in the queue to another package under a queued server's
name is refused by the worker, recorded with the reason, and nothing of it runs (no secret handed to anything).

The worker's job body (``scanner.distributed.worker._Job``) runs here on a real SQLite store, as a worker runs it
on PostgreSQL, with a fake ``npx`` that says on stderr which package it was asked to run. The same attack through
a real queue (the job's row rewritten in ``procrastinate_jobs``) is tested on PostgreSQL when
``FATHOM_TEST_POSTGRES_URL`` names a scratch database.
"""

from __future__ import annotations

import asyncio
import copy
import os
from pathlib import Path
from typing import Any

import pytest

from scanner.distributed.queue import QUEUE_KEY_ENV, entry_digest, entry_payload, job_problem, other_run
from scanner.distributed.worker import WorkerConfig, _Job
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages import PackageSettings
from scanner.rules import RULES_VERSION
from scanner.scan.crawl import CrawlSettings
from scanner.store import open_store

SECRET = "acme-token-Zk29x7qL"


def _server(identifier: str = "@acme/db", version: str = "1.0.0") -> dict[str, Any]:
    package = {
        "registryType": "npm",
        "identifier": identifier,
        "version": version,
        "transport": {"type": "stdio"},
        "environmentVariables": [{"name": "ACME_TOKEN", "isSecret": True, "isRequired": True}],
    }
    return {"name": "acme/db", "version": version, "packages": [package]}


@pytest.fixture
def bin_dir(tmp_path: Path) -> str:
    """A PATH folder whose ``npx`` says which package it was asked for, and whether it got the token, then fails."""
    folder = tmp_path / "bin"
    folder.mkdir()
    npx = folder / "npx"
    npx.write_text(
        '#!/bin/sh\necho "npx asked for: $*" >&2\n[ -n "$ACME_TOKEN" ] && echo "token handed over" >&2\nexit 1\n',
        encoding="utf-8",
    )
    npx.chmod(0o755)
    return str(folder)


def _payload(
    identifier: str,
    bin_dir: str,
    environ: dict[str, str] | None = None,
    *,
    run_id: int | None = None,
    version: str = "1.0.0",
) -> dict[str, Any]:
    from scanner.registry.interface import Options
    from scanner.registry.serverjson import resolve_server

    options = Options(run_packages=True, environ={"PATH": bin_dir})
    entry = resolve_server(_server(identifier, version), source="test", options=options)
    return entry_payload(entry, environ or {}, run_id=run_id)


def test_the_digest_covers_every_field_and_is_keyed_when_a_key_is_given(bin_dir: str) -> None:
    honest = _payload("@acme/db", bin_dir)
    assert honest["digest"].startswith("sha256:") and job_problem(honest, {}) is None
    # As a JSON column gives it back: keys in another order.
    assert job_problem(dict(reversed(list(honest.items()))), {}) is None
    for field, value in [
        ("package_source", {**honest["package_source"], "identifier": "@evil/steal"}),
        ("command", ["sh", "-c", "id"]),
        ("env_names", ["ACME_TOKEN", "AWS_SECRET_ACCESS_KEY"]),
        ("name", "acme/other"),
        ("url", "http://127.0.0.1:9/"),
    ]:
        changed = {**copy.deepcopy(honest), field: value}
        assert "does not match" in (job_problem(changed, {}) or ""), field
    assert "no digest" in (job_problem({k: v for k, v in honest.items() if k != "digest"}, {}) or "")
    # With the shared key, the writer of a queue row cannot make a digest the worker accepts.
    keyed = _payload("@acme/db", bin_dir, {QUEUE_KEY_ENV: "shared-key-1"})
    assert keyed["digest"].startswith("hmac-sha256:") and job_problem(keyed, {QUEUE_KEY_ENV: "shared-key-1"}) is None
    forged = _payload("@evil/steal", bin_dir)
    forged["name"] = keyed["name"]
    forged["digest"] = entry_digest(forged, {QUEUE_KEY_ENV: "guessed"})
    assert "does not match" in (job_problem(forged, {QUEUE_KEY_ENV: "shared-key-1"}) or "")
    assert "FATHOM_QUEUE_KEY" in (job_problem(honest, {QUEUE_KEY_ENV: "shared-key-1"}) or "")  # unkeyed job
    assert "FATHOM_QUEUE_KEY" in (job_problem(keyed, {}) or "")  # a keyed job on a worker without the key


@pytest.mark.timeout(120)
def test_a_job_rewritten_to_another_package_is_refused_and_runs_nothing(
    bin_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: whoever could write the queue turned a queued server's job into a package of their choice under
    the same name, and the worker handed that package the server's secret."""
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', os.defpath)}")
    monkeypatch.setenv("FATHOM_SECRET_ACME_DB_ACME_TOKEN", SECRET)
    monkeypatch.delenv(QUEUE_KEY_ENV, raising=False)
    db = f"sqlite:///{tmp_path / 'fathom.db'}"
    config = WorkerConfig(
        db_url=db,
        run_packages=True,
        crawl=CrawlSettings(
            limits=ClientLimits(timeout=30),
            packages=PackageSettings(cache_dir=tmp_path / "cache", environ={"PATH": os.environ["PATH"]}),
        ),
    )
    seen: list[tuple[ServerEntry, ScanOutcome]] = []
    with open_store(db) as store:
        runs = [store.start_run(f"test-{n}", RULES_VERSION, {}, planned=1) for n in range(2)]
        rewritten = _payload("@acme/db", bin_dir, run_id=runs[0])
        rewritten["package_source"]["identifier"] = "@evil/steal"
        rewritten["package"]["identifier"] = "@evil/steal"
        honest = _payload("@acme/db", bin_dir, run_id=runs[1])
        job = _Job(store, config, lambda entry, outcome: seen.append((entry, outcome)), None)
        asyncio.run(job(runs[0], rewritten))
        asyncio.run(job(runs[1], honest))
        assert store.has_scan(runs[0], "acme/db") and store.has_scan(runs[1], "acme/db")
    (_, refused), (_, ran) = seen
    assert refused.outcome is Outcome.REFUSED
    assert refused.detail.startswith("queued job does not match the digest of its registry entry")
    assert "npx asked for" not in str(refused.extra) and "evil" not in str(refused.extra)
    # The honest job ran its own package, with its token: the fake npx said so.
    said = " ".join(ran.extra.get("stderr_tail") or []) + ran.detail
    assert "@acme/db@1.0.0" in said and "token handed over" in said and ran.outcome is not Outcome.REFUSED


KEY = {QUEUE_KEY_ENV: "shared-key-1"}


def test_the_signed_digest_covers_the_run(bin_dir: str) -> None:
    """Issue 42 item 7: a signed job is bound to the run it was queued for; its run id cannot be changed."""
    job = _payload("@acme/db", bin_dir, KEY, run_id=5)
    assert job["run_id"] == 5 and job_problem(job, KEY) is None
    assert other_run(job, 5) is None
    assert "queued for run 5, not run 6" in (other_run(job, 6) or "")
    moved = {**job, "run_id": 6}  # the writer of the queue re-labels it: the digest no longer holds
    assert "does not match" in (job_problem(moved, KEY) or "")
    unbound = _payload("@acme/db", bin_dir, KEY)  # as an older version queued it
    assert job_problem(unbound, KEY) is None and "bound to no run" in (other_run(unbound, 5) or "")
    assert "not run 5" in (other_run({**job, "run_id": True}, 5) or "not run 5")  # a bool is no run id


@pytest.mark.timeout(120)
def test_a_signed_job_saved_from_one_run_is_dropped_in_another(
    bin_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: with FATHOM_QUEUE_KEY, a job saved from run A and queued for run B was accepted and replaced run
    B's scan of the server with A's entry (an older package). Now it is written nowhere, and B's own job scans."""
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', os.defpath)}")
    monkeypatch.setenv(QUEUE_KEY_ENV, KEY[QUEUE_KEY_ENV])
    db = f"sqlite:///{tmp_path / 'fathom.db'}"
    config = WorkerConfig(
        db_url=db,
        run_packages=True,
        crawl=CrawlSettings(
            limits=ClientLimits(timeout=30),
            packages=PackageSettings(cache_dir=tmp_path / "cache", environ={"PATH": os.environ["PATH"]}),
        ),
    )
    seen: list[tuple[ServerEntry, ScanOutcome]] = []
    with open_store(db) as store:
        first, second = (store.start_run(f"test-{n}", RULES_VERSION, {}, planned=1) for n in range(2))
        saved = _payload("@acme/db", bin_dir, KEY, run_id=first, version="1.0.0")
        job = _Job(store, config, lambda entry, outcome: seen.append((entry, outcome)), None)
        asyncio.run(job(first, copy.deepcopy(saved)))
        asyncio.run(job(second, copy.deepcopy(saved)))  # the replay: run A's signed job, delivered for run B
        assert job.other_runs == 1 and not store.has_scan(second, "acme/db")
        asyncio.run(job(second, _payload("@acme/db", bin_dir, KEY, run_id=second, version="2.0.0")))
        assert store.has_scan(second, "acme/db")
    assert [entry.version for entry, _ in seen] == ["1.0.0", "2.0.0"]
    said = " ".join(seen[1][1].extra.get("stderr_tail") or []) + seen[1][1].detail
    assert "@acme/db@2.0.0" in said


POSTGRES = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")


@pytest.mark.skipif(not POSTGRES, reason="set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")
@pytest.mark.timeout(300)
def test_a_job_row_rewritten_in_postgresql_is_refused_by_a_real_worker(
    bin_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import subprocess
    import sys

    from sqlalchemy import text

    from scanner.distributed import enqueue_scan
    from scanner.scan.night import ScanConfig
    from scanner.store.engine import create_store_engine

    pytest.importorskip("procrastinate")
    engine = create_store_engine(POSTGRES)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    with open_store(POSTGRES):
        pass
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', os.defpath)}")
    monkeypatch.delenv(QUEUE_KEY_ENV, raising=False)
    listing = tmp_path / "servers.json"
    listing.write_text(json.dumps({"servers": [{"server": _server()}]}), encoding="utf-8")
    queued = enqueue_scan(ScanConfig(source=str(listing), db_url=POSTGRES, run_packages=True))
    assert queued.queued == 1
    # Whoever can write the queue: the same server's job, another package.
    with engine.begin() as connection:
        changed = connection.execute(
            text(
                "UPDATE procrastinate_jobs SET args = jsonb_set(jsonb_set(args, '{entry,package_source,identifier}',"
                " '\"@evil/steal\"'), '{entry,package,identifier}', '\"@evil/steal\"')"
            )
        ).rowcount
    engine.dispose()
    assert changed == 1
    env = {**os.environ, "FATHOM_SECRET_ACME_DB_ACME_TOKEN": SECRET}
    argv = [sys.executable, "-m", "scanner", "worker", "--db", POSTGRES, "--until-idle", "--run-packages"]
    argv += ["--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "npx asked for" not in done.stdout + done.stderr
    with open_store(POSTGRES) as store:
        rows = store.leaderboard(queued.run_id)
    assert [(row.server, row.outcome) for row in rows] == [("acme/db", "refused")]


@pytest.mark.skipif(not POSTGRES, reason="set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")
@pytest.mark.timeout(300)
def test_a_signed_job_of_one_run_requeued_for_another_is_dropped_by_a_real_worker(
    bin_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay through a real queue: run 1's signed job (package 1.0.0) saved from ``procrastinate_jobs``, then
    put in place of run 2's job (package 2.0.0) with run 2's id; a real ``fathom worker`` with the key."""
    import json
    import subprocess
    import sys

    from sqlalchemy import text

    from scanner.distributed import enqueue_scan
    from scanner.scan.night import ScanConfig
    from scanner.store.engine import create_store_engine

    pytest.importorskip("procrastinate")
    engine = create_store_engine(POSTGRES)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    with open_store(POSTGRES):
        pass
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', os.defpath)}")
    monkeypatch.setenv(QUEUE_KEY_ENV, KEY[QUEUE_KEY_ENV])
    env = {**os.environ, "FATHOM_SECRET_ACME_DB_ACME_TOKEN": SECRET}
    argv = [sys.executable, "-m", "scanner", "worker", "--db", POSTGRES, "--until-idle", "--run-packages"]
    argv += ["--cache-dir", str(tmp_path / "cache")]

    def enqueue(version: str) -> int:
        listing = tmp_path / f"servers-{version}.json"
        listing.write_text(json.dumps({"servers": [{"server": _server(version=version)}]}), encoding="utf-8")
        queued = enqueue_scan(ScanConfig(source=str(listing), db_url=POSTGRES, run_packages=True))
        assert queued.queued == 1 and queued.run_id is not None
        return queued.run_id

    first = enqueue("1.0.0")
    with engine.begin() as connection:
        saved = connection.execute(
            text("SELECT args FROM procrastinate_jobs WHERE (args->>'run_id')::int = :run"), {"run": first}
        ).scalar_one()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr  # run 1 scanned and closed: a new run may be queued
    second = enqueue("2.0.0")
    replay = {**saved, "run_id": second}  # the job's own entry still says run 1, under its signature
    with engine.begin() as connection:
        changed = connection.execute(
            text("UPDATE procrastinate_jobs SET args = CAST(:args AS jsonb) WHERE (args->>'run_id')::int = :run"),
            {"args": json.dumps(replay), "run": second},
        ).rowcount
    assert changed == 1
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "1 jobs of another run dropped" in done.stdout, done.stdout
    assert f"queued for run {first}, not run {second}" in done.stderr
    with engine.begin() as connection:
        versions = connection.execute(text("SELECT run_id, registry_version FROM scans ORDER BY run_id")).all()
    engine.dispose()
    # Run 1 has its own scan; run 2 has no scan of run 1's entry (the replay wrote nothing).
    assert [tuple(row) for row in versions] == [(first, "1.0.0")]
