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

import gc
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import groupby, repeat
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Engine, func, select, type_coerce, update
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


_SCAN_COLUMNS = (
    _SCANS.c.server_id,
    _SCANS.c.id,
    _SCANS.c.run_id,
    # The timestamp as the driver returns it, converted by :class:`_Facts` once per distinct value with the
    # column type's own conversion, so the value is what an ORM read gives.
    type_coerce(_SCANS.c.scanned_at, NullType()),
    _SCANS.c.outcome,
    _SCANS.c.detail,
    _SCANS.c.transport,
    _SCANS.c.era,
    _SCANS.c.protocol_version,
    _SCANS.c.server_name,
    _SCANS.c.server_version,
    _SCANS.c.toolset_id,
)


@dataclass(frozen=True)
class HistoryColumns:
    """One server's scans ordered by run (oldest first) as columns, and its newest scan in full.

    Entry ``i`` of every column is the same scan; each value is the one :meth:`Store.history` gives that scan
    (``tokens[i]`` its toolset's tokens, empty without a toolset and shared by the scans of one toolset: read
    it, never change it). ``latest`` is the scan of the highest run id as a full :class:`ScanRow`. Columns rather
    than a row object per scan: a chart reads whole columns, and a year of 2 000 servers is 730 000 scans.
    """

    scan_ids: tuple[int, ...]
    run_ids: tuple[int, ...]
    scanned_at: tuple[datetime, ...]
    outcomes: tuple[str, ...]
    tokens: tuple[Mapping[str, int], ...]
    problems: tuple[int, ...]
    warnings: tuple[int, ...]
    notes: tuple[int, ...]
    latest: ScanRow | None

    def __len__(self) -> int:
        return len(self.scan_ids)


