"""Benchmark (not a test): a whole ``fathom scan`` of this tree against another commit's, alternating, one host.

``bench_scan.py`` runs each figure once a round beside its baselines; on the project's 2-core machine one
first-night run of the same code varies by about ±10 % (13.8 to 17.3 ms CPU a server at 2 000 servers, in one
hour), more than most single changes save. This one judges a change: it exports ``--base`` (a git ref, ``main``
by default; its ``scanner`` and ``migrations``), compiles both trees, starts one demo host
(``scanner.demo.server --synthetic N``) and runs, ``--rounds`` times and alternating base and this tree, a first
night into a fresh SQLite file and an unchanged rescan of it, each ``fathom scan`` a child process whose own CPU
is read with ``os.wait4`` (every thread: the event loop's and the writer's). Prints each run as it ends, then per
side the median, the spread and the ratio base/new.

    .venv/bin/python bench/ab_scan.py [--base main] [--servers 2000] [--rounds 6] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_measure import export
from bench_scan import run_measured

ROOT = Path(__file__).resolve().parents[1]
PASSES = ("first", "rescan")


def scan_cpu(tree: Path, listing: Path, database: Path, concurrency: int) -> float:
    """CPU seconds of one ``fathom scan`` run from ``tree`` (its package first on the path)."""
    argv = [sys.executable, "-m", "scanner", "scan", str(listing), "--db", str(database), "--allow-private"]
    argv += ["--concurrency", str(concurrency), "--per-host", str(concurrency), "--format", "json"]
    return run_measured(argv, env=os.environ | {"PYTHONPATH": str(tree)}, cwd=tree).cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git ref to compare this tree with (default: main)")
    parser.add_argument("--servers", type=int, default=2000, help="loopback servers scanned (default: 2000)")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default: 6)")
    parser.add_argument(
        "--concurrency", type=int, default=64, help="the scan's --concurrency and --per-host (default: 64)"
    )
    args = parser.parse_args()
    count = args.servers
    with tempfile.TemporaryDirectory(prefix="fathom-ab-scan-") as scratch:
        work = Path(scratch)
        trees = {"base": work / "base", "new": ROOT}
        trees["base"].mkdir()
        export(args.base, trees["base"], ("scanner", "migrations"))
        for tree in trees.values():  # an installed Fathom has its modules compiled; a run should not pay for it
            compileall.compile_dir(tree / "scanner", quiet=1)
        host = subprocess.Popen(
            [sys.executable, "-m", "scanner.demo.server", "--synthetic", str(count)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(ROOT),
        )
        try:
            assert host.stdout is not None
            address = host.stdout.readline().strip()
            listing = work / "servers.json"
            servers = [{"name": f"bench/s{n:05d}", "url": f"{address}/s{n:05d}/mcp"} for n in range(count)]
            listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
            samples: dict[str, dict[str, list[float]]] = {side: {name: [] for name in PASSES} for side in trees}
            for round_number in range(args.rounds):
                for side, tree in trees.items():
                    database = work / f"{side}-{round_number}.db"
                    for name in PASSES:
                        cpu = scan_cpu(tree, listing, database, args.concurrency)
                        samples[side][name].append(cpu * 1000 / count)
                    print(
                        f"round {round_number + 1} {side:<4} "
                        + "  ".join(f"{name} {samples[side][name][-1]:6.2f}" for name in PASSES)
                        + f"  ms CPU/server, load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
        finally:
            host.kill()
            host.wait()
    print(f"\nbase {args.base} vs this tree: {count} servers, {args.rounds} alternating rounds, ms CPU per server")
    for name in PASSES:
        old, new = samples["base"][name], samples["new"][name]
        print(
            f"  {name:<7} base {statistics.median(old):6.2f} ({min(old):.2f}-{max(old):.2f})   "
            f"new {statistics.median(new):6.2f} ({min(new):.2f}-{max(new):.2f})   "
            f"base/new {statistics.median(old) / statistics.median(new):.2f}x"
        )


if __name__ == "__main__":
    main()
