"""Open a database and bring it to the newest schema: the engine, SQLite pragmas and Alembic, configured in code.

Alembic's environment lives in the top-level ``migrations`` package (shipped in the wheel), so migrating needs no
``alembic.ini`` on disk. SQLite gets WAL (readers never block the one writer), foreign keys on, and a busy
timeout so a report reading the file while a crawl writes waits instead of failing.

The engine is also the store's boundary, in both directions:

* what goes in: every bound string parameter and every JSON value passes :mod:`scanner.wire`'s rule (NUL and lone
  surrogates become U+FFFD), so no text a server or registry sent can make PostgreSQL refuse a row (it rejects NUL
  in text) or a driver fail to encode it, whichever store method wrote it;
* what comes out: any database failure (read-only file, full disk, lost connection, a constraint) becomes one
  :class:`~scanner.errors.StoreError` line (exit 4), never a driver traceback.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

import migrations
from scanner import wire
from scanner.errors import InputError, StoreError

if TYPE_CHECKING:  # Alembic is imported only when a database must be created or migrated (~2 s of start-up)
    from alembic.config import Config

BUSY_TIMEOUT_MS = 30_000


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config pointing at the packaged ``migrations`` directory (no ini file needed)."""
    from alembic.config import Config

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


def _json_serializer(value: Any) -> str:
    """JSON column text, ASCII escapes as SQLAlchemy writes it by default but without the spaces after ``,`` and
    ``:`` (the same value, ~20 bytes less per scan row), with NUL and lone surrogates replaced: PostgreSQL's
    ``json`` would keep a ``\\u0000`` and hand back a NUL that no report can write.

    The text is ASCII (every other character escaped), so NUL and a lone surrogate can only be there as the escapes
    ``\\u0000`` and ``\\udXXX`` (the encoder writes hex in lower case): two substring tests, no search."""
    text = _ENCODER.encode(value)
    if "\\u0000" in text or "\\ud" in text:
        return _ENCODER.encode(wire.sanitize(value))
    return text


# What ``json.dumps(value, separators=(",", ":"))`` builds on every call, built once (it keeps no state per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"))


def _unwritable(value: Any) -> bool:
    # NUL and ASCII tests run in C; only non-ASCII text needs the surrogate search (a write's strings are mostly
    # short ASCII names and codes).
    return type(value) is str and ("\x00" in value or (not value.isascii() and wire.clean_str(value) is not value))


def _clean_value(value: Any) -> Any:
    return wire.clean_str(value) if type(value) is str else value


def _bound_strings(parameters: Any) -> str:
    """Every ``str`` value of ``parameters`` (as :func:`_clean_parameters` takes them) joined into one text: it
    holds NUL or a lone surrogate exactly when one of them does (a code point stays itself when joined)."""
    kind = type(parameters)
    if kind is dict:
        values: Any = parameters.values()
    elif kind is tuple or kind is list or isinstance(parameters, list | tuple):
        if not parameters:
            return ""
        first = type(parameters[0])
        kinds = set(map(type, parameters))
        if kinds == {tuple} or kinds == {dict}:  # an executemany's rows (as every driver gets them): at C speed
            rows = parameters if first is tuple else map(dict.values, parameters)
            return "".join([value for value in itertools.chain.from_iterable(rows) if type(value) is str])
        if first is tuple or first is list or first is dict or isinstance(parameters[0], Mapping | list | tuple):
            values = (value for row in parameters for value in (row.values() if isinstance(row, Mapping) else row))
        else:
            values = parameters
    elif isinstance(parameters, Mapping):
        values = parameters.values()
    else:
        return ""
    return "".join([value for value in values if type(value) is str])


def _clean_parameters(parameters: Any) -> Any:
    """``parameters`` (a mapping or a sequence, or a list of them for executemany) with unwritable text replaced;
    the same object when there is none, which is nearly always: that is found by a few C-speed tests over all of
    their text at once (NUL; ASCII, else UTF-8 encoding, which refuses surrogates), not a test per value."""
    joined = _bound_strings(parameters)
    if "\x00" not in joined and (joined.isascii() or _encodable(joined)):
        return parameters
    return _cleaned(parameters)


