"""New servers' first scans and unchanged servers' scans, gathered while a batch is written and inserted together,
one ``executemany`` a table, so every id comes out as one result at a time would give it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row

from scanner.measure import history
from scanner.models import ScanOutcome, ServerEntry, Toolset
from scanner.store import common
from scanner.store.rows import ScanRecord
from scanner.store.write.extras import insert_instructions_tokens, instructions_rows, prepare
from scanner.store.write.history_events import event_rows, first_findings
from scanner.store.write.measurements import MeasurementRows, insert_measurement
from scanner.store.write.scan_rows import scan_values, toolset_values
from scanner.store.write.shared import (
    INSERT_EVENTS,
    INSERT_FINDINGS,
    INSERT_INSTRUCTIONS,
    INSERT_SCAN,
    INSERT_SERVER,
    INSERT_TOOLSET,
    INSTRUCTIONS_IDS,
    SCAN_IDS,
    SERVER_IDS,
    SET_LAST,
    SET_LAST_OK,
    TOOLSET_IDS,
    Measure,
    inserted_ids,
)


class NewServer:
    """A new server's first scan (no lanes, its list new or already measured), its rows prepared in the order
    :func:`_write_scan` would write them and the clock read in that order; the ids they need are set when the
    batch writes them (:meth:`Pending.write`)."""

    def __init__(
        self,
        connection: Connection,
        run_id: int,
        entry: ServerEntry,
        outcome: ScanOutcome,
        state: Row[Any],
        toolset: Toolset | None,
        measure: Measure,
    ) -> None:
        rule_version: str = state.rule_version
        report, measure_error, extras = prepare(connection, entry, outcome, state, toolset, measure)
        self.server = {"name": entry.name, "first_seen": common.now(), "first_run_id": run_id}
        self.toolset_id: int | None = state.toolset_id
        self.toolset = toolset_values(toolset) if toolset is not None and self.toolset_id is None else None
        self.measured = MeasurementRows(None, report, rule_version) if report is not None else None
        self.instructions = instructions_rows(extras.instructions) if extras.instructions is not None else None
        self.instructions_id = extras.instructions_id
        self.scan = scan_values(run_id, None, entry, outcome, self.toolset_id, self.instructions_id, measure_error)
        self.findings = [common.finding_values(f, self.toolset_id, rule_version, None) for f in extras.findings]
        # A listed and measured list: the scan is the newest successful one, and every finding of it appeared.
        self.comparable = toolset is not None and measure_error is None
        events = history.compare_outcomes(state.last_outcome, str(outcome.outcome))
        if self.comparable:
            written = self.measured.written() if self.measured is not None else None
            events += first_findings(connection, state.toolset_id, rule_version, written, extras.findings)
        self.events = events
        self.event_rows = event_rows(events, run_id, self.scan["scanned_at"])

    def set_server(self, server_id: int) -> None:
        self.scan["server_id"] = server_id
        for row in self.event_rows:
            row["server_id"] = server_id

    def set_toolset(self, toolset_id: int) -> None:
        self.toolset_id = self.scan["toolset_id"] = toolset_id
        for row in self.findings:
            row["toolset_id"] = toolset_id
        if self.measured is not None:
            self.measured.set_toolset(toolset_id)

    def set_scan(self, scan_id: int) -> None:
        for row in (*self.findings, *self.event_rows):
            row["scan_id"] = scan_id


class Pending:
    """The scans :func:`record_scans` gathers (unchanged servers' rows, new servers' first scans) and writes
    together by :meth:`write`, one ``executemany`` a table, in the order of the results, so every id comes out as
    one result at a time would give it."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.names: set[str] = set()
        self.instructions: set[str] = set()  # the hashes of new instructions a gathered scan will insert
        # (index, server, listed sha, scan row, the new server's first scan or None)
        self.scans: list[tuple[int, str, str | None, dict[str, Any], NewServer | None]] = []

    def add(
        self, index: int, entry: ServerEntry, outcome: ScanOutcome, state: Row[Any], toolset: Toolset | None
    ) -> None:
        """An unchanged result: its scan row only."""
        self.names.add(entry.name)
        values = scan_values(self.run_id, state.server_id, entry, outcome, state.toolset_id, None, None)
        self.scans.append((index, entry.name, toolset.sha256 if toolset is not None else None, values, None))

    def add_new(self, index: int, entry: ServerEntry, toolset: Toolset | None, new: NewServer) -> None:
        """A new server's first scan."""
        self.names.add(entry.name)
        if new.instructions is not None:
            self.instructions.add(new.instructions[0]["sha256"])
        self.scans.append((index, entry.name, toolset.sha256 if toolset is not None else None, new.scan, new))

    def holds_instructions(self, outcome: ScanOutcome) -> bool:
        """Whether a gathered scan will insert the instructions ``outcome`` has."""
        from scanner.measure.instructions import instructions_text, text_sha256

        text = instructions_text(outcome.extra) if self.instructions and outcome.ok else None
        return text is not None and text_sha256(text) in self.instructions

    def write(self, connection: Connection, records: list[ScanRecord | None]) -> None:
        """Insert the gathered rows and move their servers' pointers (a scan that listed a measured list is also
        the newest successful one), and put each one's record in ``records``."""
        if not self.scans:
            return
        news = [new for *_, new in self.scans if new is not None]
        if news:
            _write_new_servers(connection, news)
        rows = [values for _, _, _, values, _ in self.scans]
        ids = inserted_ids(connection, INSERT_SCAN, rows, "server_id", SCAN_IDS, run_id=self.run_id)
        for new, scan_id in zip((new for *_, new in self.scans), ids, strict=True):
            if new is not None:
                new.set_scan(scan_id)
        findings = [row for new in news for row in (*(new.measured.findings if new.measured else ()), *new.findings)]
        if findings:
            connection.execute(INSERT_FINDINGS, findings)
        pointers: dict[bool, list[dict[str, int]]] = {True: [], False: []}
        for (_, _, sha, values, new), scan_id in zip(self.scans, ids, strict=True):
            newest_ok = new.comparable if new is not None else sha is not None
            pointers[newest_ok].append({"server": values["server_id"], "last": scan_id, "last_ok": scan_id})
        for newest_ok, statement in ((True, SET_LAST_OK), (False, SET_LAST)):
            if pointers[newest_ok]:
                connection.execute(statement, pointers[newest_ok])
        events = [row for new in news for row in new.event_rows]
        if events:
            connection.execute(INSERT_EVENTS, events)
        for (index, server, sha, values, new), scan_id in zip(self.scans, ids, strict=True):
            records[index] = ScanRecord(
                scan_id=scan_id,
                run_id=self.run_id,
                server=server,
                outcome=values["outcome"],
                toolset_sha256=sha,
                new_toolset=new is not None and new.toolset is not None,
                measured=new is not None and new.measured is not None,
                events=tuple(new.events) if new is not None else (),
            )
        self.names.clear()
        self.instructions.clear()
        self.scans.clear()


