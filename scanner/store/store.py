"""The store: the write path of a crawl and every query over its history (the only module that writes SQL).

Each server's result is written in its own transaction, so a crawl killed at any point leaves a consistent
database that keeps every server finished before the kill; ``mark_stale_runs_interrupted`` and ``resume_run``
pick such a run up again. Tool lists are stored once by content hash and measured (tokens, per-tool costs,
findings) once per rule catalogue version, so an unchanged server costs one small ``scans`` row per rescan.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    CursorResult,
    Engine,
    Row,
    Select,
    Table,
    and_,
    bindparam,
    delete,
    exists,
    func,
    select,
    update,
)
from sqlalchemy.orm import Session, sessionmaker

from scanner import history
from scanner.errors import FathomError, InputError
from scanner.models import CheckReport, Finding, ScanOutcome, ServerEntry, Severity, TokenCount, ToolCost, Toolset
from scanner.store import bulk, codec
from scanner.store.rows import (
    Diff,
    EventRow,
    FindingRow,
    LeaderRow,
    RunRow,
    RunTrend,
    ScanRecord,
    ScanRow,
    ServerRow,
)
from scanner.store.tables import (
    Base,
    Event,
    Measurement,
    Run,
    RunAggregate,
    Scan,
    Server,
    ToolsetRow,
    ToolsetToken,
    ToolToken,
)
from scanner.store.tables import FindingRow as FindingTable

Measure = Callable[[Toolset], CheckReport]
RUN_STATUSES = ("running", "finished", "interrupted")
_FINDING_EVENTS = (history.FINDING_APPEARED, history.FINDING_RESOLVED)
_CODE = re.compile(r"[A-Z]+[0-9]+")


def _now() -> datetime:
    return datetime.now(UTC)


def _finding_from_row(row: Any) -> Finding:
    """A finding from a ``findings`` row: an ORM object, a Core result row or a :class:`_StoredFinding`."""
    try:
        severity = Severity(row.severity)
    except ValueError:
        severity = Severity.NOTE
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


def _finding_values(finding: Finding, toolset_id: int, rule_version: str, scan_id: int | None) -> dict[str, Any]:
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


class _StoredFinding:
    """The values of a ``findings`` row just inserted, read like a result row (for :func:`_finding_from_row`)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(values)


def _new_id(result: CursorResult[Any]) -> int:
    """The primary key of the one row an ``INSERT`` just wrote."""
    key = result.inserted_primary_key
    assert key is not None and key[0] is not None  # every table's key is an autoincrement integer
    return int(key[0])


def _table(name: str) -> Table:
    return Base.metadata.tables[name]


# Core tables for the write path: prepared once, each statement's compiled form is cached by SQLAlchemy.
_SERVERS = _table("servers")
_RUNS = _table("runs")
_SCANS = _table("scans")
_TOOLSETS = _table("toolsets")
_MEASUREMENTS = _table("measurements")
_TOOLSET_TOKENS = _table("toolset_tokens")
_TOOL_TOKENS = _table("tool_tokens")
_FINDINGS = _table("findings")
_EVENTS = _table("events")
_FINDING_COLUMNS = tuple(
    _FINDINGS.c[name]
    for name in ("code", "slug", "severity", "tool", "message", "hint", "pointer", "details", "tool_index")
)


# Prepared once: building a statement per call costs more than executing it (its cache key is recomputed).
_INSERT_SERVER = _SERVERS.insert()
_INSERT_TOOLSET = _TOOLSETS.insert()
_INSERT_SCAN = _SCANS.insert()
_INSERT_EVENTS = _EVENTS.insert()
_INSERT_TOOLSET_TOKENS = _TOOLSET_TOKENS.insert()
_INSERT_TOOL_TOKENS = _TOOL_TOKENS.insert()
_INSERT_FINDINGS = _FINDINGS.insert()
_INSERT_MEASUREMENT = _MEASUREMENTS.insert()
_SET_LAST = update(_SERVERS).where(_SERVERS.c.id == bindparam("server")).values(last_scan_id=bindparam("last"))
_SET_LAST_OK = (
    update(_SERVERS)
    .where(_SERVERS.c.id == bindparam("server"))
    .values(last_scan_id=bindparam("last"), last_ok_scan_id=bindparam("last_ok"))
)


def _state_query() -> Select[Any]:
    """Everything :meth:`Store.record_scan` must know before writing, in one round trip.

    One row per run (none if the run does not exist): its status and rule version; the server by name (NULLs if
    new); its last scan's outcome; its last successful scan (``ok_*``: toolset, server version, its run's rule
    version, whether it has over-time findings); a scan already written for it in this run (``duplicate_*``);
    the toolset with this hash, if stored, and whether it is measured under the run's rule version.
    """
    run, last, ok, ok_run = (
        _RUNS.alias("run"),
        _SCANS.alias("last_scan"),
        _SCANS.alias("ok_scan"),
        _RUNS.alias("ok_run"),
    )
    duplicate, duplicate_toolset = _SCANS.alias("duplicate"), _TOOLSETS.alias("duplicate_toolset")
    measured = _MEASUREMENTS.alias("measured")
    ok_findings = exists(select(_FINDINGS.c.id).where(_FINDINGS.c.scan_id == ok.c.id))
    joined = (
        run.outerjoin(_SERVERS, _SERVERS.c.name == bindparam("name"))
        .outerjoin(last, last.c.id == _SERVERS.c.last_scan_id)
        .outerjoin(ok, ok.c.id == _SERVERS.c.last_ok_scan_id)
        .outerjoin(ok_run, ok_run.c.id == ok.c.run_id)
        .outerjoin(duplicate, and_(duplicate.c.run_id == run.c.id, duplicate.c.server_id == _SERVERS.c.id))
        .outerjoin(duplicate_toolset, duplicate_toolset.c.id == duplicate.c.toolset_id)
        .outerjoin(_TOOLSETS, _TOOLSETS.c.sha256 == bindparam("sha256"))
        .outerjoin(
            measured, and_(measured.c.toolset_id == _TOOLSETS.c.id, measured.c.rule_version == run.c.rule_version)
        )
    )
    return (
        select(
            run.c.status.label("run_status"),
            run.c.rule_version.label("rule_version"),
            _SERVERS.c.id.label("server_id"),
            last.c.outcome.label("last_outcome"),
            ok.c.id.label("ok_id"),
            ok.c.toolset_id.label("ok_toolset_id"),
            ok.c.server_version.label("ok_server_version"),
            ok_run.c.rule_version.label("ok_rule_version"),
            ok_findings.label("ok_has_findings"),
            duplicate.c.id.label("duplicate_id"),
            duplicate.c.outcome.label("duplicate_outcome"),
            duplicate_toolset.c.sha256.label("duplicate_sha256"),
            _TOOLSETS.c.id.label("toolset_id"),
            measured.c.toolset_id.label("measured_id"),
        )
        .select_from(joined)
        .where(run.c.id == bindparam("run_id"))
    )


