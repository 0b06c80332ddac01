"""The questions ``fathom runs|servers|history|findings|diff`` answer, as flat rows ready for a table, JSON or CSV.

Each function opens the store, asks it one query (the store writes the SQL), and flattens the frozen rows it gets
into plain dicts with stable column names. The CLI only picks the format.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scanner.lanes import lanes_text
from scanner.models import PROVIDERS
from scanner.store import open_store

RUN_COLUMNS = ["run", "started_at", "finished_at", "status", "servers_scanned", "servers_ok", "source"]
# A distributed run also shows its progress (scanned of planned) and the workers that wrote it.
DISTRIBUTED_RUN_COLUMNS = [*RUN_COLUMNS[:5], "planned", "servers_ok", "workers", "source"]
SERVER_COLUMNS = ["server", "last_outcome", "last_scanned_at", "version", "tools", *PROVIDERS, "detail"]
HISTORY_COLUMNS = [
    "run",
    "scanned_at",
    "outcome",
    "version",
    "tools",
    *PROVIDERS,
    "problems",
    "warnings",
    "notes",
    "lanes",
]
FINDING_COLUMNS = ["server", "code", "severity", "tool", "first_seen_run", "gone_run", "message"]
DIFF_COLUMNS = ["change", "tool", "detail"]


def runs(db_url: str) -> list[dict[str, Any]]:
    with open_store(db_url) as store:
        found = store.runs()
    return [
        {
            "run": run.id,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "status": run.status,
            "servers_scanned": run.servers_scanned,
            "servers_ok": run.servers_ok,
            "source": run.source,
            "rule_version": run.rule_version,
            "planned": run.planned,
            "workers": " ".join(run.workers),
        }
        for run in found
    ]


def run_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The table's columns for :func:`runs`: with ``planned`` and ``workers`` when a run is distributed."""
    return DISTRIBUTED_RUN_COLUMNS if any(row["planned"] is not None for row in rows) else RUN_COLUMNS


def servers(db_url: str) -> list[dict[str, Any]]:
    with open_store(db_url) as store:
        found = store.servers()
    return [
        {
            "server": row.name,
            "last_outcome": row.last_outcome,
            "last_scanned_at": row.last_scanned_at,
            "last_run": row.last_run_id,
            "version": row.server_version,
            "tools": row.tools_count,
            **{provider: row.tokens.get(provider) for provider in PROVIDERS},
            "detail": row.last_detail,
            "toolset_sha256": row.toolset_sha256,
        }
        for row in found
    ]


def history(db_url: str, server: str) -> list[dict[str, Any]]:
    with open_store(db_url) as store:
        found = store.history(server)
    return [
        {
            "run": row.run_id,
            "scanned_at": row.scanned_at,
            "outcome": row.outcome,
            "detail": row.detail,
            "transport": row.transport,
            "era": row.era,
            "protocol_version": row.protocol_version,
            "version": row.server_version,
            "tools": row.tools_count,
            **{provider: row.tokens.get(provider) for provider in PROVIDERS},
            "problems": row.problems,
            "warnings": row.warnings,
            "notes": row.notes,
            "toolset_sha256": row.toolset_sha256,
            "lane": row.lane,
            "lanes": lanes_text(row.lanes),
        }
        for row in found
    ]


def findings(
    db_url: str, *, rule: str | None, server: str | None, since: datetime | None, run: int | None
) -> list[dict[str, Any]]:
    with open_store(db_url) as store:
        found = store.findings(rule=rule, server=server, since=since, run=run)
    return [
        {
            "server": row.server,
            "code": row.code,
            "rule": row.rule,
            "severity": row.severity.label,
            "tool": row.tool,
            "message": row.message,
            "hint": row.hint,
            "pointer": row.pointer,
            "details": dict(row.details),
            "run": row.run_id,
            "first_seen_run": row.first_seen_run,
            "first_seen_at": row.first_seen_at,
            "gone_run": row.gone_run,
            "gone_at": row.gone_at,
        }
        for row in found
    ]


def diff(db_url: str, server: str, from_run: int | None, to_run: int | None) -> list[dict[str, Any]]:
    """One row per change: tools added/removed/changed, token deltas, findings new/fixed."""
    with open_store(db_url) as store:
        change = store.diff(server, from_run, to_run)
    rows: list[dict[str, Any]] = []
    rows += [{"change": "tool added", "tool": name, "detail": ""} for name in change.tools_added]
    rows += [{"change": "tool removed", "tool": name, "detail": ""} for name in change.tools_removed]
    rows += [
        {"change": "tool changed", "tool": name, "detail": ", ".join(fields)} for name, fields in change.tools_changed
    ]
    for provider, delta in change.token_deltas.items():
        if delta:
            before, after = change.tokens_from.get(provider, 0), change.tokens_to.get(provider, 0)
            rows.append({"change": "tokens", "tool": None, "detail": f"{provider} {before} → {after} ({delta:+d})"})
    for label, items in (("finding new", change.findings_new), ("finding fixed", change.findings_fixed)):
        rows += [{"change": label, "tool": f.tool, "detail": f"{f.code} {f.rule}: {f.message}"} for f in items]
    for side, lanes in (("from", change.lanes_from), ("to", change.lanes_to)):
        if lanes:
            rows.append({"change": f"lanes ({side})", "tool": None, "detail": lanes_text(lanes)})
    header = {
        "change": "runs",
        "tool": None,
        "detail": f"run {change.from_run} (version {change.from_version}) → run {change.to_run} "
        f"(version {change.to_version})",
    }
    return [header, *rows]
