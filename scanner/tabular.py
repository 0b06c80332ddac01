"""Render query results (lists of flat rows) as a terminal table, JSON or CSV: ``--format table|json|csv``.

Rows are mappings of column name to a plain value. The table strips control characters from every cell (server
strings end up here); CSV guards against formula injection (a cell starting with ``= + - @`` gets a leading
apostrophe, the usual spreadsheet convention, as in the report's CSV) while JSON stays exact for machines.
"""

from __future__ import annotations

import csv
import enum
import io
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from scanner.report.csv_out import csv_text
from scanner.textsafe import clean


class TableFormat(enum.StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _cell(value: Any) -> str:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, Mapping | list | tuple):
        return clean(json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":")))
    return clean(value)


def _csv_cell(value: Any) -> str:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # numbers stay numbers (a negative delta is not a formula)
    if isinstance(value, Mapping | list | tuple):
        value = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return csv_text(value)


def render_rows(
    rows: Sequence[Mapping[str, Any]], fmt: TableFormat, *, columns: Sequence[str] | None = None, max_width: int = 60
) -> str:
    """``rows`` in the chosen format. ``columns`` picks and orders the table's columns (JSON keeps every key)."""
    if fmt is TableFormat.json:
        return json.dumps([{k: _plain(v) for k, v in row.items()} for row in rows], indent=2, default=str) + "\n"
    names = list(columns) if columns else (list(rows[0].keys()) if rows else [])
    if fmt is TableFormat.csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([_csv_cell(row.get(name)) for name in names])
        return buffer.getvalue()
    if not rows:
        return "(none)\n"
    cells = [[_cell(row.get(name)) for name in names] for row in rows]
    cells = [[value if len(value) <= max_width else value[: max_width - 1] + "…" for value in line] for line in cells]
    widths = [max(len(name), *(len(line[index]) for line in cells)) for index, name in enumerate(names)]
    numeric = [all(_is_number(row.get(name)) for row in rows) for name in names]

    def fit(values: Sequence[str]) -> str:
        parts = [
            value.rjust(width) if right else value.ljust(width)
            for value, width, right in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    lines = [fit(names), fit(["─" * width for width in widths])]
    lines += [fit(line) for line in cells]
    return "\n".join(lines) + "\n"


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))
