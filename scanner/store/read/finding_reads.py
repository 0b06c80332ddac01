"""Reads: findings over time."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from scanner import history as changes
from scanner.models import Severity
from scanner.store import common
from scanner.store.read.leaderboard_reads import _leaderboard
from scanner.store.rows import (
    FindingRow,
)
from scanner.store.tables import (
    Event,
    Server,
)

_FINDING_EVENTS = (changes.FINDING_APPEARED, changes.FINDING_RESOLVED)


_CODE = re.compile(r"[A-Z]+[0-9]+")


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
    wanted = rule.strip() if rule else None
    code = wanted.upper() if wanted and _CODE.fullmatch(wanted.upper()) else None
    with sessions() as session:
        server_id = common.server_id(session, server) if server is not None else None
        intervals = _finding_intervals(session, server_id, code)
        if run is not None:
            rows = _run_findings(session, run, server_id, intervals)
        else:
            rows = [interval.row for interval in intervals.values_flat()]
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


def _finding_intervals(session: Session, server_id: int | None, code: str | None = None) -> _Intervals:
    query = (
        select(Event, Server.name)
        .join(Server, Server.id == Event.server_id)
        .where(Event.kind.in_(_FINDING_EVENTS))
        .order_by(Event.id)
    )
    if server_id is not None:
        query = query.where(Event.server_id == server_id)
    if code is not None:
        query = query.where(Event.code == code)
    intervals = _Intervals()
    for event, name in session.execute(query):
        intervals.add(event, name)
    return intervals


def _run_findings(session: Session, run_id: int, server_id: int | None, intervals: _Intervals) -> list[FindingRow]:
    rows = []
    for leader in _leaderboard(session, run_id, server_id):
        for finding in leader.findings:
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

    def __init__(self, event: Event, name: str) -> None:
        self.first_run: int = event.run_id
        self.first_at: datetime = event.at
        self.first_scan: int = event.scan_id
        self.gone_run: int | None = None
        self.gone_at: datetime | None = None
        details = dict(event.details or {})
        try:
            severity = Severity.parse(str(details.get("severity", "note")))
        except KeyError:
            severity = Severity.NOTE
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

    def close(self, event: Event) -> None:
        self.gone_run, self.gone_at = event.run_id, event.at
        self.row = replace(self.row, gone_run=event.run_id, gone_at=event.at)


class _Intervals:
    """Finding intervals per (server, code, tool), built from the events in id order."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, str | None], list[_Interval]] = defaultdict(list)

    def add(self, event: Event, name: str) -> None:
        key = (name, event.code or "", event.tool)
        stretches = self._by_key[key]
        if event.kind == changes.FINDING_APPEARED:
            if not stretches or stretches[-1].gone_run is not None:
                stretches.append(_Interval(event, name))
        elif stretches and stretches[-1].gone_run is None:
            stretches[-1].close(event)

    def values_flat(self) -> list[_Interval]:
        return [interval for stretches in self._by_key.values() for interval in stretches]

    def at(self, server: str, code: str, tool: str | None, scan_id: int) -> _Interval | None:
        """The stretch that covers ``scan_id`` (the last one that began at or before it)."""
        found = None
        for interval in self._by_key.get((server, code, tool), []):
            if interval.first_scan <= scan_id:
                found = interval
        return found
