"""Profile a whole ``fathom scan`` (every thread: the event loop's and the writer's) of N loopback servers.

One child process serves N synthetic servers (``python -m scanner.demo.server --synthetic N``), so its CPU is not
in the profile. In this process, :func:`scanner.scan.night.run_scan` scans them twice into a fresh SQLite file (a first
night, then an unchanged rescan) under cProfile timed by each thread's own CPU clock
(``time.thread_time``: waiting and being descheduled on a busy machine cost nothing): one profiler for the main
thread and one for every thread started meanwhile (the writer runs in an anyio worker thread), merged into one
table per pass. Prints the process CPU per server of each pass (``time.process_time``: every thread) and the top
functions.

    .venv/bin/python bench/profile_scan.py [--servers 2000] [--pass first|rescan|both|none] [--sort tottime]
        [--top 40] [--save PREFIX]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, run_scan


class AllThreads:
    """cProfile on the current thread and on every thread started while it is on."""

    def __init__(self) -> None:
        self.profilers: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _start_in_thread(self, *_args: Any) -> None:
        profiler = cProfile.Profile(time.thread_time)
        with self._lock:
            self.profilers.append(profiler)
        profiler.enable()  # replaces this hook for the thread

    def __enter__(self) -> AllThreads:
        threading.setprofile(self._start_in_thread)
        main = cProfile.Profile(time.thread_time)
        self.profilers.append(main)
        main.enable()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.profilers[0].disable()
        threading.setprofile(None)  # type: ignore[arg-type]

    def stats(self) -> pstats.Stats:
        merged = pstats.Stats(self.profilers[0])
        for profiler in self.profilers[1:]:
            profiler.create_stats()
            merged.add(profiler)
        return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--pass", dest="which", choices=("first", "rescan", "both", "none"), default="both")
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--save", metavar="PREFIX", help="also write each pass's stats to PREFIX-<pass>.pstats")
    args = parser.parse_args()
    count = args.servers
    host = subprocess.Popen(
        [sys.executable, "-m", "scanner.demo.server", "--synthetic", str(count)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert host.stdout is not None
        base = host.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="fathom-profile-") as scratch:
            listing = Path(scratch) / "servers.json"
            servers = [{"name": f"bench/s{n:05d}", "url": f"{base}/s{n:05d}/mcp"} for n in range(count)]
            listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
            crawl = CrawlSettings(concurrency=args.concurrency, per_host=args.concurrency, allow_private=True)
            config = ScanConfig(source=str(listing), db_url=f"sqlite:///{Path(scratch) / 'p.db'}", crawl=crawl)
            for label in ("first", "rescan"):
                profiled = args.which in (label, "both")
                cpu, wall = time.process_time(), time.perf_counter()
                if profiled:
                    with AllThreads() as profile:
                        summary = run_scan(config)
                else:
                    summary = run_scan(config)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                print(f"{label}: {summary.counts}, {cpu / count * 1000:.2f} ms CPU/server, {count / wall:.0f}/s")
                if profiled:
                    stats = profile.stats()
                    if args.save:
                        stats.dump_stats(f"{args.save}-{label}.pstats")
                    stats.sort_stats(args.sort).print_stats(args.top)
    finally:
        host.kill()
        host.wait()


if __name__ == "__main__":
    main()
