"""The write path: the crawl's results (:func:`record_scans`, :func:`record_scan` for one), a toolset's measurement,
and a bulk loader of already-shaped rows for benchmarks and imports (:func:`load`).

A batch of results (what the crawl's writer hands over at once) is written in one transaction, its lists measured
before it, so a crawl killed at any point leaves a consistent database that keeps every batch committed before the
kill. Tool lists are stored once by content hash and
measured (tokens, per-tool costs, findings) once per rule catalogue version, so an unchanged server costs one
small ``scans`` row per rescan.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    CursorResult,
    Engine,
    Insert,
    Integer,
    Row,
    Select,
    String,
    and_,
    bindparam,
    delete,
    exists,
    func,
    select,
    union_all,
    update,
)
from sqlalchemy.orm import Session

from scanner.errors import FathomError, InputError
from scanner.measure import history
from scanner.measure import metrics as scan_metrics
from scanner.models import CheckReport, Finding, InstructionsCost, ScanOutcome, ServerEntry, Toolset
from scanner.store import codec, common
from scanner.store.rows import ScanRecord

Measure = Callable[[Toolset], CheckReport]

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

_SERVERS, _RUNS, _SCANS, _TOOLSETS = common.SERVERS, common.RUNS, common.SCANS, common.TOOLSETS
_MEASUREMENTS, _TOOLSET_TOKENS, _TOOL_TOKENS = common.MEASUREMENTS, common.TOOLSET_TOKENS, common.TOOL_TOKENS
_FINDINGS, _EVENTS = common.FINDINGS, common.EVENTS
_INSTRUCTIONS, _INSTRUCTIONS_TOKENS = common.TABLES["instructions"], common.TABLES["instructions_tokens"]
_SCAN_LANES = common.TABLES["scan_lanes"]


class _StoredFinding:
    """The values of a ``findings`` row just inserted, read like a result row (for ``common.finding_from_row``)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(values)


def _new_id(result: CursorResult[Any]) -> int:
    """The primary key of the one row an ``INSERT`` just wrote."""
    key = result.inserted_primary_key
    assert key is not None and key[0] is not None  # every table's key is an autoincrement integer
    return int(key[0])


# Prepared once: building a statement per call costs more than executing it (its cache key is recomputed).
_INSERT_SERVER = _SERVERS.insert()
_INSERT_TOOLSET = _TOOLSETS.insert()
_INSERT_SCAN = _SCANS.insert()
# The ids of rows just written, by their unique key: scans in a run by server (unique per run and server; its index
# answers it), servers by name, toolsets and instructions by hash.
_SCAN_IDS = select(_SCANS.c.server_id, _SCANS.c.id).where(
    _SCANS.c.run_id == bindparam("run_id"), _SCANS.c.server_id.in_(bindparam("keys", expanding=True))
)
_SERVER_IDS = select(_SERVERS.c.name, _SERVERS.c.id).where(_SERVERS.c.name.in_(bindparam("keys", expanding=True)))
_TOOLSET_IDS = select(_TOOLSETS.c.sha256, _TOOLSETS.c.id).where(
    _TOOLSETS.c.sha256.in_(bindparam("keys", expanding=True))
)
_INSTRUCTIONS_IDS = select(_INSTRUCTIONS.c.sha256, _INSTRUCTIONS.c.id).where(
    _INSTRUCTIONS.c.sha256.in_(bindparam("keys", expanding=True))
)
_INSERT_EVENTS = _EVENTS.insert()
_INSERT_TOOLSET_TOKENS = _TOOLSET_TOKENS.insert()
_INSERT_TOOL_TOKENS = _TOOL_TOKENS.insert()
_INSERT_FINDINGS = _FINDINGS.insert()
_INSERT_MEASUREMENT = _MEASUREMENTS.insert()
_INSERT_INSTRUCTIONS = _INSTRUCTIONS.insert()
_INSERT_INSTRUCTIONS_TOKENS = _INSTRUCTIONS_TOKENS.insert()
_SET_LAST = update(_SERVERS).where(_SERVERS.c.id == bindparam("server")).values(last_scan_id=bindparam("last"))
_SET_LAST_OK = (
    update(_SERVERS)
    .where(_SERVERS.c.id == bindparam("server"))
    .values(last_scan_id=bindparam("last"), last_ok_scan_id=bindparam("last_ok"))
)


