"""Benchmark (not a test): ``fathom scan`` of 2 000 loopback servers beside the bare floor and the official SDK client.

One process (``python -m scanner.demo.server --synthetic N``) serves N distinct MCP servers on 127.0.0.1, one per
path. Then, each in its own child process so its CPU time (every thread) and peak memory can be read exactly
(``os.wait4``), in one run:

1. the floor (bench/floor_client.py): a plain httpx loop sending the HTTP requests Fathom sends, parsing the
   answers with ``json.loads`` and nothing else; and the bare loop (``floor_client.py --bare``): the same with only
   ``initialize`` and ``tools/list``, the baseline issue #47 states its targets against;
2. the official ``mcp`` SDK client doing initialize + tools/list for the same servers at the same concurrency
   (bench/sdk_client_baseline.py), which stores and measures nothing;
3. ``fathom scan`` of the N servers at concurrency 64 into a fresh SQLite file (the whole pipeline: connect,
   handshake, every tools/list page, token counts and rules for each new list, one transaction per server);
4. the same scan again with nothing changed (what a nightly rescan of a stable registry costs, in CPU and in
   database growth).

``--repeat R`` runs the four R times, interleaved, and keeps each one's median CPU, so a burst of load on a shared
machine moves every figure of a round, not one. Figures are printed per server and as ratios (Fathom against the
floor: target at most 2x; the SDK against Fathom: target at least 4x); ``--json PATH`` also writes the ratios
(bench/check_ratios.py compares them with the ones recorded in bench/ratios.json).

    .venv/bin/python bench/bench_scan.py [--servers 2000] [--concurrency 64] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float
    max_rss_mb: float
    stdout: str


def run_measured(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> Measured:
    """Run ``argv`` to the end and read its own CPU time and peak memory (not the parent's, not other children's)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=env, cwd=cwd)
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


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the four runs; medians are kept")
    parser.add_argument("--json", type=Path, help="write the ratios and figures here as JSON")
    args = parser.parse_args()
    count, concurrency = args.servers, args.concurrency

    # An installed Fathom has its modules byte-compiled (pip does it); a checkout run with PYTHONDONTWRITEBYTECODE
    # set would compile every module of scanner/ again in each process, which no user pays.
    compileall.compile_dir(HERE.parent / "scanner", quiet=1)
    host = subprocess.Popen(
        [sys.executable, "-m", "scanner.demo.server", "--synthetic", str(count)], stdout=subprocess.PIPE, text=True
    )
    runs: dict[str, list[Measured]] = {"floor": [], "bare": [], "sdk": [], "first": [], "rescan": []}
    growths: list[float] = []
    after_first = 0
    try:
        assert host.stdout is not None
        base = host.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="fathom-bench-") as scratch:
            work = Path(scratch)
            listing = work / "servers.json"
            servers = [{"name": f"bench/s{number:05d}", "url": f"{base}/s{number:05d}/mcp"} for number in range(count)]
            listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
            baseline = [str(listing), "--concurrency", str(concurrency)]
            for _ in range(args.repeat):
                database = work / "bench.db"
                for leftover in work.glob("bench.db*"):
                    leftover.unlink()
                fathom = [sys.executable, "-m", "scanner", "scan", str(listing), "--db", str(database)]
                fathom += ["--allow-private", "--concurrency", str(concurrency), "--per-host", str(concurrency)]
                fathom += ["--format", "json"]
                runs["floor"].append(run_measured([sys.executable, str(HERE / "floor_client.py"), *baseline]))
                runs["bare"].append(run_measured([sys.executable, str(HERE / "floor_client.py"), *baseline, "--bare"]))
                runs["sdk"].append(run_measured([sys.executable, str(HERE / "sdk_client_baseline.py"), *baseline]))
                runs["first"].append(run_measured(fathom))
                after_first = database_bytes(database)
                runs["rescan"].append(run_measured(fathom))
                growths.append((database_bytes(database) - after_first) / count)
    finally:
        host.kill()
        host.wait()

    # Said, not fatal: on a loaded machine the SDK client can run past its 30 s per server (its figures then cover
    # less work, which flatters it); the run's figures are still worth keeping.
    incomplete: dict[str, list[Any]] = {}
    for label in ("floor", "bare", "sdk"):
        answered = [json.loads(run.stdout) for run in runs[label]]
        if any(result["answered"] != count for result in answered):
            incomplete[label] = answered
    for label in ("first", "rescan"):
        counts = [json.loads(run.stdout)["counts"] for run in runs[label]]
        if any(found != {"ok": count} for found in counts):
            incomplete[label] = counts
    for label, results in incomplete.items():
        print(f"WARNING: {label}: not every server answered: {results}")
    cpu = {label: median([run.cpu for run in measured]) / count * 1000 for label, measured in runs.items()}
    rate = {label: count / median([run.wall for run in measured]) for label, measured in runs.items()}
    peak = {label: max(run.max_rss_mb for run in measured) for label, measured in runs.items()}
    ratios = {
        "first_vs_floor": cpu["first"] / cpu["floor"],
        "rescan_vs_floor": cpu["rescan"] / cpu["floor"],
        "sdk_vs_first": cpu["sdk"] / cpu["first"],
        "sdk_vs_rescan": cpu["sdk"] / cpu["rescan"],
        "sdk_vs_floor": cpu["sdk"] / cpu["floor"],
        "first_vs_bare": cpu["first"] / cpu["bare"],
        "rescan_vs_bare": cpu["rescan"] / cpu["bare"],
    }
    print(f"{count} loopback servers, concurrency {concurrency}, {args.repeat} round(s), medians; load {_load()}")
    print()
    print(
        f"  {'':38}{'servers/s':>10}{'CPU ms/server':>15}{'peak MB':>9}{'vs floor':>10}{'vs bare':>9}{'SDK / this':>12}"
    )
    for label, name in (
        ("floor", "floor (httpx loop, Fathom's requests)"),
        ("bare", "bare loop (initialize + tools/list)"),
        ("sdk", "SDK client"),
        ("first", "fathom scan, first night"),
        ("rescan", "fathom scan, unchanged rescan"),
    ):
        print(
            f"  {name:<38}{rate[label]:>10.0f}{cpu[label]:>15.2f}{peak[label]:>9.0f}"
            f"{cpu[label] / cpu['floor']:>9.2f}x{cpu[label] / cpu['bare']:>8.2f}x{cpu['sdk'] / cpu[label]:>11.2f}x"
        )
    growth = median(growths)
    print()
    print(f"  database after first scan: {after_first / 1024:.0f} KiB ({after_first / count:.0f} B/server)")
    print(f"  growth per unchanged server per rescan: {growth:.0f} B")
    print()
    targets = (
        ("first night <= 2x floor", ratios["first_vs_floor"] <= 2),
        ("rescan <= 2x floor", ratios["rescan_vs_floor"] <= 2),
        ("first night <= 2.5x bare (#47)", ratios["first_vs_bare"] <= 2.5),
        ("rescan <= 1.5x bare (#47)", ratios["rescan_vs_bare"] <= 1.5),
        ("SDK >= 5x first night (#47)", ratios["sdk_vs_first"] >= 5),
        ("SDK >= 4x rescan", ratios["sdk_vs_rescan"] >= 4),
        ("growth <= 300 B", growth <= 300),
    )
    print("  targets: " + ", ".join(f"{name}: {'met' if met else 'MISSED'}" for name, met in targets))
    if args.json is not None:
        figures = {
            "servers": count,
            "concurrency": concurrency,
            "rounds": args.repeat,
            "load": _load(),
            "cpu_ms_per_server": {label: round(value, 3) for label, value in cpu.items()},
            "servers_per_s": {label: round(value, 1) for label, value in rate.items()},
            "peak_mb": {label: round(value, 1) for label, value in peak.items()},
            "growth_bytes_per_server": round(growth, 1),
            "ratios": {name: round(value, 3) for name, value in ratios.items()},
            "incomplete": incomplete,
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


def _load() -> str:
    """The machine's load averages, said with the figures (the machine is shared)."""
    try:
        return " ".join(f"{value:.1f}" for value in os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()
