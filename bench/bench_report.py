"""Benchmark ``fathom report`` on a synthetic year: 365 nightly runs x 2 000 servers by default (not a test).

    python bench/bench_report.py                      # generate (once, cached) then measure
    python bench/bench_report.py --runs 30            # a smaller history, for a quick look
    python bench/bench_report.py --servers 20000 --dir /big/disk   # a registry-sized year (7.3 M scans, 1.5 GB)
    python bench/bench_report.py --curve 2000,5000,20000 --dir /big/disk   # each size in turn
    python bench/bench_report.py --code /path/to/other/checkout      # time another version's scanner package
    python bench/bench_report.py --profile            # also print the top of a cProfile of build_report
    python bench/bench_report.py --tracemalloc        # also the peak Python heap of a second build

Target: ``build_report`` under 10 s wall and 500 MB peak memory at 2 000 servers; memory that does not grow with
runs x servers and time that grows at most linearly with servers. Each build runs in a fresh child process: the
parent prints what the kernel counted for it (``os.wait4``: wall, CPU, peak RSS, imports included) and the files
and bytes written; the child prints its own split, as ratios against a baseline measured in the same process:
reading the latest run's leaderboard rows alone (``Store.leaderboard``), the least any report must do, and the
time spent in each store query.

The database is written by a child process (so its memory does not count against the report's peak) through
``Store.bulk_load``, which inserts already-shaped rows, ``BATCH_SCANS`` scans per transaction: ``record_scan``
does one transaction and the history comparison per server, about 2 ms each, which would take half an hour for
730 000 scans. The events and run aggregates that ``record_scan`` and ``finish_run`` would derive are written here
from the same story. 365 x 20 000 takes about 25 minutes on the shared 2-core machine.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scanner.report import build_report
from scanner.rules import RULES
from scanner.rules.registry import RULES_VERSION
from scanner.store import open_store
from scanner.store.codec import compress_tools

HERE = Path(__file__).resolve().parent
# Under artifacts/ (gitignored): the database and the site are hundreds of MB of generated files.
WORK = HERE.parent / "artifacts" / "bench-report"
START = datetime(2025, 1, 1, 2, 0, tzinfo=UTC)
PROVIDERS = ("anthropic", "openai", "gemini")
FAILURES = ("timeout", "connect_error", "http_error", "protocol_error")


def _tools(rng: random.Random, server: int, version: int) -> list[dict[str, Any]]:
    count = rng.randint(3, 25)
    return [
        {
            "name": f"s{server}_tool_{index}",
            "description": f"Tool {index} of server {server}, version {version}: does one thing to a record.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The record's id."},
                    "limit": {"type": "integer", "description": "How many, at most."},
                },
                "required": ["id"],
            },
        }
        for index in range(count)
    ]


# Scans handed to one ``Store.bulk_load`` call: the generator holds at most this many rows (and the events and
# toolsets born with them) in memory, so 365 x 20 000 servers is written in bounded memory.
BATCH_SCANS = 200_000
TABLES = ("servers", "runs", "toolsets", "measurements", "toolset_tokens", "findings", "scans", "events")


def generate(db: Path, runs: int, servers: int, seed: int = 7) -> None:
    """Write the synthetic history into a fresh SQLite file at ``db``, ``BATCH_SCANS`` scans per transaction.

    The story (which lists change, which scans fail) is one random sequence drawn in a fixed order, so a seed gives
    the same database whatever the batch size; rows go out as soon as a batch is full and are then dropped.
    """
    rng = random.Random(seed)
    if db.exists():
        db.unlink()
    store = open_store(f"sqlite:///{db}")
    codes = [(code, int(rule.severity), rule.slug, rule.hint) for code, rule in RULES.items()]
    auth_only = set(rng.sample(range(servers), servers // 25))
    started = time.perf_counter()
    batch: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    totals: Counter[str] = Counter()

    def flush() -> None:
        totals.update(store.bulk_load(batch))
        for rows in batch.values():
            rows.clear()

    batch["servers"] = [
        {"id": i + 1, "name": f"io.github.bench/server-{i:05d}", "first_seen": START} for i in range(servers)
    ]
    batch["runs"] = [
        {
            "id": r + 1,
            "started_at": START + timedelta(days=r),
            "finished_at": START + timedelta(days=r, minutes=40),
            "status": "finished",
            "source": "bench",
            "rule_version": RULES_VERSION,
            "options": {},
            "servers_scanned": servers,
            "servers_ok": 0,
        }
        for r in range(runs)
    ]
    toolset_meta: dict[int, tuple[int, int, list[tuple[str, int]]]] = {}  # id -> (tools, max tokens, codes)

    def new_toolset(server: int, version: int) -> int:
        tools = _tools(rng, server, version)
        data, size = compress_tools(tools)
        ident = len(toolset_meta) + 1
        batch["toolsets"].append(
            {
                "id": ident,
                "sha256": f"{server:08x}{version:08x}".ljust(64, "0"),
                "tools_count": len(tools),
                "raw_size": size,
                "data": data,
                "first_seen": START,
            }
        )
        batch["measurements"].append({"toolset_id": ident, "rule_version": RULES_VERSION, "measured_at": START})
        base = 120 * len(tools)
        costs = {"anthropic": int(base * 1.4) + 346, "openai": base, "gemini": int(base * 1.05)}
        batch["toolset_tokens"].extend(
            {"toolset_id": ident, "provider": p, "tokens": costs[p], "method": "bench"} for p in PROVIDERS
        )
        hit = []
        for _ in range(rng.choice((0, 0, 1, 2, 4))):
            code, severity, slug, hint = rng.choice(codes)
            index = rng.randrange(len(tools))
            hit.append((code, severity))
            batch["findings"].append(
                {
                    "toolset_id": ident,
                    "scan_id": None,
                    "rule_version": RULES_VERSION,
                    "code": code,
                    "slug": slug,
                    "severity": severity,
                    "tool": tools[index]["name"],
                    "tool_index": index,
                    "message": f"{code} on {tools[index]['name']}",
                    "hint": hint,
                    "pointer": None,
                    "details": {},
                }
            )
        toolset_meta[ident] = (len(tools), max(costs.values()), hit)
        return ident

    current = {s: new_toolset(s, 0) for s in range(servers) if s not in auth_only}
    version = dict.fromkeys(current, 0)
    aggregates: list[dict[str, Any]] = []
    last_outcome: dict[int, str] = {}
    for r in range(runs):
        at = START + timedelta(days=r, minutes=5)
        for s in rng.sample(sorted(current), max(1, servers // 200)) if r else ():
            version[s] += 1
            current[s] = new_toolset(s, version[s])
            batch["events"].append(
                {
                    "server_id": s + 1,
                    "run_id": r + 1,
                    "scan_id": r * servers + s + 1,
                    "at": at,
                    "kind": "tool_changed",
                    "tool": f"s{s}_tool_0",
                    "code": None,
                    "details": {"fields": ["description"]},
                }
            )
        outcomes: Counter[str] = Counter()
        ok_max: list[int] = []
        hits: Counter[str] = Counter()
        with_problems = 0
        for s in range(servers):
            if s in auth_only:
                outcome = "auth_required"
            elif rng.random() < 0.04:
                outcome = rng.choice(FAILURES)
            else:
                outcome = "ok"
            outcomes[outcome] += 1
            toolset_id = current.get(s) if outcome == "ok" else None
            scan_id = r * servers + s + 1
            batch["scans"].append(
                {
                    "id": scan_id,
                    "run_id": r + 1,
                    "server_id": s + 1,
                    "scanned_at": at,
                    "outcome": outcome,
                    "detail": "" if outcome == "ok" else f"{outcome} after 10 s",
                    "transport": "streamable-http",
                    "era": "legacy",
                    "protocol_version": "2025-11-25",
                    "server_name": f"server-{s}",
                    "server_version": f"1.{version.get(s, 0)}.0",
                    "capability_profile": "fathom-default",
                    "timings": {},
                    "pages": 1,
                    "toolset_id": toolset_id,
                    "anonymous": False,
                    "extra": {},
                }
            )
            if last_outcome.get(s, "ok") != outcome:
                batch["events"].append(
                    {
                        "server_id": s + 1,
                        "run_id": r + 1,
                        "scan_id": scan_id,
                        "at": at,
                        "kind": "outcome_changed",
                        "tool": None,
                        "code": None,
                        "details": {"from": last_outcome.get(s), "to": outcome},
                    }
                )
            last_outcome[s] = outcome
            if toolset_id is not None:
                _, peak, hit = toolset_meta[toolset_id]
                ok_max.append(peak)
                hits.update({code for code, _ in hit})
                with_problems += any(sev == 0 for _, sev in hit)
        ok_max.sort()
        aggregates.append(
            {
                "run_id": r + 1,
                "rule_version": RULES_VERSION,
                "computed_at": at,
                "servers_scanned": servers,
                "servers_ok": outcomes["ok"],
                "servers_with_problems": with_problems,
                "outcomes": dict(sorted(outcomes.items())),
                "median_tokens": ok_max[len(ok_max) // 2] if ok_max else None,
                "p90_tokens": ok_max[max(0, -(-9 * len(ok_max) // 10) - 1)] if ok_max else None,
                "median_tokens_by_provider": {},
                "median_tools": None,
                "findings_by_rule": dict(sorted(hits.items())),
            }
        )
        if len(batch["scans"]) >= BATCH_SCANS:
            flush()
    flush()
    totals.update(store.bulk_load({"run_aggregates": aggregates}))
    store.close()
    print(
        f"generated {runs} runs x {servers} servers: {totals['scans']:,} scans, {totals['toolsets']:,} toolsets, "
        f"{totals['findings']:,} findings, {totals['events']:,} events in {time.perf_counter() - started:.1f} s "
        f"({db.stat().st_size / 1e6:.0f} MB)"
    )


def measure(db: Path, out: Path, profile: bool, traced: bool) -> None:
    """Time the baseline and ``build_report`` in this process; print figures and ratios."""
    store = open_store(f"sqlite:///{db}")
    last = store.runs()[-1].id
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    wall, cpu = time.perf_counter(), time.process_time()
    rows = store.leaderboard(last)
    base_wall, base_cpu = time.perf_counter() - wall, time.process_time() - cpu

    # Time spent inside each store query during the build, to split "the store" from "shaping and writing".
    in_store: defaultdict[str, float] = defaultdict(float)
    cpu_in_store: defaultdict[str, float] = defaultdict(float)
    calls: Counter[str] = Counter()
    for name in (
        "leaderboard",
        "history_columns",
        "events",
        "events_of",
        "trends",
        "rule_hits",
        "toolsets_tools",
        "runs",
    ):
        original = getattr(store, name, None)
        if original is None:  # an older checkout (--code) without this query
            continue

        def timed(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            began, began_cpu = time.perf_counter(), time.process_time()
            try:
                return _original(*args, **kwargs)
            finally:
                in_store[_name] += time.perf_counter() - began
                cpu_in_store[_name] += time.process_time() - began_cpu
                calls[_name] += 1

        setattr(store, name, timed)

    profiler = cProfile.Profile() if profile else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    result = build_report(store, out)
    if profiler:
        profiler.disable()
    report_wall, report_cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    store_seconds, store_cpu, store_calls = dict(in_store), dict(cpu_in_store), Counter(calls)
    traced_peak = None
    if traced:
        tracemalloc.start()
        build_report(store, out)
        traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()

    size = sum(path.stat().st_size for path in result.paths)
    print(f"baseline  Store.leaderboard({last}): {len(rows):,} rows in {base_wall:.2f} s wall, {base_cpu:.2f} s CPU")
    print(
        f"report    build_report: {len(result.paths):,} files ({size / 1e6:.1f} MB), {result.server_pages:,} server "
        f"pages, {result.runs_in_trends} runs in trends"
    )
    print(f"          wall {report_wall:.2f} s ({report_wall / base_wall:.1f}x baseline)  target < 10 s")
    print(f"          CPU  {report_cpu:.2f} s ({report_cpu / max(base_cpu, 1e-9):.1f}x baseline)")
    print(f"          peak RSS {peak_rss:.0f} MB (before: {rss_before:.0f} MB)  target < 500 MB")
    store_total, store_cpu_total = sum(store_seconds.values()), sum(store_cpu.values())
    print(
        f"          of which in store queries {store_total:.2f} s wall, {store_cpu_total:.2f} s CPU "
        f"({store_cpu_total / max(base_cpu, 1e-9):.1f}x baseline CPU):"
    )
    for name, seconds in sorted(store_seconds.items(), key=lambda item: -item[1]):
        print(
            f"            Store.{name:<15} {store_calls[name]:>6,} calls {seconds:7.2f} s wall "
            f"{store_cpu[name]:7.2f} s CPU"
        )
    rest, rest_cpu = report_wall - store_total, report_cpu - store_cpu_total
    print(
        f"          shaping, rendering and writing: {rest:.2f} s wall, {rest_cpu:.2f} s CPU "
        f"({rest_cpu / max(base_cpu, 1e-9):.1f}x baseline CPU)"
    )
    if traced_peak is not None:
        print(f"          peak Python heap during a second build (tracemalloc) {traced_peak / 1e6:.0f} MB")
    if profiler:
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(25)
        print(stream.getvalue())
    store.close()


def measure_child(db: Path, out: Path, flags: Sequence[str] = (), code: Path | None = None) -> dict[str, float]:
    """Run :func:`measure` in a fresh child process and return what the kernel says it cost (``os.wait4``): wall,
    CPU (user + system) and peak RSS of the whole process, imports included, and the files and bytes written.

    ``code`` puts another checkout first on the child's ``sys.path`` (its ``scanner`` package is the one timed), for
    an A/B of two versions over the same database."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(code), env.get("PYTHONPATH"))))
    command = [sys.executable, __file__, "--measure-only", f"--db={db}", f"--out={out}", *flags]
    began = time.perf_counter()
    child = subprocess.Popen(command, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"the measuring child failed: {command}")
    files = [path for path in out.rglob("*") if path.is_file()]
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "files": len(files),
        "mb_written": sum(path.stat().st_size for path in files) / 1e6,
    }


