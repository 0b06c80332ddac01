"""The leaderboard as Markdown (``leaderboard.md``): one table of ranked servers, then the others grouped by cause.

Every server string goes through :func:`scanner.report.text.markdown_escape`: HTML characters become entities
and Markdown syntax is backslash-escaped, so a name like ``[x](javascript:alert(1))`` or ``<script>`` shows as
text on any renderer (GitHub, a static site generator) and never becomes a link, an image or markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TextIO

from scanner.models import PROVIDER_SHORT
from scanner.report.data import Leaderboard, ServerRow
from scanner.report.html import movement_text
from scanner.report.text import markdown_escape, plural


def _cell(value: int | float | None) -> str:
    return "–" if value is None else f"{value:,}"


def _ranked_line(row: ServerRow, providers: tuple[str, ...]) -> str:
    cells = [
        str(row.rank),
        movement_text(row),
        markdown_escape(row.name, limit=500) + (f" ({markdown_escape(row.lane)} lane)" if row.lane else ""),
        "–" if row.score is None else f"{row.score:.1f}",
        _cell(row.tools_count),
        *(_cell(row.tokens.get(provider)) for provider in providers),
        str(row.problems),
        str(row.warnings),
        str(row.notes),
        markdown_escape(row.loads, limit=500),
        markdown_escape(row.outcome),
    ]
    return "| " + " | ".join(cells) + " |"


def _changes(board: Leaderboard) -> list[str]:
    """``## What changed since run N`` with one bullet per change, or nothing for a first run."""
    if board.previous_run_id is None:
        return []
    lines = [f"## What changed since run {board.previous_run_id}", ""]
    if not board.changes:
        return [*lines, "Nothing changed.", ""]
    for change in board.changes:
        server, detail = markdown_escape(change.server, limit=500), markdown_escape(change.detail, limit=500)
        lines.append(f"- **{change.label}**: {server}: {detail}")
    return [*lines, ""]


def render_markdown(board: Leaderboard) -> str:
    """The whole ``leaderboard.md`` text for ``board``."""
    return "\n".join(markdown_lines(board))


def write_markdown(board: Leaderboard, stream: TextIO) -> None:
    """:func:`render_markdown`'s text written to ``stream`` a line at a time (the rows are read as they go)."""
    lines = markdown_lines(board)
    stream.write(next(lines))
    for line in lines:
        stream.write("\n")
        stream.write(line)


def markdown_lines(board: Leaderboard) -> Iterator[str]:
    """The lines of ``leaderboard.md`` (joined by newlines, the last one empty)."""
    providers = board.providers
    yield from [
        f"# MCP tool lists: leaderboard (run {board.run_id})",
        "",
        f"Run {board.run_id} started {board.started_at:%Y-%m-%d %H:%M} UTC; rule catalogue "
        f"{markdown_escape(board.rule_version)}; score version {board.score_version} (0–100, higher is better).",
        "",
        *_changes(board),
        "| Rank | Move | Server | Score | Tools | "
        + " | ".join(f"{markdown_escape(PROVIDER_SHORT.get(p, p))} tokens" for p in providers)  # as the page says
        + (" | " if providers else "")
        + "Problems | Warnings | Notes | Will it load? | Last outcome |",
        "|" + "---:|" * 2 + "---|" + "---:|" * (2 + len(providers) + 3) + "---|---|",
    ]
    yield from (_ranked_line(row, providers) for row in board.ranked)
    yield from ["", f"## Not ranked: {plural(len(board.unranked), 'server')} whose tool list could not be read", ""]
    if board.unranked:
        for number, group in enumerate(board.failure_groups):
            yield from [""] if number else []
            yield from [f"### {group.label} ({plural(len(group.rows), 'server')})", ""]
            yield from ["| Server | Outcome | Reason |", "|---|---|---|"]
            yield from (
                f"| {markdown_escape(row.name, limit=500)} | {markdown_escape(row.outcome)} | "
                f"{markdown_escape(row.detail, limit=500)} |"
                for row in group.rows
            )
    else:
        yield "Every server answered."
    yield from ["", f"Score v{board.score_version}: `{board.score_formula}`.", ""]
