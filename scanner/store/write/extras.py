"""What a scan adds beyond its own toolset: the other lanes' lists, the server's instructions and the scan's own
findings, read and measured before the write transaction and inserted in it; and the ``scan_lanes`` rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Row, and_, select

from scanner.errors import FathomError
from scanner.measure.basis import measure_basis
from scanner.models import CheckReport, Finding, InstructionsCost, ScanOutcome, ServerEntry, Toolset
from scanner.store import codec, common
from scanner.store.write.measurements import write_measurement
from scanner.store.write.scan_rows import toolset_values
from scanner.store.write.shared import (
    INSERT_INSTRUCTIONS,
    INSERT_INSTRUCTIONS_TOKENS,
    INSERT_TOOLSET,
    INSTRUCTIONS,
    MEASUREMENTS,
    TOOLSETS,
    Measure,
    new_id,
)


def prepare(
    connection: Connection,
    entry: ServerEntry,
    outcome: ScanOutcome,
    state: Row[Any],
    toolset: Toolset | None,
    measure: Measure,
) -> tuple[CheckReport | None, str | None, Extras]:
    """What a scan's write needs read or measured first: the list's measurement when the run's catalogue has none
    yet (else None, with why ``measure`` failed if it did: kept with the scan, the toolset measured again next
    time), and its :class:`Extras` with the registry entry's own findings (MCP7xx, whatever the outcome)."""
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
    if toolset is not None:  # MCP809 under this entry's key: the scan's own, as the toolset is shared
        from scanner.measure.toollist import registry_server_key, server_key_findings

        extras.findings += server_key_findings(toolset.tools, registry_server_key(entry.name, outcome.server_name))
    return report, measure_error, extras


class Extras:
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
) -> Extras:
    from scanner.measure.instructions import instruction_findings, instructions_text, measure_instructions, text_sha256
    from scanner.scan.lanes import scan_findings

    extras = Extras()
    for lane in outcome.lanes:
        if not lane.outcome.ok:
            continue
        lane_toolset = Toolset.from_tools(tuple(lane.outcome.tools or ()))
        if (
            toolset is not None and lane_toolset.sha256 == toolset.sha256
        ) or lane_toolset.sha256 in extras.lane_toolsets:
            continue
        found = connection.execute(
            select(TOOLSETS.c.id, MEASUREMENTS.c.toolset_id.label("measured"))
            .outerjoin(
                MEASUREMENTS,
                and_(
                    MEASUREMENTS.c.toolset_id == TOOLSETS.c.id,
                    MEASUREMENTS.c.rule_version == rule_version,
                    MEASUREMENTS.c.basis == measure_basis(),
                ),
            )
            .where(TOOLSETS.c.sha256 == lane_toolset.sha256)
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
            select(INSTRUCTIONS.c.id).where(INSTRUCTIONS.c.sha256 == text_sha256(text))
        ).scalar_one_or_none()
        if extras.instructions_id is None:
            extras.instructions = measure_instructions(text)
        extras.findings += instruction_findings(text)
    extras.findings += scan_findings(outcome)
    return extras


def write_extras(connection: Connection, extras: Extras, rule_version: str) -> dict[str, int]:
    """Insert what :func:`_prepare_extras` found missing; the toolset id of every lane's list by hash."""
    ids: dict[str, int] = {}
    for sha, (lane_toolset, toolset_id, lane_report) in extras.lane_toolsets.items():
        fresh = toolset_id is None
        if toolset_id is None:
            toolset_id = new_id(connection.execute(INSERT_TOOLSET, toolset_values(lane_toolset)))
        if lane_report is not None:
            write_measurement(connection, toolset_id, lane_report, rule_version, fresh=fresh)
        ids[sha] = toolset_id
    if extras.instructions is not None:
        row, tokens = instructions_rows(extras.instructions)
        extras.instructions_id = new_id(connection.execute(INSERT_INSTRUCTIONS, row))
        insert_instructions_tokens(connection, [(extras.instructions_id, tokens)])
    return ids


def instructions_rows(cost: InstructionsCost) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A new ``instructions`` row (first seen now) and its ``instructions_tokens`` rows, without their id yet."""
    row = {"sha256": cost.sha256, "text": cost.text, "chars": len(cost.text), "first_seen": common.now()}
    tokens = [
        {"provider": str(provider)[:32], "tokens": int(count.tokens), "method": str(count.method)[:200]}
        for provider, count in cost.tokens.items()
    ]
    return row, tokens


def insert_instructions_tokens(
    connection: Connection, instructions: Sequence[tuple[int, list[dict[str, Any]]]]
) -> None:
    """The ``instructions_tokens`` rows of each (instructions id, rows), in one ``executemany``."""
    rows = [{"instructions_id": key, **row} for key, tokens in instructions for row in tokens]
    if rows:
        connection.execute(INSERT_INSTRUCTIONS_TOKENS, rows)


def lane_rows(
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
