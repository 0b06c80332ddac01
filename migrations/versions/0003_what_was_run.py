"""What was run: each scan keeps the entry's registry version, its package (registry type, identifier, version,
pinned or not), its URL and its command line with secrets redacted.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("registry_version", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("package", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("url", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("command", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scans", schema=None) as batch_op:
        batch_op.drop_column("command")
        batch_op.drop_column("url")
        batch_op.drop_column("package")
        batch_op.drop_column("registry_version")
