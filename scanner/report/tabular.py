"""Render query results (lists of flat rows) as a terminal table, JSON or CSV: ``--format table|json|csv``.

A table fits ``width`` columns when one is given (the terminal's, or ``$COLUMNS``): the widest text columns
shrink in turn and their cells wrap onto more lines, never cut; when even that cannot fit, the columns named
``optional`` are left out (last first) and a line under the table names them (``--wide`` keeps every column).
Without a width (output piped, or ``--wide``) nothing is wrapped or cut. Times read ``2026-12-01 11:23`` (UTC) in
a table and stay full ISO 8601 in JSON and CSV.

Rows are mappings of column name to a plain value. The table strips control characters from every cell (server
strings end up here); CSV guards against formula injection (a cell starting with ``= + - @`` gets a leading
apostrophe, the usual spreadsheet convention, as in the report's CSV) while JSON stays exact for machines.
"""

from __future__ import annotations

import csv
import enum
import io
import itertools
import json
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
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


MIN_WIDTH = 12  # a text column never shrinks below this (or its header): narrower wraps become unreadable
COMFORTABLE_WIDTH = 20  # optional columns are left out before a free-text column shrinks below this
GAP = 2


def _cell(value: Any) -> str:
    if isinstance(value, datetime):  # a short time in a table: full ISO stays in JSON and CSV
        moment = value.astimezone(UTC) if value.tzinfo is not None else value
        return moment.strftime("%Y-%m-%d %H:%M")
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return clean(" ".join(value))  # names (a run's workers): a list in JSON, words in a table
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
    rows: Sequence[Mapping[str, Any]],
    fmt: TableFormat,
    *,
    columns: Sequence[str] | None = None,
    width: int | None = None,
    optional: Sequence[str] = (),
    wrap: Sequence[str] = (),
) -> str:
    """``rows`` in the chosen format. ``columns`` picks and orders the table's columns (JSON keeps every key);
    ``width`` fits the table to that many columns of text: the ``wrap`` columns (any text column when empty)
    wrap first, ``optional`` ones are left out (last first) when wrapping is not enough."""
    return "".join(render_chunks(rows, fmt, columns=columns, width=width, optional=optional, wrap=wrap))


def render_chunks(
    rows: Sequence[Mapping[str, Any]],
    fmt: TableFormat,
    *,
    columns: Sequence[str] | None = None,
    width: int | None = None,
    optional: Sequence[str] = (),
    wrap: Sequence[str] = (),
) -> Iterator[str]:
    """:func:`render_rows`, a line (a JSON row) at a time, so a long answer is written as it is rendered instead
    of being held whole a second time. Joined, the chunks are exactly :func:`render_rows`'s text."""
    if fmt is TableFormat.json:
        yield from _json_chunks(rows)
        return
    names = list(columns) if columns else (list(rows[0].keys()) if rows else [])
    if fmt is TableFormat.csv:
        yield from _csv_chunks(names, rows)
        return
    if not rows:
        yield "(none)\n"
        return
    measure = _Measure(names)
    for row in rows:
        measure.add(row)
    yield from _table_chunks(rows, measure, width, optional, wrap)


def render_stream(
    fetch: Callable[[], Iterable[Mapping[str, Any]]],
    fmt: TableFormat,
    *,
    columns: Sequence[str] | Callable[[Iterable[Any]], Sequence[str]] | None = None,
    candidates: Sequence[str] = (),
    width: int | None = None,
    optional: Sequence[str] = (),
    wrap: Sequence[str] = (),
) -> Iterator[str]:
    """:func:`render_chunks`'s text from rows read as they come, never all held: JSON and CSV in one pass over
    ``fetch()``; a table in two (``fetch`` is called twice), the first measuring the columns, the second writing.
    ``columns`` chosen from the rows (a callable) are chosen in the first pass, from ``candidates`` (every column
    it may choose)."""
    if fmt is TableFormat.json:
        yield from _json_chunks(fetch())
        return
    if fmt is TableFormat.csv:
        rows = iter(fetch())
        first = next(rows, None)
        fixed = list(columns) if columns is not None and not callable(columns) else None
        names = fixed if fixed else (list(first.keys()) if first is not None else [])
        yield from _csv_chunks(names, itertools.chain([] if first is None else [first], rows))
        return
    if columns is None:
        raise ValueError("a streamed table names its columns")
    measure = _Measure(list(candidates) if callable(columns) else list(columns))
    if callable(columns):
        measured = measure.each(fetch())
        chosen = list(columns(measured))
        for _ in measured:  # the chooser may stop early: every row is still measured
            pass
        measure = measure.only(chosen)
    else:
        for row in fetch():
            measure.add(row)
    if not measure.count:
        yield "(none)\n"
        return
    yield from _table_chunks(fetch(), measure, width, optional, wrap)


