"""A distributed run's lifecycle in the store: planned servers, the workers' share, closed once when complete.

The same code runs on PostgreSQL under real workers (tests/distributed); here the SQLite path of each call.
"""

from __future__ import annotations

from scanner.report import queries
from scanner.store import Store
from tests.store.conftest import entry, failed, local_measure, ok, tool

ECHO = tool("echo", "Echo the given text back, unchanged.", text="string")


def test_a_distributed_run_closes_once_its_planned_servers_are_written(store: Store) -> None:
    run_id = store.start_run("registry.json", "1", {"distributed": True}, planned=2)
    assert not store.close_if_complete(run_id)  # nothing written yet
    store.record_scan(run_id, entry("a"), ok([ECHO]), local_measure)
    store.note_worker(run_id, "host-1:10")
    assert not store.close_if_complete(run_id)
    assert not store.has_scan(run_id, "b")
    store.record_scan(run_id, entry("b"), failed(), local_measure)
    store.note_worker(run_id, "host-2:20")
    store.note_worker(run_id, "host-1:10")
    assert store.has_scan(run_id, "b")

    assert store.close_if_complete(run_id)
    assert not store.close_if_complete(run_id)  # exactly one caller closes it
    run = store.runs()[-1]
    assert (run.status, run.planned, run.servers_scanned, run.servers_ok) == ("finished", 2, 2, 1)
    assert run.workers == ("host-1:10", "host-2:20")
    assert store.trends()[-1].servers_scanned == 2  # its aggregate was computed


def test_a_run_of_one_process_has_no_plan_and_the_runs_table_keeps_its_columns(store: Store) -> None:
    run_id = store.start_run("list.json", "1", {})
    store.record_scan(run_id, entry("a"), ok([ECHO]), local_measure)
    assert not store.close_if_complete(run_id)  # only distributed runs close themselves
    store.finish_run(run_id)
    rows = [{"planned": run.planned} for run in store.runs()]
    assert queries.run_columns(rows) == queries.RUN_COLUMNS
    distributed = store.start_run("registry.json", "1", {}, planned=3)
    rows = [{"planned": run.planned} for run in store.runs()]
    assert {"planned", "workers"} <= set(queries.run_columns(rows))
    assert store.mark_stale_runs_interrupted() == []  # its workers close it, not a new scan's sweep
    assert store.runs()[-1].id == distributed and store.runs()[-1].status == "running"
