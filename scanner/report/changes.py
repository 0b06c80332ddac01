""" "What changed in this run": the leaderboard's first block, from the two runs' rows and this run's events.

Pure shaping, no store access: :func:`run_changes` gets the run's server rows, the previous run's leaderboard
rows and scores, and each server's stored events, and returns one :class:`ChangeRow` per server and kind of
change, in the order of :data:`scanner.report.data.CHANGE_KINDS` and then by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from scanner.measure import history
from scanner.report.data import CHANGE_KINDS, SCORE_MOVE_THRESHOLD, ChangeRow, ServerRow, is_ranked_outcome
from scanner.store.rows import EventRow

SILENT_CODES = ("MCP501", "MCP503")  # a tool or the instructions changed while the version stayed the same


class EarlierRow(Protocol):
    """What the change block reads of a server in the previous run (a ``LeaderRow`` has it)."""

    @property
    def server(self) -> str: ...

    @property
    def outcome(self) -> str: ...


def _names(items: Sequence[str], shown: int = 3) -> str:
    head = ", ".join(items[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")


def run_changes(
    run_id: int,
    rows: Sequence[ServerRow],
    previous_rows: Sequence[EarlierRow],
    previous_scores: Mapping[str, float],
    events: Mapping[str, Sequence[EventRow]],
    threshold: float = SCORE_MOVE_THRESHOLD,
) -> tuple[ChangeRow, ...]:
    """Every change of run ``run_id`` against the previous run (see the module docstring)."""
    before = {str(row.server): row for row in previous_rows}
    found: list[ChangeRow] = []
    current: set[str] = set()  # filled in the one walk over ``rows`` (they may be read from disk each walk)
    for row in rows:
        current.add(row.name)
        old = before.get(row.name)
        if old is None:
            what = f"ranked #{row.rank}" if row.rank is not None else f"not ranked: {row.outcome}"
            found.append(ChangeRow("added", row.name, row.slug, what))
            continue
        was_ok, is_ok = is_ranked_outcome(old.outcome), is_ranked_outcome(row.outcome)
        if was_ok and not is_ok:
            detail = row.outcome + (f": {row.detail}" if row.detail else "")
            found.append(ChangeRow("started_failing", row.name, row.slug, detail))
        elif is_ok and not was_ok:
            found.append(ChangeRow("stopped_failing", row.name, row.slug, f"{old.outcome} → ok, ranked #{row.rank}"))
        found.extend(_event_changes(run_id, row, events.get(row.name, ())))
        old_score = previous_scores.get(row.name)
        if row.score is not None and old_score is not None and abs(row.score - old_score) >= threshold:
            kind = "score_up" if row.score > old_score else "score_down"
            delta = row.score - old_score
            detail = f"{old_score:.1f} → {row.score:.1f} ({delta:+.1f})"
            found.append(ChangeRow(kind, row.name, row.slug, detail, weight=abs(delta)))
    for name, old in before.items():
        if name not in current:
            found.append(ChangeRow("gone", name, None, f"was {old.outcome}; not in this run"))
    order = {kind: index for index, (kind, _) in enumerate(CHANGE_KINDS)}
    found.sort(key=lambda change: (order.get(change.kind, 99), change.server))
    return tuple(found)


def _event_changes(run_id: int, row: ServerRow, events: Sequence[EventRow]) -> list[ChangeRow]:
    """Silent changes, new problems, tool and version changes recorded in this run's events of one server."""
    mine = [event for event in events if event.run_id == run_id]
    if not mine:
        return []
    out: list[ChangeRow] = []
    silent = [e for e in mine if e.kind == history.FINDING_APPEARED and e.code in SILENT_CODES]
    if silent:
        parts = sorted({f"{e.code} {e.tool}" if e.tool else f"{e.code} instructions" for e in silent})
        out.append(ChangeRow("silent_change", row.name, row.slug, "changed under the same version: " + _names(parts)))
    problems = [
        e
        for e in mine
        if e.kind == history.FINDING_APPEARED
        and e.code not in SILENT_CODES
        and e.code != "MCP502"
        and e.details.get("severity") == "problem"
    ]
    if problems:
        parts = sorted({f"{e.code} on {e.tool}" if e.tool else f"{e.code}" for e in problems})
        detail = f"{len(problems)} new: " + _names(parts)
        out.append(ChangeRow("new_problems", row.name, row.slug, detail, weight=len(problems)))
    counts: list[str] = []
    tools = 0
    said = {
        history.TOOL_ADDED: "added",
        history.TOOL_REMOVED: "removed",
        history.TOOL_RENAMED: "renamed",
        history.TOOL_CHANGED: "changed",
    }
    for entry in history.readable_log(mine, baseline_run=-1):
        if entry.kind in said:
            counts.append(f"{len(entry.items)} {said[entry.kind]}")
            tools += len(entry.items)
    if counts:
        out.append(ChangeRow("tools_changed", row.name, row.slug, ", ".join(counts), weight=tools))
    for event in mine:
        if event.kind == history.SERVER_VERSION_CHANGED:
            detail = f"{event.details.get('from')} → {event.details.get('to')}"
            out.append(ChangeRow("version", row.name, row.slug, detail))
    return out
