"""The report reads the store in a fixed number of queries, and its pages stay what the per-server reads gave.

``Store.history_columns`` and ``Store.toolsets_tools`` replaced one history query and one tool-list query per
server; these tests would catch a per-server query creeping back (the statement count grows with the servers)
and any change in what a server page or the trends page shows (whole-page snapshots, written by the per-server
code before the bulk reads replaced it).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import event

from scanner.models import Outcome, ScanOutcome
from scanner.report import build_report
from scanner.store import Store
from scanner.store.health import scan_samples

from .conftest import ALPHA, FIXED_NOW, RUNS, failed, ok
from .test_report_site import check_snapshot


def statements_of_build(store: Store, out: Path) -> int:
    """How many SQL statements one whole ``build_report`` sends."""
    count = 0

    def counted(*_args: object) -> None:
        nonlocal count
        count += 1

    event.listen(store.engine, "before_cursor_execute", counted)
    try:
        build_report(store, out, now=FIXED_NOW)
    finally:
        event.remove(store.engine, "before_cursor_execute", counted)
    return count


def test_statements_do_not_grow_with_servers(
    make_store: Callable[[Sequence[dict[str, ScanOutcome]]], Store], tmp_path: Path
) -> None:
    def crowd(extra: int) -> list[dict[str, ScanOutcome]]:
        """The story's runs plus ``extra`` more servers, a third of them failing in the last run."""
        runs = []
        for number, run in enumerate(RUNS):
            more = {
                f"extra-{index:03d}": failed(Outcome.TIMEOUT, "no answer")
                if number == len(RUNS) - 1 and index % 3 == 0
                else ok(ALPHA, f"extra-{index}")
                for index in range(extra)
            }
            runs.append({**run, **more})
        return runs

    small = statements_of_build(make_store(crowd(0)), tmp_path / "small")
    large = statements_of_build(make_store(crowd(40)), tmp_path / "large")
    assert small == large, f"{small} statements for 6 servers, {large} for 46: a per-server query is back"
    # A fixed number per chunk: the board reads each run's rows a chunk at a time, each chunk of pages its own
    # rows again (so no whole run's findings are held), besides the histories, events, lists and costs.
    assert small < 60


@pytest.mark.parametrize("page", ["beta.html", "delta.html", "epsilon.html", "gamma-tools-search-14ea7698.html"])
def test_server_pages_match_snapshots(story_store: Store, tmp_path: Path, page: str) -> None:
    build_report(story_store, tmp_path / "site", now=FIXED_NOW)
    check_snapshot(f"servers/{page}", (tmp_path / "site" / "servers" / page).read_bytes().decode("utf-8"))


def test_trends_page_matches_snapshot(story_store: Store, tmp_path: Path) -> None:
    build_report(story_store, tmp_path / "site", now=FIXED_NOW)
    check_snapshot("trends.html", (tmp_path / "site" / "trends.html").read_bytes().decode("utf-8"))


def test_build_leaves_the_garbage_collector_as_it_found_it(story_store: Store, tmp_path: Path) -> None:
    """The build pauses the collector and freezes its long-lived data for speed; neither may outlive it."""
    assert gc.isenabled() and gc.get_freeze_count() == 0
    build_report(story_store, tmp_path / "a", now=FIXED_NOW)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.freeze()  # a caller that froze objects of its own (say, before forking workers) keeps them frozen
    try:
        build_report(story_store, tmp_path / "b", now=FIXED_NOW)
        assert gc.isenabled() and gc.get_freeze_count() > 0  # (objects that died meanwhile leave the count)
    finally:
        gc.unfreeze()


def test_events_of_a_chunk_equal_each_servers_events(story_store: Store) -> None:
    """The pages read their servers' change logs a chunk at a time: the same rows, in the same order, as one
    ``Store.events(name)`` per server; unknown names and servers without events are left out."""
    names = [server.name for server in story_store.servers()]
    expected = {name: story_store.events(name) for name in names}
    got = story_store.events_of([*names, "nobody"])
    assert got == {name: rows for name, rows in expected.items() if rows}
    assert sum(map(len, got.values())) == len(story_store.events()) > 0


def test_health_samples_are_the_runs_since_the_window_start(story_store: Store) -> None:
    """``scan_samples`` picks the window's runs first (through the scans' run index): the same samples, in the
    same order, as every scan filtered by its run's start."""
    every = list(scan_samples(story_store.engine, FIXED_NOW - timedelta(days=365)))
    second = sorted(run.started_at for run in story_store.runs())[1]
    since = list(scan_samples(story_store.engine, second))
    assert since == [sample for sample in every if sample.at >= second]
    assert 0 < len(since) < len(every)
