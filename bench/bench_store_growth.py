"""How much the database grows when an unchanged registry is rescanned (the store's scale promise).

Scans N synthetic servers once, then rescans them unchanged R times, checkpointing SQLite's WAL after each run,
and prints the file growth per server per rescan (target: under 1 KB, one ``scans`` row and its index entries;
never another copy of a tool list), then how long the main queries take on the result. Not a test: it asserts
nothing. Run:

    python bench/bench_store_growth.py [--servers 2000] [--rescans 3] [--db PATH | --url postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from scanner.models import (
    CheckReport,
    Finding,
    Outcome,
    ScanOutcome,
    ServerEntry,
    Severity,
    TokenCount,
    ToolCost,
    Toolset,
    Transport,
    canonical_json,
)
from scanner.store import open_store


def synthetic_tools(seed: int) -> list[dict[str, Any]]:
    """A plausible tool list: 3 to 17 tools with descriptions and a few typed parameters each."""
    tools = []
    for index in range(3 + seed % 15):
        properties = {
            f"param_{k}": {"type": "string", "description": f"The {k}th input of tool {index} on server {seed}."}
            for k in range(1 + (seed + index) % 5)
        }
        tools.append(
            {
                "name": f"tool_{seed}_{index}",
                "description": f"Tool {index} of server {seed}: looks things up and returns them as JSON. " * 2,
                "inputSchema": {"type": "object", "properties": properties, "required": list(properties)[:1]},
            }
        )
    return tools


def simple_measure(toolset: Toolset) -> CheckReport:
    """Characters / 4 per provider and one note per tool: enough rows to be realistic, no tokenizer needed."""
    tools = list(toolset.tools)
    size = len(canonical_json(tools)) // 4
    tokens = {p: TokenCount(p, size + 300, "bench chars/4") for p in ("anthropic", "openai", "gemini")}
    costs = tuple(
        ToolCost(name=str(t.get("name")), index=i, tokens={p: len(canonical_json(t)) // 4 for p in tokens})
        for i, t in enumerate(tools)
    )
    findings = tuple(
        Finding("MCP207", "param-undescribed", Severity.WARNING, str(t.get("name")), "bench", "bench", None, {}, i)
        for i, t in enumerate(tools)
        if i % 3 == 0
    )
    return CheckReport(len(tools), tokens, size / 200_000, costs, findings, toolset.sha256)


def outcome(seed: int) -> ScanOutcome:
    return ScanOutcome(
        outcome=Outcome.OK,
        transport="streamable-http",
        tools=tuple(synthetic_tools(seed)),
        server_name=f"server-{seed}",
        server_version="1.4.2",
        protocol_version="2025-06-18",
        era="legacy",
        capability_profile="fathom-default",
        timings_ms={"connect": 41.7, "initialize": 120.3, "list": 35.9},
        pages=1,
    )


def file_size(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        page = connection.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * page)


def empty_database(url: str) -> None:
    """Drop every table of the scratch PostgreSQL database ``url`` (its ``public`` schema, made again empty)."""
    scratch = create_engine(url)
    with scratch.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    scratch.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--rescans", type=int, default=3)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--url", help="a PostgreSQL URL instead (a scratch database: every table in it is dropped)")
    args = parser.parse_args()

    folder = tempfile.TemporaryDirectory()
    path = args.db or Path(folder.name) / "bench.db"
    if args.url:
        empty_database(args.url)
    store = open_store(args.url or f"sqlite:///{path}")

    def size() -> int:
        if not args.url:
            return file_size(path)
        with store.engine.connect() as connection:  # every table's heap, indexes and TOAST, after a VACUUM
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM"))
            query = "SELECT sum(pg_total_relation_size(oid)) FROM pg_class WHERE relkind = 'r' AND relnamespace = "
            return int(connection.execute(text(query + "'public'::regnamespace")).scalar_one())

    entries = [
        ServerEntry(
            name=f"io.example/server-{i:05d}", transport=Transport.STREAMABLE_HTTP, url=f"https://s{i}.example/"
        )
        for i in range(args.servers)
    ]
    outcomes = [outcome(i) for i in range(args.servers)]

    def run_once(label: str) -> float:
        started = time.perf_counter()
        run_id = store.start_run("bench", "1", {"concurrency": 32})
        for server, result in zip(entries, outcomes, strict=True):
            store.record_scan(run_id, server, result, simple_measure)
        store.finish_run(run_id)
        elapsed = time.perf_counter() - started
        print(f"{label}: {args.servers} servers in {elapsed:.1f} s ({args.servers / elapsed:.0f}/s)")
        return elapsed

    run_once("first scan")
    base = size()
    print(f"after the first scan: {base:,} bytes ({base / args.servers:,.0f} bytes per server, tool lists included)")
    sizes = [base]
    for number in range(1, args.rescans + 1):
        run_once(f"rescan {number} (unchanged)")
        sizes.append(size())
    growth = [after - before for before, after in itertools.pairwise(sizes)]
    per_server = [delta / args.servers for delta in growth]
    print("growth per rescan:", ", ".join(f"{delta:,} bytes" for delta in growth))
    print(f"bytes per unchanged server per rescan: {sum(per_server) / len(per_server):.0f}")
    print("rows:", store.database_stats())

    last = store.runs()[-1].id
    name = entries[len(entries) // 2].name
    for label, query in (
        ("leaderboard(last run)", lambda: store.leaderboard(last)),
        ("servers()", store.servers),
        ("trends()", store.trends),
        ("findings(run=last)", lambda: store.findings(run=last)),
        ("findings()", store.findings),
        ("findings(server=one)", lambda: store.findings(server=name)),
        ("history(one)", lambda: store.history(name)),
        ("diff(one)", lambda: store.diff(name)),
        ("rule_hits(last run)", lambda: store.rule_hits(last)),
    ):
        started = time.perf_counter()
        result = query()
        count = len(result) if isinstance(result, list | dict) else 1
        print(f"{label}: {count} rows in {time.perf_counter() - started:.2f} s")
    store.close()
    folder.cleanup()


if __name__ == "__main__":
    main()
