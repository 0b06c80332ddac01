"""Reads for the registry census and each server's health over time (``scanner.report.health`` shapes them).

Two reads, each one query (plus one for the run's registry-data findings):

- :func:`census_rows`: every server scanned in a run, with what the census counts (outcome, URL, package type, the
  number of tools listed, whether it was first seen in this run) and its outcome in another run (the previous one).
- :func:`scan_samples`: every scan since a moment, as (server, when, outcome, handshake + list milliseconds), for
  uptime and latency.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, select
from sqlalchemy.orm import aliased

from scanner.store import common
from scanner.store.tables import Run, Scan, Server, StoredFinding, ToolsetRow

_SCANS = Scan.__table__
_SERVERS = Server.__table__
_RUNS = Run.__table__
_TOOLSETS = ToolsetRow.__table__
_FINDINGS = StoredFinding.__table__


@dataclass(frozen=True)
class CensusRow:
    """One server in one run, as the registry health page counts it."""

    server: str
    outcome: str
    detail: str
    url: str | None
    registry_type: str | None  # a package's (npm, pypi, oci, ...); None for a URL
    tools_count: int | None
    first_seen_here: bool
    previous_outcome: str | None  # in the run compared with; None if the server was not scanned there


@dataclass(frozen=True)
class ScanSample:
    """One stored scan, as uptime and latency read it."""

    server: str
    at: datetime
    outcome: str
    latency_ms: float | None  # handshake + list of a scan that listed tools; None otherwise


def census_rows(engine: Engine, run_id: int, previous_run_id: int | None) -> list[CensusRow]:
    """Every server scanned in ``run_id``, by name, with its outcome in ``previous_run_id`` (if given)."""
    previous = aliased(Scan.__table__)
    query = (
        select(
            _SERVERS.c.name,
            _SERVERS.c.first_run_id,
            _SCANS.c.outcome,
            _SCANS.c.detail,
            _SCANS.c.url,
            _SCANS.c.package,
            _TOOLSETS.c.tools_count,
            previous.c.outcome.label("previous_outcome"),
        )
        .join(_SERVERS, _SERVERS.c.id == _SCANS.c.server_id)
        .outerjoin(_TOOLSETS, _TOOLSETS.c.id == _SCANS.c.toolset_id)
        .outerjoin(
            previous,
            and_(previous.c.server_id == _SCANS.c.server_id, previous.c.run_id == (previous_run_id or -1)),
        )
        .where(_SCANS.c.run_id == run_id)
        .order_by(_SERVERS.c.name)
    )
    with engine.connect() as connection:
        return [
            CensusRow(
                server=row.name,
                outcome=row.outcome,
                detail=row.detail or "",
                url=row.url,
                registry_type=_registry_type(row.package),
                tools_count=row.tools_count,
                first_seen_here=row.first_run_id == run_id,
                previous_outcome=row.previous_outcome,
            )
            for row in connection.execute(query)
        ]


def _registry_type(package: Any) -> str | None:
    if not isinstance(package, dict):
        return None
    kind = package.get("registry_type") or package.get("registryType")
    return str(kind)[:32] if kind else None


def run_findings(engine: Engine, run_id: int, prefix: str) -> list[tuple[str, str]]:
    """(server, code) of every finding of a scan of ``run_id`` whose code starts with ``prefix`` (the scan's own
    findings: MCP7xx are stored with the scan, never with a toolset)."""
    query = (
        select(_SERVERS.c.name, _FINDINGS.c.code)
        .join(_SCANS, _SCANS.c.id == _FINDINGS.c.scan_id)
        .join(_SERVERS, _SERVERS.c.id == _SCANS.c.server_id)
        .where(_SCANS.c.run_id == run_id, _FINDINGS.c.code.like(f"{prefix}%"))
        .order_by(_SERVERS.c.name, _FINDINGS.c.code)
    )
    with engine.connect() as connection:
        return [(row.name, row.code) for row in connection.execute(query)]


def scan_samples(engine: Engine, since: datetime, servers: set[str] | None = None) -> Iterator[ScanSample]:
    """Every scan at or after ``since`` (by its run's start, the scheduled time), oldest first.

    The runs are chosen first (``run_id IN``), so the scans are read through their ``(run_id, server_id)`` index:
    filtering on the joined run's start instead made SQLite walk every scan of the history (7.3 million for a year
    of nightly runs at 20 000 servers) to keep the last 30 days'."""
    recent = select(_RUNS.c.id).where(_RUNS.c.started_at >= since)
    query = (
        select(_SERVERS.c.name, _RUNS.c.started_at, _SCANS.c.outcome, _SCANS.c.timings)
        .join(_SERVERS, _SERVERS.c.id == _SCANS.c.server_id)
        .join(_RUNS, _RUNS.c.id == _SCANS.c.run_id)
        .where(_SCANS.c.run_id.in_(recent))
        .order_by(_RUNS.c.started_at, _SCANS.c.id)
    )
    with engine.connect() as connection:
        for row in connection.execute(query):
            if servers is not None and row.name not in servers:
                continue
            yield ScanSample(
                server=row.name,
                at=common.aware(row.started_at),
                outcome=row.outcome,
                latency_ms=_latency(row.outcome, row.timings),
            )


