"""The crawl's write path: :func:`record_scans` (a batch of results, in one transaction) and :func:`record_scan` for
one.

A batch of results (what the crawl's writer hands over at once) is written in one transaction, its lists measured
before it, so a crawl killed at any point leaves a consistent database that keeps every batch committed before the
kill. Tool lists are stored once by content hash and measured (tokens, per-tool costs, findings) once per rule
catalogue version, so an unchanged server costs one small ``scans`` row per rescan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, Row

from scanner.errors import FathomError
from scanner.measure import history
from scanner.models import CheckReport, Finding, ScanOutcome, ServerEntry, Toolset
from scanner.store import codec, common
from scanner.store.rows import ScanRecord
from scanner.store.write.extras import Extras, lane_rows, prepare, write_extras
from scanner.store.write.history_events import event_rows, scan_history
from scanner.store.write.measurements import write_measurement
from scanner.store.write.new_servers import NewServer, Pending
from scanner.store.write.scan_rows import scan_values, toolset_values
from scanner.store.write.shared import (
    INSERT_EVENTS,
    INSERT_FINDINGS,
    INSERT_SCAN,
    INSERT_SERVER,
    INSERT_TOOLSET,
    SCAN_LANES,
    SET_LAST,
    SET_LAST_OK,
    Measure,
    new_id,
)
from scanner.store.write.state import STATE_CHUNK, is_first_scan, is_unchanged, read_window, shared_later


def record_scan(engine: Engine, run_id: int, entry: ServerEntry, outcome: ScanOutcome, measure: Measure) -> ScanRecord:
    """Store one server's result in one transaction, and what changed since its previous scan.

    If the outcome is ok the toolset is looked up by hash; only a toolset not yet measured under the run's
    rule version is measured (``measure`` runs before the first write). Then the scan row, then the
    history: tool events and MCP501/MCP502 against the previous successful scan, finding_appeared /
    finding_resolved, server_version_changed and outcome_changed. A second result for a server already
    scanned in this run writes nothing and comes back with ``duplicate=True``.
    """
    return record_scans(engine, run_id, [(entry, outcome)], measure)[0]


def record_scans(
    engine: Engine, run_id: int, results: Sequence[tuple[ServerEntry, ScanOutcome]], measure: Measure
) -> list[ScanRecord]:
    """:func:`record_scan` of each result in turn (what the crawler's writer hands over at once), in order, in one
    transaction.

    This is the crawl's hot path, so it speaks SQLAlchemy Core over one connection: what it must know of each
    server (the run, the server, its previous scans and the toolset: :func:`_state_query`) is read for many
    servers at once, and every list none of them has measured is measured before the first write
    (:func:`_measure_ahead`). Then the results are written in their order, so ids come out as one result at a
    time would give them: the unchanged ones (nothing but a ``scans`` row and the server's newest-scan pointers)
    and new servers' first scans (:func:`is_first_scan`, their rows prepared by :class:`NewServer`) are
    gathered and written together, one ``executemany`` a table (:class:`Pending`); any other is written on its
    own with a few prepared inserts and one update, after what was gathered before it. A state is read again only
    when a write before it may have changed it (the same server or list earlier in the batch, or lanes). The batch
    commits as a unit: a crawl killed at any point leaves a consistent database holding every committed batch,
    and ``--resume`` rescans the rest. Findings it has just written are handed to the history, never read back.
    """
    if not results:
        return []
    records: list[ScanRecord | None] = [None] * len(results)
    toolsets = [Toolset.from_tools(tuple(outcome.tools or ())) if outcome.ok else None for _, outcome in results]
    shared = shared_later(results, toolsets)
    pending = Pending(run_id)
    stale = False  # a gathered unchanged result shares its server or list with a later one: read again once written
    with engine.connect() as connection, common.collector_paused():
        states = read_window(connection, run_id, results, toolsets, 0)
        measured = _measure_ahead(connection, run_id, results, toolsets, states, measure)
        for index, (entry, outcome) in enumerate(results):
            toolset = toolsets[index]
            if entry.name in pending.names:
                pending.write(connection, records)  # the run's first result for it must be seen as written
                states, stale = {}, False
            if index not in states:
                states = read_window(connection, run_id, results, toolsets, index)
            state = states[index]
            if is_unchanged(entry, outcome, state, toolset):
                pending.add(index, entry, outcome, state, toolset)
                stale = stale or shared[index]
                continue
            if is_first_scan(outcome, state, toolset, shared[index]):
                if pending.holds_instructions(outcome):
                    pending.write(connection, records)  # they must be found stored, not inserted again
                new = NewServer(connection, run_id, entry, outcome, state, toolset, measured)
                pending.add_new(index, entry, toolset, new)
                continue
            pending.write(connection, records)
            records[index] = _record(connection, run_id, entry, outcome, measured, state, toolset)
            if stale or shared[index] or outcome.lanes:  # what a later result's state says may have changed
                states, stale = {}, False
        pending.write(connection, records)
        connection.commit()
    return [record for record in records if record is not None]


def _measure_ahead(
    connection: Connection,
    run_id: int,
    results: Sequence[tuple[ServerEntry, ScanOutcome]],
    toolsets: Sequence[Toolset | None],
    states: Mapping[int, Row[Any]],
    measure: Measure,
) -> Measure:
    """``measure`` of every list of the batch not measured under the run's catalogue, once per list, before the
    batch writes anything (the write transaction never waits on a measurement); what it returns answers those
    lists (a list ``measure`` failed on fails again, the same way) and measures any other (a lane's)."""
    reports: dict[str, CheckReport | Exception] = {}
    window = states
    for start in range(0, len(results), STATE_CHUNK):
        if start:
            window = read_window(connection, run_id, results, toolsets, start)
        for position, state in window.items():
            toolset = toolsets[position]
            if toolset is None or toolset.sha256 in reports or state.measured_id is not None:
                continue
            if state.server_id is not None and state.duplicate_id is not None:
                continue  # a second result in this run writes nothing
            try:
                reports[toolset.sha256] = measure(toolset)
            except FathomError:
                raise  # run-fatal: nothing of the batch is written
            except Exception as exc:  # kept: _record stores it as the scan's measure error
                reports[toolset.sha256] = exc

    def measured(toolset: Toolset) -> CheckReport:
        found = reports.get(toolset.sha256)
        if found is None:
            return measure(toolset)
        if isinstance(found, Exception):
            raise found
        return found

    return measured


def _record(
    connection: Connection,
    run_id: int,
    entry: ServerEntry,
    outcome: ScanOutcome,
    measure: Measure,
    state: Row[Any],
    toolset: Toolset | None,
) -> ScanRecord:
    """One server's result after its :func:`_state_query` read, written in the batch's transaction (``measure``
    answers its list from :func:`_measure_ahead`), or its earlier scan in this run returned (``duplicate=True``)."""
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
    report, measure_error, extras = prepare(connection, entry, outcome, state, toolset, measure)
    return _write_scan(connection, run_id, entry, outcome, state, toolset, report, measure_error, extras)


def _write_scan(
    connection: Connection,
    run_id: int,
    entry: ServerEntry,
    outcome: ScanOutcome,
    state: Row[Any],
    toolset: Toolset | None,
    report: CheckReport | None,
    measure_error: str | None,
    extras: Extras,
) -> ScanRecord:
    """The writes of :meth:`record_scan`, inside its transaction, in the order the ORM used to emit them."""
    rule_version: str = state.rule_version
    server_id: int | None = state.server_id
    if server_id is None:
        server_id = new_id(
            connection.execute(INSERT_SERVER, {"name": entry.name, "first_seen": common.now(), "first_run_id": run_id})
        )
    toolset_id: int | None = state.toolset_id
    new_toolset = False
    written: list[Finding] | None = None  # the toolset findings this call stored, for the history
    if toolset is not None:
        if toolset_id is None:
            toolset_id = new_id(connection.execute(INSERT_TOOLSET, toolset_values(toolset)))
            new_toolset = True
        if report is not None:
            written = write_measurement(connection, toolset_id, report, rule_version, fresh=new_toolset)
    lane_ids = write_extras(connection, extras, rule_version)

    scan_outcome = str(outcome.outcome)
    server_version = codec.text(outcome.server_version, 100)
    values = scan_values(run_id, server_id, entry, outcome, toolset_id, extras.instructions_id, measure_error)
    now = values["scanned_at"]
    scan_id = new_id(connection.execute(INSERT_SCAN, values))
    if outcome.lanes:
        connection.execute(
            SCAN_LANES.insert(), lane_rows(outcome, scan_id, toolset, toolset_id, lane_ids, extras.lane_errors)
        )
    if extras.findings:
        connection.execute(
            INSERT_FINDINGS, [common.finding_values(f, toolset_id, rule_version, scan_id) for f in extras.findings]
        )
    # A list that could not be measured has no findings to compare: history skips it and compares the next
    # measured scan with the last measured one.
    comparable = toolset is not None and toolset_id is not None and measure_error is None
    connection.execute(
        SET_LAST_OK if comparable else SET_LAST, {"server": server_id, "last": scan_id, "last_ok": scan_id}
    )

    events = history.compare_outcomes(state.last_outcome, scan_outcome)
    history_findings: list[Finding] = []
    if comparable and toolset is not None and toolset_id is not None:
        events_ok, history_findings = scan_history(
            connection, scan_id, server_version, toolset, toolset_id, state, rule_version, written, extras
        )
        events.extend(events_ok)
    if events:
        connection.execute(INSERT_EVENTS, event_rows(events, run_id, now, server_id, scan_id))
    return ScanRecord(
        scan_id=scan_id,
        run_id=run_id,
        server=entry.name,
        outcome=scan_outcome,
        toolset_sha256=toolset.sha256 if toolset is not None else None,
        new_toolset=new_toolset,
        measured=report is not None,
        events=tuple(events),
        history_findings=tuple(history_findings),
    )
