"""Leaner nightly rows (issue #24): drop the indexes no query uses on ``scans.toolset_id``,
``scans.instructions_id`` and ``scan_lanes.toolset_id`` (toolsets and instructions are never deleted, and every
read finds scans by run, server or id), so an unchanged server's rescan adds fewer bytes.

The per-scan JSON columns (``timings``, ``extra``, ``metrics``, ``signals``) change how new rows are written, not
their type (``scanner.store.tables.KeyedJSON``): rows written before read back as they are, so no row is rewritten.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 17:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_DROPPED = (
    ("ix_scans_toolset_id", "scans", "toolset_id"),
    ("ix_scans_instructions_id", "scans", "instructions_id"),
    ("ix_scan_lanes_toolset_id", "scan_lanes", "toolset_id"),
)


def upgrade() -> None:
    for name, table, _column in _DROPPED:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, column in _DROPPED:
        op.create_index(name, table, [column], unique=False)
