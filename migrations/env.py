"""Alembic environment: migrate the connection ``scanner.store.engine`` hands over (or a URL, for the CLI).

``scanner.store.engine.migrate`` passes an open connection in ``config.attributes["connection"]`` so migrations
run inside the same engine (and SQLite pragmas) the store uses. Running ``alembic`` by hand also works with
``-x url=sqlite:///fathom.db``. Batch mode is on because SQLite cannot ALTER most things in place.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from scanner.store.tables import Base, described_here

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        include_name=described_here,  # the task engine's queue tables are its own (migration 0005)
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give a database: alembic -x url=sqlite:///fathom.db upgrade head")
    engine = create_engine(url)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def run_migrations_offline() -> None:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
