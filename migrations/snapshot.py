"""Write ``migrations/sqlite_head.json``: the schema the migrations build on SQLite, for new SQLite databases.

    python -m migrations.snapshot

Run it after adding a migration (``tests/store/test_migrations.py`` fails until it is run). It migrates a new
SQLite file with Alembic and keeps what SQLite stored for it (:func:`scanner.store.engine.sqlite_schema`).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

from scanner.store.engine import SQLITE_SNAPSHOT, create_store_engine, head_revision, migrate, sqlite_schema


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
    SQLITE_SNAPSHOT.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SQLITE_SNAPSHOT}")


if __name__ == "__main__":
    main()
