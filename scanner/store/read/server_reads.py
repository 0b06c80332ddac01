"""Reads: servers and their histories."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from itertools import groupby, repeat
from operator import itemgetter
from typing import Any, NamedTuple

from sqlalchemy import Connection, Engine, func, select, type_coerce
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from scanner import wire
from scanner.errors import StoreError
from scanner.measure import metrics as scan_metrics
from scanner.measure.score import score_breakdown
from scanner.models import Severity
from scanner.rules.registry import is_preview
from scanner.store import codec, common
from scanner.store.read.shared import _EVENTS, _FINDINGS, _SCANS, _SERVERS, _TOOLSETS
from scanner.store.read.toolset_reads import _toolsets
from scanner.store.readsafe import unreadable
from scanner.store.rows import (
    EventRow,
    HistoryColumns,
    LaneRow,
    RunSpec,
    ScanRow,
    ScanScore,
    ServerSummary,
)


def server_names(engine: Engine) -> list[str]:
    """Every server's name, sorted here (the database's collation need not be Python's): the order of
    :func:`servers` read a chunk at a time."""
    with engine.connect() as connection:
        return sorted(name for (name,) in connection.execute(select(_SERVERS.c.name)))


def servers(engine: Engine, names: Sequence[str] | None = None) -> list[ServerSummary]:
    """Every server by name (only those of ``names`` when given, in Python's order of their names), with its last
    outcome and the tools and tokens of its last successful scan."""
    last_scan, ok_scan = _SCANS.alias("last_scan"), _SCANS.alias("ok_scan")
    query = (
        select(
            _SERVERS.c.name,
            _SERVERS.c.first_seen,
            last_scan.c.run_id,
            last_scan.c.scanned_at,
            last_scan.c.outcome,
            last_scan.c.detail,
            ok_scan.c.run_id,
            ok_scan.c.server_version,
            ok_scan.c.toolset_id,
            last_scan.c.registry_version,
            last_scan.c.package,
            last_scan.c.url,
            last_scan.c.command,
            last_scan.c.extra,
            ok_scan.c.id,
        )
        .outerjoin(last_scan, last_scan.c.id == _SERVERS.c.last_scan_id)
        .outerjoin(ok_scan, ok_scan.c.id == _SERVERS.c.last_ok_scan_id)
        .order_by(_SERVERS.c.name)
    )
    with engine.connect() as connection:
        if names is None:
            rows = connection.execute(query).all()
        else:
            rows = []
            for chunk in common.chunks(list(names)):
                rows += connection.execute(query.where(_SERVERS.c.name.in_(chunk))).all()
            rows.sort(key=itemgetter(0))
        sizes, tokens = _toolsets(connection, sorted({row[8] for row in rows if row[8] is not None}))
    return [
        ServerSummary(
            name=name,
            first_seen=first_seen,
            last_run_id=last_run,
            last_scanned_at=last_at,
            last_outcome=last_outcome,
            last_detail=last_detail or "",
            last_ok_run_id=ok_run,
            server_version=version,
            tools_count=sizes[toolset_id][0] if toolset_id in sizes else None,
            tokens=dict(tokens.get(toolset_id, {})) if toolset_id is not None else {},
            toolset_sha256=sizes[toolset_id][1] if toolset_id in sizes else None,
            last_run=run_spec(*ran) if last_run is not None else None,
            last_stderr_tail=stderr_tail(extra),
            last_ok_scan_id=ok_scan_id,
        )
        for (
            name,
            first_seen,
            last_run,
            last_at,
            last_outcome,
            last_detail,
            ok_run,
            version,
            toolset_id,
            *ran,
            extra,
            ok_scan_id,
        ) in rows
    ]


class _Scored(NamedTuple):
    """What the score reads of a stored finding (:class:`scanner.measure.score.Scorable`)."""

    code: str
    severity: Severity
    tool: str | None
    tool_index: int | None


def scan_scores(engine: Engine, scan_ids: Iterable[int]) -> dict[int, ScanScore]:
    """The leaderboard score and finding counts of each scan in ``scan_ids`` that listed tools, as the report
    computes them: its toolset's findings under the run's scoring rule version plus the scan's own findings.

    Reads each (toolset, version) pair's findings once, so a query over 2 000 servers costs two grouped reads
    per 500 scans, not one per server. Scans that listed no tools (and unknown ids) are left out; a scan whose
    list was read and is empty has a None score. The cost in the score is the toolset's stored tokens per turn
    with the dearest provider, the figure the leaderboard and ``fathom check`` use.
    """
    wanted = sorted(set(scan_ids))
    result: dict[int, ScanScore] = {}
    clean_lists: dict[tuple[int, int], ScanScore] = {}
    with engine.connect() as connection:
        versions = common.scoring_versions(connection)
        for chunk in common.chunks(wanted):
            scans = connection.execute(
                select(_SCANS.c.id, _SCANS.c.run_id, _SCANS.c.toolset_id, _TOOLSETS.c.tools_count)
                .join(_TOOLSETS, _TOOLSETS.c.id == _SCANS.c.toolset_id)
                .where(_SCANS.c.id.in_(chunk))
            ).all()
            for scan in [scan for scan in scans if scan[1] not in versions]:  # a crafted row: skipped, said once
                unreadable(
                    "scans.run_id", f"a run that is not there (scan {scan[0]}, run {str(scan[1])[:20]})", "skipped"
                )
            scans = [scan for scan in scans if scan[1] in versions]
            pairs = {(toolset_id, versions[run_id]) for _, run_id, toolset_id, _ in scans}
            _sizes, stored_tokens = _toolsets(connection, sorted({toolset_id for _, _, toolset_id, _ in scans}))
            found: dict[Any, list[_Scored]] = defaultdict(list)
            columns = (_FINDINGS.c.code, _FINDINGS.c.severity, _FINDINGS.c.tool, _FINDINGS.c.tool_index)
            toolset_ids = sorted({toolset_id for toolset_id, _ in pairs})
            for part in common.chunks(toolset_ids):
                rows = connection.execute(
                    select(_FINDINGS.c.toolset_id, _FINDINGS.c.rule_version, *columns)
                    .where(_FINDINGS.c.scan_id.is_(None), _FINDINGS.c.toolset_id.in_(part))
                    .order_by(_FINDINGS.c.id)
                ).all()
                for toolset_id, version, code, severity, tool, index in rows:
                    if (toolset_id, version) in pairs:
                        found[(toolset_id, version)].append(_Scored(code, _severity(severity), tool, index))
            own = connection.execute(
                select(_FINDINGS.c.scan_id, *columns).where(_FINDINGS.c.scan_id.in_(chunk)).order_by(_FINDINGS.c.id)
            ).all()
            for scan_id, code, severity, tool, index in own:
                found[scan_id].append(_Scored(code, _severity(severity), tool, index))
            shared: dict[tuple[int, str], ScanScore] = {}  # a toolset's score under a version, computed once
            for scan_id, run_id, toolset_id, tools_count in scans:
                key = (toolset_id, versions[run_id])
                if scan_id not in found and key in shared:
                    result[scan_id] = shared[key]
                    continue
                hits = found.get(key, []) + found.get(scan_id, [])
                counts = [0, 0, 0]
                for hit in hits:
                    if not is_preview(hit.code):  # counted apart, as everywhere a count stands beside a score
                        counts[hit.severity] += 1
                size = int(tools_count or 0)
                tokens = max(stored_tokens.get(toolset_id, {}).values(), default=0)
                if hits:
                    parts = score_breakdown(size, hits, tokens=tokens)
                    scored = ScanScore(
                        score=parts.score if parts is not None else None,
                        problems=counts[0],
                        warnings=counts[1],
                        notes=counts[2],
                    )
                else:  # most lists: no findings; their score depends on the size and the tokens alone
                    if (size, tokens) not in clean_lists:
                        parts = score_breakdown(size, (), tokens=tokens)
                        clean_lists[(size, tokens)] = ScanScore(
                            score=parts.score if parts is not None else None, problems=0, warnings=0, notes=0
                        )
                    scored = clean_lists[(size, tokens)]
                result[scan_id] = scored
                if scan_id not in found:
                    shared[key] = scored
    return result


def _preview_codes() -> tuple[str, ...]:
    """The codes of the catalogue's preview rules (their findings are stored, never counted with the rest)."""
    from scanner.rules import RULES

    return tuple(code for code, rule in RULES.items() if rule.status == "preview")


def _severity(value: Any) -> Severity:
    """A stored severity; one the catalogue does not know reads as a problem, the worst, as everywhere."""
    return common.stored_severity(value)


def history(engine: Engine, server: str) -> list[ScanRow]:
    """Every scan of ``server``, oldest first, with its tokens and finding counts (:func:`histories` of one name).

    Raises :class:`InputError` for a server not in the database.
    """
    server = wire.clean_str(server)  # as the engine stores it (NUL, lone surrogates -> U+FFFD)
    found = histories(engine, [server])
    if server not in found:
        with engine.connect() as connection:
            raise common.unknown_server(connection, server)
    return found[server]


def server_ids(connection: Connection, names: Iterable[str] | None) -> dict[int, str]:
    """Server id -> name for ``names`` (every server when None); names not in the database are left out."""
    if names is None:
        return {ident: name for ident, name in connection.execute(select(_SERVERS.c.id, _SERVERS.c.name))}
    wanted = sorted({name for name in names if isinstance(name, str)})
    found: dict[int, str] = {}
    for chunk in common.chunks(wanted):
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
    _SCANS.c.registry_version,
    _SCANS.c.package,
    _SCANS.c.url,
    _SCANS.c.command,
    _SCANS.c.extra,
    _SCANS.c.metrics,
)


