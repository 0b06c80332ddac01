"""Every query over the store's history, and the bulk reads the report uses: a few column queries per chunk of
servers, never one per server.

One read path: a server's history (:func:`history`) is :func:`histories` of one name, so the CLI's table and the
report's charts count tokens and findings the same way. The bulk reads select only the columns they need and
group finding counts in SQL; a report over 2 000 servers and a year of nightly runs (730 000 scans) reads them
in seconds. Findings are counted under each run's scoring rule version (the rescored one after a rescore).

One module per section: run_reads, toolset_reads, server_reads, leaderboard_reads, finding_reads, diff_reads,
check_reads."""

from __future__ import annotations

from scanner.store.read.check_reads import StoredList, stored_list
from scanner.store.read.diff_reads import diff
from scanner.store.read.finding_reads import finding_chunks, findings, open_findings_of
from scanner.store.read.leaderboard_reads import LEADER_CHUNK, leaderboard, leaderboard_chunks, leaderboard_of
from scanner.store.read.run_reads import database_stats, rule_hits, runs, trends
from scanner.store.read.server_reads import (
    RECENT_METRICS,
    events,
    events_of,
    histories,
    history,
    history_columns,
    lanes_of,
    run_spec,
    scan_scores,
    server_ids,
    server_names,
    servers,
    stderr_tail,
    toolsets_packed,
    toolsets_tools,
    unpack_tools,
)
from scanner.store.read.toolset_reads import (
    scans_instructions_tokens,
    toolset_costs,
    toolset_findings,
    toolset_tokens,
    toolset_tools,
    toolsets_costs,
)

__all__ = [
    "LEADER_CHUNK",
    "RECENT_METRICS",
    "StoredList",
    "database_stats",
    "diff",
    "events",
    "events_of",
    "finding_chunks",
    "findings",
    "histories",
    "history",
    "history_columns",
    "lanes_of",
    "leaderboard",
    "leaderboard_chunks",
    "leaderboard_of",
    "open_findings_of",
    "rule_hits",
    "run_spec",
    "runs",
    "scan_scores",
    "scans_instructions_tokens",
    "server_ids",
    "server_names",
    "servers",
    "stderr_tail",
    "stored_list",
    "toolset_costs",
    "toolset_findings",
    "toolset_tokens",
    "toolset_tools",
    "toolsets_costs",
    "toolsets_packed",
    "toolsets_tools",
    "trends",
    "unpack_tools",
]