def _json_chunks(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    index = -1
    for index, row in enumerate(rows):
        text = json.dumps({k: _plain(v) for k, v in row.items()}, indent=2, default=str)
        yield ("[\n  " if index == 0 else ",\n  ") + text.replace("\n", "\n  ")
    yield "[]\n" if index < 0 else "\n]\n"


def _csv_chunks(names: list[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_csv_cell(row.get(name)) for name in names])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


class _Measure:
    """What laying out a table needs of its rows, column by column, gathered a row at a time: the widest cell
    (or header), whether every value is a number, whether every value is a time (or empty)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.natural = {name: len(name) for name in names}
        self.numeric = dict.fromkeys(names, True)
        self.times = dict.fromkeys(names, True)
        self.count = 0

    def add(self, row: Mapping[str, Any]) -> None:
        self.count += 1
        for name in self.names:
            value = row.get(name)
            self.natural[name] = max(self.natural[name], len(_cell(value)))
            if self.numeric[name] and not _is_number(value):
                self.numeric[name] = False
            if self.times[name] and not isinstance(value, datetime | None):
                self.times[name] = False

    def each(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        for row in rows:
            self.add(row)
            yield row

    def only(self, names: list[str]) -> _Measure:
        """The same measure for ``names`` (all measured) in that order."""
        kept = _Measure(names)
        kept.count = self.count
        for name in names:
            kept.natural[name], kept.numeric[name], kept.times[name] = (
                self.natural[name],
                self.numeric[name],
                self.times[name],
            )
        return kept


def _table_chunks(
    rows: Iterable[Mapping[str, Any]],
    measure: _Measure,
    width: int | None,
    optional: Sequence[str],
    wrap: Sequence[str],
) -> Iterator[str]:
    names = measure.names
    numeric = measure.numeric
    # Numbers and times keep their width; only text columns shrink and wrap.
    fixed = {name: numeric[name] or measure.times[name] for name in names}
    natural = measure.natural
    shown = list(names)
    widths = dict(natural)
    left_out: list[str] = []
    if width is not None:
        # First the free-text columns (``wrap``) shrink, down to a comfortable width, and optional columns are
        # left out while that is not enough; only then does every text column shrink to the floor.
        droppable = [name for name in optional if name in names]
        shrinkable = {name: fixed[name] or name not in wrap for name in names} if wrap else fixed
        while True:
            widths = _fit({name: natural[name] for name in shown}, shrinkable, width, COMFORTABLE_WIDTH)
            if _total(widths) <= width or not droppable:
                break
            dropped = droppable.pop()
            shown.remove(dropped)
            left_out.insert(0, dropped)
        if _total(widths) > width:
            widths = _fit(widths, fixed, width, MIN_WIDTH)
        # A terminal narrower than even that: leave out columns from the right, free text last (the first
        # column always stays).
        while _total(widths) > width and len(shown) > 1:
            rest = shown[1:]
            dropped = next((name for name in reversed(rest) if name not in wrap), rest[-1])
            shown.remove(dropped)
            left_out.append(dropped)
            widths = _fit({name: natural[name] for name in shown}, fixed, width, MIN_WIDTH)

    def line(values: Sequence[str]) -> str:
        parts = [
            value.rjust(widths[name]) if numeric[name] else value.ljust(widths[name])
            for name, value in zip(shown, values, strict=True)
        ]
        return (" " * GAP).join(parts).rstrip()

    yield line(shown) + "\n" + line(["─" * widths[name] for name in shown]) + "\n"
    for row in rows:
        wrapped = [_wrap(_cell(row.get(name)), widths[name]) for name in shown]
        height = max(map(len, wrapped))
        for row_line in range(height):
            yield line([part[row_line] if row_line < len(part) else "" for part in wrapped]) + "\n"
    if left_out:
        noun = "columns" if len(left_out) > 1 else "column"
        note = f"({len(left_out)} more {noun} with --wide: {', '.join(left_out)})"
        yield "".join(f"{part}\n" for part in (textwrap.wrap(note, width) if width else [note]))


def _total(widths: Mapping[str, int]) -> int:
    return sum(widths.values()) + GAP * (len(widths) - 1)


def _fit(natural: Mapping[str, int], fixed: Mapping[str, bool], width: int, floor: int) -> dict[str, int]:
    """Column widths within ``width``: the widest text column shrinks to the next widest, in turn, until the
    table fits or every text column is at its floor (``floor`` or its header)."""
    widths = dict(natural)
    floors = {name: min(natural[name], max(floor, len(name))) for name in natural}
    while (excess := _total(widths) - width) > 0:
        text = sorted(
            (name for name in widths if not fixed[name] and widths[name] > floors[name]),
            key=lambda name: -widths[name],
        )
        if not text:
            break
        widest = text[0]
        others = [widths[name] for name in text[1:]]
        target = max(floors[widest], widths[widest] - excess, max(others, default=0))
        if target >= widths[widest]:  # tied with the next widest: take one column from it
            target = widths[widest] - 1
        widths[widest] = target
    return widths


def _wrap(value: str, width: int) -> list[str]:
    """``value`` in lines of at most ``width`` characters, broken at spaces where it can be (long words split)."""
    if len(value) <= width:
        return [value]
    return textwrap.wrap(value, width, break_on_hyphens=False, drop_whitespace=True) or [""]


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))
