"""The schema: Alembic migrations and the SQLAlchemy models agree, migrate both ways, and open cleanly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.dialects import sqlite

from scanner.errors import StoreError
from scanner.store import Store, open_store
from scanner.store.engine import create_store_engine, current_revision, downgrade, head_revision, migrate
from scanner.store.tables import Base, KeyedJSON
from tests.store import corpus
from tests.store.test_golden_reads import GOLDEN

TABLES = {
    "servers",
    "runs",
    "toolsets",
    "measurements",
    "toolset_tokens",
    "tool_tokens",
    "findings",
    "scans",
    "events",
    "run_aggregates",
}


def test_models_and_migrations_agree(db_path: Path) -> None:
    engine = create_store_engine(f"sqlite:///{db_path}")
    migrate(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_downgrade_then_upgrade(db_path: Path) -> None:
    engine = create_store_engine(f"sqlite:///{db_path}")
    migrate(engine)
    assert set(inspect(engine).get_table_names()) >= TABLES
    assert current_revision(engine) == head_revision()

    downgrade(engine, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    assert current_revision(engine) is None

    migrate(engine)
    assert set(inspect(engine).get_table_names()) >= TABLES
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_open_store_creates_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "fathom.db"
    store = open_store(f"sqlite:///{path}")
    run_id = store.start_run("list.txt", "1", {})
    store.close()
    assert path.exists()

    again = open_store(f"sqlite:///{path}")
    assert [run.id for run in again.runs()] == [run_id]
    again.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_foreign_keys_and_busy_timeout_are_on(store_engine_url: str) -> None:
    engine = create_store_engine(store_engine_url)
    with engine.connect() as connection:
        raw = connection.connection.dbapi_connection
        assert raw is not None
        assert raw.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert raw.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    engine.dispose()


@pytest.fixture
def store_engine_url(db_path: Path) -> str:
    return f"sqlite:///{db_path}"


def test_not_a_database_is_one_clear_store_error(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("this is not SQLite\n" * 100, encoding="utf-8")
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{bogus}")
    message = str(caught.value)
    assert "notes.db" in message
    assert "\n" not in message
    assert caught.value.exit_code == 4


def test_unknown_scheme_and_newer_schema_are_store_errors(db_path: Path) -> None:
    with pytest.raises(StoreError, match="Cannot open database"):
        open_store("nosuchdb://somewhere/x")

    open_store(f"sqlite:///{db_path}").close()
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999_future'")
    with pytest.raises(StoreError, match="newer than this Fathom knows"):
        open_store(f"sqlite:///{db_path}")


def test_the_shipped_head_is_read_without_alembic_and_agrees_with_it(tmp_path: Path) -> None:
    """An already migrated database opens without importing Alembic (about 2 s of every query's start-up), and
    the head read from the version files is Alembic's own."""
    import subprocess
    import sys

    from scanner.store.engine import head_revision, shipped_head

    assert shipped_head() == head_revision() is not None
    db = tmp_path / "f.db"
    open_store(f"sqlite:///{db}").close()  # created and migrated: Alembic's path
    probe = (
        "import sys; from scanner.store import open_store; "
        f"open_store({f'sqlite:///{db}'!r}).close(); print('alembic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr


def _as_objects(db_path: Path) -> None:
    """Rewrite every keyed JSON value as the object a Fathom before 0007 wrote (and a URL's package as ``null``)."""
    keyed = KeyedJSON()
    with sqlite3.connect(db_path) as connection:
        for table, column in (
            ("scans", "timings"),
            ("scans", "extra"),
            ("scans", "metrics"),
            ("scan_lanes", "signals"),
        ):
            for row_id, stored in connection.execute(f"SELECT id, {column} FROM {table}").fetchall():
                value = keyed.process_result_value(json.loads(stored), sqlite.dialect())
                assert isinstance(value, dict)
                connection.execute(
                    f"UPDATE {table} SET {column} = ? WHERE id = ?", (json.dumps(value, separators=(",", ":")), row_id)
                )
        connection.execute("UPDATE scans SET package = 'null' WHERE package IS NULL")


def test_upgrading_a_0006_database_with_data_reads_the_same_values(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus written at revision 0006 in the shape that Fathom wrote (JSON objects, ``'null'`` packages, the
    indexes 0007 drops), upgraded, reads back exactly the golden reads; and a night written after the upgrade
    (keyed JSON) beside it reads as the same values too."""
    url = f"sqlite:///{db_path}"
    engine = create_store_engine(url)
    migrate(engine, "0006")
    store = Store(engine)
    runs = corpus.build(store, monkeypatch)
    _as_objects(db_path)
    with sqlite3.connect(db_path) as connection:
        indexes = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"ix_scans_toolset_id", "ix_scan_lanes_toolset_id"} <= indexes
        assert connection.execute("SELECT count(*) FROM scans WHERE timings LIKE '{%'").fetchone()[0] > 50
    migrate(engine)
    assert current_revision(engine) == head_revision()
    reads = json.loads(json.dumps(corpus.dump(store, url, runs), sort_keys=True))
    assert reads == json.loads(GOLDEN.read_text(encoding="utf-8"))
    with sqlite3.connect(db_path) as connection:
        indexes = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert not {"ix_scans_toolset_id", "ix_scans_instructions_id", "ix_scan_lanes_toolset_id"} & indexes
    engine.dispose()
