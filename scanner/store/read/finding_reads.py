"""Reads: findings over time.

A finding's stretches (first seen, gone) come from two sources. A tool list's findings and a scan's own (history,
lanes, instructions) from the ``finding_appeared``/``finding_resolved`` events, written when a scan listed tools.
Registry-data findings (MCP701-MCP705, on the registry entry itself) are stored with every scan of the entry
whatever its outcome, and most such entries never list tools, so their stretches are read from those rows
instead: a finding (server, code, pointer) appears with the first scan that holds it and goes with the next scan
of that server that does not.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session, sessionmaker

from scanner.measure import history as changes
from scanner.models import Severity
from scanner.store import common
from scanner.store.read.leaderboard_reads import _leaderboard
from scanner.store.rows import (
    FindingRow,
)
from scanner.store.tables import (
    Event,
    Scan,
    Server,
    StoredFinding,
)

_FINDING_EVENTS = (changes.FINDING_APPEARED, changes.FINDING_RESOLVED)
_TOOL_EVENTS = (changes.TOOL_ADDED, changes.TOOL_REMOVED)  # read to follow a finding to a renamed tool


_CODE = re.compile(r"[A-Z]+[0-9]+")
_BATCH = 2000  # finding events read from the database at a time
SERVER_CHUNK = 500  # servers whose findings are read (and held) at a time by finding_chunks


class _EventFields(Protocol):
    """What a stretch reads of a finding event (an ``Event`` row's columns)."""

    kind: str
    run_id: int
    at: datetime
    scan_id: int
    code: str | None
    tool: str | None
    details: dict[str, Any] | None


def findings(
    sessions: sessionmaker[Session],
    rule: str | None = None,
    server: str | None = None,
    since: datetime | None = None,
    run: int | None = None,
    *,
    severity: Severity | None = None,
    still_open: bool = False,
) -> list[FindingRow]:
    """Findings with when they first appeared and when they went away (None while present).

    ``run`` given: exactly the findings present in that run's scans. Otherwise every occurrence in the history
    (present and gone), from the finding events. ``rule`` is a code (``MCP205``) or a slug (``param-untyped``);
    ``since`` keeps findings that first appeared at or after it; ``severity`` keeps one severity; ``still_open``
    keeps findings not gone: present in their server's newest scan that listed tools.
    """
    if run is None:
        chunks = finding_chunks(sessions, rule, server, since, severity=severity, still_open=still_open)
        return [row for chunk in chunks for row in chunk]
    wanted = rule.strip() if rule else None
    code = _code_of(wanted)
    registry = _registry_codes()
    with sessions() as session:
        server_ids = [common.server_id(session, server)] if server is not None else None
        intervals = _finding_intervals(session, server_ids, code, registry)
        entry_intervals = _RegistryIntervals()
        if code is None or code in registry:
            entry_intervals = _registry_intervals(session, server_ids, code, registry)
        rows = _run_findings(session, run, server_ids, intervals, entry_intervals, registry)
    return _kept(rows, wanted, since, severity, still_open)


def finding_chunks(
    sessions: sessionmaker[Session],
    rule: str | None = None,
    server: str | None = None,
    since: datetime | None = None,
    *,
    severity: Severity | None = None,
    still_open: bool = False,
    chunk: int = SERVER_CHUNK,
) -> Iterator[list[FindingRow]]:
    """:func:`findings` over the whole history (no ``run``), in the same order, ``chunk`` servers at a time (by
    name): what is in memory is one chunk's stretches, whatever the number of servers."""
    wanted = rule.strip() if rule else None
    code = _code_of(wanted)
    registry = _registry_codes()
    with sessions() as session:
        if server is not None:
            named = [(server, common.server_id(session, server))]
        else:  # sorted here, not by the database: its collation need not be Python's (the rows' order)
            named = sorted((name, id_) for id_, name in session.execute(select(Server.id, Server.name)))
    for start in range(0, len(named), chunk):
        ids = [id_ for _, id_ in named[start : start + chunk]]
        with sessions() as session:
            # --open keeps only the stretches still open: memory follows what is open, not every finding that
            # ever came and went
            intervals = _finding_intervals(session, ids, code, registry, keep_closed=not still_open)
            entry_intervals = _RegistryIntervals()
            if code is None or code in registry:
                entry_intervals = _registry_intervals(session, ids, code, registry)
            rows = [interval.row for interval in (*intervals.values_flat(), *entry_intervals.values_flat())]
        kept = _kept(rows, wanted, since, severity, still_open)
        if kept:
            yield kept


def open_findings_of(sessions: sessionmaker[Session], names: Sequence[str], codes: Sequence[str]) -> list[FindingRow]:
    """The findings of ``codes`` (none a registry-data rule's) still open on the servers ``names``, each server's
    in the order of ``codes`` and then as :func:`findings` orders them: what ``findings(rule=code,
    still_open=True)`` gives per code, read for a chunk of servers at once. Names not in the database are left
    out."""
    if not names or not codes:
        return []
    with sessions() as session:
        ids = [id_ for (id_,) in session.execute(select(Server.id).where(Server.name.in_(list(names))))]
        intervals = _finding_intervals(session, ids, codes=codes, keep_closed=False)
        rows = _kept([interval.row for interval in intervals.values_flat()], None, None, None, True)
    order = {code: place for place, code in enumerate(codes)}
    rows.sort(key=lambda row: (row.server, order[row.code]))  # stable: within a code, findings' own order
    return rows


def _rename_key(event: Any) -> tuple[str, object, object]:
    """What :func:`scanner.measure.history.pair_renames` reads of a stored tool event."""
    details = event.details if isinstance(event.details, dict) else {}
    return str(event.tool), details.get("body_sha256"), details.get("schema_sha256")


def _code_of(wanted: str | None) -> str | None:
    return wanted.upper() if wanted and _CODE.fullmatch(wanted.upper()) else None


def _kept(
    rows: list[FindingRow], wanted: str | None, since: datetime | None, severity: Severity | None, still_open: bool
) -> list[FindingRow]:
    """The rows the filters keep, in the answer's order (server, severity, tool, code)."""
    result = [
        row
        for row in rows
        if (wanted is None or wanted.upper() == row.code or wanted.lower() == row.rule)
        and (since is None or (row.first_seen_at is not None and row.first_seen_at >= common.aware(since)))
        and (severity is None or row.severity == severity)
        and (not still_open or row.gone_run is None)
    ]
    result.sort(key=lambda r: (r.server, int(r.severity), -1 if r.tool_index is None else r.tool_index, r.code))
    return result


def _registry_codes() -> tuple[str, ...]:
    """The registry-data rules' codes (MCP701-MCP705)."""
    from scanner.rules.registrydata import REGISTRY_CODES

    return tuple(REGISTRY_CODES)


def _finding_intervals(
    session: Session,
    server_ids: list[int] | None,
    code: str | None = None,
    registry: tuple[str, ...] = (),
    *,
    codes: Sequence[str] = (),
    keep_closed: bool = True,
) -> _Intervals:
    """Stretches from the finding events, leaving out the registry-data codes (read by :func:`_registry_intervals`:
    their events exist only for scans that listed tools). A finding that followed a renamed tool (its scan's
    ``tool_removed`` and ``tool_added`` paired as ``fathom diff`` and the change log pair them) goes on under the
    new name, from when it first appeared.

    The events are read as plain rows a batch at a time (``yield_per``), never as ORM objects held by the session
    for its whole life, so what stays in memory is the stretches (only the open ones without ``keep_closed``)."""
    finding: ColumnElement[bool] = Event.kind.in_(_FINDING_EVENTS)
    if registry:
        finding = and_(finding, Event.code.not_in(registry))
    if code is not None:
        finding = and_(finding, Event.code == code)
    if codes:
        finding = and_(finding, Event.code.in_(list(codes)))
    query = (
        select(Event.kind, Event.run_id, Event.at, Event.scan_id, Event.code, Event.tool, Event.details, Server.name)
        .join(Server, Server.id == Event.server_id)
        .where(or_(finding, Event.kind.in_(_TOOL_EVENTS)))
        .order_by(Event.id)
        .execution_options(yield_per=_BATCH)
    )
    if server_ids is not None:  # a chunk of servers: each one's events in order (ix_events_server)
        query = query.where(Event.server_id.in_(server_ids)).order_by(None).order_by(Event.server_id, Event.id)
    intervals = _Intervals(keep_closed=keep_closed)
    scan: list[Any] = []  # one scan's events: its renames are known only once all of them are read
    for event in session.execute(query):
        if scan and (event.scan_id, event.name) != (scan[0].scan_id, scan[0].name):
            intervals.add_scan(scan)
            scan = []
        scan.append(event)
    if scan:
        intervals.add_scan(scan)
    return intervals


def _run_findings(
    session: Session,
    run_id: int,
    server_ids: list[int] | None,
    intervals: _Intervals,
    entry_intervals: _RegistryIntervals,
    registry: tuple[str, ...],
) -> list[FindingRow]:
    rows = []
    for leader in _leaderboard(session, run_id, server_ids[0] if server_ids else None):
        for finding in leader.findings:
            if finding.code in registry:
                interval = entry_intervals.at(leader.server, finding.code, finding.pointer, leader.scan_id)
            else:
                interval = intervals.at(leader.server, finding.code, finding.tool, leader.scan_id)
            rows.append(
                FindingRow(
                    server=leader.server,
                    code=finding.code,
                    rule=finding.rule,
                    severity=finding.severity,
                    tool=finding.tool,
                    tool_index=finding.tool_index,
                    message=finding.message,
                    hint=finding.hint,
                    pointer=finding.pointer,
                    details=dict(finding.details),
                    run_id=run_id,
                    first_seen_run=interval.first_run if interval else None,
                    first_seen_at=interval.first_at if interval else None,
                    gone_run=interval.gone_run if interval else None,
                    gone_at=interval.gone_at if interval else None,
                )
            )
    return rows


def _rule_hint(code: str) -> str:
    """A rule's hint from the catalogue (events do not repeat it, to stay small); empty for a retired code."""
    try:
        from scanner.rules import RULES

        return str(RULES[code].hint)
    except (ImportError, KeyError, AttributeError):
        return ""


class _Interval:
    """One stretch of a finding on a server: from a finding_appeared event to the next finding_resolved."""

    __slots__ = ("first_at", "first_run", "first_scan", "gone_at", "gone_run", "row")

    def __init__(self, event: _EventFields, name: str) -> None:
        self.first_run: int = event.run_id
        self.first_at: datetime = event.at
        self.first_scan: int = event.scan_id
        self.gone_run: int | None = None
        self.gone_at: datetime | None = None
        details = dict(event.details or {})
        try:
            severity = Severity.parse(str(details.get("severity", "note")))
        except KeyError:  # unknown: the worst, as everywhere a stored severity is read
            severity = Severity.PROBLEM
        index = details.get("tool_index")
        self.row = FindingRow(
            server=name,
            code=event.code or "",
            rule=str(details.get("rule", "")),
            severity=severity,
            tool=event.tool,
            tool_index=index if isinstance(index, int) else None,
            message=str(details.get("message", "")),
            hint=str(details.get("hint") or _rule_hint(event.code or "")),
            pointer=details.get("pointer") if isinstance(details.get("pointer"), str) else None,
            details={},
            run_id=None,
            first_seen_run=self.first_run,
            first_seen_at=self.first_at,
            gone_run=None,
            gone_at=None,
        )

    def close(self, event: _EventFields | _ScanMark) -> None:
        self.gone_run, self.gone_at = event.run_id, event.at
        self.row = replace(self.row, gone_run=event.run_id, gone_at=event.at)


class _Intervals:
    """Finding intervals per (server, code, tool), built from the events in id order. Without ``keep_closed`` a
    stretch is forgotten as soon as it closes (``fathom findings --open``)."""

    def __init__(self, *, keep_closed: bool = True) -> None:
        self._by_key: dict[tuple[str, str, str | None], list[_Interval]] = defaultdict(list)
        self._renamed: dict[tuple[str, str, str | None], list[_Interval]] = defaultdict(list)  # by the old name
        self._keep_closed = keep_closed

    def add_scan(self, events: Sequence[Any]) -> None:
        """One scan's events of one server (``name`` a column of each), in order: its finding events, a finding
        that followed a renamed tool carried over to the new name (:func:`followed_findings`)."""
        name = events[0].name
        added = [event for event in events if event.kind == changes.TOOL_ADDED and event.tool is not None]
        removed = [event for event in events if event.kind == changes.TOOL_REMOVED and event.tool is not None]
        renamed = changes.pair_renames(*(map(_rename_key, tools) for tools in (removed, added))) if added else {}
        findings = [event for event in events if event.kind in _FINDING_EVENTS]
        followed = changes.followed_findings(
            renamed,
            ((event.code, event.tool) for event in findings if event.kind == changes.FINDING_APPEARED),
            ((event.code, event.tool) for event in findings if event.kind == changes.FINDING_RESOLVED),
        )
        for event in findings:
            if event.kind == changes.FINDING_APPEARED and (event.code, event.tool) in followed:
                continue  # carried over when its old name's stretch is met
            new_name = renamed.get(event.tool) if event.tool is not None else None
            if event.kind == changes.FINDING_RESOLVED and (event.code, new_name) in followed:
                appeared = next(
                    item
                    for item in findings
                    if item.kind == changes.FINDING_APPEARED and (item.code, item.tool) == (event.code, new_name)
                )
                self._follow(name, event.code or "", event.tool, appeared)
            else:
                self.add(event, name)

    def _follow(self, name: str, code: str, old: str | None, appeared: _EventFields) -> None:
        """The open stretch of ``code`` on tool ``old`` goes on as the finding ``appeared`` on the new name."""
        stretches = self._by_key.get((name, code, old))
        if not stretches or stretches[-1].gone_run is not None:
            self.add(appeared, name)
            return
        stretch = stretches.pop()
        if not stretches:
            del self._by_key[(name, code, old)]
        if self._keep_closed:  # a read of an earlier run still finds it under the old name (:meth:`at`)
            self._renamed[(name, code, old)].append(stretch)
        moved = _Interval(appeared, name)
        moved.first_run, moved.first_at, moved.first_scan = stretch.first_run, stretch.first_at, stretch.first_scan
        moved.row = replace(moved.row, first_seen_run=stretch.first_run, first_seen_at=stretch.first_at)
        self._by_key[(name, code, appeared.tool)].append(moved)

    def add(self, event: _EventFields, name: str) -> None:
        key = (name, event.code or "", event.tool)
        stretches = self._by_key[key]
        if event.kind == changes.FINDING_APPEARED:
            if not stretches or stretches[-1].gone_run is not None:
                stretches.append(_Interval(event, name))
        elif stretches and stretches[-1].gone_run is None:
            stretches[-1].close(event)
            if not self._keep_closed:
                del self._by_key[key]

    def values_flat(self) -> list[_Interval]:
        return [interval for stretches in self._by_key.values() for interval in stretches]

    def at(self, server: str, code: str, tool: str | None, scan_id: int) -> _Interval | None:
        """The stretch that covers ``scan_id`` (the last one that began at or before it)."""
        found = None
        for interval in self._by_key.get((server, code, tool), []):
            if interval.first_scan <= scan_id:
                found = interval
        for interval in self._renamed.get((server, code, tool), []):  # before the tool was renamed
            if interval.first_scan <= scan_id and (found is None or interval.first_scan > found.first_scan):
                found = interval
        return found


class _ScanMark:
    """A scan as a stretch of a registry-data finding sees it: where and when it was."""

    __slots__ = ("at", "run_id", "scan_id")

    def __init__(self, scan_id: int, run_id: int, at: datetime) -> None:
        self.scan_id, self.run_id, self.at = scan_id, run_id, at


class _EntryInterval(_Interval):
    """One stretch of a registry-data finding: from the first scan holding it to the next scan without it."""

    def __init__(self, finding: StoredFinding, scan: _ScanMark, name: str) -> None:
        # Not _Interval's constructor: the stretch starts at a scan, not at an event.
        self.first_run = scan.run_id
        self.first_at = scan.at
        self.first_scan = scan.scan_id
        self.gone_run = None
        self.gone_at = None
        stored = common.finding_from_row(finding)
        self.row = FindingRow(
            server=name,
            code=stored.code,
            rule=stored.rule,
            severity=stored.severity,
            tool=stored.tool,
            tool_index=stored.tool_index,
            message=stored.message,
            hint=stored.hint,
            pointer=stored.pointer,
            details=dict(stored.details),
            run_id=None,
            first_seen_run=scan.run_id,
            first_seen_at=scan.at,
            gone_run=None,
            gone_at=None,
        )


class _RegistryIntervals:
    """Registry-data finding stretches per (server, code, pointer), built from each server's scans in id order."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, str | None], list[_EntryInterval]] = defaultdict(list)
        self._server: str | None = None
        self._open: dict[tuple[str, str, str | None], _EntryInterval] = {}  # the current server's open stretches

    def scan(self, name: str, scan: _ScanMark, held: list[StoredFinding]) -> None:
        """One scan of server ``name`` (each server's scans in order, one server after another) holding the
        registry findings ``held``: open what is new, close what went."""
        if name != self._server:
            self._server, self._open = name, {}
        keys = set()
        for finding in held:
            key = (name, finding.code, finding.pointer)
            keys.add(key)
            if key not in self._open:
                interval = _EntryInterval(finding, scan, name)
                self._by_key[key].append(interval)
                self._open[key] = interval
        for key in [key for key in self._open if key not in keys]:
            self._open.pop(key).close(scan)

    def values_flat(self) -> list[_EntryInterval]:
        return [interval for stretches in self._by_key.values() for interval in stretches]

    def at(self, server: str, code: str, pointer: str | None, scan_id: int) -> _Interval | None:
        """The stretch that covers ``scan_id`` (the last one that began at or before it)."""
        found: _Interval | None = None
        for interval in self._by_key.get((server, code, pointer), []):
            if interval.first_scan <= scan_id:
                found = interval
        return found


def _registry_intervals(
    session: Session, server_ids: list[int] | None, code: str | None, registry: tuple[str, ...]
) -> _RegistryIntervals:
    """Registry-data finding stretches from the stored findings of every scan of each server that ever had one
    (only those servers' scans are read, in one query ordered by server and scan)."""
    wanted = StoredFinding.code == code if code is not None else StoredFinding.code.in_(registry)
    having = select(Scan.server_id).join(StoredFinding, StoredFinding.scan_id == Scan.id).where(wanted).distinct()
    if server_ids is not None:
        having = having.where(Scan.server_id.in_(server_ids))
    query = (
        select(Scan.id, Scan.run_id, Scan.scanned_at, Scan.server_id, Server.name, StoredFinding)
        .join(Server, Server.id == Scan.server_id)
        .outerjoin(StoredFinding, and_(StoredFinding.scan_id == Scan.id, wanted))
        .where(Scan.server_id.in_(having))
        .order_by(Scan.server_id, Scan.id, StoredFinding.id)
    )
    intervals = _RegistryIntervals()
    current: tuple[int, str, _ScanMark] | None = None
    held: list[StoredFinding] = []
    for scan_id, run_id, scanned_at, _server, name, finding in session.execute(query):
        if current is None or current[0] != scan_id:
            if current is not None:
                intervals.scan(current[1], current[2], held)
            current, held = (scan_id, name, _ScanMark(scan_id, run_id, scanned_at)), []
        if finding is not None:
            held.append(finding)
    if current is not None:
        intervals.scan(current[1], current[2], held)
    return intervals