def stderr_tail(extra: Any) -> tuple[str, ...]:
    """A scan's stored stderr tail (``extra["stderr_tail"]``: the last lines, normalised and scrubbed)."""
    tail = extra.get("stderr_tail") if isinstance(extra, Mapping) else None
    return tuple(line for line in tail if isinstance(line, str)) if isinstance(tail, list) else ()


def run_spec(registry_version: Any, package: Any, url: Any, command: Any) -> RunSpec:
    """The :class:`RunSpec` of a scan's four what-was-run columns."""
    return RunSpec(
        registry_version=registry_version,
        package=package if isinstance(package, Mapping) else None,
        url=url,
        command=command,
    )


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
    by severity. ``counts`` adds them up per scan."""

    def __init__(
        self,
        connection: Connection,
        versions: Mapping[int, str],
        ids: Sequence[int] | None,
        served: Iterable[int | None],
    ) -> None:
        self.versions = versions
        # Every server: read every toolset (a few thousand rows) rather than filter by a huge list.
        wanted = None if ids is None else sorted({tid for tid in served if tid is not None})
        self.toolsets, self.tokens = _toolsets(connection, wanted)
        by_toolset: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
        # The counts a reader sees beside a score: preview rules' findings are stored but counted apart (rules.md).
        shown = _FINDINGS.c.code.not_in(_preview_codes())
        toolset_counts = (
            select(_FINDINGS.c.toolset_id, _FINDINGS.c.rule_version, _FINDINGS.c.severity, func.count())
            .where(_FINDINGS.c.scan_id.is_(None), shown)
            .group_by(_FINDINGS.c.toolset_id, _FINDINGS.c.rule_version, _FINDINGS.c.severity)
        )
        for chunk in [None] if wanted is None else common.chunks(wanted):
            counted = toolset_counts if chunk is None else toolset_counts.where(_FINDINGS.c.toolset_id.in_(chunk))
            for toolset_id, version, severity, count in connection.execute(counted):
                common.add_severity(by_toolset[(toolset_id, version)], severity, count)
        self._by_toolset = by_toolset

        self.own: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
        own_counts = (
            select(_FINDINGS.c.scan_id, _FINDINGS.c.severity, func.count())
            .where(_FINDINGS.c.scan_id.is_not(None), shown)
            .group_by(_FINDINGS.c.scan_id, _FINDINGS.c.severity)
        )
        if ids is not None:
            own_counts = own_counts.join(_SCANS, _SCANS.c.id == _FINDINGS.c.scan_id).where(_SCANS.c.server_id.in_(ids))
        for scan_id, severity, count in connection.execute(own_counts):
            common.add_severity(self.own[scan_id], severity, count)

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
            registry_version,
            package,
            url,
            command,
            extra,
            metrics,
        ) = row
        problems, warnings, notes = self.counts(scan_id, toolset_id, run_id)
        tools_count, sha256 = self.toolsets.get(toolset_id, _NO_TOOLSET) if toolset_id is not None else _NO_TOOLSET
        return ScanRow(
            scan_id=scan_id,
            run_id=run_id,
            scanned_at=self.moments[raw_moment],
            outcome=outcome,
            detail=detail,
            transport=transport,
            era=era,
            protocol_version=protocol_version,
            server_name=server_name,
            server_version=server_version,
            tools_count=tools_count,
            tokens=dict(self.tokens.get(toolset_id, _EMPTY)) if toolset_id is not None else {},
            problems=problems,
            warnings=warnings,
            notes=notes,
            toolset_sha256=sha256,
            rule_version=self.versions[run_id],
            ran=run_spec(registry_version, package, url, command),
            stderr_tail=stderr_tail(extra),
            not_run=isinstance(extra, Mapping) and extra.get("not_run") is True,
            metrics=scan_metrics.stored(metrics),
        )


RECENT_METRICS = 10  # scans per server whose metrics :func:`history_columns` reads (the newest)


_NONE: Mapping[str, int | float] = {}  # a scan without metrics in :class:`HistoryColumns`: shared, never changed


_EMPTY: Mapping[str, int] = {}  # shared by every scan without tokens in :class:`HistoryColumns`: never changed


_NO_TOOLSET = (None, None)


def _same(value: Any) -> Any:
    return value


def _start(
    engine: Engine, names: Iterable[str] | None
) -> tuple[Connection, dict[int, str], dict[int, str], list[Sequence[int] | None]]:
    connection = engine.connect()
    versions = common.scoring_versions(connection)
    servers = server_ids(connection, names)
    chunks: list[Sequence[int] | None] = [None] if names is None else list(common.chunks(sorted(servers)))
    return connection, versions, servers, chunks


_SCAN_LANES = common.TABLES["scan_lanes"]


_INSTRUCTION_TOKENS = common.TABLES["instructions_tokens"]


def lanes_of(connection: Connection | Session, scans: Any) -> dict[int, tuple[str | None, tuple[LaneRow, ...]]]:
    """The lanes of every scan in ``scans`` (a select of scan ids) that ran in lanes: scan id -> (the lane its
    own result is, every lane anonymous first). One query; scans in one lane are left out."""
    rows = connection.execute(
        select(
            _SCAN_LANES.c.scan_id,
            _SCANS.c.lane,
            _SCAN_LANES.c.lane,
            _SCAN_LANES.c.outcome,
            _SCAN_LANES.c.detail,
            _SCAN_LANES.c.tools_count,
            _TOOLSETS.c.sha256,
            _SCAN_LANES.c.signals,
        )
        .join(_SCANS, _SCANS.c.id == _SCAN_LANES.c.scan_id)
        .outerjoin(_TOOLSETS, _TOOLSETS.c.id == _SCAN_LANES.c.toolset_id)
        .where(_SCAN_LANES.c.scan_id.in_(scans))
        .order_by(_SCAN_LANES.c.scan_id, _SCAN_LANES.c.id)
    ).all()
    found: dict[int, tuple[str | None, tuple[LaneRow, ...]]] = {}
    for scan_id, group in groupby(rows, key=itemgetter(0)):
        items = list(group)
        found[scan_id] = (
            items[0][1],
            tuple(
                LaneRow(
                    lane=lane,
                    outcome=outcome,
                    detail=detail,
                    tools_count=tools_count,
                    toolset_sha256=sha,
                    signals=dict(signals or {}),
                )
                for _, _, lane, outcome, detail, tools_count, sha, signals in items
            ),
        )
    return found


def _with_lanes(row: Any, lanes: Mapping[int, tuple[str | None, tuple[LaneRow, ...]]]) -> Any:
    """``row`` (a ScanRow or LeaderRow) with its scan's lanes, if it ran in lanes."""
    found = lanes.get(row.scan_id)
    return row if found is None else replace(row, lane=found[0], lanes=found[1])


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
    with connection, common.collector_paused():
        for chunk in chunks if servers else ():
            query = select(*_SCAN_COLUMNS).order_by(_SCANS.c.server_id, _SCANS.c.id)
            scans = connection.execute(query if chunk is None else query.where(_SCANS.c.server_id.in_(chunk))).all()
            facts = _Facts(connection, versions, chunk, (row[11] for row in scans))
            in_chunk = select(_SCANS.c.id)
            lanes = lanes_of(connection, in_chunk if chunk is None else in_chunk.where(_SCANS.c.server_id.in_(chunk)))
            for row in scans:
                result[row[0]].append(_with_lanes(facts.scan_row(row), lanes))
    return {servers[ident]: result[ident] for ident in sorted(servers, key=servers.__getitem__)}


