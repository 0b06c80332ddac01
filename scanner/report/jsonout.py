"""The leaderboard as JSON (``leaderboard.json``), for people who build on the data.

Named ``jsonout`` so it never shadows the standard library's ``json`` inside this package. The text is ASCII
only, and ``<``, ``>``, ``&`` are written as ``\\u003c``-style escapes, so the file is safe even if someone
inlines it in an HTML page, and bidi or control characters in a server's strings cannot reorder a viewer's text.
Strings keep their full value otherwise (capped in length): JSON is data, and escaping decodes back exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO

from scanner.measure.verdicts import to_json as verdict_json
from scanner.report.data import Leaderboard, ServerRow, failure_cause
from scanner.report.nextstep import reason_group

STRING_LIMIT = 4000
# Format 1 only ever gains fields (``score_parts``, ``rules``, ``badge``, ``changes``, ``reason``, ``preview``,
# ``preview_rules`` were added later); a field that changes meaning or goes away makes format 2. Since catalogue 5,
# ``problems``/``warnings``/``notes`` count the scored findings only: preview rules' are in ``preview``.
FORMAT_VERSION = 1


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text[:STRING_LIMIT]


def _row(row: ServerRow) -> dict[str, Any]:
    return {
        "rank": row.rank,
        "movement": row.movement,
        "moved_by": row.moved_by,
        "server": _text(row.name),
        "slug": row.slug,
        "score": row.score,
        "tools": row.tools_count,
        "tokens": dict(row.tokens),
        "problems": row.problems,
        "warnings": row.warnings,
        "notes": row.notes,
        "outcome": _text(row.outcome),
        "detail": _text(row.detail),
        "toolset_sha256": row.toolset_sha256,
        "clients": dict(row.clients),
        "verdicts": verdict_json(row.verdicts),
        "score_parts": _parts(row),
        "rules": list(row.codes),
        # Findings of preview rules: counted here, not in problems/warnings/notes or the score (rules.md, status).
        "preview": row.preview,
        "preview_rules": list(row.preview_codes),
        "badge": {"svg": f"badges/{row.slug}.svg", "endpoint": f"badges/{row.slug}.json"},
    } | _lanes(row)


def _parts(row: ServerRow) -> dict[str, Any] | None:
    """What the score is made of (``scanner.measure.score.score_breakdown``); None for a server that is not ranked."""
    parts = row.breakdown
    if parts is None:
        return None
    return {
        "mean_tool": parts.mean_tool,
        "worst_tool": parts.worst_tool,
        "list_penalty": parts.list_penalty,
        "cost_penalty": parts.cost_penalty,
        "tokens": parts.tokens,
        "refused": list(parts.refused),  # the rules by which a client refuses the list: the score is at most 30
        "version": parts.version,
    }


def _lanes(row: ServerRow) -> dict[str, Any]:
    """``lane`` (the lane ranked) and ``lanes`` (side by side), only for a server scanned in lanes."""
    return {"lane": row.lane, "lanes": row.lanes} if row.lanes else {}


class StreamedList(list[Any]):
    """A JSON array the encoder walks without it ever being filled: its items are made as it asks for them (the
    pure-Python encoder, which ``iterencode`` and an indented ``dumps`` use, reads ``len`` and iterates)."""

    def __init__(self, size: int, items: Callable[[], Iterable[Any]]) -> None:
        super().__init__()
        self._size, self._items = size, items

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())


def _unranked(row: ServerRow) -> dict[str, Any]:
    return {**_row(row), "cause": failure_cause(row.outcome)[0], "reason": reason_group(row.outcome, row.detail)[1]}


def leaderboard_document(board: Leaderboard, streamed: bool = False) -> dict[str, Any]:
    """The JSON document (a plain dict) for ``board``; with ``streamed``, its two lists of servers are made a row
    at a time as an encoder walks them (for :func:`write_json`), never held."""
    if streamed:
        ranked: list[Any] = StreamedList(len(board.ranked), lambda: map(_row, board.ranked))
        unranked: list[Any] = StreamedList(len(board.unranked), lambda: map(_unranked, board.unranked))
    else:
        ranked, unranked = [_row(row) for row in board.ranked], [_unranked(row) for row in board.unranked]
    return {
        "format": FORMAT_VERSION,
        "run": {
            "id": board.run_id,
            "started_at": board.started_at.isoformat(),
            "finished_at": board.finished_at.isoformat() if board.finished_at else None,
            "previous_run_id": board.previous_run_id,
            "rule_version": _text(board.rule_version),
        },
        "score": {"version": board.score_version, "formula": board.score_formula},
        "providers": list(board.providers),
        "ranked": ranked,
        "unranked": unranked,
        "unranked_by_cause": [
            {"cause": group.key, "label": group.label, "servers": len(group.rows)} for group in board.failure_groups
        ],
        "changes": [
            {"kind": change.kind, "server": _text(change.server), "slug": change.slug, "detail": _text(change.detail)}
            for change in board.changes
        ],
    }


def render_json(board: Leaderboard) -> str:
    """The whole ``leaderboard.json`` text: indented, ASCII only, HTML-significant characters escaped."""
    text = json.dumps(leaderboard_document(board), indent=2, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


def _safe(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def write_json(board: Leaderboard, stream: TextIO, batch: int = 8192) -> None:
    """:func:`render_json`'s text written to ``stream`` as it is encoded, ``batch`` pieces a write: the whole
    text (78 MB at 25 000 servers), the encoder's pieces of it and the rows' dicts are never held at once. Byte for
    byte the same: the escapes replace single characters, so they apply piece by piece as to the whole."""
    write_safe_json(leaderboard_document(board, streamed=True), stream, batch)


def write_safe_json(document: Any, stream: TextIO, batch: int = 8192) -> None:
    """``document`` as indented, ASCII-only JSON with ``<``, ``>``, ``&`` escaped and a final newline, written to
    ``stream`` ``batch`` encoder pieces at a time (its :class:`StreamedList` arrays made as they are walked)."""
    pieces: list[str] = []
    for piece in json.JSONEncoder(indent=2, ensure_ascii=True).iterencode(document):
        pieces.append(piece)
        if len(pieces) >= batch:
            stream.write(_safe("".join(pieces)))
            pieces.clear()
    stream.write(_safe("".join(pieces)) + "\n")