def _encodable(text: str) -> bool:
    """Whether ``text`` has no surrogate code point: UTF-8 refuses exactly those, and encodes several times faster
    than a regex searches (an executemany's joined text runs to megabytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _cleaned(parameters: Any) -> Any:
    if isinstance(parameters, dict):
        for value in parameters.values():
            if _unwritable(value):
                return {key: _clean_value(item) for key, item in parameters.items()}
        return parameters
    if isinstance(parameters, list | tuple):
        if parameters and isinstance(parameters[0], Mapping | list | tuple):
            cleaned = [_cleaned(item) for item in parameters]
            changed = any(new is not old for new, old in zip(cleaned, parameters, strict=True))
            return (cleaned if isinstance(parameters, list) else tuple(cleaned)) if changed else parameters
        for value in parameters:
            if _unwritable(value):
                values = [_clean_value(item) for item in parameters]
                return values if isinstance(parameters, list) else tuple(values)
        return parameters
    if isinstance(parameters, Mapping):
        return _cleaned(dict(parameters)) if any(map(_unwritable, parameters.values())) else parameters
    return parameters


def _writable_parameters(
    _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _executemany: bool
) -> tuple[str, Any]:
    return statement, _clean_parameters(parameters)


_HINTS = (
    ("readonly", "the database is read-only (check the file's and its folder's permissions)"),
    ("read-only", "the database is read-only (check the file's and its folder's permissions)"),
    ("disk is full", "the disk is full"),
    ("no space left", "the disk is full"),
    ("disk i/o error", "a disk I/O error"),
    ("unable to open database", "the database file cannot be opened (a missing folder or no permission)"),
    ("database is locked", "the database stayed locked by another process past the busy timeout"),
)


def _sqlite_open_hint(database: str | None) -> str | None:
    """Why SQLite could not open ``database`` when it only says "unable to open": a read-only folder or mount (a
    WAL database needs to create its -shm and -wal files beside it)."""
    if not database or database.startswith("file:") or database == ":memory:":
        return None
    folder = Path(database).expanduser().parent
    try:
        read_only_mount = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return None
    if read_only_mount or not os.access(folder, os.W_OK):
        return "the database's folder is read-only (SQLite writes its -wal and -shm files beside the database)"
    return None


def _nearly_full(database: str | None) -> bool:
    """Whether the file system holding SQLite file ``database`` has less than 1 MiB left."""
    if not database or database.startswith("file:") or database == ":memory:":
        return False
    try:
        stats = os.statvfs(Path(database).expanduser().parent)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 1 << 20


def _translate_error(context: ExceptionContext) -> None:
    """Turn any failure inside the database driver into one :class:`StoreError` line (exit 4), at the boundary."""
    original = context.original_exception
    if isinstance(original, StoreError):
        return
    text = " ".join(str(original).split()) or type(original).__name__
    lowered = text.lower()
    hint = next((hint for needle, hint in _HINTS if needle in lowered), None)
    url = context.engine.url if context.engine is not None else None
    if url is not None and url.get_backend_name() == "sqlite":
        if "unable to open" in lowered:
            hint = _sqlite_open_hint(url.database) or hint
        elif "disk i/o error" in lowered and _nearly_full(url.database):
            hint = "the disk is full"  # SQLite reports ENOSPC in its WAL index as an I/O error
    where = url.render_as_string(hide_password=True) if url is not None else "database"
    first = text[:300]
    message = f"database {where}: {hint} ({first})" if hint else f"database {where} failed: {first}"
    raise StoreError(message) from original


def missing_sqlite_file(url: str) -> str | None:
    """The file a ``sqlite:///...`` URL names when it does not exist (None for any other URL, an in-memory
    database, or a file that is there): a query on a mistyped URL must not create folders and an empty database
    and answer "none". An unparseable URL is left to :func:`create_store_engine`'s own one line."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if parsed.query.get("mode") == "memory" or database.startswith("file::memory:"):
        return None
    path = Path(database.removeprefix("file:").split("?", 1)[0]).expanduser()
    return None if path.is_file() else database


def create_store_engine(url: str) -> Engine:
    """An engine for ``url``; for SQLite, makes the parent directory and sets the pragmas on every connection."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"cannot use database URL {url!r}: {exc}") from exc
    from scanner.scrub import hold

    password = parsed.password if isinstance(parsed.password, str) else None
    # Never in any server's published output (a child may read Fathom's command line): the password, and with
    # its user as a URL holds it.
    hold(password, f"{parsed.username}:{password}" if password and parsed.username else None)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database and parsed.database != ":memory:":
        try:
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for database {parsed.database}: {exc.strerror}") from exc
    try:
        engine = create_engine(
            parsed,
            connect_args={"timeout": BUSY_TIMEOUT_MS / 1000} if is_sqlite else {},
            json_serializer=_json_serializer,
        )
    except (SQLAlchemyError, ImportError) as exc:
        raise StoreError(f"cannot open database {parsed.render_as_string()}: {exc}") from exc
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    event.listen(engine, "before_cursor_execute", _writable_parameters, retval=True)
    event.listen(engine, "handle_error", _translate_error)
    return engine


def head_revision() -> str | None:
    """The newest migration this install ships."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the database to ``revision`` (head by default), in one transaction where the backend allows."""
    from alembic import command

    config = alembic_config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Downgrade the database to ``revision`` ("base" removes every table)."""
    from alembic import command

    config = alembic_config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


_REVISION = re.compile(r"^(down_revision|revision)\b[^=\n]*=\s*(None|\"([^\"]+)\"|'([^']+)')", re.M)


@functools.cache
def shipped_head() -> str | None:
    """The newest migration this install ships, read from the version files' ``revision``/``down_revision``
    lines without importing Alembic; None when that reading is not certain (the caller then asks Alembic)."""
    revisions: dict[str, str | None] = {}
    for path in Path(next(iter(migrations.__path__)), "versions").glob("*.py"):
        found = dict(
            (name, value3 or value4 or None)
            for name, _, value3, value4 in _REVISION.findall(path.read_text(encoding="utf-8"))
        )
        if "revision" not in found or not found["revision"]:
            continue
        revisions[found["revision"]] = found.get("down_revision")
    heads = set(revisions) - {down for down in revisions.values() if down is not None}
    return next(iter(heads)) if len(heads) == 1 else None


def _at_shipped_head(engine: Engine) -> bool:
    """True when the database's one stored revision is :func:`shipped_head` (read with plain SQL); any doubt (no
    version table, several rows, an unreadable head) is False and :func:`open_engine` takes Alembic's path."""
    head = shipped_head()
    if head is None:
        return False
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    except Exception:  # no table yet, or the database cannot be read: Alembic's path says which, in its words
        return False
    return len(rows) == 1 and rows[0][0] == head


