"""Column types that read any stored value without raising: a crafted row never breaks a reader (issue 42).

SQLite keeps whatever a hand (``sqlite3``, another program) writes into a column: text in an integer column, a
blob in a text column, JSON that is not JSON or not the object the code expects, a date that is no date, a 10 MB
server name. Every reader (``fathom report``, ``check --db``, ``servers``, ``history``, ``findings``, ``diff``,
``runs``) goes through these column types, so each value reaches Python code as its column's type:

- text is a ``str`` (a blob decoded, a number spelled), cut to the size the write path cuts it to
  (``scanner/store/write/``: a scan's detail 500 characters, a finding's message 2000...), so a 10 MB value costs
  no reader more than its column allows. A server's name is never cut (readers look servers up by it): the
  report skips a server whose name is longer than it shows (``scanner.report.text.MAX_SERVER_NAME``);
- an integer is an ``int``, or the column's stand-in: None where the column may be empty, else 0 (for a
  finding's severity, 0 is *problem*, the worst: an unreadable severity never passes a gate;
  :func:`scanner.store.common.stored_severity` reads an integer the catalogue does not know the same way);
- JSON that is not JSON, or not an object where an object is stored, reads as an empty object (None where the
  column may be empty); a date that is no date reads as 1970-01-01 UTC;
- a stored tool list that does not inflate is a :class:`~scanner.store.codec.UnreadableToolset`: the report's
  pages show no tool list for it, ``check --db`` and ``diff`` stop with one line (exit 4).

Each repair is said on stderr once per column and kind of fault (``fathom: warning: the store's scans.extra holds
...; read as empty``), never silently: the value is left out, the rest of its row is shown.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Integer, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SAID: set[tuple[str, str]] = set()


def unreadable(where: str, fault: str, reading: str) -> None:
    """Say once per process, on stderr, that the store's ``where`` (``table.column``) held ``fault``."""
    key = (where, fault.split(" (")[0])  # once per kind of fault, whatever the values
    if key in _SAID:
        return
    _SAID.add(key)
    print(f"fathom: warning: the store's {where} holds {fault}; read as {reading}", file=sys.stderr, flush=True)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class SafeText(TypeDecorator[str]):
    """Text read as a ``str`` of at most ``cap`` characters (the write path's cut)."""

    impl = Text
    cache_ok = True

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap
        self.where = "a text column"

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return _text(value, self.cap, self.where)


class SafeString(TypeDecorator[str]):
    """A ``String`` column read as :class:`SafeText` reads text; ``cap`` None for a key that is never cut (a
    server's name: readers look servers up by it; the report skips a server whose name is too long to show)."""

    impl = String
    cache_ok = True

    def __init__(self, cap: int | None, length: int | None = None) -> None:
        super().__init__(length)
        self.cap, self.length = cap, length
        self.where = "a text column"

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return _text(value, self.cap, self.where)


def _text(value: Any, cap: int | None, where: str) -> str | None:
    if value is None or (type(value) is str and (cap is None or len(value) <= cap)):
        return value
    if type(value) is str:
        unreadable(where, f"a text longer than its {cap or 0:,} characters", "its first ones")
        return value[:cap]
    if isinstance(value, bytes | bytearray | memoryview):
        unreadable(where, "bytes where text is stored", "text (invalid UTF-8 replaced)")
        return bytes(value).decode("utf-8", "replace")[:cap]
    unreadable(where, f"a {type(value).__name__} where text is stored", "its text")
    return str(value)[:cap]


class SafeInteger(TypeDecorator[int]):
    """An integer read as an ``int``; anything else as ``stand_in`` (None where the column may be empty)."""

    impl = Integer
    cache_ok = True

    def __init__(self, stand_in: int | None = None) -> None:
        super().__init__()
        self.stand_in = stand_in
        self.where = "an integer column"

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        if value is None or type(value) is int:
            return value
        if type(value) is str and value.strip().lstrip("-").isdigit() and len(value) < 20:
            return int(value)
        said = "empty" if self.stand_in is None else str(self.stand_in)
        unreadable(self.where, f"{_shown(value)} where an integer is stored", said)
        return self.stand_in


class GuardedRead:
    """A mixin for a TypeDecorator whose reading may raise (JSON that is not JSON, a date that is no date): the
    value then reads as the column's stand-in (``nullable``: None; else ``{}`` for JSON, 1970-01-01 for a date),
    and with ``obj`` JSON that is no object does too."""

    where = "a column"
    nullable = False
    obj = False

    def stand_in(self) -> Any:
        return None

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], Any] | None:
        processor = super().result_processor(dialect, coltype)  # type: ignore[misc]

        def process(value: Any) -> Any:
            try:
                read = processor(value) if processor is not None else value
            except (ValueError, TypeError, OverflowError, RecursionError) as exc:
                unreadable(self.where, f"a value that cannot be read ({type(exc).__name__}: {_shown(value)})", "empty")
                return self.stand_in()
            if self.obj and read is not None and type(read) is not dict:
                unreadable(self.where, f"JSON that is no object ({_shown(read)})", "empty")
                return self.stand_in()
            return read

        return process


class SafeJSON(GuardedRead, TypeDecorator[Any]):
    """A JSON object column read by :class:`GuardedRead` (``{}``, or None where it may be empty)."""

    impl = JSON
    cache_ok = True
    obj = True

    def __init__(self, nullable: bool = False, none_as_null: bool = False) -> None:
        super().__init__(none_as_null=none_as_null)
        self.nullable, self.none_as_null = nullable, none_as_null
        self.where = "a JSON column"

    def stand_in(self) -> Any:
        return None if self.nullable else {}


def name_columns(metadata: Any) -> None:
    """Give each guarded column type its own copy that knows ``table.column`` (for the warning's words)."""
    for table in metadata.tables.values():
        for column in table.columns:
            if isinstance(column.type, SafeText | SafeString | SafeInteger | GuardedRead) and isinstance(
                column.type, TypeDecorator
            ):
                column.type = column.type.copy()
                column.type.where = f"{table.name}.{column.name}"
