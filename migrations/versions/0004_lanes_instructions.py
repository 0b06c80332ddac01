"""Lanes and instructions: scans in two lanes (``scan_lanes``, ``scans.lane``), the server's instructions stored
once by content hash (``instructions``, ``instructions_tokens``, ``scans.instructions_id``), and scan findings
without a toolset (MCP602 on a server that listed nothing in any lane).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "instructions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instructions")),
        sa.UniqueConstraint("sha256", name=op.f("uq_instructions_sha256")),
    )
    op.create_table(
        "instructions_tokens",
        sa.Column("instructions_id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(
            ["instructions_id"],
            ["instructions.id"],
            name=op.f("fk_instructions_tokens_instructions_id_instructions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("instructions_id", "provider", name=op.f("pk_instructions_tokens")),
    )
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lane", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("instructions_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_scans_instructions_id"), ["instructions_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_scans_instructions_id_instructions"), "instructions", ["instructions_id"], ["id"]
        )
    op.create_table(
        "scan_lanes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scan_id", sa.Integer(), nullable=False),
        sa.Column("lane", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("toolset_id", sa.Integer(), nullable=True),
        sa.Column("tools_count", sa.Integer(), nullable=True),
        sa.Column("signals", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["scan_id"], ["scans.id"], name=op.f("fk_scan_lanes_scan_id_scans"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["toolset_id"], ["toolsets.id"], name=op.f("fk_scan_lanes_toolset_id_toolsets")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scan_lanes")),
        sa.UniqueConstraint("scan_id", "lane", name=op.f("uq_scan_lanes_scan_id_lane")),
    )
    with op.batch_alter_table("scan_lanes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_scan_lanes_toolset_id"), ["toolset_id"], unique=False)
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.alter_column("toolset_id", existing_type=sa.Integer(), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM findings WHERE toolset_id IS NULL")
    with op.batch_alter_table("findings", schema=None) as batch_op:
        batch_op.alter_column("toolset_id", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("scan_lanes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_scan_lanes_toolset_id"))
    op.drop_table("scan_lanes")
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_scans_instructions_id_instructions"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_scans_instructions_id"))
        batch_op.drop_column("instructions_id")
        batch_op.drop_column("lane")
    op.drop_table("instructions_tokens")
    op.drop_table("instructions")
