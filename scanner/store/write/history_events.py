"""History events of a scan: tool events and over-time findings (MCP501-503) against the server's previous
successful scan, finding_appeared / finding_resolved, and the ``events`` rows they become.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, select

from scanner.measure import history
from scanner.models import Finding, Toolset
from scanner.store import codec, common
from scanner.store.write.extras import Extras
from scanner.store.write.shared import INSERT_FINDINGS, INSTRUCTIONS, TOOLSETS


def event_rows(
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


def scan_history(
    connection: Connection,
    scan_id: int,
    server_version: str | None,
    toolset: Toolset,
    toolset_id: int,
    state: Row[Any],
    rule_version: str,
    written: list[Finding] | None,
    extras: Extras,
) -> tuple[list[history.ChangeEvent], list[Finding]]:
    """Events and over-time findings of an ok scan against the server's previous successful scan.

    ``state`` is the :func:`_state_query` row (the previous successful scan's columns are ``ok_*``); ``written`` the
    toolset's findings when this scan measured it, so they need not be read back.
    """
    if state.ok_id is None:
        return first_findings(connection, toolset_id, rule_version, written, extras.findings), []
    events: list[history.ChangeEvent] = []
    history_findings: list[Finding] = []
    previous_toolset: int | None = state.ok_toolset_id
    previous_version: str | None = state.ok_rule_version
    if previous_toolset != toolset_id and previous_toolset is not None:
        data = connection.execute(select(TOOLSETS.c.data).where(TOOLSETS.c.id == previous_toolset)).scalar_one_or_none()
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
            INSERT_FINDINGS, [common.finding_values(f, toolset_id, rule_version, scan_id) for f in history_findings]
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


def first_findings(
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
            select(INSTRUCTIONS.c.id, INSTRUCTIONS.c.sha256, INSTRUCTIONS.c.text).where(
                INSTRUCTIONS.c.id.in_([previous_id, instructions_id])
            )
        )
    }
    before, after = rows.get(previous_id), rows.get(instructions_id)
    if before is None or after is None:
        return [], []
    return history.compare_instructions(before.text, state.ok_server_version, after.text, server_version)


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