def _state_query(count: int) -> Select[Any]:
    """Everything :func:`record_scans` must know before writing ``count`` results, in one round trip.

    One row per wanted result (``position``, its ``name`` and its list's ``sha256`` bound as ``p<i>``, ``n<i>``
    and ``s<i>``), none if the run does not exist: the run's status and rule version; the server by name (NULLs
    if new); its last scan's outcome; its last successful scan (``ok_*``: toolset, server version, its run's rule
    version, whether it has over-time findings); a scan already written for it in this run (``duplicate_*``);
    the toolset with this hash, if stored, and whether it is measured under the run's rule version.
    """
    rows = [
        select(
            bindparam(f"p{i}", type_=Integer).label("position"),
            bindparam(f"n{i}", type_=String).label("name"),
            bindparam(f"s{i}", type_=String).label("sha256"),
        )
        for i in range(count)
    ]
    # One result (record_scan, the first night's servers one by one): its values bound in place, no derived table.
    wanted = union_all(*rows).subquery("wanted") if count > 1 else None
    position, name, sha256 = (
        (wanted.c.position, wanted.c.name, wanted.c.sha256)
        if wanted is not None
        else (bindparam("p0", type_=Integer), bindparam("n0", type_=String), bindparam("s0", type_=String))
    )
    run, last, ok, ok_run = (
        _RUNS.alias("run"),
        _SCANS.alias("last_scan"),
        _SCANS.alias("ok_scan"),
        _RUNS.alias("ok_run"),
    )
    duplicate, duplicate_toolset = _SCANS.alias("duplicate"), _TOOLSETS.alias("duplicate_toolset")
    measured = _MEASUREMENTS.alias("measured")
    ok_findings = exists(select(_FINDINGS.c.id).where(_FINDINGS.c.scan_id == ok.c.id))
    start = wanted.join(run, run.c.id == bindparam("run_id")) if wanted is not None else run
    joined = (
        start.outerjoin(_SERVERS, _SERVERS.c.name == name)
        .outerjoin(last, last.c.id == _SERVERS.c.last_scan_id)
        .outerjoin(ok, ok.c.id == _SERVERS.c.last_ok_scan_id)
        .outerjoin(ok_run, ok_run.c.id == ok.c.run_id)
        .outerjoin(duplicate, and_(duplicate.c.run_id == run.c.id, duplicate.c.server_id == _SERVERS.c.id))
        .outerjoin(duplicate_toolset, duplicate_toolset.c.id == duplicate.c.toolset_id)
        .outerjoin(_TOOLSETS, _TOOLSETS.c.sha256 == sha256)
        .outerjoin(
            measured, and_(measured.c.toolset_id == _TOOLSETS.c.id, measured.c.rule_version == run.c.rule_version)
        )
    )
    query = select(
        position.label("position"),
        run.c.status.label("run_status"),
        run.c.rule_version.label("rule_version"),
        _SERVERS.c.id.label("server_id"),
        last.c.outcome.label("last_outcome"),
        ok.c.id.label("ok_id"),
        ok.c.toolset_id.label("ok_toolset_id"),
        ok.c.server_version.label("ok_server_version"),
        ok.c.instructions_id.label("ok_instructions_id"),
        ok_run.c.rule_version.label("ok_rule_version"),
        ok_findings.label("ok_has_findings"),
        duplicate.c.id.label("duplicate_id"),
        duplicate.c.outcome.label("duplicate_outcome"),
        duplicate_toolset.c.sha256.label("duplicate_sha256"),
        _TOOLSETS.c.id.label("toolset_id"),
        measured.c.toolset_id.label("measured_id"),
    ).select_from(joined)
    return query if wanted is not None else query.where(run.c.id == bindparam("run_id"))


# Results whose state one query reads at most (3 bound parameters each, far under any backend's limit), a power of
# two; a query is built for one count, or for a power of two the wanted results are padded to, and kept.
STATE_CHUNK = 128
_STATE_QUERIES = functools.cache(_state_query)


def _state_size(count: int) -> int:
    """How many rows the state query reading ``count`` results asks for: the power of two at or above it (at most
    :data:`STATE_CHUNK`). A crawl's batches come in every size up to its concurrency, and each size's query costs
    10-40 ms of CPU to compile the first time; padded, a crawl compiles eight at most."""
    return min(STATE_CHUNK, 1 << (count - 1).bit_length())


