"""Initial schema: servers, runs, toolsets (by content hash), tokens, findings, scans, events, aggregates.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 21:12:13.578891
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("rule_version", sa.String(length=64), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("servers_scanned", sa.Integer(), nullable=False),
        sa.Column("servers_ok", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_status"), ["status"], unique=False)

    op.create_table(
        "toolsets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("tools_count", sa.Integer(), nullable=False),
        sa.Column("raw_size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_toolsets")),
        sa.UniqueConstraint("sha256", name=op.f("uq_toolsets_sha256")),
    )
    op.create_table(
        "measurements",
        sa.Column("toolset_id", sa.Integer(), nullable=False),
        sa.Column("rule_version", sa.String(length=64), nullable=False),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["toolset_id"], ["toolsets.id"], name=op.f("fk_measurements_toolset_id_toolsets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("toolset_id", "rule_version", name=op.f("pk_measurements")),
    )
    op.create_table(
        "run_aggregates",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("rule_version", sa.String(length=64), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("servers_scanned", sa.Integer(), nullable=False),
        sa.Column("servers_ok", sa.Integer(), nullable=False),
        sa.Column("servers_with_problems", sa.Integer(), nullable=False),
        sa.Column("outcomes", sa.JSON(), nullable=False),
        sa.Column("median_tokens", sa.Integer(), nullable=True),
        sa.Column("p90_tokens", sa.Integer(), nullable=True),
        sa.Column("median_tokens_by_provider", sa.JSON(), nullable=False),
        sa.Column("median_tools", sa.Integer(), nullable=True),
        sa.Column("findings_by_rule", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_aggregates_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_aggregates")),
    )
    op.create_table(
        "servers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("first_run_id", sa.Integer(), nullable=True),
        sa.Column("last_scan_id", sa.Integer(), nullable=True),
        sa.Column("last_ok_scan_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["first_run_id"], ["runs.id"], name=op.f("fk_servers_first_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_servers")),
        sa.UniqueConstraint("name", name=op.f("uq_servers_name")),
    )
    op.create_table(
        "tool_tokens",
        sa.Column("toolset_id", sa.Integer(), nullable=False),
        sa.Column("tool_index", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("tokens", sa.JSON(), nullable=False),
        sa.Column("max_tokens", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["toolset_id"], ["toolsets.id"], name=op.f("fk_tool_tokens_toolset_id_toolsets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("toolset_id", "tool_index", name=op.f("pk_tool_tokens")),
    )
    op.create_table(
        "toolset_tokens",
        sa.Column("toolset_id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(
            ["toolset_id"], ["toolsets.id"], name=op.f("fk_toolset_tokens_toolset_id_toolsets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("toolset_id", "provider", name=op.f("pk_toolset_tokens")),
    )
    op.create_table(
        "scans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("server_id", sa.Integer(), nullable=False),
        sa.Column("scanned_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("transport", sa.String(length=32), nullable=False),
        sa.Column("era", sa.String(length=16), nullable=True),
        sa.Column("protocol_version", sa.String(length=32), nullable=True),
        sa.Column("server_name", sa.String(), nullable=True),
        sa.Column("server_version", sa.String(), nullable=True),
        sa.Column("capability_profile", sa.String(length=64), nullable=True),
        sa.Column("timings", sa.JSON(), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=False),
        sa.Column("toolset_id", sa.Integer(), nullable=True),
        sa.Column("anonymous", sa.Boolean(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_scans_run_id_runs"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name=op.f("fk_scans_server_id_servers"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["toolset_id"], ["toolsets.id"], name=op.f("fk_scans_toolset_id_toolsets")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scans")),
        sa.UniqueConstraint("run_id", "server_id", name=op.f("uq_scans_run_id_server_id")),
    )
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.create_index("ix_scans_server", ["server_id", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_scans_toolset_id"), ["toolset_id"], unique=False)

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("server_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("scan_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("tool", sa.String(), nullable=True),
        sa.Column("code", sa.String(length=16), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_events_run_id_runs"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["scan_id"], ["scans.id"], name=op.f("fk_events_scan_id_scans"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["server_id"], ["servers.id"], name=op.f("fk_events_server_id_servers"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_kind", ["kind", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_events_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_events_scan_id"), ["scan_id"], unique=False)
        batch_op.create_index("ix_events_server", ["server_id", "id"], unique=False)

    op.create_table(
        "findings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("toolset_id", sa.Integer(), nullable=False),
        sa.Column("scan_id", sa.Integer(), nullable=True),
        sa.Column("rule_version", sa.String(length=64), nullable=False),
        sa.Column("code", sa.String(length=16), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("severity", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(), nullable=True),
        sa.Column("tool_index", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("hint", sa.Text(), nullable=False),
        sa.Column("pointer", sa.Text(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["scan_id"], ["scans.id"], name=op.f("fk_findings_scan_id_scans"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["toolset_id"], ["toolsets.id"], name=op.f("fk_findings_toolset_id_toolsets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_findings")),
    )
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.create_index("ix_findings_code", ["code"], unique=False)
        batch_op.create_index(batch_op.f("ix_findings_scan_id"), ["scan_id"], unique=False)
        batch_op.create_index("ix_findings_toolset_version", ["toolset_id", "rule_version"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.drop_index("ix_findings_toolset_version")
        batch_op.drop_index(batch_op.f("ix_findings_scan_id"))
        batch_op.drop_index("ix_findings_code")

    op.drop_table("findings")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_server")
        batch_op.drop_index(batch_op.f("ix_events_scan_id"))
        batch_op.drop_index(batch_op.f("ix_events_run_id"))
        batch_op.drop_index("ix_events_kind")

    op.drop_table("events")
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_scans_toolset_id"))
        batch_op.drop_index("ix_scans_server")

    op.drop_table("scans")
    op.drop_table("toolset_tokens")
    op.drop_table("tool_tokens")
    op.drop_table("servers")
    op.drop_table("run_aggregates")
    op.drop_table("measurements")
    op.drop_table("toolsets")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_status"))

    op.drop_table("runs")