def url_without_password(url: str) -> str:
    """``url`` as it may be printed: a database password shown as ``***``; anything else (a path, a URL without a
    password, one that does not parse) as given."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url
    return parsed.render_as_string(hide_password=True) if parsed.password else url


def sqlite_file_missing(url: str) -> bool:
    """True for a SQLite URL whose file does not exist (``--resume`` must not create an empty database to find
    nothing in); False for any other URL, an in-memory one, or one that does not parse (opening it says why)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return False
    database = parsed.database or ""
    return parsed.drivername.startswith("sqlite") and database not in ("", ":memory:") and not Path(database).exists()


SQLITE_SNAPSHOT = Path(next(iter(migrations.__path__)), "sqlite_head.json")
"""The schema Alembic's migrations build on SQLite, as SQLite keeps it (``sqlite_master``), with its revision.

Written by ``python -m migrations.snapshot``; ``tests/store/test_migrations.py`` checks that a database migrated by
Alembic holds the same statements (up to the order Alembic's batch mode writes a rebuilt table's constraints in, which
varies), so a new migration fails that test until the snapshot is written again."""


@functools.cache
def _sqlite_snapshot() -> tuple[str, tuple[str, ...]] | None:
    """The snapshot's revision and statements, when it is there and is of :func:`shipped_head`; else None."""
    try:
        snapshot = json.loads(SQLITE_SNAPSHOT.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    head = shipped_head()
    if head is None or not isinstance(snapshot, dict) or snapshot.get("revision") != head:
        return None
    return snapshot["revision"], tuple(snapshot["statements"])


def _created_from_snapshot(engine: Engine) -> bool:
    """Give a new, empty SQLite database the head schema from :data:`SQLITE_SNAPSHOT` in one transaction, as
    Alembic would have left it (its ``alembic_version`` row included), without importing Alembic or running each
    migration (about 0.3 s of a first night's CPU). False, with nothing written, when the database is not
    SQLite, not empty (another process may have just made it) or the snapshot is not of the shipped head: the
    caller then takes Alembic's path."""
    snapshot = _sqlite_snapshot() if engine.dialect.name == "sqlite" else None
    if snapshot is None:
        return False
    revision, statements = snapshot
    # Through SQLAlchemy, so a failure (a full disk, say) is the engine's one-line StoreError like any other.
    with engine.connect() as connection:
        connection.exec_driver_sql("BEGIN IMMEDIATE")  # a second process making it waits here, then finds it made
        if connection.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
            connection.rollback()
            return False
        for statement in statements:
            connection.exec_driver_sql(statement)
        connection.exec_driver_sql("INSERT INTO alembic_version (version_num) VALUES (?)", (revision,))
        connection.commit()
    return True


def open_engine(url: str) -> Engine:
    """Open ``url`` and migrate it to head (a new SQLite file: from :data:`SQLITE_SNAPSHOT`); any failure becomes
    one clear :class:`StoreError` line."""
    engine = create_store_engine(url)
    where = engine.url.render_as_string(hide_password=True)
    if _at_shipped_head(engine):
        return engine  # the usual open: no migration to run, and no Alembic to import
    try:
        if _created_from_snapshot(engine):
            return engine
        current = current_revision(engine)
        head = head_revision()
        if current != head:
            from alembic.script import ScriptDirectory

            known = {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
            if current is not None and current not in known:
                raise StoreError(
                    f"database {where} is at schema revision {current}, newer than this Fathom knows ({head});"
                    " upgrade Fathom."
                )
            try:
                migrate(engine)
            except StoreError:
                # Two processes opening a new database at once both try to create it; the one that lost finds
                # it already migrated, which is all it wanted.
                if current_revision(engine) != head:
                    raise
    except StoreError:
        engine.dispose()
        raise
    except Exception as exc:  # Alembic and drivers raise many types; all mean "cannot use this database"
        engine.dispose()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"cannot open or migrate database {where}: {first}") from exc
    return engine


def libpq_url(url: str) -> str | None:
    """The plain libpq URL (``postgresql://...``) of a PostgreSQL database URL, for drivers outside SQLAlchemy
    (the task engine); None for any other database. An unparseable URL is an :class:`InputError`."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise InputError(f"cannot use database URL {url!r}: {exc}") from exc
    if parsed.get_backend_name() != "postgresql":
        return None
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def shown_url(url: str) -> str:
    """A database URL as a message shows it: the password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(an unparseable database URL)"
