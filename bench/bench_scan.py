"""Benchmark (not a test): ``fathom scan`` of 2 000 loopback HTTP servers beside the official SDK client.

One process (``python -m scanner.demo.server --synthetic N``) serves N distinct MCP servers on 127.0.0.1, one per
path. Then, each in its own child process so its CPU time and peak memory can be read exactly (``os.wait4``):

1. ``fathom scan`` of the N servers at concurrency 64 into a fresh SQLite file (the whole pipeline: connect,
   handshake, every tools/list page, token counts and rules for each new list, one transaction per server);
2. the same scan again with nothing changed (what a nightly rescan of a stable registry costs, in CPU and in
   database growth);
3. the official ``mcp`` SDK client doing initialize + tools/list for the same servers at the same concurrency
   (bench/sdk_client_baseline.py), which stores and measures nothing.

Figures are printed per server and as ratios against the SDK baseline run in the same benchmark.

    .venv/bin/python bench/bench_scan.py [--servers 2000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float
    max_rss_mb: float
    stdout: str


def run_measured(argv: list[str]) -> Measured:
    """Run ``argv`` to the end and read its own CPU time and peak memory (not the parent's, not other children's)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise SystemExit(f"{argv[:4]} failed:\n{err.read()[-2000:]}")
        return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read())


def database_bytes(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    count, concurrency = args.servers, args.concurrency

    host = subprocess.Popen(
        [sys.executable, "-m", "scanner.demo.server", "--synthetic", str(count)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert host.stdout is not None
        base = host.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="fathom-bench-") as scratch:
            work = Path(scratch)
            listing = work / "servers.json"
            servers = [{"name": f"bench/s{number:05d}", "url": f"{base}/s{number:05d}/mcp"} for number in range(count)]
            listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
            database = work / "bench.db"
            fathom = [sys.executable, "-m", "scanner", "scan", str(listing), "--db", str(database)]
            fathom += ["--allow-private", "--concurrency", str(concurrency), "--per-host", str(concurrency)]
            fathom += ["--format", "json"]

            sdk = run_measured(
                [sys.executable, str(HERE / "sdk_client_baseline.py"), str(listing), "--concurrency", str(concurrency)]
            )
            first = run_measured(fathom)
            after_first = database_bytes(database)
            second = run_measured(fathom)
            after_second = database_bytes(database)
    finally:
        host.kill()
        host.wait()

    sdk_result = json.loads(sdk.stdout)
    scans = [json.loads(run.stdout) for run in (first, second)]
    print(f"{count} loopback servers, concurrency {concurrency}")
    print(f"  SDK client (initialize + tools/list): answered {sdk_result['answered']}, failed {sdk_result['failed']}")
    for label, summary in (("fathom scan, first", scans[0]), ("fathom scan, rescan", scans[1])):
        print(f"  {label}: {summary['counts']}")
    print()
    header = f"  {'':34}{'servers/s':>10}{'CPU ms/server':>15}{'peak MB':>9}{'CPU vs SDK':>12}"
    print(header)
    sdk_cpu = sdk.cpu / count
    for label, run in (
        ("SDK client (baseline)", sdk),
        ("fathom scan, first night", first),
        ("fathom scan, unchanged rescan", second),
    ):
        per = run.cpu / count
        ratio = "1.0x" if run is sdk else f"{sdk_cpu / per:.1f}x less"
        print(f"  {label:<34}{count / run.wall:>10.0f}{per * 1000:>15.2f}{run.max_rss_mb:>9.0f}{ratio:>12}")
    growth = (after_second - after_first) / count
    print()
    print(f"  database after first scan: {after_first / 1024:.0f} KiB ({after_first / count:.0f} B/server)")
    print(f"  growth per unchanged server per rescan: {growth:.0f} B")


if __name__ == "__main__":
    main()
