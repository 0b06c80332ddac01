"""A bulk loader of already-shaped rows for benchmarks and imports (:func:`load`): nothing capped, redacted or
compared, tables written in an order that keeps every foreign key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Engine, func, select, update

from scanner.store import common
from scanner.store.write.shared import SCANS, SERVERS

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
            newest = select(func.max(SCANS.c.id)).where(SCANS.c.server_id == SERVERS.c.id).scalar_subquery()
            newest_ok = (
                select(func.max(SCANS.c.id))
                .where(SCANS.c.server_id == SERVERS.c.id, SCANS.c.outcome == "ok", SCANS.c.toolset_id.is_not(None))
                .scalar_subquery()
            )
            connection.execute(
                update(SERVERS).where(SERVERS.c.id.in_(servers)).values(last_scan_id=newest, last_ok_scan_id=newest_ok)
            )
    return written
