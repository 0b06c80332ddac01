"""What every write module shares: the tables, the statements prepared once, and the ids of rows just inserted.

Building a statement per call costs more than executing it (its cache key is recomputed), so the inserts, the
look-ups of ids by unique key and the newest-scan pointer updates are built here once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, CursorResult, Insert, Select, bindparam, select, update

from scanner.models import CheckReport, Toolset
from scanner.store import common

Measure = Callable[[Toolset], CheckReport]


SERVERS, RUNS, SCANS, TOOLSETS = common.SERVERS, common.RUNS, common.SCANS, common.TOOLSETS
MEASUREMENTS, TOOLSET_TOKENS, TOOL_TOKENS = common.MEASUREMENTS, common.TOOLSET_TOKENS, common.TOOL_TOKENS
FINDINGS, _EVENTS = common.FINDINGS, common.EVENTS
INSTRUCTIONS, _INSTRUCTIONS_TOKENS = common.TABLES["instructions"], common.TABLES["instructions_tokens"]
SCAN_LANES = common.TABLES["scan_lanes"]


def new_id(result: CursorResult[Any]) -> int:
    """The primary key of the one row an ``INSERT`` just wrote."""
    key = result.inserted_primary_key
    assert key is not None and key[0] is not None  # every table's key is an autoincrement integer
    return int(key[0])


# Prepared once: building a statement per call costs more than executing it (its cache key is recomputed).
INSERT_SERVER = SERVERS.insert()
INSERT_TOOLSET = TOOLSETS.insert()
INSERT_SCAN = SCANS.insert()
# The ids of rows just written, by their unique key: scans in a run by server (unique per run and server; its index
# answers it), servers by name, toolsets and instructions by hash.
SCAN_IDS = select(SCANS.c.server_id, SCANS.c.id).where(
    SCANS.c.run_id == bindparam("run_id"), SCANS.c.server_id.in_(bindparam("keys", expanding=True))
)
SERVER_IDS = select(SERVERS.c.name, SERVERS.c.id).where(SERVERS.c.name.in_(bindparam("keys", expanding=True)))
TOOLSET_IDS = select(TOOLSETS.c.sha256, TOOLSETS.c.id).where(TOOLSETS.c.sha256.in_(bindparam("keys", expanding=True)))
INSTRUCTIONS_IDS = select(INSTRUCTIONS.c.sha256, INSTRUCTIONS.c.id).where(
    INSTRUCTIONS.c.sha256.in_(bindparam("keys", expanding=True))
)
INSERT_EVENTS = _EVENTS.insert()
INSERT_TOOLSET_TOKENS = TOOLSET_TOKENS.insert()
INSERT_TOOL_TOKENS = TOOL_TOKENS.insert()
INSERT_FINDINGS = FINDINGS.insert()
INSERT_MEASUREMENT = MEASUREMENTS.insert()
INSERT_INSTRUCTIONS = INSTRUCTIONS.insert()
INSERT_INSTRUCTIONS_TOKENS = _INSTRUCTIONS_TOKENS.insert()
SET_LAST = update(SERVERS).where(SERVERS.c.id == bindparam("server")).values(last_scan_id=bindparam("last"))
SET_LAST_OK = (
    update(SERVERS)
    .where(SERVERS.c.id == bindparam("server"))
    .values(last_scan_id=bindparam("last"), last_ok_scan_id=bindparam("last_ok"))
)


def inserted_ids(
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
        return [new_id(connection.execute(statement, rows[0]))]
    connection.execute(statement, rows)
    keys = [row[key] for row in rows]
    found: dict[Any, int] = {}
    for chunk in common.chunks(keys):
        found.update(
            (found_key, row_id) for found_key, row_id in connection.execute(lookup, {"keys": list(chunk), **parameters})
        )
    return [found[value] for value in keys]