def history_columns(engine: Engine, names: Iterable[str] | None = None) -> dict[str, HistoryColumns]:
    """Each server's history as :class:`HistoryColumns` (every server when ``names`` is None), keyed by name.

    What :func:`histories` gives, ordered by run, for a chart rather than a table: about six queries per 500
    servers (five narrow columns of every scan, its detail included, the three grouped reads of :class:`_Facts`,
    the newest scan of each server in full, and the metrics of its newest :data:`RECENT_METRICS` scans), and no
    object per scan. Names not in the database are left out; keys in name order.

    Metrics are read for the newest scans only: parsing every scan's JSON would cost a year's report (730 000
    scans) about 4 s, and the server page shows the newest ten.
    """
    connection, versions, servers, chunks = _start(engine, names)
    result: dict[int, HistoryColumns] = {}
    with connection, common.collector_paused():
        for chunk in chunks if servers else ():
            query = select(
                _SCANS.c.server_id,
                _SCANS.c.id,
                _SCANS.c.run_id,
                _SCAN_COLUMNS[3],
                _SCANS.c.outcome,
                _SCANS.c.toolset_id,
                _SCANS.c.detail,
            ).order_by(_SCANS.c.server_id, _SCANS.c.run_id)
            scans = connection.execute(query if chunk is None else query.where(_SCANS.c.server_id.in_(chunk))).all()
            facts = _Facts(connection, versions, chunk, (row[5] for row in scans))
            newest: dict[int, int] = {}
            for server_id, group in groupby(scans, key=itemgetter(0)):
                _, scan_ids, run_ids, raw_moments, outcomes, toolset_ids, details = zip(*group, strict=True)
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
                    details=details,
                )
                newest[server_id] = scan_ids[-1]
            for part in common.chunks(sorted(newest.values())):
                for row in connection.execute(select(*_SCAN_COLUMNS).where(_SCANS.c.id.in_(part))):
                    result[row[0]] = replace(result[row[0]], latest=facts.scan_row(row))
            recent = [scan_id for server_id in newest for scan_id in result[server_id].scan_ids[-RECENT_METRICS:]]
            measured: dict[int, Mapping[str, int | float]] = {}
            for part in common.chunks(sorted(recent)):
                query = select(_SCANS.c.id, _SCANS.c.metrics).where(_SCANS.c.id.in_(part))
                measured.update((scan_id, scan_metrics.stored(value)) for scan_id, value in connection.execute(query))
            for server_id in newest:
                ids = result[server_id].scan_ids[-RECENT_METRICS:]
                result[server_id] = replace(result[server_id], metrics=tuple(measured.get(i, _NONE) for i in ids))
    empty = HistoryColumns.empty()
    return {servers[ident]: result.get(ident, empty) for ident in sorted(servers, key=servers.__getitem__)}


