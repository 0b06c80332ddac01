"""What a measurement rests on besides its list and catalogue (issue #47): ``measurements.basis``, the tokenizers'
versions and the client table (``scanner.measure.basis``). A scan reuses a stored measurement only under its own
basis; the rows stored before this revision have none (NULL), so each list is measured once more on the next scan
that meets it (or by a ``rescore``), then reused.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07 01:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("measurements", schema=None) as batch_op:
        batch_op.add_column(sa.Column("basis", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("measurements", schema=None) as batch_op:
        batch_op.drop_column("basis")