def _read_states(
    connection: Connection, run_id: int, wanted: Sequence[tuple[int, str, Toolset | None]]
) -> dict[int, Row[Any]]:
    """The :func:`_state_query` row of each wanted (position, server name, toolset), by position (the padding repeats
    the last one, whose row it gives again)."""
    size = _state_size(len(wanted))
    padded = [*wanted, *[wanted[-1]] * (size - len(wanted))]
    parameters: dict[str, Any] = {"run_id": run_id}
    for i, (position, name, toolset) in enumerate(padded):
        parameters.update({f"p{i}": position, f"n{i}": name, f"s{i}": toolset.sha256 if toolset is not None else None})
    return {row.position: row for row in connection.execute(_STATE_QUERIES(size), parameters)}


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
    and new servers' first scans (:func:`_is_first_scan`, their rows prepared by :class:`_NewServer`) are
    gathered and written together, one ``executemany`` a table (:class:`_Pending`); any other is written on its
    own with a few prepared inserts and one update, after what was gathered before it. A state is read again only
    when a write before it may have changed it (the same server or list earlier in the batch, or lanes). The batch
    commits as a unit: a crawl killed at any point leaves a consistent database holding every committed batch,
    and ``--resume`` rescans the rest. Findings it has just written are handed to the history, never read back.
    """
    if not results:
        return []
    records: list[ScanRecord | None] = [None] * len(results)
    toolsets = [Toolset.from_tools(tuple(outcome.tools or ())) if outcome.ok else None for _, outcome in results]
    shared = _shared_later(results, toolsets)
    pending = _Pending(run_id)
    stale = False  # a gathered unchanged result shares its server or list with a later one: read again once written
    with engine.connect() as connection, common.collector_paused():
        states = _read_window(connection, run_id, results, toolsets, 0)
        measured = _measure_ahead(connection, run_id, results, toolsets, states, measure)
        for index, (entry, outcome) in enumerate(results):
            toolset = toolsets[index]
            if entry.name in pending.names:
                pending.write(connection, records)  # the run's first result for it must be seen as written
                states, stale = {}, False
            if index not in states:
                states = _read_window(connection, run_id, results, toolsets, index)
            state = states[index]
            if _is_unchanged(entry, outcome, state, toolset):
                pending.add(index, entry, outcome, state, toolset)
                stale = stale or shared[index]
                continue
            if _is_first_scan(outcome, state, toolset, shared[index]):
                if pending.holds_instructions(outcome):
                    pending.write(connection, records)  # they must be found stored, not inserted again
                new = _NewServer(connection, run_id, entry, outcome, state, toolset, measured)
                pending.add_new(index, entry, toolset, new)
                continue
            pending.write(connection, records)
            records[index] = _record(connection, run_id, entry, outcome, measured, state, toolset)
            if stale or shared[index] or outcome.lanes:  # what a later result's state says may have changed
                states, stale = {}, False
        pending.write(connection, records)
        connection.commit()
    return [record for record in records if record is not None]


def _shared_later(results: Sequence[tuple[ServerEntry, ScanOutcome]], toolsets: Sequence[Toolset | None]) -> list[bool]:
    """Whether a later result of the batch names the same server or lists the same tools, by position: only such
    a result's state can change when this one is written (lanes aside)."""
    shared = [False] * len(results)
    names: set[str] = set()
    shas: set[str] = set()
    for index in range(len(results) - 1, -1, -1):
        name, toolset = results[index][0].name, toolsets[index]
        shared[index] = name in names or (toolset is not None and toolset.sha256 in shas)
        names.add(name)
        if toolset is not None:
            shas.add(toolset.sha256)
    return shared


def _read_window(
    connection: Connection,
    run_id: int,
    results: Sequence[tuple[ServerEntry, ScanOutcome]],
    toolsets: Sequence[Toolset | None],
    start: int,
) -> dict[int, Row[Any]]:
    """The states of up to :data:`STATE_CHUNK` results from ``start``; ``InputError`` if the run is missing or
    finished."""
    end = min(start + STATE_CHUNK, len(results))
    states = _read_states(connection, run_id, [(i, results[i][0].name, toolsets[i]) for i in range(start, end)])
    if not states:
        raise InputError(f"No run {run_id} in this database.")
    if next(iter(states.values())).run_status == "finished":
        raise InputError(f"Run {run_id} is finished; its results can no longer change.")
    return states


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
            window = _read_window(connection, run_id, results, toolsets, start)
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


def _is_unchanged(entry: ServerEntry, outcome: ScanOutcome, state: Row[Any], toolset: Toolset | None) -> bool:
    """Whether this result adds nothing but its ``scans`` row and the server's pointers: a known server, not yet
    scanned in this run, with its last outcome, no lanes, instructions or findings of its own, and (when it
    listed) its last successful scan's toolset, measured under the run's catalogue, without findings, at the
    same server version. :func:`_record` would write exactly that row and that update for it."""
    from scanner.measure.instructions import instructions_text
    from scanner.scan.lanes import scan_findings

    if state.server_id is None or state.duplicate_id is not None or outcome.lanes or entry.findings:
        return False
    if history.compare_outcomes(state.last_outcome, str(outcome.outcome)) or scan_findings(outcome):
        return False
    if toolset is None:
        return True
    return (
        instructions_text(outcome.extra) is None
        and state.toolset_id is not None
        and state.measured_id is not None
        and state.ok_id is not None
        and state.ok_toolset_id == state.toolset_id
        and state.ok_rule_version == state.rule_version
        and not state.ok_has_findings
        and not history.compare_versions(state.ok_server_version, codec.text(outcome.server_version, 100))
    )


def _is_first_scan(outcome: ScanOutcome, state: Row[Any], toolset: Toolset | None, shared: bool) -> bool:
    """Whether this result is a new server's first scan that :class:`_NewServer` can prepare while the scans before
    it in the batch wait to be written: no later result names it or lists its list (``shared``), it has no lanes
    (their lists may be any result's), and its list is new or measured already (not a stored list to measure
    again, whose old rows a write replaces)."""
    if state.server_id is not None or outcome.lanes or shared:
        return False
    return toolset is None or state.toolset_id is None or state.measured_id is not None


