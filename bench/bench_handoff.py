"""Benchmark (not a test): the CPU a thread pays for C calls that release the interpreter while another wants it.

A scan runs two Python threads: the event loop's, busy with the network, and the writer's. tiktoken releases the
interpreter (the GIL) on every call, and sqlite3 at every row ``executemany`` steps; each release lets the loop's
thread take it, and the caller waits its turn back. This prints each thread-CPU figure alone and beside a thread
that always wants the interpreter (a stand-in for the busy loop), in one process:

1. ``scanner.measure.toollist.measure`` of the synthetic 8-tool lists (the tokenizer's ~26 calls a list included);
2. writing rows through the store's engine as sqlite3's ``executemany`` (a release per row) and as SQLAlchemy's
   multi-row INSERT (``insertmanyvalues``: a release per page of rows), what ``create_store_engine`` now does.

    .venv/bin/python bench/bench_handoff.py [--lists 300] [--rows 20000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert

from scanner.demo.server import synthetic_sites
from scanner.measure.toollist import measure
from scanner.models import Toolset
from scanner.store import common
from scanner.store.engine import open_engine


def thread_cpu(work: Callable[[], None], busy: bool) -> float:
    """``work``'s CPU on this thread's own clock, alone or beside a thread spinning in Python."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(200))

    spinner = threading.Thread(target=spin)
    if busy:
        spinner.start()
    try:
        started = time.thread_time()
        work()
        return time.thread_time() - started
    finally:
        stop.set()
        if busy:
            spinner.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", type=int, default=300)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()

    lists = [Toolset.from_tools(tuple(site.tools)) for site in synthetic_sites(args.lists)]
    measure(lists[0])  # the tokenizer's one-off build, outside the figures

    def measure_all() -> None:
        for toolset in lists:
            measure(toolset)

    with tempfile.TemporaryDirectory() as scratch:
        engine = open_engine(f"sqlite:///{Path(scratch) / 'handoff.db'}")
        rows = [
            {"sha256": f"{n:064x}", "tools_count": 1, "raw_size": 2, "data": b"[]", "first_seen": common.now()}
            for n in range(args.rows)
        ]

        def write(multirow: bool) -> Callable[[], None]:
            def work() -> None:
                engine.dialect.use_insertmanyvalues_wo_returning = multirow
                with engine.begin() as connection:
                    connection.execute(common.TOOLSETS.delete())
                    connection.execute(insert(common.TOOLSETS), rows)

            return work

        cases = {
            f"measure, ms per list ({args.lists} lists)": (measure_all, args.lists),
            f"executemany, us per row ({args.rows} rows)": (write(False), args.rows / 1000),
            f"multi-row INSERT, us per row ({args.rows} rows)": (write(True), args.rows / 1000),
        }
        print(f"{'thread CPU':<44}{'alone':>10}{'beside a busy thread':>24}{'ratio':>9}")
        for label, (work, per) in cases.items():
            alone = min(thread_cpu(work, busy=False) for _ in range(2)) * 1000 / per
            beside = min(thread_cpu(work, busy=True) for _ in range(2)) * 1000 / per
            print(f"{label:<44}{alone:>10.3f}{beside:>24.3f}{beside / alone:>8.2f}x")
        engine.dispose()


if __name__ == "__main__":
    main()