def _print_child(label: str, figures: Mapping[str, float]) -> None:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"{label}: wall {figures['wall_s']:.1f} s, CPU {figures['cpu_s']:.1f} s, peak RSS "
        f"{figures['peak_rss_mb']:.0f} MB, {figures['files']:,.0f} files ({figures['mb_written']:.0f} MB) "
        f"[whole child process, os.wait4; load average {load}]",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=365)
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--curve", type=str, default="", help="servers, comma-separated: measure each at --runs")
    parser.add_argument("--dir", type=Path, default=WORK, help="where the databases go (default: %(default)s)")
    parser.add_argument("--db", type=Path, default=None, help="default: <dir>/<runs>x<servers>.db")
    parser.add_argument("--out", type=Path, default=WORK / "site")
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--tracemalloc", action="store_true", help="build a second time under tracemalloc")
    parser.add_argument("--code", type=Path, default=None, help="time this checkout's scanner package instead")
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_only:
        measure(args.db, args.out, args.profile, args.tracemalloc)
        return
    flags = [flag for flag, on in (("--profile", args.profile), ("--tracemalloc", args.tracemalloc)) if on]
    for servers in [int(part) for part in args.curve.split(",") if part] or [args.servers]:
        db = args.db if args.db and not args.curve else args.dir / f"{args.runs}x{servers}.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        if args.generate_only:
            generate(db, args.runs, servers)
            continue
        if args.regenerate or not db.exists():
            command = [sys.executable, __file__, "--generate-only", f"--runs={args.runs}", f"--servers={servers}"]
            subprocess.run([*command, f"--db={db}"], check=True)
        shutil.rmtree(args.out, ignore_errors=True)
        _print_child(f"{args.runs} runs x {servers} servers", measure_child(db, args.out, flags, args.code))


if __name__ == "__main__":
    main()
