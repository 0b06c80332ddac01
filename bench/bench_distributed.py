"""Benchmark (not a test): one distributed run of 2 000 loopback servers with 1, 2 and 4 workers on one PostgreSQL.

One process serves N distinct MCP servers on 127.0.0.1 (``python -m scanner.demo.server --synthetic N``). The
PostgreSQL database named by ``--db`` (default: ``$FATHOM_BENCH_POSTGRES_URL``) is emptied (its public schema is
dropped), then, every "night" over the same unchanged servers, each process in its own child so its CPU time can
be read exactly (``os.wait4``):

1. ``fathom scan`` in one process: the first night (every toolset new), then an unchanged night: the baseline;
2. ``fathom scan --enqueue`` + W ``fathom worker --until-idle`` processes, for W = 1, 2, 4: unchanged nights.

Printed per configuration: servers per second (wall time from the first process started to the last one ended,
including each worker's start-up), CPU per server of all of Fathom's processes (coordinator + workers: the
queue's client side included), the ratio against the single-process unchanged night, and PostgreSQL's growth
per unchanged server per night (``pg_database_size`` before and after; the queue's finished jobs are deleted).
PostgreSQL's own CPU is not counted (it serves other databases on a shared machine).

    .venv/bin/python bench/bench_distributed.py --db postgresql+psycopg://postgres@127.0.0.1:55450/fathom_bench
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text

from scanner.store.engine import create_store_engine


@dataclass(frozen=True)
class Night:
    label: str
    wall: float
    cpu: float
    growth: int


def _cpu_of(processes: list[subprocess.Popen[bytes]]) -> float:
    """Wait for every process and sum its own CPU time (user + system)."""
    total = 0.0
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise SystemExit(f"{process.args!r} failed with {process.returncode}")
        total += usage.ru_utime + usage.ru_stime
    return total


def _size(db: str) -> int:
    engine = create_store_engine(db)
    try:
        with engine.connect() as connection:
            return int(connection.execute(text("SELECT pg_database_size(current_database())")).scalar_one())
    finally:
        engine.dispose()


def _fathom(*args: str) -> list[str]:
    return [sys.executable, "-m", "scanner", *args]


def single(db: str, listing: Path, concurrency: int, label: str) -> Night:
    before = _size(db)
    started = time.perf_counter()
    argv = _fathom("scan", str(listing), "--db", db, "--allow-private", "--concurrency", str(concurrency))
    argv += ["--per-host", str(concurrency)]
    cpu = _cpu_of([subprocess.Popen(argv, stdout=subprocess.DEVNULL)])
    return Night(label, time.perf_counter() - started, cpu, _size(db) - before)


def distributed(db: str, listing: Path, concurrency: int, workers: int) -> Night:
    before = _size(db)
    started = time.perf_counter()
    cpu = _cpu_of([subprocess.Popen(_fathom("scan", str(listing), "--db", db, "--enqueue"), stdout=subprocess.DEVNULL)])
    share = max(concurrency // workers, 1)
    argv = _fathom("worker", "--db", db, "--allow-private", "--until-idle", "--concurrency", str(share))
    argv += ["--per-host", str(share)]
    cpu += _cpu_of([subprocess.Popen([*argv, "--name", f"w{n}"], stdout=subprocess.DEVNULL) for n in range(workers)])
    wall = time.perf_counter() - started
    engine = create_store_engine(db)
    with engine.connect() as connection:
        status = connection.execute(text("SELECT status FROM runs ORDER BY id DESC LIMIT 1")).scalar_one()
    engine.dispose()
    if status != "finished":
        raise SystemExit(f"the distributed run with {workers} workers ended {status}, not finished")
    return Night(
        f"{workers} worker{'s' if workers > 1 else ''} (concurrency {share} each)", wall, cpu, _size(db) - before
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=os.environ.get("FATHOM_BENCH_POSTGRES_URL", ""))
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64, help="in all: split between the workers")
    args = parser.parse_args()
    if not args.db:
        raise SystemExit("give --db postgresql+psycopg://... (a scratch database: it is emptied)")
    count = args.servers
    engine = create_store_engine(args.db)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()

    host = subprocess.Popen(
        [sys.executable, "-m", "scanner.demo.server", "--synthetic", str(count)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert host.stdout is not None
        base = host.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="fathom-bench-") as scratch:
            listing = Path(scratch) / "servers.json"
            servers = [{"name": f"bench/s{n:05d}", "url": f"{base}/s{n:05d}/mcp"} for n in range(count)]
            listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
            first = single(args.db, listing, args.concurrency, "one process, first night")
            baseline = single(args.db, listing, args.concurrency, "one process, unchanged night")
            nights = [distributed(args.db, listing, args.concurrency, workers) for workers in (1, 2, 4)]
    finally:
        host.kill()
        host.wait()

    print(f"{count} loopback servers, concurrency {args.concurrency} in all, one PostgreSQL, {os.cpu_count()} cores")
    print(f"  {'':40}{'servers/s':>10}{'CPU ms/server':>15}{'CPU vs one':>12}{'PG B/server':>13}")
    for night in (first, baseline, *nights):
        per = night.cpu / count
        ratio = f"{per / (baseline.cpu / count):.2f}x" if night is not first else ""
        line = f"  {night.label:<40}{count / night.wall:>10.0f}{per * 1000:>15.2f}{ratio:>12}"
        print(f"{line}{night.growth / count:>13.0f}")


if __name__ == "__main__":
    main()
