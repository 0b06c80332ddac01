"""Benchmark (not a test): what the store's boundary costs on the write path.

The engine cleans every bound string and JSON value of NUL and lone surrogates and translates driver errors
(``scanner/store/engine.py``). This writes the same servers as ``bench/profile_write.py`` (the demo host's 8-tool
lists, every list premeasured so only the store's own work is timed) into two fresh SQLite files in this process:
once with the engine exactly as shipped, once with the parameter hook removed (the baseline), alternating the
order over several rounds, and prints CPU ms per server for both and their ratio.

    .venv/bin/python bench/bench_store_boundary.py [--servers 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import event

from scanner.measure.toollist import measure
from scanner.models import CheckReport, Toolset
from scanner.store import open_store
from scanner.store.engine import _writable_parameters

sys.path.insert(0, str(Path(__file__).parent))
from profile_write import outcomes, write_pass


def timed_passes(path: Path, items: list, measurer: object, guarded: bool) -> tuple[float, float]:
    store = open_store(f"sqlite:///{path}")
    if not guarded:
        event.remove(store.engine, "before_cursor_execute", _writable_parameters)
    with store:
        figures = []
        for _ in range(2):  # first night (every list new), then unchanged
            started = time.process_time()
            write_pass(store, items, measurer)  # type: ignore[arg-type]
            figures.append((time.process_time() - started) * 1000 / len(items))
    return figures[0], figures[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    items = outcomes(args.servers)
    reports = {}
    for _, outcome in items:
        toolset = Toolset.from_tools(outcome.tools or ())
        reports[toolset.sha256] = measure(toolset)

    def lookup(toolset: Toolset) -> CheckReport:
        return reports[toolset.sha256]

    totals = {True: [0.0, 0.0], False: [0.0, 0.0]}
    with tempfile.TemporaryDirectory(prefix="fathom-boundary-") as scratch:
        for number in range(args.rounds):
            for guarded in (number % 2 == 0, number % 2 == 1):
                first, unchanged = timed_passes(Path(scratch) / f"{number}-{guarded}.db", items, lookup, guarded)
                totals[guarded][0] += first
                totals[guarded][1] += unchanged
    print(f"{args.servers} servers, 8 tools each, premeasured, {args.rounds} rounds (CPU ms per server)")
    for index, label in enumerate(("record_scan, first night", "record_scan, unchanged")):
        shipped = totals[True][index] / args.rounds
        baseline = totals[False][index] / args.rounds
        ratio = shipped / baseline
        print(f"  {label:<26} shipped {shipped:6.3f}   without the hook {baseline:6.3f}   ratio {ratio:5.2f}x")


if __name__ == "__main__":
    main()