class _Memo(dict[Any, Any]):
    """A dict that computes a missing value with ``function`` and keeps it (``map(memo.__getitem__, ...)``)."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        super().__init__()
        self.function = function

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self.function(key)
        return value


class _Facts:
    """What the scans of a set of servers share, read in three grouped queries: each toolset's size, hash and
    tokens; its own findings counted by (rule version, severity); and the scans' own (MCP5xx) findings counted
    by severity. ``counts`` adds them up per scan the way :meth:`Store.history` does."""

    def __init__(
        self,
        connection: Connection,
        versions: Mapping[int, str],
        ids: Sequence[int] | None,
        served: Iterable[int | None],
    ) -> None:
        self.versions = versions
        self.toolsets: dict[int, tuple[int, str]] = {}
        self.tokens: dict[int, dict[str, int]] = defaultdict(dict)
        by_toolset: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
        toolset_query = select(
            _TOOLSETS.c.id, _TOOLSETS.c.tools_count, _TOOLSETS.c.sha256, _TOKENS.c.provider, _TOKENS.c.tokens
        ).outerjoin(_TOKENS, _TOKENS.c.toolset_id == _TOOLSETS.c.id)
        toolset_counts = (
            select(_FINDINGS.c.toolset_id, _FINDINGS.c.rule_version, _FINDINGS.c.severity, func.count())
            .where(_FINDINGS.c.scan_id.is_(None))
            .group_by(_FINDINGS.c.toolset_id, _FINDINGS.c.rule_version, _FINDINGS.c.severity)
        )
        # Every server: read every toolset (a few thousand rows) rather than filter by a huge list.
        wanted = sorted({tid for tid in served if tid is not None})
        for chunk in [None] if ids is None else _chunks(wanted):
            query = toolset_query if chunk is None else toolset_query.where(_TOOLSETS.c.id.in_(chunk))
            for toolset_id, tools_count, sha256, provider, count in connection.execute(query):
                self.toolsets[toolset_id] = (tools_count, sha256)
                if provider is not None:
                    self.tokens[toolset_id][provider] = count
            counted = toolset_counts if chunk is None else toolset_counts.where(_FINDINGS.c.toolset_id.in_(chunk))
            for toolset_id, version, severity, count in connection.execute(counted):
                if isinstance(severity, int) and 0 <= severity <= 2:
                    by_toolset[(toolset_id, version)][severity] += count
        self._by_toolset = by_toolset

        self.own: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
        own_counts = (
            select(_FINDINGS.c.scan_id, _FINDINGS.c.severity, func.count())
            .where(_FINDINGS.c.scan_id.is_not(None))
            .group_by(_FINDINGS.c.scan_id, _FINDINGS.c.severity)
        )
        if ids is not None:
            own_counts = own_counts.join(_SCANS, _SCANS.c.id == _FINDINGS.c.scan_id).where(_SCANS.c.server_id.in_(ids))
        for scan_id, severity, count in connection.execute(own_counts):
            if isinstance(severity, int) and 0 <= severity <= 2:
                self.own[scan_id][severity] += count

        dialect = connection.dialect
        stamp = _SCANS.c.scanned_at.type.dialect_impl(dialect).result_processor(dialect, None)
        self.moments = _Memo(stamp if stamp is not None else _same)
        # (toolset id, rule version) -> the toolset's (problems, warnings, notes), None for no toolset.
        self.base = _Memo(self._toolset_counts)

    def _toolset_counts(self, key: tuple[int | None, str]) -> tuple[int, int, int]:
        found = self._by_toolset.get(key) if key[0] is not None else None  # type: ignore[arg-type]
        return (found[0], found[1], found[2]) if found else (0, 0, 0)

    def counts(self, scan_id: int, toolset_id: int | None, run_id: int) -> tuple[int, int, int]:
        """(problems, warnings, notes) of one scan: its toolset's under the run's version, plus its own."""
        counts: tuple[int, int, int] = self.base[(toolset_id, self.versions[run_id])]
        extra = self.own.get(scan_id)
        if extra is not None:
            counts = (counts[0] + extra[0], counts[1] + extra[1], counts[2] + extra[2])
        return counts

    def count_columns(
        self, scan_ids: Sequence[int], toolset_ids: Sequence[int | None], run_ids: Sequence[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """:meth:`counts` of many scans as three columns; the per-scan work runs in C except for the few
        scans with findings of their own."""
        keys = zip(toolset_ids, map(self.versions.__getitem__, run_ids), strict=True)
        counts = list(map(self.base.__getitem__, keys))
        mine = self.own.keys() & scan_ids if self.own else ()
        if mine:
            for index, scan_id in enumerate(scan_ids):
                if scan_id in mine:
                    counts[index] = self.counts(scan_id, toolset_ids[index], run_ids[index])
        if not counts:
            return (), (), ()
        problems, warnings, notes = zip(*counts, strict=True)
        return problems, warnings, notes

    def scan_row(self, row: Sequence[Any]) -> ScanRow:
        """A :class:`ScanRow` from a row of :data:`_SCAN_COLUMNS`."""
        (
            _,
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
        ) = row
        problems, warnings, notes = self.counts(scan_id, toolset_id, run_id)
        tools_count, sha256 = self.toolsets.get(toolset_id, _NO_TOOLSET) if toolset_id is not None else _NO_TOOLSET
        return ScanRow(
            scan_id,
            run_id,
            self.moments[raw_moment],
            outcome,
            detail,
            transport,
            era,
            protocol_version,
            server_name,
            server_version,
            tools_count,
            dict(self.tokens.get(toolset_id, _EMPTY)) if toolset_id is not None else {},
            problems,
            warnings,
            notes,
            sha256,
            self.versions[run_id],
        )


_EMPTY: Mapping[str, int] = {}  # shared by every scan without tokens in :class:`HistoryColumns`: never changed
_NO_TOOLSET = (None, None)


def _same(value: Any) -> Any:
    return value


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while rows are turned into values.

    A chunk of history is ~100 000 result rows and as many tuples, none of them in a cycle; each 700 allocations
    would start a collection that walks every young object, and now and then every object of the process (the
    report keeps its leaderboard and events alive), which cost a year's report ~2 s. Reference counting still
    frees everything at once; the collector is switched back on (if it was on) when the block ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _start(
    engine: Engine, names: Iterable[str] | None
) -> tuple[Connection, dict[int, str], dict[int, str], list[Sequence[int] | None]]:
    connection = engine.connect()
    versions = scoring_versions(connection)
    servers = server_ids(connection, names)
    chunks: list[Sequence[int] | None] = [None] if names is None else list(_chunks(sorted(servers)))
    return connection, versions, servers, chunks


def histories(engine: Engine, names: Iterable[str] | None = None) -> dict[str, list[ScanRow]]:
    """Every scan of each server in ``names`` (every server when None), oldest first, keyed by server name.

    Each list equals what :meth:`Store.history` returns for that server; names not in the database are left out
    (``history`` raises for them instead). Four queries per 500 servers, whatever the length of the history:
    the scans' columns; their toolsets' sizes, hashes and tokens; toolset finding counts grouped by (toolset,
    rule version, severity); and scan-owned (MCP5xx) finding counts grouped by (scan, severity); plus the run
    versions and server names once. Keys come in name order.

    A year of nightly scans of 2 000 servers is 730 000 rows: ask for a few hundred servers at a time to keep
    memory flat, or use :func:`history_columns` (the report does).
    """
    connection, versions, servers, chunks = _start(engine, names)
    result: dict[int, list[ScanRow]] = {ident: [] for ident in servers}
    with connection, _collector_paused():
        for chunk in chunks if servers else ():
            query = select(*_SCAN_COLUMNS).order_by(_SCANS.c.server_id, _SCANS.c.id)
            scans = connection.execute(query if chunk is None else query.where(_SCANS.c.server_id.in_(chunk))).all()
            facts = _Facts(connection, versions, chunk, (row[11] for row in scans))
            for row in scans:
                result[row[0]].append(facts.scan_row(row))
    return {servers[ident]: result[ident] for ident in sorted(servers, key=servers.__getitem__)}


def history_columns(engine: Engine, names: Iterable[str] | None = None) -> dict[str, HistoryColumns]:
    """Each server's history as :class:`HistoryColumns` (every server when ``names`` is None), keyed by name.

    What :func:`histories` gives, ordered by run, for a chart rather than a table: five queries per 500 servers
    (four narrow columns of every scan, the three grouped reads of :class:`_Facts`, then the newest scan of each
    server in full), and no object per scan. Names not in the database are left out; keys in name order.
    """
    connection, versions, servers, chunks = _start(engine, names)
    result: dict[int, HistoryColumns] = {}
    with connection, _collector_paused():
        for chunk in chunks if servers else ():
            query = select(
                _SCANS.c.server_id,
                _SCANS.c.id,
                _SCANS.c.run_id,
                _SCAN_COLUMNS[3],
                _SCANS.c.outcome,
                _SCANS.c.toolset_id,
            ).order_by(_SCANS.c.server_id, _SCANS.c.run_id)
            scans = connection.execute(query if chunk is None else query.where(_SCANS.c.server_id.in_(chunk))).all()
            facts = _Facts(connection, versions, chunk, (row[5] for row in scans))
            newest: dict[int, int] = {}
            for server_id, group in groupby(scans, key=itemgetter(0)):
                _, scan_ids, run_ids, raw_moments, outcomes, toolset_ids = zip(*group, strict=True)
                problems, warnings, notes = facts.count_columns(scan_ids, toolset_ids, run_ids)
                result[server_id] = HistoryColumns(
                    scan_ids=scan_ids,
                    run_ids=run_ids,
                    scanned_at=tuple(map(facts.moments.__getitem__, raw_moments)),
                    outcomes=outcomes,
                    tokens=tuple(map(facts.tokens.get, toolset_ids, repeat(_EMPTY))),
                    problems=problems,
                    warnings=warnings,
                    notes=notes,
                    latest=None,
                )
                newest[server_id] = scan_ids[-1]
            for part in _chunks(sorted(newest.values())):
                for row in connection.execute(select(*_SCAN_COLUMNS).where(_SCANS.c.id.in_(part))):
                    result[row[0]] = replace(result[row[0]], latest=facts.scan_row(row))
    empty = HistoryColumns((), (), (), (), (), (), (), (), None)
    return {servers[ident]: result.get(ident, empty) for ident in sorted(servers, key=servers.__getitem__)}


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
    aggregates it wants. Tables go in :data:`LOAD_ORDER` so foreign keys hold. Afterwards the newest-scan
    pointers (``last_scan_id``, ``last_ok_scan_id``: the newest ok scan with a toolset) of every server that got
    scans are set from its scans, so queries and later crawls see the loaded history. Returns rows written per
    table. Raises ``ValueError`` for an unknown table.
    """
    unknown = sorted(set(rows) - set(LOAD_ORDER))
    if unknown:
        raise ValueError(f"cannot bulk-load {', '.join(unknown)}: tables are {', '.join(LOAD_ORDER)}")
    written: dict[str, int] = {}
    touched: set[int] = set()  # servers that got scans
    with engine.begin() as connection:
        for name in LOAD_ORDER:
            if name not in rows:
                continue
            table, batch, count = _T[name], [], 0
            for row in rows[name]:
                batch.append(row)
                if name == "scans" and isinstance(row.get("server_id"), int):
                    touched.add(row["server_id"])
                if len(batch) >= chunk:
                    connection.execute(table.insert(), batch)
                    count, batch = count + len(batch), []
            if batch:
                connection.execute(table.insert(), batch)
                count += len(batch)
            written[name] = count
        for servers in _chunks(sorted(touched)):
            newest = select(func.max(_SCANS.c.id)).where(_SCANS.c.server_id == _SERVERS.c.id).scalar_subquery()
            newest_ok = (
                select(func.max(_SCANS.c.id))
                .where(_SCANS.c.server_id == _SERVERS.c.id, _SCANS.c.outcome == "ok", _SCANS.c.toolset_id.is_not(None))
                .scalar_subquery()
            )
            connection.execute(
                update(_SERVERS)
                .where(_SERVERS.c.id.in_(servers))
                .values(last_scan_id=newest, last_ok_scan_id=newest_ok)
            )
    return written
