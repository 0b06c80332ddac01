"""Open a database and bring it to the newest schema: the engine, SQLite pragmas and Alembic, configured in code.

Alembic's environment lives in the top-level ``migrations`` package (shipped in the wheel), so migrating needs no
``alembic.ini`` on disk. SQLite gets WAL (readers never block the one writer), foreign keys on, and a busy
timeout so a report reading the file while a crawl writes waits instead of failing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

import migrations
from scanner.errors import StoreError

BUSY_TIMEOUT_MS = 30_000


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config pointing at the packaged ``migrations`` directory (no ini file needed)."""
    config = Config()
    # ``__path__`` rather than ``__file__``: an editable install may present the package as a namespace.
    config.set_main_option("script_location", str(Path(next(iter(migrations.__path__)))))
    if engine is not None:
        config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return config


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def create_store_engine(url: str) -> Engine:
    """An engine for ``url``; for SQLite, makes the parent directory and sets the pragmas on every connection."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"Cannot use database URL {url!r}: {exc}") from exc
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database and parsed.database != ":memory:":
        try:
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"Cannot create the folder for database {parsed.database}: {exc.strerror}") from exc
    try:
        engine = create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000} if is_sqlite else {})
    except (SQLAlchemyError, ImportError) as exc:
        raise StoreError(f"Cannot open database {parsed.render_as_string()}: {exc}") from exc
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def head_revision() -> str | None:
    """The newest migration this install ships."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the database to ``revision`` (head by default), in one transaction where the backend allows."""
    config = alembic_config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Downgrade the database to ``revision`` ("base" removes every table)."""
    config = alembic_config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def sqlite_file_missing(url: str) -> bool:
    """True for a SQLite URL whose file does not exist (``--resume`` must not create an empty database to find
    nothing in); False for any other URL, an in-memory one, or one that does not parse (opening it says why)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return False
    database = parsed.database or ""
    return parsed.drivername.startswith("sqlite") and database not in ("", ":memory:") and not Path(database).exists()


def open_engine(url: str) -> Engine:
    """Open ``url`` and migrate it to head; any failure becomes one clear :class:`StoreError` line."""
    engine = create_store_engine(url)
    where = engine.url.render_as_string(hide_password=True)
    try:
        current = current_revision(engine)
        head = head_revision()
        if current != head:
            known = {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
            if current is not None and current not in known:
                raise StoreError(
                    f"Database {where} is at schema revision {current}, newer than this Fathom knows ({head});"
                    " upgrade Fathom."
                )
            migrate(engine)
    except StoreError:
        engine.dispose()
        raise
    except Exception as exc:  # Alembic and drivers raise many types; all mean "cannot use this database"
        engine.dispose()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"Cannot open or migrate database {where}: {first}") from exc
    return engine
