"""Benchmark the command line as a user meets it (not a test): ``fathom --help`` start-up, and the ``servers`` and
``history`` queries over the 60-run x 2 000-server database of ``bench_report.py``.

    python bench/bench_report.py --generate-only --runs 60 --servers 2000 --db /tmp/60x2000.db   # once
    python bench/bench_cli.py --db /tmp/60x2000.db                       # this checkout
    python bench/bench_cli.py --db /tmp/60x2000.db --source /tmp/main    # another checkout, e.g. `git archive main`

Each command runs in a fresh process (start-up included, as a user pays it) ``--repeat`` times; the median wall
time and the median CPU time (user + system of the child) are printed. On a shared machine the CPU time is the
figure to compare: wall time there measures the neighbours. ``--source`` puts another checkout's ``scanner``
first on ``PYTHONPATH``, so before/after figures come from the same interpreter, database and machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUN = "from scanner.cli import main; main()"


def timed(args: list[str], source: Path | None, repeat: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of ``repeat`` fresh runs of ``fathom args``."""
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", RUN, *args], env=env, capture_output=True, check=False)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {done.stderr.decode(errors='replace')[-500:]}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--source", type=Path, default=None, help="a checkout whose scanner/ is measured instead")
    parser.add_argument("--server", default="io.github.bench/server-00042", help="the server for `history`")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    db = str(args.db)
    cases = {
        "fathom --help": ["--help"],
        "servers (table)": ["servers", "--db", db],
        "servers --format json": ["servers", "--db", db, "--format", "json"],
        "history (table)": ["history", args.server, "--db", db],
        "history --format json": ["history", args.server, "--db", db, "--format", "json"],
    }
    print(f"source: {args.source or 'this checkout'}; {args.repeat} runs each; median seconds: wall / CPU")
    for label, command in cases.items():
        wall, cpu = timed(command, args.source, args.repeat)
        print(f"  {label:<24} {wall:6.3f} / {cpu:6.3f}")


if __name__ == "__main__":
    main()
