"""Fathom's database: SQLAlchemy tables, Alembic migrations run on open, the crawl's write path and every query.

The package is the only place that writes SQL; ``store.py`` explains which module does what.

    store = open_store("sqlite:///fathom.db")      # creates or migrates to the newest schema
    run_id = store.start_run("registry", RULE_VERSION, options)
    store.record_scans(run_id, [(entry, outcome), ...], measure)   # the crawl's batches (record_scan: one)
    store.finish_run(run_id)

See ``docs/storage.md`` for the schema and the query API.
"""

from __future__ import annotations

from scanner.store.engine import open_engine
from scanner.store.rows import (
    Diff,
    EventRow,
    FindingRow,
    HistoryColumns,
    LeaderRow,
    RunRow,
    RunSpec,
    RunTrend,
    ScanRecord,
    ScanRow,
    ScanScore,
    ServerSummary,
)
from scanner.store.store import Measure, Store

DEFAULT_URL = "sqlite:///fathom.db"


def open_store(url: str = DEFAULT_URL) -> Store:
    """Open (creating if needed) the database at ``url`` and migrate it to the newest schema.

    SQLite files get WAL, foreign keys and a busy timeout. Raises :class:`scanner.errors.StoreError` with one
    clear line when the database cannot be opened or migrated.
    """
    return Store(open_engine(url))


__all__ = [
    "DEFAULT_URL",
    "Diff",
    "EventRow",
    "FindingRow",
    "HistoryColumns",
    "LeaderRow",
    "Measure",
    "RunRow",
    "RunSpec",
    "RunTrend",
    "ScanRecord",
    "ScanRow",
    "ScanScore",
    "ServerSummary",
    "Store",
    "open_store",
]