_STATE = _state_query()


def _counts(findings: Iterable[Finding]) -> tuple[int, int, int]:
    counts = [0, 0, 0]
    for finding in findings:
        counts[int(finding.severity)] += 1
    return counts[0], counts[1], counts[2]


def _nearest_rank(values: list[int], fraction: float) -> int | None:
    """The nearest-rank percentile (an actual value of the list, never an interpolation)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class Store:
    """A Fathom database: open it with :func:`scanner.store.open_store`, then write runs and query them.

    Not thread-safe: a crawl has one writer (``scanner.crawl``); readers in other processes are fine (WAL).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def close(self) -> None:
        """Release every pooled connection (the database file is closed)."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- Runs ---------------------------------------------------------------------------------------------

    def start_run(self, source: str, rule_version: str, options: Mapping[str, Any]) -> int:
        """Open a run (status ``running``) and return its id. ``options`` are stored without secrets."""
        with self._sessions.begin() as session:
            run = Run(
                started_at=_now(),
                finished_at=None,
                status="running",
                source=codec.redact(str(source))[:1000],
                rule_version=str(rule_version)[:64],
                options=codec.small_json(options, limit=8192),
                servers_scanned=0,
                servers_ok=0,
            )
            session.add(run)
            session.flush()
            return run.id

    def finish_run(self, run_id: int, status: str = "finished") -> None:
        """Close a run as ``finished`` or ``interrupted`` and compute its aggregates (one row for trends)."""
        if status not in ("finished", "interrupted"):
            raise ValueError(f"a run finishes as 'finished' or 'interrupted', not {status!r}")
        with self._sessions.begin() as session:
            run = self._run(session, run_id)
            run.status = status
            run.finished_at = _now()
            self._aggregate(session, run, run.rule_version)

    def resume_run(self, run_id: int) -> set[str]:
        """Reopen an interrupted (or still running) run; returns the names already scanned, to skip them."""
        with self._sessions.begin() as session:
            run = self._run(session, run_id)
            if run.status == "finished":
                raise InputError(f"Run {run_id} is finished; start a new run instead of resuming it.")
            run.status = "running"
            run.finished_at = None
        return self.scanned_server_names(run_id)

    def resumable_run(self, source: str) -> int | None:
        """The newest unfinished run (interrupted, or left ``running`` by a killed process) of ``source``."""
        with self._sessions() as session:
            return session.scalar(
                select(Run.id)
                .where(Run.source == codec.redact(str(source))[:1000], Run.status.in_(("interrupted", "running")))
                .order_by(Run.id.desc())
                .limit(1)
            )

    def scanned_server_names(self, run_id: int) -> set[str]:
        """The servers that already have a scan in ``run_id`` (what ``--resume`` skips)."""
        with self._sessions() as session:
            rows = session.scalars(
                select(Server.name).join(Scan, Scan.server_id == Server.id).where(Scan.run_id == run_id)
            )
            return set(rows)

    def interrupted_runs(self) -> list[RunRow]:
        """Runs marked ``interrupted``, newest first: candidates for ``--resume``."""
        return [row for row in reversed(self.runs()) if row.status == "interrupted"]

    def mark_stale_runs_interrupted(self, older_than: timedelta = timedelta(0)) -> list[int]:
        """Mark ``running`` runs with no activity (start or last scan) for ``older_than`` as interrupted.

        A process killed mid-crawl leaves its run ``running``; call this when a new scan starts (with a margin
        such as ten minutes if several crawls may share the database). Returns the ids it marked.
        """
        cutoff = _now() - older_than
        marked = []
        with self._sessions() as session:
            running = session.execute(
                select(Run.id, Run.started_at, func.max(Scan.scanned_at))
                .outerjoin(Scan, Scan.run_id == Run.id)
                .where(Run.status == "running")
                .group_by(Run.id, Run.started_at)
            ).all()
        for run_id, started, last_scan in running:
            last = max(started, last_scan) if last_scan is not None else started
            if last <= cutoff:
                self.finish_run(run_id, "interrupted")
                marked.append(run_id)
        return marked

    @staticmethod
    def _run(session: Session, run_id: int) -> Run:
        run = session.get(Run, run_id)
        if run is None:
            raise InputError(f"No run {run_id} in this database.")
        return run

    # --- The write path -----------------------------------------------------------------------------------

    def record_scan(self, run_id: int, entry: ServerEntry, outcome: ScanOutcome, measure: Measure) -> ScanRecord:
        """Store one server's result in its own transaction, and what changed since its previous scan.

        If the outcome is ok the toolset is looked up by hash; only a toolset not yet measured under the run's
        rule version is measured (``measure`` runs outside the write transaction). Then the scan row, then the
        history: tool events and MCP501/MCP502 against the previous successful scan, finding_appeared /
        finding_resolved, server_version_changed and outcome_changed. A second result for a server already
        scanned in this run writes nothing and comes back with ``duplicate=True``.

        This is the crawl's hot path, so it speaks SQLAlchemy Core over one connection: one read (the run, the
        server, its previous scans and the toolset, :data:`_STATE`), then a few prepared inserts and one update
        in a single transaction. Findings it has just written are handed to the history, never read back.
        """
        toolset = Toolset.from_tools(tuple(outcome.tools or ())) if outcome.ok else None
        with self.engine.connect() as connection:
            state = connection.execute(
                _STATE, {"run_id": run_id, "name": entry.name, "sha256": toolset.sha256 if toolset else None}
            ).one_or_none()
            connection.commit()  # end the read; the write below is its own transaction
            if state is None:
                raise InputError(f"No run {run_id} in this database.")
            if state.run_status == "finished":
                raise InputError(f"Run {run_id} is finished; its results can no longer change.")
            if state.server_id is not None and state.duplicate_id is not None:
                return ScanRecord(
                    scan_id=state.duplicate_id,
                    run_id=run_id,
                    server=entry.name,
                    outcome=state.duplicate_outcome,
                    toolset_sha256=state.duplicate_sha256,
                    new_toolset=False,
                    measured=False,
                    duplicate=True,
                )
            report: CheckReport | None = None
            measure_error: str | None = None  # kept with the scan; the toolset is measured again next time
            if toolset is not None and state.measured_id is None:
                try:
                    report = measure(toolset)
                except FathomError:
                    raise  # run-fatal (no tokenizer, ...): stop the crawl
                except Exception as exc:  # a checker bug on one hostile list must not abort 20 000 servers
                    measure_error = f"{type(exc).__name__}: {exc}"[:300]

            with connection.begin():
                return self._write_scan(connection, run_id, entry, outcome, state, toolset, report, measure_error)

    def _write_scan(
        self,
        connection: Connection,
        run_id: int,
        entry: ServerEntry,
        outcome: ScanOutcome,
        state: Row[Any],
        toolset: Toolset | None,
        report: CheckReport | None,
        measure_error: str | None,
    ) -> ScanRecord:
        """The writes of :meth:`record_scan`, inside its transaction, in the order the ORM used to emit them."""
        rule_version: str = state.rule_version
        server_id: int | None = state.server_id
        if server_id is None:
            server_id = _new_id(
                connection.execute(_INSERT_SERVER, {"name": entry.name, "first_seen": _now(), "first_run_id": run_id})
            )
        toolset_id: int | None = state.toolset_id
        new_toolset = False
        written: list[Finding] | None = None  # the toolset findings this call stored, for the history
        if toolset is not None:
            if toolset_id is None:
                data, size = codec.compress_tools(toolset.tools)
                values = {
                    "sha256": toolset.sha256,
                    "tools_count": len(toolset),
                    "raw_size": size,
                    "data": data,
                    "first_seen": _now(),
                }
                toolset_id = _new_id(connection.execute(_INSERT_TOOLSET, values))
                new_toolset = True
            if report is not None:
                written = self._write_measurement(connection, toolset_id, report, rule_version, fresh=new_toolset)

        # Every row's own reading of the clock, in this order (the report tests' clock ticks once per reading).
        now = _now()
        scan_outcome = str(outcome.outcome)
        server_version = codec.text(outcome.server_version, 100)
        scan_id = _new_id(
            connection.execute(
                _INSERT_SCAN,
                {
                    "run_id": run_id,
                    "server_id": server_id,
                    "scanned_at": now,
                    "outcome": scan_outcome,
                    "detail": codec.redact(str(outcome.detail or "")[: codec.MAX_DETAIL * 2])[: codec.MAX_DETAIL],
                    "transport": str(outcome.transport or entry.transport)[:32],
                    "era": codec.text(outcome.era, 16),
                    "protocol_version": codec.text(outcome.protocol_version, 32),
                    "server_name": codec.text(outcome.server_name, 200),
                    "server_version": server_version,
                    "capability_profile": codec.text(outcome.capability_profile, 64),
                    "timings": codec.timings(outcome.timings_ms),
                    "pages": outcome.pages if isinstance(outcome.pages, int) else 0,
                    "toolset_id": toolset_id,
                    "anonymous": bool(entry.anonymous),
                    "extra": codec.small_json(
                        {**outcome.extra, "measure_error": measure_error} if measure_error else outcome.extra
                    ),
                },
            )
        )
        # A list that could not be measured has no findings to compare: history skips it and compares the next
        # measured scan with the last measured one.
        comparable = toolset is not None and toolset_id is not None and measure_error is None
        connection.execute(
            _SET_LAST_OK if comparable else _SET_LAST, {"server": server_id, "last": scan_id, "last_ok": scan_id}
        )

        events = history.compare_outcomes(state.last_outcome, scan_outcome)
        history_findings: list[Finding] = []
        if comparable and toolset is not None and toolset_id is not None:
            events_ok, history_findings = self._history(
                connection, scan_id, server_version, toolset, toolset_id, state, rule_version, written
            )
            events.extend(events_ok)
        if events:
            connection.execute(
                _INSERT_EVENTS,
                [
                    {
                        "server_id": server_id,
                        "run_id": run_id,
                        "scan_id": scan_id,
                        "at": now,
                        "kind": event.kind,
                        "tool": codec.text(event.tool, 300),
                        "code": event.code,
                        "details": codec.details_json(event.details),
                    }
                    for event in events
                ],
            )
        return ScanRecord(
            scan_id=scan_id,
            run_id=run_id,
            server=entry.name,
            outcome=scan_outcome,
            toolset_sha256=toolset.sha256 if toolset else None,
            new_toolset=new_toolset,
            measured=report is not None,
            events=tuple(events),
            history_findings=tuple(history_findings),
        )

    @staticmethod
    def _write_measurement(
        connection: Connection | Session,
        toolset_id: int,
        report: CheckReport,
        rule_version: str,
        *,
        fresh: bool = False,
    ) -> list[Finding]:
        """Replace a toolset's tokens and per-tool costs, and its findings under ``rule_version``.

        ``fresh`` says the toolset row was inserted in this transaction, so there is nothing to replace. Returns
        the findings as stored (cut to their columns), which is what reading them back would give.
        """
        if not fresh:
            connection.execute(delete(_TOOLSET_TOKENS).where(_TOOLSET_TOKENS.c.toolset_id == toolset_id))
            connection.execute(delete(_TOOL_TOKENS).where(_TOOL_TOKENS.c.toolset_id == toolset_id))
            connection.execute(
                delete(_FINDINGS).where(
                    _FINDINGS.c.toolset_id == toolset_id,
                    _FINDINGS.c.rule_version == rule_version,
                    _FINDINGS.c.scan_id.is_(None),
                )
            )
            connection.execute(
                delete(_MEASUREMENTS).where(
                    _MEASUREMENTS.c.toolset_id == toolset_id, _MEASUREMENTS.c.rule_version == rule_version
                )
            )
        # Core bulk inserts (executemany): a first crawl writes tens of thousands of these rows.
        token_rows = [
            {"toolset_id": toolset_id, "provider": str(p)[:32], "tokens": int(c.tokens), "method": str(c.method)[:200]}
            for p, c in report.tokens.items()
        ]
        if token_rows:
            connection.execute(_INSERT_TOOLSET_TOKENS, token_rows)
        cost_rows: dict[int, dict[str, Any]] = {}
        for cost in report.tool_costs:
            tokens = {str(p): int(n) for p, n in cost.tokens.items()}
            cost_rows.setdefault(
                cost.index,
                {
                    "toolset_id": toolset_id,
                    "tool_index": cost.index,
                    "name": str(cost.name)[:300],
                    "tokens": tokens,
                    "max_tokens": max(tokens.values(), default=0),
                },
            )
        if cost_rows:
            connection.execute(_INSERT_TOOL_TOKENS, list(cost_rows.values()))
        finding_rows = [_finding_values(f, toolset_id, rule_version, None) for f in report.findings]
        if finding_rows:
            connection.execute(_INSERT_FINDINGS, finding_rows)
        connection.execute(
            _INSERT_MEASUREMENT, {"toolset_id": toolset_id, "rule_version": rule_version, "measured_at": _now()}
        )
        return [_finding_from_row(_StoredFinding(values)) for values in finding_rows]

    def _history(
        self,
        connection: Connection,
        scan_id: int,
        server_version: str | None,
        toolset: Toolset,
        toolset_id: int,
        state: Row[Any],
        rule_version: str,
        written: list[Finding] | None,
    ) -> tuple[list[history.ChangeEvent], list[Finding]]:
        """Events and over-time findings of an ok scan against the server's previous successful scan.

        ``state`` is the :data:`_STATE` row (the previous successful scan's columns are ``ok_*``); ``written`` the
        toolset's findings when this scan measured it, so they need not be read back.
        """
        events: list[history.ChangeEvent] = []
        history_findings: list[Finding] = []
        has_previous = state.ok_id is not None
        previous_toolset: int | None = state.ok_toolset_id
        previous_version: str | None = state.ok_rule_version if has_previous else None
        if has_previous:
            if previous_toolset != toolset_id and previous_toolset is not None:
                data = connection.execute(
                    select(_TOOLSETS.c.data).where(_TOOLSETS.c.id == previous_toolset)
                ).scalar_one_or_none()
                previous_tools = codec.decompress_tools(data) if data is not None else []
                tool_events, history_findings = history.compare_tools(
                    previous_tools, state.ok_server_version, list(toolset.tools), server_version
                )
                events.extend(tool_events)
            events.extend(history.compare_versions(state.ok_server_version, server_version))
        if history_findings:
            connection.execute(
                _INSERT_FINDINGS, [_finding_values(f, toolset_id, rule_version, scan_id) for f in history_findings]
            )

        unchanged = (
            has_previous
            and previous_toolset == toolset_id
            and previous_version == rule_version
            and not history_findings
            and not state.ok_has_findings
        )
        if not unchanged:
            current = written if written is not None else self._toolset_findings(connection, toolset_id, rule_version)
            current = current + history_findings
            before: list[Finding] = []
            if has_previous and previous_toolset is not None and previous_version is not None:
                before = self._toolset_findings(connection, previous_toolset, previous_version)
                before += self._scan_findings(connection, state.ok_id)
            events.extend(self._appeared_details(history.compare_findings(before, current), current))
        return events, history_findings

    @staticmethod
    def _appeared_details(events: list[history.ChangeEvent], current: list[Finding]) -> list[history.ChangeEvent]:
        """Give each finding_appeared event the finding's pointer and index, so past findings need no recompute.

        The hint is left out: it is the rule's, and the catalogue gives it back by code.
        """
        by_key: dict[tuple[str, str | None], Finding] = {}
        for finding in current:
            by_key.setdefault(history.finding_key(finding), finding)
        enriched = []
        for event in events:
            match = by_key.get((event.code or "", event.tool))
            if event.kind == history.FINDING_APPEARED and match is not None:
                details = {
                    **dict(event.details),
                    "pointer": match.pointer,
                    "tool_index": match.tool_index,
                }
                event = history.ChangeEvent(event.kind, tool=event.tool, code=event.code, details=details)
            enriched.append(event)
        return enriched

    @staticmethod
    def _toolset_findings(connection: Connection | Session, toolset_id: int, rule_version: str) -> list[Finding]:
        rows = connection.execute(
            select(*_FINDING_COLUMNS)
            .where(
                _FINDINGS.c.toolset_id == toolset_id,
                _FINDINGS.c.rule_version == rule_version,
                _FINDINGS.c.scan_id.is_(None),
            )
            .order_by(_FINDINGS.c.id)
        )
        return [_finding_from_row(row) for row in rows]

    @staticmethod
    def _scan_findings(connection: Connection | Session, scan_id: int) -> list[Finding]:
        rows = connection.execute(
            select(*_FINDING_COLUMNS).where(_FINDINGS.c.scan_id == scan_id).order_by(_FINDINGS.c.id)
        )
        return [_finding_from_row(row) for row in rows]

    # --- Aggregates and rescoring -------------------------------------------------------------------------

    def _aggregate(self, session: Session, run: Run, rule_version: str) -> None:
        """(Re)compute a run's aggregate row and its counts, counting findings under ``rule_version``."""
        scans = session.execute(select(Scan.id, Scan.outcome, Scan.toolset_id).where(Scan.run_id == run.id)).all()
        ok_scans = [(scan_id, toolset_id) for scan_id, outcome, toolset_id in scans if outcome == "ok"]
        in_run = select(Scan.toolset_id).where(Scan.run_id == run.id, Scan.toolset_id.is_not(None))

        tokens: dict[int, dict[str, int]] = defaultdict(dict)
        for toolset_id, provider, count in session.execute(
            select(ToolsetToken.toolset_id, ToolsetToken.provider, ToolsetToken.tokens).where(
                ToolsetToken.toolset_id.in_(in_run)
            )
        ):
            tokens[toolset_id][provider] = count
        sizes = select(ToolsetRow.id, ToolsetRow.tools_count).where(ToolsetRow.id.in_(in_run))
        tools = dict(session.execute(sizes).all())
        codes_by_toolset: dict[int, set[tuple[str, int]]] = defaultdict(set)
        for toolset_id, code, severity in session.execute(
            select(FindingTable.toolset_id, FindingTable.code, FindingTable.severity)
            .where(
                FindingTable.toolset_id.in_(in_run),
                FindingTable.rule_version == rule_version,
                FindingTable.scan_id.is_(None),
            )
            .distinct()
        ):
            codes_by_toolset[toolset_id].add((code, severity))
        codes_by_scan: dict[int, set[tuple[str, int]]] = defaultdict(set)
        for owner, code, severity in session.execute(
            select(FindingTable.scan_id, FindingTable.code, FindingTable.severity)
            .join(Scan, Scan.id == FindingTable.scan_id)
            .where(Scan.run_id == run.id)
            .distinct()
        ):
            if owner is not None:
                codes_by_scan[owner].add((code, severity))

        outcomes: dict[str, int] = defaultdict(int)
        for _, outcome, _ in scans:
            outcomes[outcome] += 1
        hits: dict[str, int] = defaultdict(int)
        with_problems = 0
        max_tokens: list[int] = []
        per_provider: dict[str, list[int]] = defaultdict(list)
        tool_counts: list[int] = []
        for scan_id, served in ok_scans:
            found = codes_by_scan.get(scan_id, set()) | codes_by_toolset.get(served or -1, set())
            for code in {code for code, _ in found}:
                hits[code] += 1
            if any(severity == int(Severity.PROBLEM) for _, severity in found):
                with_problems += 1
            costs = tokens.get(served or -1, {})
            if costs:
                max_tokens.append(max(costs.values()))
                for provider, count in costs.items():
                    per_provider[provider].append(count)
            if served is not None and served in tools:
                tool_counts.append(tools[served])

        values = {
            "rule_version": rule_version,
            "computed_at": _now(),
            "servers_scanned": len(scans),
            "servers_ok": len(ok_scans),
            "servers_with_problems": with_problems,
            "outcomes": dict(sorted(outcomes.items())),
            "median_tokens": int(statistics.median_low(max_tokens)) if max_tokens else None,
            "p90_tokens": _nearest_rank(max_tokens, 0.9),
            "median_tokens_by_provider": {
                provider: int(statistics.median_low(counts)) for provider, counts in sorted(per_provider.items())
            },
            "median_tools": int(statistics.median_low(tool_counts)) if tool_counts else None,
            "findings_by_rule": dict(sorted(hits.items())),
        }
        aggregate = session.get(RunAggregate, run.id)
        if aggregate is None:
            session.add(RunAggregate(run_id=run.id, **values))
        else:
            for key, value in values.items():
                setattr(aggregate, key, value)
        run.servers_scanned = len(scans)
        run.servers_ok = len(ok_scans)
        session.flush()

    def rescore(self, rule_version: str, measure: Measure) -> int:
        """Re-measure every stored toolset under ``rule_version`` and recount every closed run's aggregates.

        Use after the rule catalogue (or a tokenizer) changes: findings are stored anew under ``rule_version``
        (older versions' findings stay, so past events keep their meaning), tokens and per-tool costs are
        replaced, and trends/leaderboards of every finished or interrupted run then count under the new
        catalogue. One transaction per toolset. Returns how many toolsets were measured (a list the checker
        crashes on is skipped and keeps its old numbers; a run-fatal :class:`FathomError` stops the rescore).
        """
        with self._sessions() as session:
            ids = list(session.scalars(select(ToolsetRow.id).order_by(ToolsetRow.id)))
        skipped = 0
        for toolset_id in ids:
            with self._sessions() as session:
                row = session.get(ToolsetRow, toolset_id)
                if row is None:
                    continue
                toolset = Toolset(tools=tuple(codec.decompress_tools(row.data)), sha256=row.sha256)
            try:
                report = measure(toolset)
            except FathomError:
                raise
            except Exception:  # one list the checker cannot handle keeps its old numbers; the rest go on
                skipped += 1
                continue
            with self.engine.begin() as connection:
                self._write_measurement(connection, toolset_id, report, rule_version)
        with self._sessions.begin() as session:
            for run in session.scalars(select(Run).where(Run.status != "running")):
                self._aggregate(session, run, rule_version)
        return len(ids) - skipped

    # --- Queries ------------------------------------------------------------------------------------------

    @staticmethod
    def _scoring_versions(session: Session) -> dict[int, str]:
        """Each run's rule version for counting findings: the rescored one if any, else the one it ran with."""
        rows = session.execute(
            select(Run.id, func.coalesce(RunAggregate.rule_version, Run.rule_version)).outerjoin(
                RunAggregate, RunAggregate.run_id == Run.id
            )
        )
        return dict(rows.all())

    def runs(self) -> list[RunRow]:
        """Every run, oldest first; a running run's counts are live."""
        with self._sessions() as session:
            live = dict(
                session.execute(
                    select(Scan.run_id, func.count())
                    .join(Run, Run.id == Scan.run_id)
                    .where(Run.status == "running")
                    .group_by(Scan.run_id)
                ).all()
            )
            live_ok = dict(
                session.execute(
                    select(Scan.run_id, func.count())
                    .join(Run, Run.id == Scan.run_id)
                    .where(Run.status == "running", Scan.outcome == "ok")
                    .group_by(Scan.run_id)
                ).all()
            )
            return [
                RunRow(
                    id=run.id,
                    started_at=run.started_at,
                    finished_at=run.finished_at,
                    status=run.status,
                    source=run.source,
                    rule_version=run.rule_version,
                    options=dict(run.options or {}),
                    servers_scanned=live.get(run.id, 0) if run.status == "running" else run.servers_scanned,
                    servers_ok=live_ok.get(run.id, 0) if run.status == "running" else run.servers_ok,
                )
                for run in session.scalars(select(Run).order_by(Run.id))
            ]

    def _tokens_of(self, session: Session, toolset_ids: Iterable[int | None]) -> dict[int, dict[str, int]]:
        wanted = sorted({tid for tid in toolset_ids if tid is not None})
        result: dict[int, dict[str, int]] = defaultdict(dict)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            for toolset_id, provider, count in session.execute(
                select(ToolsetToken.toolset_id, ToolsetToken.provider, ToolsetToken.tokens).where(
                    ToolsetToken.toolset_id.in_(chunk)
                )
            ):
                result[toolset_id][provider] = count
        return result

    def servers(self) -> list[ServerRow]:
        """Every server by name, with its last outcome and the tools and tokens of its last successful scan."""
        with self._sessions() as session:
            last_scan = Scan.__table__.alias("last_scan")
            ok_scan = Scan.__table__.alias("ok_scan")
            rows = session.execute(
                select(
                    Server.name,
                    Server.first_seen,
                    last_scan.c.run_id,
                    last_scan.c.scanned_at,
                    last_scan.c.outcome,
                    last_scan.c.detail,
                    ok_scan.c.run_id,
                    ok_scan.c.server_version,
                    ok_scan.c.toolset_id,
                    ToolsetRow.tools_count,
                    ToolsetRow.sha256,
                )
                .outerjoin(last_scan, last_scan.c.id == Server.last_scan_id)
                .outerjoin(ok_scan, ok_scan.c.id == Server.last_ok_scan_id)
                .outerjoin(ToolsetRow, ToolsetRow.id == ok_scan.c.toolset_id)
                .order_by(Server.name)
            ).all()
            tokens = self._tokens_of(session, (row[8] for row in rows))
            return [
                ServerRow(
                    name=row[0],
                    first_seen=row[1],
                    last_run_id=row[2],
                    last_scanned_at=row[3],
                    last_outcome=row[4],
                    last_detail=row[5] or "",
                    last_ok_run_id=row[6],
                    server_version=row[7],
                    tools_count=row[9],
                    tokens=dict(tokens.get(row[8], {})) if row[8] is not None else {},
                    toolset_sha256=row[10],
                )
                for row in rows
            ]

    def _server_id(self, session: Session, name: str) -> int:
        server_id = session.scalar(select(Server.id).where(Server.name == name))
        if server_id is None:
            raise InputError(f"No server named {name!r} in this database.")
        return server_id

    def history(self, server: str) -> list[ScanRow]:
        """Every scan of ``server``, oldest first, with its tokens and finding counts."""
        with self._sessions() as session:
            server_id = self._server_id(session, server)
            versions = self._scoring_versions(session)
            scans = session.execute(
                select(Scan, ToolsetRow.sha256, ToolsetRow.tools_count)
                .outerjoin(ToolsetRow, ToolsetRow.id == Scan.toolset_id)
                .where(Scan.server_id == server_id)
                .order_by(Scan.id)
            ).all()
            tokens = self._tokens_of(session, (scan.toolset_id for scan, _, _ in scans))
            counts = self._severity_counts(
                session, [(scan.id, scan.toolset_id, versions[scan.run_id]) for scan, _, _ in scans]
            )
            return [
                ScanRow(
                    scan_id=scan.id,
                    run_id=scan.run_id,
                    scanned_at=scan.scanned_at,
                    outcome=scan.outcome,
                    detail=scan.detail,
                    transport=scan.transport,
                    era=scan.era,
                    protocol_version=scan.protocol_version,
                    server_name=scan.server_name,
                    server_version=scan.server_version,
                    tools_count=tools_count,
                    tokens=dict(tokens.get(scan.toolset_id, {})) if scan.toolset_id is not None else {},
                    problems=counts.get(scan.id, (0, 0, 0))[0],
                    warnings=counts.get(scan.id, (0, 0, 0))[1],
                    notes=counts.get(scan.id, (0, 0, 0))[2],
                    toolset_sha256=sha,
                    rule_version=versions[scan.run_id],
                )
                for scan, sha, tools_count in scans
            ]

    def histories(self, names: Iterable[str] | None = None) -> dict[str, list[ScanRow]]:
        """:meth:`history` of many servers (all when None) in four queries per 500; unknown names left out.

        See :func:`scanner.store.bulk.histories`: ask for a few hundred servers at a time on a long history.
        """
        return bulk.histories(self.engine, names)

    def history_columns(self, names: Iterable[str] | None = None) -> dict[str, bulk.HistoryColumns]:
        """:meth:`history` of many servers as columns ordered by run, plus each one's newest scan: for charts.

        See :func:`scanner.store.bulk.history_columns`; no object per scan, so a year of history stays cheap.
        """
        return bulk.history_columns(self.engine, names)

    def _severity_counts(
        self, session: Session, scans: list[tuple[int, int | None, str]]
    ) -> dict[int, tuple[int, int, int]]:
        """(problems, warnings, notes) per scan id, from its toolset's findings and its own (MCP5xx)."""
        by_toolset: dict[tuple[int, str], list[int]] = {}
        wanted = {(toolset_id, version) for _, toolset_id, version in scans if toolset_id is not None}
        for toolset_id, version in wanted:
            rows = session.execute(
                select(FindingTable.severity, func.count())
                .where(
                    FindingTable.toolset_id == toolset_id,
                    FindingTable.rule_version == version,
                    FindingTable.scan_id.is_(None),
                )
                .group_by(FindingTable.severity)
            )
            counts = [0, 0, 0]
            for severity, count in rows:
                if 0 <= severity <= 2:
                    counts[severity] += count
            by_toolset[(toolset_id, version)] = counts
        own: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
        scan_ids = [scan_id for scan_id, _, _ in scans]
        for start in range(0, len(scan_ids), 500):
            for owner, severity, count in session.execute(
                select(FindingTable.scan_id, FindingTable.severity, func.count())
                .where(FindingTable.scan_id.in_(scan_ids[start : start + 500]))
                .group_by(FindingTable.scan_id, FindingTable.severity)
            ):
                if owner is not None and 0 <= severity <= 2:
                    own[owner][severity] += count
        result = {}
        for scan_id, served, version in scans:
            base = by_toolset.get((served, version), [0, 0, 0]) if served is not None else [0, 0, 0]
            extra = own.get(scan_id, [0, 0, 0])
            result[scan_id] = (base[0] + extra[0], base[1] + extra[1], base[2] + extra[2])
        return result

    def events(
        self,
        server: str | None = None,
        *,
        kind: str | None = None,
        run: int | None = None,
        since: datetime | None = None,
    ) -> list[EventRow]:
        """Change events, oldest first: of one server or all, optionally one kind, one run, or at/after ``since``."""
        return bulk.events(self.engine, server, kind=kind, run=run, since=since)

    def findings(
        self,
        rule: str | None = None,
        server: str | None = None,
        since: datetime | None = None,
        run: int | None = None,
    ) -> list[FindingRow]:
        """Findings with when they first appeared and when they went away (None while present).

        ``run`` given: exactly the findings present in that run's scans. Otherwise every occurrence in the
        history (present and gone), from the finding events. ``rule`` is a code (``MCP205``) or a slug
        (``param-untyped``); ``since`` keeps findings that first appeared at or after it.
        """
        wanted = rule.strip() if rule else None
        code = wanted.upper() if wanted and _CODE.fullmatch(wanted.upper()) else None
        with self._sessions() as session:
            server_id = self._server_id(session, server) if server is not None else None
            intervals = self._finding_intervals(session, server_id, code)
            if run is not None:
                rows = self._run_findings(session, run, server_id, intervals)
            else:
                rows = [interval.row for interval in intervals.values_flat()]
        result = [
            row
            for row in rows
            if (wanted is None or wanted.upper() == row.code or wanted.lower() == row.rule)
            and (since is None or (row.first_seen_at is not None and row.first_seen_at >= _aware(since)))
        ]
        result.sort(key=lambda r: (r.server, int(r.severity), -1 if r.tool_index is None else r.tool_index, r.code))
        return result

    def _finding_intervals(self, session: Session, server_id: int | None, code: str | None = None) -> _Intervals:
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

    def _run_findings(
        self, session: Session, run_id: int, server_id: int | None, intervals: _Intervals
    ) -> list[FindingRow]:
        rows = []
        for leader in self._leaderboard(session, run_id, server_id):
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

    def _scan_of(self, session: Session, server_id: int, run_id: int | None, before: int | None) -> Scan | None:
        query = select(Scan).where(Scan.server_id == server_id, Scan.outcome == "ok")
        if run_id is not None:
            query = query.where(Scan.run_id == run_id)
        if before is not None:
            query = query.where(Scan.id < before)
        return session.scalar(query.order_by(Scan.id.desc()).limit(1))

    def diff(self, server: str, from_run: int | None = None, to_run: int | None = None) -> Diff:
        """What changed on ``server`` between two successful scans.

        ``to_run`` None: its latest successful scan; ``from_run`` None: the successful scan before that.
        Raises :class:`InputError` when the server had no successful scan in a run asked for.
        """
        with self._sessions() as session:
            server_id = self._server_id(session, server)
            versions = self._scoring_versions(session)
            to_scan = self._scan_of(session, server_id, to_run, None)
            if to_scan is None or to_scan.toolset_id is None:
                where = f"in run {to_run}" if to_run is not None else "yet"
                raise InputError(f"Server {server!r} has no successful scan {where}.")
            from_scan = self._scan_of(session, server_id, from_run, None if from_run is not None else to_scan.id)
            if from_run is not None and from_scan is None:
                raise InputError(f"Server {server!r} has no successful scan in run {from_run}.")

            def side(scan: Scan | None) -> tuple[list[Any], str | None, dict[str, int], list[Finding]]:
                if scan is None or scan.toolset_id is None:
                    return [], None, {}, []
                row = session.get(ToolsetRow, scan.toolset_id)
                assert row is not None  # a foreign key guarantees it
                found = self._toolset_findings(session, row.id, versions[scan.run_id])
                found += self._scan_findings(session, scan.id)
                return (
                    codec.decompress_tools(row.data),
                    row.sha256,
                    self._tokens_of(session, [row.id]).get(row.id, {}),
                    found,
                )

            tools_from, sha_from, tokens_from, found_from = side(from_scan)
            tools_to, sha_to, tokens_to, found_to = side(to_scan)
            changes = history.diff_tools(tools_from, tools_to)
            keys_from = {history.finding_key(f) for f in found_from}
            keys_to = {history.finding_key(f) for f in found_to}
            return Diff(
                server=server,
                from_run=from_scan.run_id if from_scan else None,
                to_run=to_scan.run_id,
                from_version=from_scan.server_version if from_scan else None,
                to_version=to_scan.server_version,
                from_sha256=sha_from,
                to_sha256=sha_to or "",
                tools_added=changes.added,
                tools_removed=changes.removed,
                tools_changed=changes.changed,
                tokens_from=tokens_from,
                tokens_to=tokens_to,
                findings_new=tuple(
                    sorted((f for f in found_to if history.finding_key(f) not in keys_from), key=Finding.sort_key)
                ),
                findings_fixed=tuple(
                    sorted((f for f in found_from if history.finding_key(f) not in keys_to), key=Finding.sort_key)
                ),
            )

    # --- For the report -----------------------------------------------------------------------------------

    def leaderboard(self, run_id: int) -> list[LeaderRow]:
        """Every server scanned in ``run_id`` with outcome, tokens, findings and per-tool severity counts.

        Sorted by name; the report ranks. Findings are counted under the run's scoring rule version (the
        rescored one after :meth:`rescore`).
        """
        with self._sessions() as session:
            return self._leaderboard(session, run_id, None)

    def _leaderboard(self, session: Session, run_id: int, server_id: int | None) -> list[LeaderRow]:
        self._run(session, run_id)
        version = self._scoring_versions(session)[run_id]
        scans_query = (
            select(Scan, Server.name, ToolsetRow.sha256, ToolsetRow.tools_count)
            .join(Server, Server.id == Scan.server_id)
            .outerjoin(ToolsetRow, ToolsetRow.id == Scan.toolset_id)
            .where(Scan.run_id == run_id)
            .order_by(Server.name)
        )
        in_run = select(Scan.toolset_id).where(Scan.run_id == run_id, Scan.toolset_id.is_not(None))
        if server_id is not None:
            scans_query = scans_query.where(Scan.server_id == server_id)
            in_run = in_run.where(Scan.server_id == server_id)
        scans = session.execute(scans_query).all()
        tokens: dict[int, dict[str, int]] = defaultdict(dict)
        methods: dict[int, dict[str, str]] = defaultdict(dict)
        for token_row in session.scalars(select(ToolsetToken).where(ToolsetToken.toolset_id.in_(in_run))):
            tokens[token_row.toolset_id][token_row.provider] = token_row.tokens
            methods[token_row.toolset_id][token_row.provider] = token_row.method
        by_toolset: dict[int, list[Finding]] = defaultdict(list)
        for row in session.scalars(
            select(FindingTable)
            .where(
                FindingTable.toolset_id.in_(in_run),
                FindingTable.rule_version == version,
                FindingTable.scan_id.is_(None),
            )
            .order_by(FindingTable.id)
        ):
            by_toolset[row.toolset_id].append(_finding_from_row(row))
        by_scan: dict[int, list[Finding]] = defaultdict(list)
        own = (
            select(FindingTable)
            .join(Scan, Scan.id == FindingTable.scan_id)
            .where(Scan.run_id == run_id)
            .order_by(FindingTable.id)
        )
        if server_id is not None:
            own = own.where(Scan.server_id == server_id)
        for row in session.scalars(own):
            if row.scan_id is not None:
                by_scan[row.scan_id].append(_finding_from_row(row))

        result = []
        for scan, name, sha, tools_count in scans:
            found = sorted(by_toolset.get(scan.toolset_id or -1, []) + by_scan.get(scan.id, []), key=Finding.sort_key)
            per_tool = [[0, 0, 0] for _ in range(tools_count or 0)]
            list_wide = [0, 0, 0]
            for finding in found:
                index = finding.tool_index
                target = per_tool[index] if index is not None and 0 <= index < len(per_tool) else list_wide
                target[int(finding.severity)] += 1
            problems, warnings, notes = _counts(found)
            result.append(
                LeaderRow(
                    server=name,
                    scan_id=scan.id,
                    outcome=scan.outcome,
                    detail=scan.detail,
                    transport=scan.transport,
                    era=scan.era,
                    protocol_version=scan.protocol_version,
                    server_version=scan.server_version,
                    anonymous=scan.anonymous,
                    tools_count=tools_count,
                    tokens=dict(tokens.get(scan.toolset_id or -1, {})),
                    token_methods=dict(methods.get(scan.toolset_id or -1, {})),
                    problems=problems,
                    warnings=warnings,
                    notes=notes,
                    toolset_sha256=sha,
                    findings=tuple(found),
                    tool_severities=tuple((p, w, n) for p, w, n in per_tool),
                    list_severities=(list_wide[0], list_wide[1], list_wide[2]),
                )
            )
        return result

    def trends(self, include_interrupted: bool = False) -> list[RunTrend]:
        """One point per finished run (and interrupted ones if asked), oldest first, from the aggregates."""
        with self._sessions() as session:
            query = select(Run, RunAggregate).join(RunAggregate, RunAggregate.run_id == Run.id).order_by(Run.id)
            statuses = ("finished", "interrupted") if include_interrupted else ("finished",)
            query = query.where(Run.status.in_(statuses))
            return [
                RunTrend(
                    run_id=run.id,
                    started_at=run.started_at,
                    finished_at=run.finished_at,
                    status=run.status,
                    rule_version=aggregate.rule_version,
                    servers_scanned=aggregate.servers_scanned,
                    servers_ok=aggregate.servers_ok,
                    servers_with_problems=aggregate.servers_with_problems,
                    outcomes=dict(aggregate.outcomes or {}),
                    median_tokens=aggregate.median_tokens,
                    p90_tokens=aggregate.p90_tokens,
                    median_tokens_by_provider=dict(aggregate.median_tokens_by_provider or {}),
                    median_tools=aggregate.median_tools,
                    findings_by_rule=dict(aggregate.findings_by_rule or {}),
                )
                for run, aggregate in session.execute(query)
            ]

    def rule_hits(self, run_id: int) -> dict[str, int]:
        """How many servers each rule hit in ``run_id`` (from its aggregate; counted live for a running run)."""
        with self._sessions() as session:
            aggregate = session.get(RunAggregate, run_id)
            if aggregate is not None:
                return dict(aggregate.findings_by_rule or {})
        hits: dict[str, int] = defaultdict(int)
        for row in self.leaderboard(run_id):
            for code in {finding.code for finding in row.findings}:
                hits[code] += 1
        return dict(sorted(hits.items()))

    def _toolset_row(self, session: Session, sha256: str) -> ToolsetRow:
        row = session.scalar(select(ToolsetRow).where(ToolsetRow.sha256 == sha256))
        if row is None:
            raise InputError(f"No toolset {sha256[:12]}… in this database.")
        return row

    def toolset_tools(self, sha256: str) -> list[Any]:
        """A stored tool list exactly as the server sent it (raw JSON values)."""
        with self._sessions() as session:
            return codec.decompress_tools(self._toolset_row(session, sha256).data)

    def toolsets_tools(self, shas: Iterable[str]) -> dict[str, list[Any]]:
        """:meth:`toolset_tools` of many hashes in one query per 500; unknown hashes are left out."""
        return bulk.toolsets_tools(self.engine, shas)

    def bulk_load(self, rows: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, int]:
        """Insert trusted, already-shaped rows straight into tables (benchmarks, imports): see :func:`bulk.load`."""
        return bulk.load(self.engine, rows)

    def toolset_findings(self, sha256: str, rule_version: str) -> list[Finding]:
        """A toolset's own findings under ``rule_version``, worst first (no over-time findings: those are a scan's)."""
        with self._sessions() as session:
            row = self._toolset_row(session, sha256)
            return sorted(self._toolset_findings(session, row.id, rule_version), key=Finding.sort_key)

    def toolset_tokens(self, sha256: str) -> dict[str, TokenCount]:
        """A toolset's tokens per turn for each provider, with the method that counted them."""
        with self._sessions() as session:
            row = self._toolset_row(session, sha256)
            return {
                token.provider: TokenCount(provider=token.provider, tokens=token.tokens, method=token.method)
                for token in session.scalars(select(ToolsetToken).where(ToolsetToken.toolset_id == row.id))
            }

    def toolset_costs(self, sha256: str, largest: int | None = None) -> list[ToolCost]:
        """Each tool's own cost per provider, in list order; ``largest=5`` gives the five dearest, dearest first."""
        with self._sessions() as session:
            row = self._toolset_row(session, sha256)
            query = select(ToolToken).where(ToolToken.toolset_id == row.id)
            if largest is not None:
                query = query.order_by(ToolToken.max_tokens.desc(), ToolToken.tool_index).limit(largest)
            else:
                query = query.order_by(ToolToken.tool_index)
            return [
                ToolCost(name=tool.name, index=tool.tool_index, tokens=dict(tool.tokens or {}))
                for tool in session.scalars(query)
            ]

    def database_stats(self) -> dict[str, int]:
        """Row counts per table (for ``fathom db info`` and the growth benchmark)."""
        tables = (Server, Run, ToolsetRow, Measurement, ToolsetToken, ToolToken, FindingTable, Scan, Event)
        with self._sessions() as session:
            stats = {
                table.__tablename__: int(session.scalar(select(func.count()).select_from(table)) or 0)
                for table in tables
            }
            stats["run_aggregates"] = int(session.scalar(select(func.count()).select_from(RunAggregate)) or 0)
            return stats


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


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
        self.row = FindingRow(**{**self.row.__dict__, "gone_run": event.run_id, "gone_at": event.at})


class _Intervals:
    """Finding intervals per (server id, code, tool), built from the events in id order."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, str | None], list[_Interval]] = defaultdict(list)

    def add(self, event: Event, name: str) -> None:
        key = (name, event.code or "", event.tool)
        stretches = self._by_key[key]
        if event.kind == history.FINDING_APPEARED:
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