_EVENT_QUERY = select(
    _EVENTS.c.id,
    _SERVERS.c.name,
    _EVENTS.c.run_id,
    _EVENTS.c.scan_id,
    _EVENTS.c.at,
    _EVENTS.c.kind,
    _EVENTS.c.tool,
    _EVENTS.c.code,
    _EVENTS.c.details,
).join(_SERVERS, _SERVERS.c.id == _EVENTS.c.server_id)


def _event_rows(rows: Iterable[Any]) -> Iterator[EventRow]:
    for ident, name, run_id, scan_id, at, event_kind, tool, code, details in rows:
        yield EventRow(
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
    query = _EVENT_QUERY.order_by(_EVENTS.c.id)
    with engine.connect() as connection:
        if server is not None:
            query = query.where(_EVENTS.c.server_id == common.server_id(connection, server))
        if kind is not None:
            query = query.where(_EVENTS.c.kind == kind)
        if run is not None:
            query = query.where(_EVENTS.c.run_id == run)
        if since is not None:
            query = query.where(_EVENTS.c.at >= common.aware(since))
        return list(_event_rows(connection.execute(query)))


def events_of(engine: Engine, names: Iterable[str]) -> dict[str, list[EventRow]]:
    """:func:`events` of each of ``names``, oldest first, keyed by name, in one query per 500 servers (through the
    ``(server_id, id)`` index): a chunk of servers' change logs without holding everyone's. Names not in the
    database, and servers without events, are left out."""
    found: defaultdict[str, list[EventRow]] = defaultdict(list)
    query = _EVENT_QUERY.order_by(_EVENTS.c.server_id, _EVENTS.c.id)
    with engine.connect() as connection:
        for chunk in common.chunks(sorted(server_ids(connection, names))):
            for event in _event_rows(connection.execute(query.where(_EVENTS.c.server_id.in_(chunk)))):
                found[event.server].append(event)
    return dict(found)


def toolsets_tools(engine: Engine, shas: Iterable[str]) -> dict[str, list[Any]]:
    """Stored tool lists by hash, each exactly as :meth:`Store.toolset_tools` returns it; unknown hashes are left
    out. One query per 500 hashes."""
    found: dict[str, list[Any]] = {}
    for sha, data in toolsets_packed(engine, shas).items():
        tools = unpack_tools(sha, data)
        if tools is not None:
            found[sha] = tools
    return found


def toolsets_packed(engine: Engine, shas: Iterable[str]) -> dict[str, Any]:
    """The stored tool lists by hash as stored (compressed: :func:`unpack_tools` reads one), for a caller that
    reads many and needs one at a time (a chunk of report pages). One query per 500 hashes."""
    wanted = sorted({sha for sha in shas if isinstance(sha, str)})
    found: dict[str, Any] = {}
    with engine.connect() as connection:
        for chunk in common.chunks(wanted):
            query = select(_TOOLSETS.c.sha256, _TOOLSETS.c.data).where(_TOOLSETS.c.sha256.in_(chunk))
            found.update((sha, data) for sha, data in connection.execute(query))
    return found


def unpack_tools(sha: str, data: Any) -> list[Any] | None:
    """A tool list of :func:`toolsets_packed`; None for a crafted row (its pages show no tool list, said once)."""
    try:
        return codec.decompress_tools(data)
    except StoreError as exc:
        unreadable(f"toolsets row {str(sha)[:16]}", str(exc).removeprefix("a "), "no tool list")
        return None
