"""The store's layout holds: SQL is written only inside ``scanner/store`` (and the migrations), and the rows the
store hands out are built by keyword, so two fields of one type cannot swap silently."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from scanner.store import rows

PACKAGE = Path(__file__).resolve().parents[2] / "scanner"
_IMPORTS_SQL = re.compile(r"^\s*(from|import)\s+sqlalchemy\b", re.MULTILINE)


def test_only_the_store_package_speaks_sql() -> None:
    outside = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "store" not in path.relative_to(PACKAGE).parts[:1] and _IMPORTS_SQL.search(path.read_text(encoding="utf-8"))
    )
    assert outside == []
    assert _IMPORTS_SQL.search(
        (PACKAGE / "store" / "read" / "server_reads.py").read_text(encoding="utf-8")
    )  # the check can fire


@pytest.mark.parametrize(
    "row",
    [
        value
        for value in vars(rows).values()
        if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == rows.__name__
    ],
)
def test_rows_are_frozen_and_keyword_only(row: type) -> None:
    fields = dataclasses.fields(row)
    assert fields and all(field.kw_only for field in fields), row.__name__
    assert row.__dataclass_params__.frozen, row.__name__  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        row(*range(len(fields)))
