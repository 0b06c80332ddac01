"""The distributed run: ``runs.planned``, ``run_workers``, and on PostgreSQL the task engine's queue tables.

``fathom scan --enqueue`` queues one job per server in Procrastinate's tables; ``fathom worker`` takes them. The
engine ships its schema as SQL (``procrastinate/sql/schema.sql``); it is applied here, so ``fathom`` owns one
migration path and ``open_store`` creates the queue with everything else. SQLite gets the two Fathom parts only:
distributed runs need PostgreSQL. Procrastinate is pinned to one minor version in ``pyproject.toml``; a version
that changes its schema needs a new migration here applying its migration files.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ENGINE_TYPES = ("procrastinate_job_to_defer_v1", "procrastinate_job_event_type", "procrastinate_job_status")
ENGINE_TABLES = (
    "procrastinate_events",
    "procrastinate_periodic_defers",
    "procrastinate_jobs",
    "procrastinate_workers",
)


def _engine_schema() -> str:
    """Procrastinate's schema SQL, read from the installed package (the ``postgres`` extra)."""
    try:
        from procrastinate.schema import SchemaManager
    except ImportError as exc:
        raise RuntimeError(
            "PostgreSQL needs the task engine: pip install 'fathom-scanner[postgres]' (procrastinate)"
        ) from exc
    return str(SchemaManager.get_schema())


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("planned", sa.Integer(), nullable=True))
    op.create_table(
        "run_workers",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("scans", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_run_workers_run_id_runs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "worker", name=op.f("pk_run_workers")),
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # Straight to the driver (no bind-parameter parsing of ``:``); it still reads %, so double it.
        bind.exec_driver_sql(_engine_schema().replace("%", "%%"))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table in ENGINE_TABLES:
            op.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
        # Every function the schema created, whatever its signature.
        op.execute(
            """
            DO $$
            DECLARE item regprocedure;
            BEGIN
              FOR item IN SELECT oid::regprocedure FROM pg_proc WHERE proname LIKE 'procrastinate\\_%' LOOP
                EXECUTE 'DROP FUNCTION IF EXISTS ' || item || ' CASCADE';
              END LOOP;
            END $$
            """
        )
        for name in ENGINE_TYPES:
            op.execute(f"DROP TYPE IF EXISTS {name} CASCADE")
    op.drop_table("run_workers")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("planned")