class _NewServer:
    """A new server's first scan (no lanes, its list new or already measured), its rows prepared in the order
    :func:`_write_scan` would write them and the clock read in that order; the ids they need are set when the
    batch writes them (:meth:`_Pending.write`)."""

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
        report, measure_error, extras = _prepare(connection, entry, outcome, state, toolset, measure)
        self.server = {"name": entry.name, "first_seen": common.now(), "first_run_id": run_id}
        self.toolset_id: int | None = state.toolset_id
        self.toolset = _toolset_values(toolset) if toolset is not None and self.toolset_id is None else None
        self.measured = _MeasurementRows(None, report, rule_version) if report is not None else None
        self.instructions = _instructions_rows(extras.instructions) if extras.instructions is not None else None
        self.instructions_id = extras.instructions_id
        self.scan = _scan_values(run_id, None, entry, outcome, self.toolset_id, self.instructions_id, measure_error)
        self.findings = [common.finding_values(f, self.toolset_id, rule_version, None) for f in extras.findings]
        # A listed and measured list: the scan is the newest successful one, and every finding of it appeared.
        self.comparable = toolset is not None and measure_error is None
        events = history.compare_outcomes(state.last_outcome, str(outcome.outcome))
        if self.comparable:
            written = self.measured.written() if self.measured is not None else None
            events += _first_findings(connection, state.toolset_id, rule_version, written, extras.findings)
        self.events = events
        self.event_rows = _event_rows(events, run_id, self.scan["scanned_at"])

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


