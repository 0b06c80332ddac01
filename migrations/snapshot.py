"""Write ``migrations/sqlite_head.json``: the schema the migrations build on SQLite, for new SQLite databases.

    python -m migrations.snapshot

Run it after adding a migration (``tests/store/test_migrations.py`` fails until it is run). It migrates a new
SQLite file with Alembic and keeps what SQLite stored for it (:func:`sqlite_schema`).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from pathlib import Path

from scanner.store.engine import SQLITE_SNAPSHOT, create_store_engine, head_revision, migrate


def sqlite_schema(connection: sqlite3.Connection) -> list[str]:
    """The statements SQLite keeps for a database's tables, then its indexes, triggers and views, each group in
    the order they were made (SQLite's own objects and the indexes it makes for a constraint left out: they come
    with their tables)."""
    rows = connection.execute(
        "SELECT type, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    ).fetchall()
    order = {"table": 0, "index": 1, "trigger": 2, "view": 3}
    return [sql for kind, sql in sorted(rows, key=lambda row: order.get(row[0], 4))]


def build() -> dict[str, object]:
    """The snapshot of the shipped head, from a database Alembic migrated."""
    with tempfile.TemporaryDirectory(prefix="fathom-snapshot-") as scratch:
        path = Path(scratch) / "head.db"
        engine = create_store_engine(f"sqlite:///{path}")
        try:
            migrate(engine)
        finally:
            engine.dispose()
        with sqlite3.connect(path) as connection:
            statements = sqlite_schema(connection)
        connection.close()
    return {"revision": head_revision(), "statements": statements}


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m migrations.snapshot",
        description=(
            "Write migrations/sqlite_head.json: the schema Alembic's migrations build on SQLite (migrated into a "
            "scratch file), which a new SQLite database then gets in one transaction. Run it after adding a migration."
        ),
    )
    parser.parse_args()
    SQLITE_SNAPSHOT.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SQLITE_SNAPSHOT}")


if __name__ == "__main__":
    main()