def _write_new_servers(connection: Connection, news: Sequence[NewServer]) -> None:
    """The rows new servers' first scans add before their scans: servers, new toolsets with their measurements
    (their findings go in with the scans'), new instructions; sets the ids on each."""
    servers = inserted_ids(connection, INSERT_SERVER, [new.server for new in news], "name", SERVER_IDS)
    for new, server_id in zip(news, servers, strict=True):
        new.set_server(server_id)
    listing = [new for new in news if new.toolset is not None]
    if listing:
        rows = [new.toolset for new in listing if new.toolset is not None]
        ids = inserted_ids(connection, INSERT_TOOLSET, rows, "sha256", TOOLSET_IDS)
        for new, toolset_id in zip(listing, ids, strict=True):
            new.set_toolset(toolset_id)
    insert_measurement(connection, [new.measured for new in news if new.measured is not None])
    instructed = [new for new in news if new.instructions is not None]
    if instructed:
        rows = [new.instructions[0] for new in instructed if new.instructions is not None]
        ids = inserted_ids(connection, INSERT_INSTRUCTIONS, rows, "sha256", INSTRUCTIONS_IDS)
        for new, instructions_id in zip(instructed, ids, strict=True):
            new.instructions_id = new.scan["instructions_id"] = instructions_id
        insert_instructions_tokens(
            connection,
            [(key, new.instructions[1]) for new, key in zip(instructed, ids, strict=True) if new.instructions],
        )
