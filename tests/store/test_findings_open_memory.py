"""``fathom findings --open`` over a long history holds what is open, not every finding that ever came and went.

A server's list flips between an untyped and a typed parameter night after night, so MCP205 appears and goes
again and again. What a user checks: ``--open`` lists the one stretch still open (first seen in the night it last
came back), the full history lists every stretch. What proves the memory: the finding events are read as plain
rows (no ``Event`` ORM object is ever loaded into the session, which would keep every one of them until it closes)
and, for ``--open``, a stretch is dropped as soon as it closes, so only the open ones remain to be listed.
"""

from __future__ import annotations

from sqlalchemy import event

from scanner.store import Store
from scanner.store.read import finding_reads
from scanner.store.tables import Event
from tests.store.conftest import entry, local_measure, ok, tool

UNTYPED = tool("search", "Search the index for documents.", query=None)
TYPED = tool("search", "Search the index for documents.", query="string")
NIGHTS = 9  # untyped on the odd nights (1, 3, ... 9): five stretches, the last one open


def _nights(store: Store) -> list[int]:
    runs = []
    for night in range(1, NIGHTS + 1):
        run_id = store.start_run("list.txt", "1", {"night": night})
        listed = [UNTYPED if night % 2 else TYPED]
        store.record_scan(run_id, entry("flip"), ok(listed, version=f"1.0.{night}"), local_measure)
        store.finish_run(run_id)
        runs.append(run_id)
    return runs


def test_open_lists_the_last_stretch_and_history_lists_them_all(store: Store) -> None:
    runs = _nights(store)
    history = store.findings(rule="MCP205")
    assert [(row.first_seen_run, row.gone_run) for row in history] == [
        (runs[0], runs[1]),
        (runs[2], runs[3]),
        (runs[4], runs[5]),
        (runs[6], runs[7]),
        (runs[8], None),
    ]
    still = store.findings(rule="MCP205", still_open=True)
    assert [(row.server, row.tool, row.first_seen_run, row.gone_run) for row in still] == [
        ("flip", "search", runs[8], None)
    ]


def test_open_reads_rows_not_orm_objects_and_keeps_only_open_stretches(store: Store) -> None:
    _nights(store)
    loaded: list[Event] = []

    def on_load(target: Event, _context: object) -> None:
        loaded.append(target)

    event.listen(Event, "load", on_load)
    try:
        assert store.findings(still_open=True)
        assert store.findings()
    finally:
        event.remove(Event, "load", on_load)
    assert loaded == []  # not one finding event held as an ORM object

    with store._sessions() as session:
        every = finding_reads._finding_intervals(session, None, keep_closed=True).values_flat()
        kept = finding_reads._finding_intervals(session, None, keep_closed=False).values_flat()
    assert len([stretch for stretch in every if stretch.row.code == "MCP205"]) == 5
    assert all(stretch.gone_run is None for stretch in kept)
    assert {(stretch.row.code, stretch.row.first_seen_run) for stretch in kept} == {
        (stretch.row.code, stretch.row.first_seen_run) for stretch in every if stretch.gone_run is None
    }


def test_findings_come_a_chunk_of_servers_at_a_time_in_the_answers_order(store: Store) -> None:
    # Servers stored in an order that is not their names' order: the chunks follow the names, as the answer does.
    names = ["delta", "alpha", "echo", "charlie", "bravo"]
    for night in range(1, 4):
        run_id = store.start_run("list.txt", "1", {"night": night})
        for index, name in enumerate(names):  # untyped on the last night: delta, echo, bravo
            listed = [UNTYPED if (night + index) % 2 else TYPED]
            store.record_scan(run_id, entry(name), ok(listed, version=f"1.0.{night}"), local_measure)
        store.finish_run(run_id)
    for still_open in (False, True):
        whole = store.findings(still_open=still_open)
        chunks = list(finding_reads.finding_chunks(store._sessions, still_open=still_open, chunk=2))
        assert [row for chunk in chunks for row in chunk] == whole
        assert all(len({row.server for row in chunk}) <= 2 for chunk in chunks)  # never more than a chunk held
        assert [row.server for row in whole] == sorted(row.server for row in whole)
        assert {row.server for row in whole} == ({"delta", "echo", "bravo"} if still_open else set(names))
    assert len(store.findings(rule="MCP205")) > len(store.findings(rule="MCP205", still_open=True)) > 0
