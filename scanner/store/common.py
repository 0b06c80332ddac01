"""What every room of the store shares: the clock, the Core tables, the findings' row <-> object mapping, and the
few lookups the run, write, aggregate and read sides all need (one copy each).

``now`` is read through this module (``common.now()``), never imported by name, so a test can fix the store's
clock in one place.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Table, func, select
from sqlalchemy.orm import Session

from scanner.errors import InputError
from scanner.models import Finding, Severity
from scanner.store import codec
from scanner.store.tables import Base, Run

# Bound parameters per ``IN (...)`` list: well under SQLite's limit (32 766; 999 before 3.32) and PostgreSQL's.
IN_CHUNK = 500


def now() -> datetime:
    """The store's clock: every timestamp it writes comes from here."""
    return datetime.now(UTC)


def aware(moment: datetime) -> datetime:
    """``moment`` as timezone-aware UTC (a naive time is taken to be UTC already)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def chunks(values: Sequence[Any], size: int | None = None) -> Iterator[Sequence[Any]]:
    """``values`` in slices of ``size`` (default :data:`IN_CHUNK`, read at call time) for ``IN (...)`` lists."""
    step = size if size is not None else IN_CHUNK
    for start in range(0, len(values), step):
        yield values[start : start + step]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while many short-lived objects are made (result rows turned into
    values; a batch of results turned into rows and written).

    None of them is in a cycle, yet each 700 allocations would start a collection that walks every young object,
    promoting what the block still holds to older generations, and now and then walks every object of the process
    (a year's report: ~2 s; a first night written in batches of 64: ~0.4 ms of CPU a server). Reference counting
    still frees everything at once; the collector is switched back on (if it was on) when the block ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


TABLES: Mapping[str, Table] = Base.metadata.tables


def _table(name: str) -> Table:
    return TABLES[name]


# Core tables: the write path and the bulk reads speak Core (no ORM objects per row).
SERVERS = _table("servers")
RUNS = _table("runs")
SCANS = _table("scans")
TOOLSETS = _table("toolsets")
MEASUREMENTS = _table("measurements")
TOOLSET_TOKENS = _table("toolset_tokens")
TOOL_TOKENS = _table("tool_tokens")
FINDINGS = _table("findings")
EVENTS = _table("events")
AGGREGATES = _table("run_aggregates")
FINDING_COLUMNS = tuple(
    FINDINGS.c[name]
    for name in ("code", "slug", "severity", "tool", "message", "hint", "pointer", "details", "tool_index")
)


def finding_from_row(row: Any) -> Finding:
    """A finding from a ``findings`` row: a Core result row, an ORM object, or anything with its column names.

    A severity the catalogue does not know (a crafted row, or a newer Fathom's) reads as a problem, the worst, and
    is said once: an unreadable severity never passes a gate (issue 42).
    """
    severity = stored_severity(row.severity)
    return Finding(
        code=row.code,
        rule=row.slug,
        severity=severity,
        tool=row.tool,
        message=row.message,
        hint=row.hint,
        pointer=row.pointer,
        details=dict(row.details or {}),
        tool_index=row.tool_index,
    )


def finding_values(finding: Finding, toolset_id: int | None, rule_version: str, scan_id: int | None) -> dict[str, Any]:
    """A ``findings`` row for a bulk insert, every value cut to its column's size."""
    return {
        "toolset_id": toolset_id,
        "scan_id": scan_id,
        "rule_version": rule_version,
        "code": str(finding.code)[:16],
        "slug": str(finding.rule)[:64],
        "severity": int(finding.severity),
        "tool": codec.text(finding.tool, 300),
        "tool_index": finding.tool_index if isinstance(finding.tool_index, int) else None,
        "message": str(finding.message)[:2000],
        "hint": str(finding.hint)[:1000],
        "pointer": codec.text(finding.pointer, 1000),
        "details": codec.details_json(finding.details),
    }


_SEVERITIES = {int(severity): severity for severity in Severity}


def stored_severity(value: object) -> Severity:
    """A stored severity; one the catalogue does not know reads as a problem, the worst (said once)."""
    found = _SEVERITIES.get(value) if type(value) is int else None
    if found is None:
        from scanner.store.readsafe import unreadable

        unreadable("findings.severity", f"a severity the catalogue does not know ({str(value)[:20]!r})", "problem")
        return Severity.PROBLEM
    return found


def add_severity(counts: list[int], severity: object, count: int = 1) -> None:
    """Add ``count`` findings of ``severity`` to ``counts`` = [problems, warnings, notes]; a stored severity
    outside the three counts as a problem, the worst (:func:`stored_severity`). The one place findings are
    counted by severity."""
    counts[int(stored_severity(severity))] += count


def severity_counts(findings: Iterable[Finding]) -> tuple[int, int, int]:
    """(problems, warnings, notes) of ``findings``."""
    counts = [0, 0, 0]
    for finding in findings:
        add_severity(counts, int(finding.severity))
    return counts[0], counts[1], counts[2]


def scoring_versions(connection: Connection | Session) -> dict[int, str]:
    """Each run's rule version for counting findings: the rescored one (its aggregate's) if any, else its own."""
    rows = connection.execute(
        select(RUNS.c.id, func.coalesce(AGGREGATES.c.rule_version, RUNS.c.rule_version)).outerjoin(
            AGGREGATES, AGGREGATES.c.run_id == RUNS.c.id
        )
    )
    return {run_id: version for run_id, version in rows}


def server_id(connection: Connection | Session, name: str) -> int:
    """The id of the server named ``name``; :class:`InputError` if the database has none."""
    found = connection.execute(select(SERVERS.c.id).where(SERVERS.c.name == name)).scalar()
    if found is None:
        raise unknown_server(connection, name)
    return int(found)


def unknown_server(connection: Connection | Session, name: str) -> InputError:
    """The error for a server name the database does not hold, naming the nearest stored name when one is close
    (a typo such as ``example/quikcalc`` for ``example/quickcalc``)."""
    import difflib

    names = [str(stored) for stored in connection.execute(select(SERVERS.c.name)).scalars()]
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not near:  # a name given without its namespace (quickcalc for example/quickcalc)
        tails = {stored.rsplit("/", 1)[-1]: stored for stored in names}
        near = [tails[tail] for tail in difflib.get_close_matches(name, list(tails), n=1, cutoff=0.75)]
    hint = f" Did you mean {near[0]!r}?" if near else " (fathom servers lists them.)"
    return InputError(f"no server named {name!r} in this database.{hint}")


def get_run(session: Session, run_id: int) -> Run:
    """The run ``run_id`` as an ORM object (to change it); :class:`InputError` if there is none."""
    run = session.get(Run, run_id)
    if run is None:
        raise InputError(f"no run {run_id} in this database.")
    return run


def toolset_findings(connection: Connection | Session, toolset_id: int, rule_version: str) -> list[Finding]:
    """A toolset's own findings under ``rule_version``, in the order they were written."""
    rows = connection.execute(
        select(*FINDING_COLUMNS)
        .where(
            FINDINGS.c.toolset_id == toolset_id,
            FINDINGS.c.rule_version == rule_version,
            FINDINGS.c.scan_id.is_(None),
        )
        .order_by(FINDINGS.c.id)
    )
    return [finding_from_row(row) for row in rows]


def scan_findings(connection: Connection | Session, scan_id: int) -> list[Finding]:
    """A scan's own findings (over time, MCP5xx; lanes, MCP6xx; on the instructions), in the order written."""
    rows = connection.execute(select(*FINDING_COLUMNS).where(FINDINGS.c.scan_id == scan_id).order_by(FINDINGS.c.id))
    return [finding_from_row(row) for row in rows]