class _Pending:
    """The scans :func:`record_scans` gathers (unchanged servers' rows, new servers' first scans) and writes
    together by :meth:`write`, one ``executemany`` a table, in the order of the results, so every id comes out as
    one result at a time would give it."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.names: set[str] = set()
        self.instructions: set[str] = set()  # the hashes of new instructions a gathered scan will insert
        # (index, server, listed sha, scan row, the new server's first scan or None)
        self.scans: list[tuple[int, str, str | None, dict[str, Any], _NewServer | None]] = []

    def add(
        self, index: int, entry: ServerEntry, outcome: ScanOutcome, state: Row[Any], toolset: Toolset | None
    ) -> None:
        """An unchanged result: its scan row only."""
        self.names.add(entry.name)
        values = _scan_values(self.run_id, state.server_id, entry, outcome, state.toolset_id, None, None)
        self.scans.append((index, entry.name, toolset.sha256 if toolset is not None else None, values, None))

    def add_new(self, index: int, entry: ServerEntry, toolset: Toolset | None, new: _NewServer) -> None:
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
        ids = _inserted_ids(connection, _INSERT_SCAN, rows, "server_id", _SCAN_IDS, run_id=self.run_id)
        for new, scan_id in zip((new for *_, new in self.scans), ids, strict=True):
            if new is not None:
                new.set_scan(scan_id)
        findings = [row for new in news for row in (*(new.measured.findings if new.measured else ()), *new.findings)]
        if findings:
            connection.execute(_INSERT_FINDINGS, findings)
        pointers: dict[bool, list[dict[str, int]]] = {True: [], False: []}
        for (_, _, sha, values, new), scan_id in zip(self.scans, ids, strict=True):
            newest_ok = new.comparable if new is not None else sha is not None
            pointers[newest_ok].append({"server": values["server_id"], "last": scan_id, "last_ok": scan_id})
        for newest_ok, statement in ((True, _SET_LAST_OK), (False, _SET_LAST)):
            if pointers[newest_ok]:
                connection.execute(statement, pointers[newest_ok])
        events = [row for new in news for row in new.event_rows]
        if events:
            connection.execute(_INSERT_EVENTS, events)
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


def _write_new_servers(connection: Connection, news: Sequence[_NewServer]) -> None:
    """The rows new servers' first scans add before their scans: servers, new toolsets with their measurements
    (their findings go in with the scans'), new instructions; sets the ids on each."""
    servers = _inserted_ids(connection, _INSERT_SERVER, [new.server for new in news], "name", _SERVER_IDS)
    for new, server_id in zip(news, servers, strict=True):
        new.set_server(server_id)
    listing = [new for new in news if new.toolset is not None]
    if listing:
        rows = [new.toolset for new in listing if new.toolset is not None]
        ids = _inserted_ids(connection, _INSERT_TOOLSET, rows, "sha256", _TOOLSET_IDS)
        for new, toolset_id in zip(listing, ids, strict=True):
            new.set_toolset(toolset_id)
    _insert_measurement(connection, [new.measured for new in news if new.measured is not None])
    instructed = [new for new in news if new.instructions is not None]
    if instructed:
        rows = [new.instructions[0] for new in instructed if new.instructions is not None]
        ids = _inserted_ids(connection, _INSERT_INSTRUCTIONS, rows, "sha256", _INSTRUCTIONS_IDS)
        for new, instructions_id in zip(instructed, ids, strict=True):
            new.instructions_id = new.scan["instructions_id"] = instructions_id
        _insert_instructions_tokens(
            connection,
            [(key, new.instructions[1]) for new, key in zip(instructed, ids, strict=True) if new.instructions],
        )


def _inserted_ids(
    connection: Connection,
    statement: Insert,
    rows: Sequence[dict[str, Any]],
    key: str,
    lookup: Select[Any],
    **parameters: Any,
) -> list[int]:
    """Insert ``rows`` and return their ids in order. One row: its inserted key. More: a plain executemany
    (RETURNING would make SQLAlchemy insert row by row to keep the order), then the ids read back by the rows'
    unique ``key`` (``lookup`` gives (key, id) pairs for ``keys``, with ``parameters``)."""
    if len(rows) == 1:
        return [_new_id(connection.execute(statement, rows[0]))]
    connection.execute(statement, rows)
    keys = [row[key] for row in rows]
    found: dict[Any, int] = {}
    for chunk in common.chunks(keys):
        found.update(
            (found_key, row_id) for found_key, row_id in connection.execute(lookup, {"keys": list(chunk), **parameters})
        )
    return [found[value] for value in keys]


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
    report, measure_error, extras = _prepare(connection, entry, outcome, state, toolset, measure)
    return _write_scan(connection, run_id, entry, outcome, state, toolset, report, measure_error, extras)


def _prepare(
    connection: Connection,
    entry: ServerEntry,
    outcome: ScanOutcome,
    state: Row[Any],
    toolset: Toolset | None,
    measure: Measure,
) -> tuple[CheckReport | None, str | None, _Extras]:
    """What a scan's write needs read or measured first: the list's measurement when the run's catalogue has none
    yet (else None, with why ``measure`` failed if it did: kept with the scan, the toolset measured again next
    time), and its :class:`_Extras` with the registry entry's own findings (MCP7xx, whatever the outcome)."""
    report: CheckReport | None = None
    measure_error: str | None = None
    if toolset is not None and state.measured_id is None:
        try:
            report = measure(toolset)
        except FathomError:
            raise  # run-fatal (no tokenizer, ...): stop the crawl
        except Exception as exc:  # a checker bug on one hostile list must not abort 20 000 servers
            measure_error = f"{type(exc).__name__}: {exc}"[:300]
    extras = _prepare_extras(connection, outcome, toolset, state.rule_version, measure)
    extras.findings += entry.findings
    return report, measure_error, extras


class _Extras:
    """What a scan adds beyond its own toolset, read and measured before the write transaction: the other lanes'
    toolsets (id if stored, measurement if new under the run's rule version), the server's instructions (id if
    stored, else their cost), and the scan's own findings (lane rules, MCP401/402 on the instructions)."""

    def __init__(self) -> None:
        self.lane_toolsets: dict[str, tuple[Toolset, int | None, CheckReport | None]] = {}
        self.instructions: InstructionsCost | None = None
        self.instructions_id: int | None = None
        self.findings: list[Finding] = []
        self.lane_errors: dict[str, str] = {}  # a lane's list that could not be measured: why (kept as its detail)


def _prepare_extras(
    connection: Connection, outcome: ScanOutcome, toolset: Toolset | None, rule_version: str, measure: Measure
) -> _Extras:
    from scanner.measure.instructions import instruction_findings, instructions_text, measure_instructions, text_sha256
    from scanner.scan.lanes import scan_findings

    extras = _Extras()
    for lane in outcome.lanes:
        if not lane.outcome.ok:
            continue
        lane_toolset = Toolset.from_tools(tuple(lane.outcome.tools or ()))
        if (
            toolset is not None and lane_toolset.sha256 == toolset.sha256
        ) or lane_toolset.sha256 in extras.lane_toolsets:
            continue
        found = connection.execute(
            select(_TOOLSETS.c.id, _MEASUREMENTS.c.toolset_id.label("measured"))
            .outerjoin(
                _MEASUREMENTS,
                and_(_MEASUREMENTS.c.toolset_id == _TOOLSETS.c.id, _MEASUREMENTS.c.rule_version == rule_version),
            )
            .where(_TOOLSETS.c.sha256 == lane_toolset.sha256)
        ).first()
        lane_report = None
        if found is None or found.measured is None:
            try:
                lane_report = measure(lane_toolset)
            except FathomError:
                raise
            except Exception as exc:  # stored unmeasured, said in the lane's detail; measured again next time
                extras.lane_errors[lane_toolset.sha256] = f"measure_error: {type(exc).__name__}: {exc}"[:300]
        extras.lane_toolsets[lane_toolset.sha256] = (lane_toolset, found.id if found else None, lane_report)
    text = instructions_text(outcome.extra) if outcome.ok else None
    if text is not None:
        extras.instructions_id = connection.execute(
            select(_INSTRUCTIONS.c.id).where(_INSTRUCTIONS.c.sha256 == text_sha256(text))
        ).scalar_one_or_none()
        if extras.instructions_id is None:
            extras.instructions = measure_instructions(text)
        extras.findings += instruction_findings(text)
    extras.findings += scan_findings(outcome)
    return extras


def _write_extras(connection: Connection, extras: _Extras, rule_version: str) -> dict[str, int]:
    """Insert what :func:`_prepare_extras` found missing; the toolset id of every lane's list by hash."""
    ids: dict[str, int] = {}
    for sha, (lane_toolset, toolset_id, lane_report) in extras.lane_toolsets.items():
        fresh = toolset_id is None
        if toolset_id is None:
            toolset_id = _new_id(connection.execute(_INSERT_TOOLSET, _toolset_values(lane_toolset)))
        if lane_report is not None:
            write_measurement(connection, toolset_id, lane_report, rule_version, fresh=fresh)
        ids[sha] = toolset_id
    if extras.instructions is not None:
        row, tokens = _instructions_rows(extras.instructions)
        extras.instructions_id = _new_id(connection.execute(_INSERT_INSTRUCTIONS, row))
        _insert_instructions_tokens(connection, [(extras.instructions_id, tokens)])
    return ids


def _toolset_values(toolset: Toolset) -> dict[str, Any]:
    """A new ``toolsets`` row: the list compressed, first seen now."""
    data, size = codec.compress_tools(toolset.tools)
    return {
        "sha256": toolset.sha256,
        "tools_count": len(toolset),
        "raw_size": size,
        "data": data,
        "first_seen": common.now(),
    }


def _instructions_rows(cost: InstructionsCost) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A new ``instructions`` row (first seen now) and its ``instructions_tokens`` rows, without their id yet."""
    row = {"sha256": cost.sha256, "text": cost.text, "chars": len(cost.text), "first_seen": common.now()}
    tokens = [
        {"provider": str(provider)[:32], "tokens": int(count.tokens), "method": str(count.method)[:200]}
        for provider, count in cost.tokens.items()
    ]
    return row, tokens


def _insert_instructions_tokens(
    connection: Connection, instructions: Sequence[tuple[int, list[dict[str, Any]]]]
) -> None:
    """The ``instructions_tokens`` rows of each (instructions id, rows), in one ``executemany``."""
    rows = [{"instructions_id": key, **row} for key, tokens in instructions for row in tokens]
    if rows:
        connection.execute(_INSERT_INSTRUCTIONS_TOKENS, rows)


def _lane_rows(
    outcome: ScanOutcome,
    scan_id: int,
    toolset: Toolset | None,
    toolset_id: int | None,
    ids: Mapping[str, int],
    errors: Mapping[str, str],
) -> list[dict[str, Any]]:
    """One ``scan_lanes`` row per lane; a lane listing the scan's own list shares its toolset id."""
    rows = []
    for lane in outcome.lanes:
        lane_id: int | None = None
        detail = str(lane.outcome.detail or "")
        if lane.outcome.ok:
            sha = Toolset.from_tools(tuple(lane.outcome.tools or ())).sha256
            lane_id = toolset_id if toolset is not None and sha == toolset.sha256 else ids.get(sha)
            detail = errors.get(sha, detail)
        rows.append(
            {
                "scan_id": scan_id,
                "lane": lane.lane[:16],
                "outcome": str(lane.outcome.outcome),
                "detail": codec.redact(detail[: codec.MAX_DETAIL * 2])[: codec.MAX_DETAIL],
                "toolset_id": lane_id,
                "tools_count": len(lane.outcome.tools or ()) if lane.outcome.ok else None,
                "signals": codec.small_json(lane.signals),
            }
        )
    return rows


def _scan_values(
    run_id: int,
    server_id: int | None,
    entry: ServerEntry,
    outcome: ScanOutcome,
    toolset_id: int | None,
    instructions_id: int | None,
    measure_error: str | None,
) -> dict[str, Any]:
    """A ``scans`` row: every value a server sent cut to its column, the entry's secrets blanked, and the row's
    own reading of the clock (each row reads it once, in write order: the report tests' clock ticks per reading)."""
    secrets = entry_secrets(entry)
    return {
        "run_id": run_id,
        "server_id": server_id,
        "scanned_at": common.now(),
        "outcome": str(outcome.outcome),
        "detail": codec.redact_known(str(outcome.detail or "")[: codec.MAX_DETAIL * 2], secrets)[: codec.MAX_DETAIL],
        "transport": str(outcome.transport or entry.transport)[:32],
        "era": codec.text(outcome.era, 16),
        "protocol_version": codec.text(outcome.protocol_version, 32),
        "server_name": codec.text(outcome.server_name, 200),
        "server_version": codec.text(outcome.server_version, 100),
        "capability_profile": codec.text(outcome.capability_profile, 64),
        "timings": codec.timings(outcome.timings_ms),
        "pages": outcome.pages if isinstance(outcome.pages, int) else 0,
        "toolset_id": toolset_id,
        "anonymous": bool(entry.anonymous),
        # A server may print the secrets it was given (its env, its headers): never stored.
        "extra": codec.small_json(codec.blank_known(_stored_extra(outcome.extra, measure_error), secrets)),
        "lane": outcome.lane[:16] if outcome.lane and outcome.lanes else None,
        "instructions_id": instructions_id,
        "metrics": scan_metrics.values(outcome),
        **what_was_run(entry),
    }


def _write_scan(
    connection: Connection,
    run_id: int,
    entry: ServerEntry,
    outcome: ScanOutcome,
    state: Row[Any],
    toolset: Toolset | None,
    report: CheckReport | None,
    measure_error: str | None,
    extras: _Extras,
) -> ScanRecord:
    """The writes of :meth:`record_scan`, inside its transaction, in the order the ORM used to emit them."""
    rule_version: str = state.rule_version
    server_id: int | None = state.server_id
    if server_id is None:
        server_id = _new_id(
            connection.execute(_INSERT_SERVER, {"name": entry.name, "first_seen": common.now(), "first_run_id": run_id})
        )
    toolset_id: int | None = state.toolset_id
    new_toolset = False
    written: list[Finding] | None = None  # the toolset findings this call stored, for the history
    if toolset is not None:
        if toolset_id is None:
            toolset_id = _new_id(connection.execute(_INSERT_TOOLSET, _toolset_values(toolset)))
            new_toolset = True
        if report is not None:
            written = write_measurement(connection, toolset_id, report, rule_version, fresh=new_toolset)
    lane_ids = _write_extras(connection, extras, rule_version)

    scan_outcome = str(outcome.outcome)
    server_version = codec.text(outcome.server_version, 100)
    values = _scan_values(run_id, server_id, entry, outcome, toolset_id, extras.instructions_id, measure_error)
    now = values["scanned_at"]
    scan_id = _new_id(connection.execute(_INSERT_SCAN, values))
    if outcome.lanes:
        connection.execute(
            _SCAN_LANES.insert(), _lane_rows(outcome, scan_id, toolset, toolset_id, lane_ids, extras.lane_errors)
        )
    if extras.findings:
        connection.execute(
            _INSERT_FINDINGS, [common.finding_values(f, toolset_id, rule_version, scan_id) for f in extras.findings]
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
        events_ok, history_findings = _history(
            connection, scan_id, server_version, toolset, toolset_id, state, rule_version, written, extras
        )
        events.extend(events_ok)
    if events:
        connection.execute(_INSERT_EVENTS, _event_rows(events, run_id, now, server_id, scan_id))
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


def _event_rows(
    events: Sequence[history.ChangeEvent],
    run_id: int,
    at: Any,
    server_id: int | None = None,
    scan_id: int | None = None,
) -> list[dict[str, Any]]:
    """The ``events`` rows of a scan's change events (its server's and its own id set later when not known yet)."""
    return [
        {
            "server_id": server_id,
            "run_id": run_id,
            "scan_id": scan_id,
            "at": at,
            "kind": event.kind,
            "tool": codec.text(event.tool, 300),
            "code": event.code,
            "details": codec.details_json(event.details),
        }
        for event in events
    ]


# The package facts kept with a scan: what identifies what ran, none of the entry's variables.
_PACKAGE_KEYS = {
    "registryType": "registry_type",
    "identifier": "identifier",
    "version": "version",
    "pinned": "pinned",
    "spec": "spec",
    "runner": "runner",
}


def entry_secrets(entry: ServerEntry) -> list[str]:
    """The values an entry hands a server (its env and headers, and a header's credential without its scheme,
    as in ``Bearer X``): any may be a secret, none is stored."""
    values = [str(value) for value in (*entry.env.values(), *entry.headers.values())]
    return values + [value.split()[-1] for value in map(str, entry.headers.values()) if len(value.split()) > 1]


def what_was_run(entry: ServerEntry) -> dict[str, Any]:
    """The ``scans`` columns saying what was run: the entry's registry version, its package, its URL and its
    command line, with every value of its env and headers (and anything credential-like) redacted."""
    secrets = entry_secrets(entry)
    package = None
    if entry.package is not None and entry.package.get("identifier"):
        package = {
            stored: entry.package[key] if isinstance(entry.package[key], bool) else codec.text(entry.package[key], 300)
            for key, stored in _PACKAGE_KEYS.items()
            if entry.package.get(key) is not None
        }
    return {
        "registry_version": codec.text(entry.version, 100),
        "package": package,
        "url": codec.redact_known(entry.url, secrets)[: codec.MAX_COMMAND] if entry.url else None,
        "command": codec.redact_command(entry.command, secrets) if entry.command else None,
    }


def write_measurement(
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
    rows = _MeasurementRows(toolset_id, report, rule_version)
    _insert_measurement(connection, [rows])
    if rows.findings:
        connection.execute(_INSERT_FINDINGS, rows.findings)
    return rows.written()


class _MeasurementRows:
    """A toolset's measurement as rows, its toolset id settable until they are inserted (a new toolset's id is known
    only once the batch has written it): tokens per provider, per-tool costs, findings, the measurement itself."""

    def __init__(self, toolset_id: int | None, report: CheckReport, rule_version: str) -> None:
        self.tokens = [
            {"toolset_id": toolset_id, "provider": str(p)[:32], "tokens": int(c.tokens), "method": str(c.method)[:200]}
            for p, c in report.tokens.items()
        ]
        costs: dict[int, dict[str, Any]] = {}
        for cost in report.tool_costs:
            tokens = {str(p): int(n) for p, n in cost.tokens.items()}
            costs.setdefault(
                cost.index,
                {
                    "toolset_id": toolset_id,
                    "tool_index": cost.index,
                    "name": str(cost.name)[:300],
                    "tokens": tokens,
                    "max_tokens": max(tokens.values(), default=0),
                },
            )
        self.costs = list(costs.values())
        self.findings = [common.finding_values(f, toolset_id, rule_version, None) for f in report.findings]
        self.measurement = {"toolset_id": toolset_id, "rule_version": rule_version, "measured_at": common.now()}

    def set_toolset(self, toolset_id: int) -> None:
        for row in (*self.tokens, *self.costs, *self.findings, self.measurement):
            row["toolset_id"] = toolset_id

    def written(self) -> list[Finding]:
        """The findings as stored (cut to their columns), which is what reading them back would give."""
        return [common.finding_from_row(_StoredFinding(values)) for values in self.findings]


def _insert_measurement(connection: Connection | Session, measurements: Sequence[_MeasurementRows]) -> None:
    """Insert measurements' tokens, costs and measurement rows, one ``executemany`` a table (a first crawl writes
    tens of thousands of them), in the order one measurement at a time would write them; not their findings,
    which take their ids in the order of the scans around them (the caller inserts them)."""
    for statement, rows in (
        (_INSERT_TOOLSET_TOKENS, [row for m in measurements for row in m.tokens]),
        (_INSERT_TOOL_TOKENS, [row for m in measurements for row in m.costs]),
        (_INSERT_MEASUREMENT, [m.measurement for m in measurements]),
    ):
        if rows:
            connection.execute(statement, rows)


def _history(
    connection: Connection,
    scan_id: int,
    server_version: str | None,
    toolset: Toolset,
    toolset_id: int,
    state: Row[Any],
    rule_version: str,
    written: list[Finding] | None,
    extras: _Extras,
) -> tuple[list[history.ChangeEvent], list[Finding]]:
    """Events and over-time findings of an ok scan against the server's previous successful scan.

    ``state`` is the :func:`_state_query` row (the previous successful scan's columns are ``ok_*``); ``written`` the
    toolset's findings when this scan measured it, so they need not be read back.
    """
    if state.ok_id is None:
        return _first_findings(connection, toolset_id, rule_version, written, extras.findings), []
    events: list[history.ChangeEvent] = []
    history_findings: list[Finding] = []
    previous_toolset: int | None = state.ok_toolset_id
    previous_version: str | None = state.ok_rule_version
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
    instruction_events, instruction_findings = _compare_instructions(
        connection, state, server_version, extras.instructions_id
    )
    events.extend(instruction_events)
    history_findings += instruction_findings
    if history_findings:
        connection.execute(
            _INSERT_FINDINGS, [common.finding_values(f, toolset_id, rule_version, scan_id) for f in history_findings]
        )

    unchanged = (
        previous_toolset == toolset_id
        and previous_version == rule_version
        and not history_findings
        and not state.ok_has_findings
        and not extras.findings
    )
    if not unchanged:
        current = written if written is not None else common.toolset_findings(connection, toolset_id, rule_version)
        current = current + extras.findings + history_findings
        before: list[Finding] = []
        if previous_toolset is not None and previous_version is not None:
            before = common.toolset_findings(connection, previous_toolset, previous_version)
            before += common.scan_findings(connection, state.ok_id)
        events.extend(_appeared_details(history.compare_findings(before, current), current))
    return events, history_findings


def _first_findings(
    connection: Connection,
    toolset_id: int | None,
    rule_version: str,
    written: list[Finding] | None,
    scan_findings: list[Finding],
) -> list[history.ChangeEvent]:
    """``finding_appeared`` of every finding of a server's first successful scan: its list's (``written`` when this
    scan measured it, else read by ``toolset_id``) and the scan's own."""
    if written is None:
        assert toolset_id is not None  # a list measured before this scan is stored
        written = common.toolset_findings(connection, toolset_id, rule_version)
    current = written + scan_findings
    return _appeared_details(history.compare_findings([], current), current)


def _compare_instructions(
    connection: Connection, state: Row[Any], server_version: str | None, instructions_id: int | None
) -> tuple[list[history.ChangeEvent], list[Finding]]:
    """``instructions_changed`` and MCP503 against the previous successful scan (both must have instructions:
    a scan stored before migration 0004 has none recorded, and nothing is claimed about it)."""
    previous_id = state.ok_instructions_id
    if previous_id is None or instructions_id is None or previous_id == instructions_id:
        return [], []
    rows = {
        row.id: row
        for row in connection.execute(
            select(_INSTRUCTIONS.c.id, _INSTRUCTIONS.c.sha256, _INSTRUCTIONS.c.text).where(
                _INSTRUCTIONS.c.id.in_([previous_id, instructions_id])
            )
        )
    }
    before, after = rows.get(previous_id), rows.get(instructions_id)
    if before is None or after is None:
        return [], []
    return history.compare_instructions(before.text, state.ok_server_version, after.text, server_version)


def _stored_extra(extra: Mapping[str, Any], measure_error: str | None) -> dict[str, Any]:
    """The outcome's extra as a scan row keeps it: the instructions live once in their own table, not per scan."""
    kept = {key: value for key, value in extra.items() if key != "instructions"}
    if measure_error:
        kept["measure_error"] = measure_error
    return kept


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
            table, batch, count = common.TABLES[name], [], 0
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
        for servers in common.chunks(sorted(touched)):
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