def _latency(outcome: str, timings: Any) -> float | None:
    if outcome != "ok" or not isinstance(timings, dict):
        return None
    parts = [timings.get("handshake"), timings.get("list")]
    if not all(isinstance(part, int | float) and not isinstance(part, bool) for part in parts):
        return None
    return float(parts[0]) + float(parts[1])  # type: ignore[arg-type]


@dataclass(frozen=True)
class RunFinding:
    """A finding present in a run's scan of a server, with its details (what the verdicts read)."""

    run_id: int
    server: str
    code: str
    tool: str | None
    details: dict[str, Any]


def verdict_findings(
    engine: Engine, run_ids: Sequence[int], codes: Sequence[str], names: Sequence[str] | None = None
) -> list[RunFinding]:
    """Every finding of ``codes`` present in the scans of ``run_ids`` (of the servers ``names`` only, when given),
    with its details, in two queries whatever the number of servers: the toolset's findings under its run's
    catalogue, and each scan's own (MCP809 under the entry's key). For the verdicts of a run's servers
    (scanner.report.clients_view)."""
    if not run_ids or not codes or (names is not None and not names):
        return []
    toolset = (
        select(_SCANS.c.run_id, _SERVERS.c.name, _FINDINGS.c.code, _FINDINGS.c.tool, _FINDINGS.c.details)
        .join(_SERVERS, _SERVERS.c.id == _SCANS.c.server_id)
        .join(_RUNS, _RUNS.c.id == _SCANS.c.run_id)
        .join(
            _FINDINGS,
            and_(
                _FINDINGS.c.toolset_id == _SCANS.c.toolset_id,
                _FINDINGS.c.scan_id.is_(None),
                _FINDINGS.c.rule_version == _RUNS.c.rule_version,
            ),
        )
        .where(_SCANS.c.run_id.in_(list(run_ids)), _FINDINGS.c.code.in_(list(codes)))
    )
    own = (
        select(_SCANS.c.run_id, _SERVERS.c.name, _FINDINGS.c.code, _FINDINGS.c.tool, _FINDINGS.c.details)
        .join(_SERVERS, _SERVERS.c.id == _SCANS.c.server_id)
        .join(_FINDINGS, _FINDINGS.c.scan_id == _SCANS.c.id)
        .where(_SCANS.c.run_id.in_(list(run_ids)), _FINDINGS.c.code.in_(list(codes)))
    )
    if names is not None:
        toolset = toolset.where(_SERVERS.c.name.in_(list(names)))
        own = own.where(_SERVERS.c.name.in_(list(names)))
    out = []
    with engine.connect() as connection:
        for query in (toolset, own):
            for row in connection.execute(query):
                details = row.details if isinstance(row.details, dict) else {}
                out.append(RunFinding(int(row.run_id), row.name, row.code, row.tool, details))
    return out
