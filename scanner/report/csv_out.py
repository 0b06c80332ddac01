"""The leaderboard as CSV (``leaderboard.csv``), one row per server, ranked first then the others.

Named ``csv_out`` so it never shadows the standard library's ``csv`` inside this package.

Formula injection: a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab
or carriage return) as a formula, so a server named ``=HYPERLINK("http://evil", "x")`` could act when someone
opens the file. Every text cell that starts with one of those characters gets a leading apostrophe (``'``),
which spreadsheets read as "this is text" and hide. Numbers are written as numbers and never prefixed. Hidden
characters (controls, bidi overrides) are shown as ``\\uXXXX`` escapes, as on the site.
"""

from __future__ import annotations

import csv
import io
from itertools import chain
from typing import Any, TextIO

from scanner.report.data import Leaderboard, ServerRow
from scanner.report.text import clean_text

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: Any) -> str:
    """A server string made safe for a spreadsheet cell (see the module docstring)."""
    raw = "" if value is None else (value if isinstance(value, str) else str(value))
    # Check the raw first character too: a leading tab or CR is escaped by clean_text but was meant as a trigger.
    text = clean_text(raw, limit=2000)
    if raw.startswith(FORMULA_PREFIXES) or text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def client_keys(board: Leaderboard) -> tuple[str, ...]:
    """The ``client_<key>`` columns, last in each row: every preset client whose provider the run measured."""
    from scanner.measure.clients import CLIENTS

    return tuple(client.key for client in CLIENTS if client.provider in board.providers)


def _row(row: ServerRow, providers: tuple[str, ...], clients: tuple[str, ...] = ()) -> list[Any]:
    return [
        "" if row.rank is None else row.rank,
        row.movement,
        csv_text(row.name),
        "" if row.score is None else f"{row.score:.1f}",
        "" if row.tools_count is None else row.tools_count,
        *("" if row.tokens.get(p) is None else row.tokens[p] for p in providers),
        row.problems,
        row.warnings,
        row.notes,
        csv_text(row.outcome),
        csv_text(row.detail),
        *(("", "", "") if row.breakdown is None else _parts(row)),
        " ".join(row.codes),
        row.preview,
        " ".join(row.preview_codes),
        *("" if row.clients.get(key) is None else row.clients[key] for key in clients),
        "" if row.breakdown is None else f"{row.breakdown.cost_penalty:g}",
        csv_text(row.loads),
    ]


def _parts(row: ServerRow) -> tuple[str, str, str]:
    parts = row.breakdown
    assert parts is not None
    return f"{parts.mean_tool:.4f}", f"{parts.worst_tool:.4f}", f"{parts.list_penalty:g}"


def render_csv(board: Leaderboard) -> str:
    """The whole ``leaderboard.csv`` text (RFC 4180 quoting, ``\\r\\n`` line ends)."""
    buffer = io.StringIO()
    write_csv(board, buffer)
    return buffer.getvalue()


def write_csv(board: Leaderboard, stream: TextIO) -> None:
    """:func:`render_csv`'s text written to ``stream`` (opened with ``newline=""``) a row at a time."""
    writer = csv.writer(stream, lineterminator="\r\n")
    clients = client_keys(board)
    writer.writerow(
        [
            "rank",
            "movement",
            "server",
            f"score_v{board.score_version}",
            "tools",
            *(f"tokens_{p}" for p in board.providers),
            "problems",
            "warnings",
            "notes",
            "outcome",
            "detail",
            # Added later, at the end so that readers by position keep working.
            "mean_tool_score",
            "worst_tool_score",
            "list_penalty",
            "rules",
            "preview",  # findings of preview rules, not in problems/warnings/notes or the score
            "preview_rules",
            *(f"client_{key}" for key in clients),
            "cost_penalty",  # score v3: the points the tokens per turn took
            "will_it_load",
        ]
    )
    for row in chain(board.ranked, board.unranked):
        writer.writerow(_row(row, board.providers, clients))
