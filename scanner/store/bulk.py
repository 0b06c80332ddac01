"""Bulk reads for the report, and a bulk loader for synthetic histories: a few column queries, never one per server.

The per-server queries (:meth:`Store.history`, :meth:`Store.toolset_tools`) load ORM rows and run a handful of
queries each; a report over 2 000 servers and a year of nightly runs (730 000 scans) spent 20 s in them. The
functions here read the same facts in a fixed number of queries whatever the number of servers, selecting only
the columns they need, and return exactly what the per-server queries return (``tests/store/test_bulk.py``
compares them on a real multi-run database). :class:`scanner.store.Store` exposes each as a thin method.

:func:`load` writes rows straight into the tables (Core ``executemany``, one transaction): for benchmarks and
imports of trusted, already-shaped data. It bypasses the write path's caps, redaction and change history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, Select, func, select, type_coerce, update
from sqlalchemy.types import NullType

from scanner.errors import InputError
from scanner.store import codec
from scanner.store.rows import EventRow, ScanRow
from scanner.store.tables import Base

# Bound parameters per ``IN (...)`` list: well under SQLite's limit (32 766; 999 before 3.32) and PostgreSQL's.
IN_CHUNK = 500
# Rows per ``executemany`` in :func:`load`, so a year of scans is never one statement's worth of parameters.
LOAD_CHUNK = 20_000
# The order :func:`load` writes tables in, so every foreign key points at a row already written.
LOAD_ORDER = (
    "runs",
    "servers",
    "toolsets",
    "measurements",
    "toolset_tokens",
    "tool_tokens",
    "scans",
    "findings",
    "events",
    "run_aggregates",
)

_T = Base.metadata.tables
_SERVERS, _RUNS, _AGGREGATES = _T["servers"], _T["runs"], _T["run_aggregates"]
_SCANS, _TOOLSETS, _TOKENS, _FINDINGS, _EVENTS = (
    _T["scans"],
    _T["toolsets"],
    _T["toolset_tokens"],
    _T["findings"],
    _T["events"],
)


def _chunks(values: Sequence[Any], size: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def scoring_versions(connection: Connection) -> dict[int, str]:
    """Each run's rule version for counting findings: the rescored one (its aggregate's) if any, else its own."""
    rows = connection.execute(
        select(_RUNS.c.id, func.coalesce(_AGGREGATES.c.rule_version, _RUNS.c.rule_version)).outerjoin(
            _AGGREGATES, _AGGREGATES.c.run_id == _RUNS.c.id
        )
    )
    return {run_id: version for run_id, version in rows}


def server_ids(connection: Connection, names: Iterable[str] | None) -> dict[int, str]:
    """Server id -> name for ``names`` (every server when None); names not in the database are left out."""
    if names is None:
        return {ident: name for ident, name in connection.execute(select(_SERVERS.c.id, _SERVERS.c.name))}
    wanted = sorted({name for name in names if isinstance(name, str)})
    found: dict[int, str] = {}
    for chunk in _chunks(wanted):
        query = select(_SERVERS.c.id, _SERVERS.c.name).where(_SERVERS.c.name.in_(chunk))
        found.update({ident: name for ident, name in connection.execute(query)})
    return found


def _scan_query(ids: Sequence[int] | None) -> Select[Any]:
    # No join with ``toolsets`` here: 5 000 toolsets read once beat 730 000 primary-key lookups in SQL.
    query = select(
        _SCANS.c.server_id,
        _SCANS.c.id,
        _SCANS.c.run_id,
        # The timestamp as the driver returns it, converted below once per distinct value (a run's scans share
        # few; the conversion is the column type's own, so the value is what an ORM read gives).
        type_coerce(_SCANS.c.scanned_at, NullType()),
        _SCANS.c.outcome,
        _SCANS.c.detail,
        _SCANS.c.transport,
        _SCANS.c.era,
        _SCANS.c.protocol_version,
        _SCANS.c.server_name,
        _SCANS.c.server_version,
        _SCANS.c.toolset_id,
    ).order_by(_SCANS.c.server_id, _SCANS.c.id)
    return query if ids is None else query.where(_SCANS.c.server_id.in_(ids))


def histories(engine: Engine, names: Iterable[str] | None = None) -> dict[str, list[ScanRow]]:
    """Every scan of each server in ``names`` (every server when None), oldest first, keyed by server name.

    Each list equals what :meth:`Store.history` returns for that server; names not in the database are left out
    (``history`` raises for them instead). Four queries per 500 servers, whatever the length of the history:
    the scans' columns; their toolsets' sizes, hashes and tokens; toolset finding counts grouped by (toolset,
    rule version, severity); and scan-owned (MCP5xx) finding counts grouped by (scan, severity); plus the run
    versions and server names once. Scans of one toolset share one ``tokens`` mapping: read it, never change it.
    Keys come in name order.

    A year of nightly scans of 2 000 servers is 730 000 rows: ask for a few hundred servers at a time to keep
    memory flat (``scanner.report`` does).
    """
    with engine.connect() as connection:
        versions = scoring_versions(connection)
        servers = server_ids(connection, names)
        if not servers:
            return {}
        chunks: list[Sequence[int] | None] = [None] if names is None else list(_chunks(sorted(servers)))
        result: dict[int, list[ScanRow]] = {ident: [] for ident in servers}
        dialect = connection.dialect
        stamp = _SCANS.c.scanned_at.type.dialect_impl(dialect).result_processor(dialect, None)
        for chunk in chunks:
            _histories_chunk(connection, chunk, versions, stamp, result)
    return {servers[ident]: result[ident] for ident in sorted(servers, key=servers.__getitem__)}


def _histories_chunk(
    connection: Connection,
    ids: Sequence[int] | None,
    versions: Mapping[int, str],
    stamp: Callable[[Any], Any] | None,
    result: dict[int, list[ScanRow]],
) -> None:
    """Append the ScanRows of the servers ``ids`` (all when None) to ``result``, in four queries."""
    scans = connection.execute(_scan_query(ids)).all()
    if not scans:
        return
    served = sorted({row[11] for row in scans if row[11] is not None})

    # toolset id -> (tools_count, sha256), and its tokens per provider.
    toolsets: dict[int, tuple[int, str]] = {}
    tokens: dict[int, dict[str, int]] = defaultdict(dict)
    toolset_query = select(
        _TOOLSETS.c.id, _TOOLSETS.c.tools_count, _TOOLSETS.c.sha256, _TOKENS.c.provider, _TOKENS.c.tokens
    ).outerjoin(_TOKENS, _TOKENS.c.toolset_id == _TOOLSETS.c.id)
    # (toolset id, rule version) -> [problems, warnings, notes] of the toolset's own findings.
    by_toolset: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    toolset_counts = (
        select(_FINDINGS.c.toolset_id, _FINDINGS.c.rule_version, _FINDINGS.c.severity, func.count())
        .where(_FINDINGS.c.scan_id.is_(None))
        .group_by(_FINDINGS.c.toolset_id, _FINDINGS.c.rule_version, _FINDINGS.c.severity)
    )
    for chunk in [None] if ids is None else _chunks(served):
        where_toolsets = toolset_query if chunk is None else toolset_query.where(_TOOLSETS.c.id.in_(chunk))
        for toolset_id, tools_count, sha256, provider, count in connection.execute(where_toolsets):
            toolsets[toolset_id] = (tools_count, sha256)
            if provider is not None:
                tokens[toolset_id][provider] = count
        where_counts = toolset_counts if chunk is None else toolset_counts.where(_FINDINGS.c.toolset_id.in_(chunk))
        for toolset_id, version, severity, count in connection.execute(where_counts):
            if isinstance(severity, int) and 0 <= severity <= 2:
                by_toolset[(toolset_id, version)][severity] += count

    # scan id -> [problems, warnings, notes] of the scan's own (over-time, MCP5xx) findings.
    own: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    own_counts = (
        select(_FINDINGS.c.scan_id, _FINDINGS.c.severity, func.count())
        .where(_FINDINGS.c.scan_id.is_not(None))
        .group_by(_FINDINGS.c.scan_id, _FINDINGS.c.severity)
    )
    if ids is not None:
        own_counts = own_counts.join(_SCANS, _SCANS.c.id == _FINDINGS.c.scan_id).where(_SCANS.c.server_id.in_(ids))
    for scan_id, severity, count in connection.execute(own_counts):
        if isinstance(severity, int) and 0 <= severity <= 2:
            own[scan_id][severity] += count

    zero = (0, 0, 0)
    empty: dict[str, int] = {}
    no_toolset = (None, None)
    moments: dict[Any, Any] = {}
    # Counts per (toolset, version) are the same for every scan of that toolset: add them up once.
    base: dict[tuple[int | None, str], tuple[int, int, int]] = {}
    for (
        server_id,
        scan_id,
        run_id,
        raw_moment,
        outcome,
        detail,
        transport,
        era,
        protocol_version,
        server_name,
        server_version,
        toolset_id,
    ) in scans:
        version = versions[run_id]
        key = (toolset_id, version)
        counts = base.get(key)
        if counts is None:
            found = by_toolset.get(key) if toolset_id is not None else None
            counts = base[key] = (found[0], found[1], found[2]) if found else zero
        extra = own.get(scan_id)
        if extra is not None:
            counts = (counts[0] + extra[0], counts[1] + extra[1], counts[2] + extra[2])
        try:
            moment = moments[raw_moment]
        except KeyError:
            moment = moments[raw_moment] = stamp(raw_moment) if stamp is not None else raw_moment
        tools_count, sha256 = toolsets.get(toolset_id, no_toolset) if toolset_id is not None else no_toolset
        result[server_id].append(
            ScanRow(
                scan_id,
                run_id,
                moment,
                outcome,
                detail,
                transport,
                era,
                protocol_version,
                server_name,
                server_version,
                tools_count,
                tokens.get(toolset_id, empty) if toolset_id is not None else empty,
                counts[0],
                counts[1],
                counts[2],
                sha256,
                version,
            )
        )


def events(
    engine: Engine,
    server: str | None = None,
    *,
    kind: str | None = None,
    run: int | None = None,
    since: datetime | None = None,
) -> list[EventRow]:
    """Change events, oldest first, read as plain columns (no ORM rows): see :meth:`Store.events`.

    Raises :class:`InputError` for a server name not in the database.
    """
    query = (
        select(
            _EVENTS.c.id,
            _SERVERS.c.name,
            _EVENTS.c.run_id,
            _EVENTS.c.scan_id,
            _EVENTS.c.at,
            _EVENTS.c.kind,
            _EVENTS.c.tool,
            _EVENTS.c.code,
            _EVENTS.c.details,
        )
        .join(_SERVERS, _SERVERS.c.id == _EVENTS.c.server_id)
        .order_by(_EVENTS.c.id)
    )
    with engine.connect() as connection:
        if server is not None:
            server_id = connection.execute(select(_SERVERS.c.id).where(_SERVERS.c.name == server)).scalar()
            if server_id is None:
                raise InputError(f"No server named {server!r} in this database.")
            query = query.where(_EVENTS.c.server_id == server_id)
        if kind is not None:
            query = query.where(_EVENTS.c.kind == kind)
        if run is not None:
            query = query.where(_EVENTS.c.run_id == run)
        if since is not None:
            query = query.where(_EVENTS.c.at >= _aware(since))
        return [
            EventRow(
                id=ident,
                server=name,
                run_id=run_id,
                scan_id=scan_id,
                at=at,
                kind=event_kind,
                tool=tool,
                code=code,
                details=dict(details) if isinstance(details, dict) else {},
            )
            for ident, name, run_id, scan_id, at, event_kind, tool, code, details in connection.execute(query)
        ]


def toolsets_tools(engine: Engine, shas: Iterable[str]) -> dict[str, list[Any]]:
    """Stored tool lists by hash, each exactly as :meth:`Store.toolset_tools` returns it; unknown hashes are left
    out. One query per 500 hashes."""
    wanted = sorted({sha for sha in shas if isinstance(sha, str)})
    found: dict[str, list[Any]] = {}
    with engine.connect() as connection:
        for chunk in _chunks(wanted):
            query = select(_TOOLSETS.c.sha256, _TOOLSETS.c.data).where(_TOOLSETS.c.sha256.in_(chunk))
            for sha, data in connection.execute(query):
                found[sha] = codec.decompress_tools(data)
    return found


def load(engine: Engine, rows: Mapping[str, Iterable[Mapping[str, Any]]], *, chunk: int = LOAD_CHUNK) -> dict[str, int]:
    """Insert rows straight into tables (``{"scans": [{column: value}, ...], ...}``) in one transaction.

    For benchmarks and imports of trusted, already-shaped rows (ids included or left to the database): nothing is
    capped, redacted or compared, and no change events are derived; the caller writes the events and run
    aggregates it wants. Tables go in :data:`LOAD_ORDER` so foreign keys hold. Afterwards each loaded server's
    newest-scan pointers (``last_scan_id``, ``last_ok_scan_id``) are set from its scans, so queries and later
    crawls see the loaded history. Returns rows written per table. Raises ``ValueError`` for an unknown table.
    """
    unknown = sorted(set(rows) - set(LOAD_ORDER))
    if unknown:
        raise ValueError(f"cannot bulk-load {', '.join(unknown)}: tables are {', '.join(LOAD_ORDER)}")
    written: dict[str, int] = {}
    with engine.begin() as connection:
        for name in LOAD_ORDER:
            if name not in rows:
                continue
            table, batch, count = _T[name], [], 0
            for row in rows[name]:
                batch.append(row)
                if len(batch) >= chunk:
                    connection.execute(table.insert(), batch)
                    count, batch = count + len(batch), []
            if batch:
                connection.execute(table.insert(), batch)
                count += len(batch)
            written[name] = count
        if written.get("scans"):
            newest = select(func.max(_SCANS.c.id)).where(_SCANS.c.server_id == _SERVERS.c.id).scalar_subquery()
            newest_ok = (
                select(func.max(_SCANS.c.id))
                .where(_SCANS.c.server_id == _SERVERS.c.id, _SCANS.c.outcome == "ok", _SCANS.c.toolset_id.is_not(None))
                .scalar_subquery()
            )
            connection.execute(update(_SERVERS).values(last_scan_id=newest, last_ok_scan_id=newest_ok))
    return written
