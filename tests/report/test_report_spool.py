"""The leaderboard's rows are spooled to disk and ranked by SQL (issue 47, memory flat in servers): the order,
the places and the groups must be those Python's sort gave, whatever the names.

Servers with the same tool list tie on score and tokens, so their names decide; names outside ASCII (accents,
an emoji, a capital before a small letter) are where a database's collation could differ from Python's ``str``
order. The spool compares names as UTF-8 bytes, which is code point order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scanner.models import Outcome, ScanOutcome
from scanner.report.build import site_data
from scanner.report.spool import RowView
from scanner.store import Store

from .conftest import ALPHA, DELTA, failed, ok

TIED = ["zeta", "Zeta", "émile", "éa", "e\u0301mile", "🦊 fox", "ａ wide", "alpha", "Alpha", "a" * 3]
FAILING = {"ñ-down": "connection refused", "n-down": "connection refused", "Ω-down": "no route"}


def scans(names: Sequence[str], tools: list[dict[str, object]]) -> dict[str, ScanOutcome]:
    found: dict[str, ScanOutcome] = {name: ok(tools, name) for name in names}
    found.update({name: failed(Outcome.CONNECT_ERROR, detail) for name, detail in FAILING.items()})
    return found


def test_ties_rank_by_name_in_code_point_order_and_every_walk_reads_the_same_rows(
    make_store: Callable[[Sequence[dict[str, ScanOutcome]]], Store],
) -> None:
    # Run 1: half the servers; run 2: all of them, two with a longer list (a lower score or more tokens).
    first = scans(TIED[::2], ALPHA)
    second = scans(TIED, ALPHA) | {"éa": ok([*ALPHA, *DELTA], "éa"), "zeta": ok([*ALPHA, *DELTA], "zeta")}
    store = make_store([first, second])

    board = site_data(store).leaderboard

    assert isinstance(board.ranked, RowView) and isinstance(board.unranked, RowView)  # read from disk, not held
    ranked = list(board.ranked)
    expected = sorted(ranked, key=lambda row: (-(row.score or 0.0), max(row.tokens.values()), row.name))
    assert [row.name for row in ranked] == [row.name for row in expected]
    assert [row.rank for row in ranked] == list(range(1, len(TIED) + 1))
    tied = [row.name for row in ranked if row.name not in ("éa", "zeta")]
    assert tied == sorted(tied)  # code point order: "Alpha" < "Zeta" < "aaa" < ... < "é..." < "ａ" < "🦊"
    assert tied[:2] == ["Alpha", "Zeta"] and tied[-1] == "🦊 fox"
    # Slices and indexes read the same rows as the whole walk.
    assert [row.name for row in board.ranked[3:7]] == [row.name for row in ranked[3:7]]
    assert board.ranked[-1].name == ranked[-1].name and len(board.ranked[5:]) == len(ranked) - 5
    # Movement is among the servers ranked in both runs; the others are new.
    moves = {row.name: row.movement for row in ranked}
    assert {name for name, move in moves.items() if move == "new"} == set(TIED[1::2])
    assert {moves[name] for name in TIED[::2]} <= {"up", "down", "same"}
    # Not ranked: by outcome then name; grouped by cause, each group by name.
    assert [row.name for row in board.unranked] == sorted(FAILING)
    (group,) = board.failure_groups
    assert [row.name for row in group.rows] == sorted(FAILING)
    reasons = {reason.label: [row.name for row in reason.rows] for reason in group.reasons}
    assert sorted(name for names in reasons.values() for name in names) == sorted(FAILING)
    assert len(group.reasons[0].rows) >= len(group.reasons[-1].rows)  # the largest reason first
    # Each page's slug is its own.
    assert len({row.slug for row in (*ranked, *board.unranked)}) == len(TIED) + len(FAILING)
