"""A toolset's measurement as rows: tokens per provider, per-tool costs, findings and the measurement itself, written
once per toolset and rule catalogue version (:func:`write_measurement`; a rescore replaces them), stamped with the
basis it rests on (:func:`scanner.measure.basis.measure_basis`), under which alone a scan reuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, delete
from sqlalchemy.orm import Session

from scanner.measure.basis import measure_basis
from scanner.models import CheckReport, Finding
from scanner.store import common
from scanner.store.write.shared import (
    FINDINGS,
    INSERT_FINDINGS,
    INSERT_MEASUREMENT,
    INSERT_TOOL_TOKENS,
    INSERT_TOOLSET_TOKENS,
    MEASUREMENTS,
    TOOL_TOKENS,
    TOOLSET_TOKENS,
)


class _StoredFinding:
    """The values of a ``findings`` row just inserted, read like a result row (for ``common.finding_from_row``)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(values)


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
        connection.execute(delete(TOOLSET_TOKENS).where(TOOLSET_TOKENS.c.toolset_id == toolset_id))
        connection.execute(delete(TOOL_TOKENS).where(TOOL_TOKENS.c.toolset_id == toolset_id))
        connection.execute(
            delete(FINDINGS).where(
                FINDINGS.c.toolset_id == toolset_id,
                FINDINGS.c.rule_version == rule_version,
                FINDINGS.c.scan_id.is_(None),
            )
        )
        connection.execute(
            delete(MEASUREMENTS).where(
                MEASUREMENTS.c.toolset_id == toolset_id, MEASUREMENTS.c.rule_version == rule_version
            )
        )
    rows = MeasurementRows(toolset_id, report, rule_version)
    insert_measurement(connection, [rows])
    if rows.findings:
        connection.execute(INSERT_FINDINGS, rows.findings)
    return rows.written()


class MeasurementRows:
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
        self.measurement = {
            "toolset_id": toolset_id,
            "rule_version": rule_version,
            "measured_at": common.now(),
            "basis": measure_basis(),
        }

    def set_toolset(self, toolset_id: int) -> None:
        for row in (*self.tokens, *self.costs, *self.findings, self.measurement):
            row["toolset_id"] = toolset_id

    def written(self) -> list[Finding]:
        """The findings as stored (cut to their columns), which is what reading them back would give."""
        return [common.finding_from_row(_StoredFinding(values)) for values in self.findings]


def insert_measurement(connection: Connection | Session, measurements: Sequence[MeasurementRows]) -> None:
    """Insert measurements' tokens, costs and measurement rows, one ``executemany`` a table (a first crawl writes
    tens of thousands of them), in the order one measurement at a time would write them; not their findings,
    which take their ids in the order of the scans around them (the caller inserts them)."""
    for statement, rows in (
        (INSERT_TOOLSET_TOKENS, [row for m in measurements for row in m.tokens]),
        (INSERT_TOOL_TOKENS, [row for m in measurements for row in m.costs]),
        (INSERT_MEASUREMENT, [m.measurement for m in measurements]),
    ):
        if rows:
            connection.execute(statement, rows)
