"""Per-scan metrics: one JSON column ``scans.metrics`` holding every registered metric (``scanner.measure.metrics``) as
``{name: number}``; NULL for the scans written before it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("metrics", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.drop_column("metrics")
