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
    with pytest.raises(StoreError, match="cannot open database"):
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


def _shape(statements: list[str | None]) -> list[tuple[str, ...]]:
    """Statements as what they make: Alembic's batch mode writes a rebuilt table's constraints (and a table's
    indexes) in an order that varies from run to run, so each statement is its lines, sorted, and the statements
    are sorted."""
    return sorted(tuple(sorted(line.strip().rstrip(",") for line in (sql or "").splitlines())) for sql in statements)


def _master(path: Path) -> tuple[list[tuple[str, ...]], list[tuple[str, str, str]], list[tuple[str]]]:
    """Everything SQLite keeps of a database's schema: each object's statement, every object by kind and table
    (its own and the indexes it makes for constraints included), and the Alembic version row."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT type, tbl_name, sql FROM sqlite_master").fetchall()
        version = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    connection.close()
    return _shape([sql for _, _, sql in rows]), sorted((kind, table, "") for kind, table, _ in rows), version


def _migrated_by_alembic(path: Path) -> Path:
    engine = create_store_engine(f"sqlite:///{path}")
    migrate(engine)
    engine.dispose()
    return path


def test_a_new_sqlite_database_is_what_the_migrations_build(tmp_path: Path) -> None:
    """A new SQLite file gets its schema from the shipped snapshot, not from Alembic; SQLite then holds exactly
    what the seven migrations leave (every table, index and constraint, and the version row), the models agree
    with it, and it migrates down and up like any other. A stale snapshot (a migration added, the snapshot not
    written again) fails here with the command that writes it."""
    from migrations.snapshot import build
    from scanner.store.engine import SQLITE_SNAPSHOT

    shipped, built = json.loads(SQLITE_SNAPSHOT.read_text(encoding="utf-8")), build()
    assert shipped["revision"] == built["revision"], "run: python -m migrations.snapshot"
    assert _shape(shipped["statements"]) == _shape(built["statements"]), "run: python -m migrations.snapshot"

    by_alembic = _migrated_by_alembic(tmp_path / "alembic.db")
    by_snapshot = tmp_path / "snapshot.db"
    open_store(f"sqlite:///{by_snapshot}").close()
    assert _master(by_snapshot) == _master(by_alembic)

    engine = create_store_engine(f"sqlite:///{by_snapshot}")
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    downgrade(engine, "base")
    migrate(engine)
    engine.dispose()
    assert _master(by_snapshot) == _master(by_alembic)


def test_a_new_sqlite_database_is_made_without_alembic(tmp_path: Path) -> None:
    """Creating a database (every first night, every ``fathom demo``) imports no Alembic."""
    import subprocess
    import sys

    db = tmp_path / "new.db"
    probe = (
        "import sys; from scanner.store import open_store; "
        f"open_store({f'sqlite:///{db}'!r}).close(); print('alembic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr
    assert _master(db)[2] == [(head_revision(),)]


def test_processes_making_one_new_database_at_once_all_open_it(tmp_path: Path) -> None:
    """Nightly workers started together on a new file: one makes it, the others wait for it and open it; none
    fails, and the schema is made once."""
    import subprocess
    import sys

    db = tmp_path / "shared.db"
    probe = f"from scanner.store import open_store; open_store({f'sqlite:///{db}'!r}).close(); print('opened')"
    started = [subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [process.communicate(timeout=120)[0].strip() for process in started]
    assert outputs == ["opened"] * 4 and all(process.returncode == 0 for process in started)
    by_alembic = _migrated_by_alembic(tmp_path / "alembic.db")
    assert _master(db) == _master(by_alembic)


def test_without_a_snapshot_of_the_head_a_new_database_is_migrated(tmp_path: Path, monkeypatch) -> None:
    """A snapshot missing, or of another revision than the shipped head, is not used: Alembic makes the
    database, with the same result."""
    from scanner.store import engine as engine_module

    made = []
    real_migrate = engine_module.migrate
    monkeypatch.setattr(engine_module, "migrate", lambda engine: made.append(1) or real_migrate(engine))
    for name, snapshot in (("missing.db", tmp_path / "absent.json"), ("stale.db", tmp_path / "stale.json")):
        (tmp_path / "stale.json").write_text(json.dumps({"revision": "0006", "statements": []}), encoding="utf-8")
        monkeypatch.setattr(engine_module, "SQLITE_SNAPSHOT", snapshot)
        engine_module._sqlite_snapshot.cache_clear()
        open_store(f"sqlite:///{tmp_path / name}").close()
        assert current_revision(create_store_engine(f"sqlite:///{tmp_path / name}")) == head_revision()
    engine_module._sqlite_snapshot.cache_clear()
    assert made == [1, 1]


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
    # Today's writer stamps each measurement's basis (0008): the column is there while it writes the corpus, then
    # dropped, so the file upgraded is 0006's shape holding 0006's values.
    with sqlite3.connect(db_path) as connection:
        connection.execute("ALTER TABLE measurements ADD COLUMN basis VARCHAR(64)")
    store = Store(engine)
    runs = corpus.build(store, monkeypatch)
    engine.dispose()
    with sqlite3.connect(db_path) as connection:
        connection.execute("ALTER TABLE measurements DROP COLUMN basis")
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
