"""Profile (not a test): the store's write path in-process, no network, the same tool lists as ``bench_scan``.

Writes N servers (the demo host's synthetic 8-tool lists, all distinct) into a fresh SQLite file with the real
``scanner.measure.toollist.measure`` (a first night: every list new), then rescans them unchanged (every list known),
and
prints CPU milliseconds per server for each pass and for ``measure`` alone. ``--profile first|rescan|measure``
prints the top of a cProfile of that pass instead, sorted by cumulative or own time. ``--against DIR`` (a folder
holding another version's ``scanner`` package, e.g. ``git archive main scanner | tar -x -C /tmp/old``) runs the
figures in child processes, that code and this one alternately, ``--rounds`` times each, and prints each one's
median with the ratio and the machine's load: an A/B on a busy machine. ``--url`` writes into a scratch PostgreSQL
database instead (every table in it is dropped first).

    .venv/bin/python bench/profile_write.py [--servers 500] [--batch 64] [--premeasured] [--profile first]
        [--sort tottime] [--top 40] [--against /tmp/old --rounds 5] [--url postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_store_growth import empty_database

from scanner.demo.server import synthetic_sites
from scanner.measure.toollist import measure
from scanner.models import CheckReport, Outcome, ScanOutcome, ServerEntry, Toolset, Transport
from scanner.rules import RULES_VERSION
from scanner.store import Measure, Store, open_store


def outcomes(count: int) -> list[tuple[ServerEntry, ScanOutcome]]:
    """What the crawler hands the writer for the demo host's ``count`` synthetic servers."""
    result = []
    for site in synthetic_sites(count):
        entry = ServerEntry(
            name=f"bench/{site.name}", transport=Transport.HTTP, url=f"http://127.0.0.1:1/{site.name}/mcp"
        )
        outcome = ScanOutcome(
            outcome=Outcome.OK,
            transport="streamable-http",
            tools=tuple(site.tools),
            server_name=site.name,
            server_version=site.version,
            protocol_version="2025-11-25",
            era="legacy",
            capability_profile="rich",
            timings_ms={"connect": 1.234, "initialize": 2.5, "list": 1.75, "total": 5.6},
            pages=1,
            extra={"session": True},
        )
        result.append((entry, outcome))
    return result


def write_pass(
    store: Store, items: list[tuple[ServerEntry, ScanOutcome]], measurer: Measure = measure, batch: int = 1
) -> None:
    """One run of ``items``, handed to the store ``batch`` at a time (1: ``record_scan`` per server; more: what the
    crawl's writer hands ``record_scans`` when that many results are waiting, up to its concurrency)."""
    run_id = store.start_run("bench", RULES_VERSION, {})
    for start in range(0, len(items), batch):
        if batch == 1:
            store.record_scan(run_id, *items[start], measurer)
        else:
            store.record_scans(run_id, items[start : start + batch], measurer)
    store.finish_run(run_id)


def timed(label: str, count: int, action: Callable[[], None], profile: bool, sort: str, top: int) -> None:
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        action()
        profiler.disable()
        pstats.Stats(profiler).sort_stats(sort).print_stats(top)
        return
    started = time.process_time()
    action()
    print(f"  {label:<28}{(time.process_time() - started) * 1000 / count:8.2f} CPU ms/server")


def compare(against: str, rounds: int, argv: list[str]) -> None:
    """This profile's figures from child processes, ``against``'s package and this one alternately, ``rounds`` times
    each: the median of each, the ratio (this / against) and the load average before each round."""
    figures: dict[str, dict[str, list[float]]] = {"against": {}, "this": {}}
    loads = []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        for side in ("against", "this"):
            env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
            if side == "against":
                env["PYTHONPATH"] = against
            output = subprocess.run(
                [sys.executable, __file__, *argv], env=env, capture_output=True, text=True, check=True
            )
            for label, value in re.findall(r"^  (.+?)\s+([\d.]+) CPU ms/server$", output.stdout, re.MULTILINE):
                figures[side].setdefault(label, []).append(float(value))
    print(f"{rounds} rounds, alternating; load average {min(loads):.2f}-{max(loads):.2f}")
    for label, values in figures["this"].items():
        old, new = statistics.median(figures["against"][label]), statistics.median(values)
        print(f"  {label:<28}{old:8.2f} -> {new:6.2f} CPU ms/server (median)  x{new / old:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=500)
    parser.add_argument("--profile", choices=("first", "rescan", "measure"))
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--batch", type=int, default=1, help="results per store call (the crawl hands up to 64)")
    parser.add_argument(
        "--premeasured", action="store_true", help="measure every list beforehand: time the store's own work only"
    )
    parser.add_argument("--against", help="another version's folder holding its scanner package: an A/B")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each side with --against")
    parser.add_argument("--url", help="a scratch PostgreSQL database instead of a SQLite file (emptied first)")
    args = parser.parse_args()
    if args.against:
        argv = [f"--servers={args.servers}", f"--batch={args.batch}"] + ["--premeasured"] * args.premeasured
        argv += [f"--url={args.url}"] if args.url else []
        compare(args.against, args.rounds, argv)
        return
    items = outcomes(args.servers)
    toolsets = [Toolset.from_tools(outcome.tools or ()) for _, outcome in items]
    measure(toolsets[0])  # load the tokenizer and the rule catalogue outside the figures
    measurer: Measure = measure
    if args.premeasured:
        reports = {toolset.sha256: measure(toolset) for toolset in toolsets}

        def lookup(toolset: Toolset) -> CheckReport:
            return reports[toolset.sha256]

        measurer = lookup

    def measure_all() -> None:
        for toolset in toolsets:
            measure(toolset)

    with tempfile.TemporaryDirectory(prefix="fathom-profile-") as scratch:
        if args.url:
            empty_database(args.url)
        store = open_store(args.url or f"sqlite:///{Path(scratch) / 'profile.db'}")
        with store:
            print(f"{args.servers} servers, 8 tools each, in-process")
            for label, action in (
                ("measure alone", measure_all),
                ("record_scan, first night", lambda: write_pass(store, items, measurer, args.batch)),
                ("record_scan, unchanged", lambda: write_pass(store, items, measurer, args.batch)),
            ):
                wanted = {"measure alone": "measure", "record_scan, first night": "first"}.get(label, "rescan")
                if args.profile is None or args.profile == wanted:
                    timed(label, args.servers, action, args.profile is not None, args.sort, args.top)
                elif wanted == "first":
                    write_pass(store, items, measurer, args.batch)  # the rescan profile needs the first night written


if __name__ == "__main__":
    main()
