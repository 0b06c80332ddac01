"""Query output written a line at a time (``render_chunks``), exactly the text ``render_rows`` gives whole.

``fathom findings`` over a registry-sized history answers hundreds of thousands of rows; the CLI writes them as
they are rendered instead of holding the whole answer a second time. What a user (or a script) checks: the JSON
is the same document ``json.dumps(rows, indent=2)`` would give, whatever the strings hold (newlines, line
separators, quotes, nested values); the table and the CSV are the same text; and the answer does come in pieces
(one per row), so nothing builds it whole before writing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from scanner.report.tabular import TableFormat, render_chunks, render_rows, render_stream

ROWS = [
    {
        "server": f"example/s{index}",
        "message": 'a "quoted"\nmulti-line\u2028text, =SUM(A1)' if index % 2 else "plain",
        "details": {"nested": [1, {"deep": None}], "unicode": "café"},
        "first_seen_at": datetime(2026, 12, 1, 11, 23, tzinfo=UTC),
        "count": index,
    }
    for index in range(50)
]


def test_json_chunks_are_exactly_one_json_document() -> None:
    text = "".join(render_chunks(ROWS, TableFormat.json))
    plain = [{**row, "first_seen_at": row["first_seen_at"].isoformat(timespec="seconds")} for row in ROWS]
    assert text == json.dumps(plain, indent=2) + "\n"
    assert json.loads(text) == plain
    assert "".join(render_chunks([], TableFormat.json)) == "[]\n" == json.dumps([], indent=2) + "\n"


def test_every_format_streams_a_piece_a_row_and_joins_to_the_whole_text() -> None:
    for fmt in TableFormat:
        chunks = list(render_chunks(ROWS, fmt, columns=["server", "message", "count"]))
        assert len(chunks) >= len(ROWS), fmt
        assert "".join(chunks) == render_rows(ROWS, fmt, columns=["server", "message", "count"]), fmt
    shown = ["server", "message", "count"]
    narrow = list(render_chunks(ROWS, TableFormat.table, columns=shown, width=30, optional=["count"], wrap=["message"]))
    assert narrow[-1].startswith("(1 more column with --wide:") and narrow[-1].endswith("count)\n")
    assert "".join(narrow) == render_rows(
        ROWS, TableFormat.table, columns=shown, width=30, optional=["count"], wrap=["message"]
    )
    assert "".join(render_chunks([], TableFormat.table)) == "(none)\n"


def test_a_streamed_answer_is_the_same_text_read_twice_at_most_and_never_held() -> None:
    # ``findings`` over the whole history streams its rows from the store: the text must be render_rows's,
    # byte for byte, in every format and width, with columns chosen from the rows (a preview row adds "status").
    rows = [{**row, "status": "preview" if row["count"] == 37 else "stable"} for row in ROWS]
    reads: list[int] = []

    def fetch(source: list[dict[str, object]]) -> object:
        reads.append(1)
        return iter(source)  # an iterator, not a list: it cannot be read twice

    def choose(seen: object) -> list[str]:
        preview = any(row.get("status") == "preview" for row in seen)  # type: ignore[attr-defined]
        return ["server", "status", "message", "count"] if preview else ["server", "message", "count"]

    candidates = ["server", "status", "message", "count"]
    for source in (rows, rows[:30], []):
        for fmt in TableFormat:
            for width in (None, 40, 70):
                reads.clear()
                streamed = "".join(
                    render_stream(
                        lambda source=source: fetch(source),  # type: ignore[misc]
                        fmt,
                        columns=choose if fmt is TableFormat.table else None,
                        candidates=candidates,
                        width=width,
                        optional=["count"],
                        wrap=["message"],
                    )
                )
                shown = choose(source) if fmt is TableFormat.table else None
                whole = render_rows(source, fmt, columns=shown, width=width, optional=["count"], wrap=["message"])
                assert streamed == whole, (fmt, width, len(source))
                assert len(reads) == (2 if fmt is TableFormat.table and source else 1)  # none: no second read
    header = "".join(render_stream(lambda: iter(rows), TableFormat.table, columns=choose, candidates=candidates))
    assert header.splitlines()[0].split() == ["server", "status", "message", "count"]
    header = "".join(render_stream(lambda: iter(rows[:30]), TableFormat.table, columns=choose, candidates=candidates))
    assert header.splitlines()[0].split() == ["server", "message", "count"]
