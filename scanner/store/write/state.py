"""What :func:`~scanner.store.write.scan_writes.record_scans` reads before it writes: one query for the state of many
results (the run, the server, its previous scans, the toolset), and the predicates saying which results add nothing
but a ``scans`` row and which are new servers' first scans.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Integer, Row, Select, String, and_, bindparam, exists, select, union_all

from scanner.errors import InputError
from scanner.measure import history
from scanner.measure.basis import measure_basis
from scanner.models import ScanOutcome, ServerEntry, Toolset
from scanner.store import codec
from scanner.store.write.shared import FINDINGS, MEASUREMENTS, RUNS, SCANS, SERVERS, TOOLSETS


def _state_query(count: int) -> Select[Any]:
    """Everything :func:`record_scans` must know before writing ``count`` results, in one round trip.

    One row per wanted result (``position``, its ``name`` and its list's ``sha256`` bound as ``p<i>``, ``n<i>``
    and ``s<i>``), none if the run does not exist: the run's status and rule version; the server by name (NULLs
    if new); its last scan's outcome; its last successful scan (``ok_*``: toolset, server version, its run's rule
    version, whether it has over-time findings); a scan already written for it in this run (``duplicate_*``);
    the toolset with this hash, if stored, and whether it is measured under the run's rule version and this
    process's basis (``basis``: :func:`scanner.measure.basis.measure_basis`), the one measurement a scan reuses.
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
        RUNS.alias("run"),
        SCANS.alias("last_scan"),
        SCANS.alias("ok_scan"),
        RUNS.alias("ok_run"),
    )
    duplicate, duplicate_toolset = SCANS.alias("duplicate"), TOOLSETS.alias("duplicate_toolset")
    measured = MEASUREMENTS.alias("measured")
    ok_findings = exists(select(FINDINGS.c.id).where(FINDINGS.c.scan_id == ok.c.id))
    start = wanted.join(run, run.c.id == bindparam("run_id")) if wanted is not None else run
    joined = (
        start.outerjoin(SERVERS, SERVERS.c.name == name)
        .outerjoin(last, last.c.id == SERVERS.c.last_scan_id)
        .outerjoin(ok, ok.c.id == SERVERS.c.last_ok_scan_id)
        .outerjoin(ok_run, ok_run.c.id == ok.c.run_id)
        .outerjoin(duplicate, and_(duplicate.c.run_id == run.c.id, duplicate.c.server_id == SERVERS.c.id))
        .outerjoin(duplicate_toolset, duplicate_toolset.c.id == duplicate.c.toolset_id)
        .outerjoin(TOOLSETS, TOOLSETS.c.sha256 == sha256)
        .outerjoin(
            measured,
            and_(
                measured.c.toolset_id == TOOLSETS.c.id,
                measured.c.rule_version == run.c.rule_version,
                measured.c.basis == bindparam("basis", type_=String),
            ),
        )
    )
    query = select(
        position.label("position"),
        run.c.status.label("run_status"),
        run.c.rule_version.label("rule_version"),
        SERVERS.c.id.label("server_id"),
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
        TOOLSETS.c.id.label("toolset_id"),
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
    parameters: dict[str, Any] = {"run_id": run_id, "basis": measure_basis()}
    for i, (position, name, toolset) in enumerate(padded):
        parameters.update({f"p{i}": position, f"n{i}": name, f"s{i}": toolset.sha256 if toolset is not None else None})
    return {row.position: row for row in connection.execute(_STATE_QUERIES(size), parameters)}


def shared_later(results: Sequence[tuple[ServerEntry, ScanOutcome]], toolsets: Sequence[Toolset | None]) -> list[bool]:
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


def read_window(
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
        raise InputError(f"no run {run_id} in this database.")
    if next(iter(states.values())).run_status == "finished":
        raise InputError(f"run {run_id} is finished; its results can no longer change.")
    return states


def is_unchanged(entry: ServerEntry, outcome: ScanOutcome, state: Row[Any], toolset: Toolset | None) -> bool:
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


def is_first_scan(outcome: ScanOutcome, state: Row[Any], toolset: Toolset | None, shared: bool) -> bool:
    """Whether this result is a new server's first scan that :class:`NewServer` can prepare while the scans before
    it in the batch wait to be written: no later result names it or lists its list (``shared``), it has no lanes
    (their lists may be any result's), and its list is new or measured already (not a stored list to measure
    again, whose old rows a write replaces)."""
    if state.server_id is not None or outcome.lanes or shared:
        return False
    return toolset is None or state.toolset_id is None or state.measured_id is not None
