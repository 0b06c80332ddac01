"""The bulk reads the report uses, compared with the per-server queries on a real database; and the bulk loader.

The database: four servers over four runs written through the real write path, with tool changes, failures,
over-time findings of a scan's own (MCP501, MCP502), a rescore under a new catalogue (runs 1-3 then count under
"2") and a fourth run still running under "3", so scans of one server count findings under different versions.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scanner.errors import InputError
from scanner.models import CheckReport, Finding, Outcome, Severity, Toolset
from scanner.store import Store, common, read
from scanner.store.codec import compress_tools
from scanner.store.read import server_reads
from tests.store.conftest import entry, failed, local_measure, ok, tool

ECHO = tool("echo", "Echo the given text back, unchanged.", text="string")
ADD = tool("add", "Add two numbers and return the sum.", a="number", b="number")
SEARCH_UNTYPED = tool("search", "Search the index for documents.", query=None)
SEARCH = tool("search", "Search the index for documents.", query="string")
ODD = 'odd "name" ‮ with/slash'


def with_new_rule(toolset: Toolset) -> CheckReport:
    """local_measure plus one list-wide warning (MCP999), as a new catalogue would add."""
    report = local_measure(toolset)
    extra = Finding("MCP999", "new-rule", Severity.WARNING, None, "a new list rule", "Do better.")
    return replace(report, findings=(*report.findings, extra))


@pytest.fixture
def story(store: Store) -> Store:
    plan: list[tuple[str, dict[str, Any]]] = [
        ("1", {"a": ok([ECHO, SEARCH_UNTYPED]), "b": ok([ADD]), "c": failed(), ODD: ok([ECHO])}),
        # a fixes search at the same version: MCP501, a finding of run 2's scan itself.
        ("1", {"a": ok([ECHO, SEARCH]), "b": ok([ADD]), "c": ok([ECHO, ADD, SEARCH_UNTYPED]), ODD: ok([ECHO])}),
        # b drops add at a new version: MCP502. The run is interrupted before ODD is scanned.
        ("1", {"a": ok([ECHO, SEARCH]), "b": ok([ECHO], version="2.0.0"), "c": failed(Outcome.AUTH_REQUIRED, "401")}),
    ]
    for number, (version, scans) in enumerate(plan, 1):
        run_id = store.start_run("list.txt", version, {"round": number})
        for name, outcome in scans.items():
            store.record_scan(run_id, entry(name), outcome, local_measure)
        store.finish_run(run_id, "interrupted" if number == 3 else "finished")
    assert store.rescore("2", with_new_rule) > 0
    running = store.start_run("list.txt", "3", {"round": 4})  # left running: counted under its own "3"
    for name, outcome in {"a": ok([ECHO, SEARCH]), "c": ok([ECHO]), ODD: failed(Outcome.CONNECT_ERROR)}.items():
        store.record_scan(running, entry(name), outcome, local_measure)
    return store


NAMES = ["a", "b", "c", ODD]


def test_story_has_what_the_comparison_needs(story: Store) -> None:
    """Guard the fixture: without mixed versions, own findings and failures the comparison below proves little."""
    a = story.history("a")
    assert [row.rule_version for row in a] == ["2", "2", "2", "3"]
    assert [row.outcome for row in story.history("c")] == ["timeout", "ok", "auth_required", "ok"]
    run2 = {row.server: row for row in story.leaderboard(a[1].run_id)}
    assert "MCP501" in {finding.code for finding in run2["a"].findings}
    assert a[1].warnings == 2  # MCP501 (the scan's own) + MCP999 (the toolset's, under "2")
    assert a[3].warnings == 0  # the same toolset under "3": no MCP999, and no MCP501 of its own


def test_histories_equal_history_for_every_server(story: Store) -> None:
    everything = story.histories()
    assert list(everything) == sorted(NAMES)
    for name in NAMES:
        assert everything[name] == story.history(name)
    assert story.histories(["b", ODD]) == {"b": story.history("b"), ODD: story.history(ODD)}


def test_histories_leave_out_unknown_names_and_handle_wrong_types(story: Store) -> None:
    assert story.histories([]) == {}
    assert story.histories(["nobody"]) == {}
    assert story.histories(["a", "nobody", 7, None]) == {"a": story.history("a")}  # type: ignore[list-item]


def test_histories_in_many_small_chunks(story: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunked IN lists (one server per query) give the same rows as one pass over everything."""
    monkeypatch.setattr(common, "IN_CHUNK", 1)
    assert story.histories(NAMES) == {name: story.history(name) for name in NAMES}
    assert story.history_columns(NAMES) == story.history_columns()


def test_history_columns_are_history_by_run(story: Store) -> None:
    columns = story.history_columns()
    assert list(columns) == sorted(NAMES)
    for name in NAMES:
        rows = sorted(story.history(name), key=lambda row: row.run_id)
        got = columns[name]
        assert len(got) == len(rows) > 0
        assert got.scan_ids == tuple(row.scan_id for row in rows)
        assert got.run_ids == tuple(row.run_id for row in rows)
        assert got.scanned_at == tuple(row.scanned_at for row in rows)
        assert all(moment.tzinfo is not None for moment in got.scanned_at)
        assert got.outcomes == tuple(row.outcome for row in rows)
        assert got.tokens == tuple(row.tokens for row in rows)
        assert got.problems == tuple(row.problems for row in rows)
        assert got.warnings == tuple(row.warnings for row in rows)
        assert got.notes == tuple(row.notes for row in rows)
        assert got.latest == rows[-1]
        assert got.metrics == tuple(row.metrics for row in rows[-read.RECENT_METRICS :])
    assert story.history_columns(["c", "nobody"]).keys() == {"c"}


def test_history_columns_read_the_metrics_of_the_newest_scans_only(
    story: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_reads, "RECENT_METRICS", 2)
    rows = sorted(story.history("c"), key=lambda row: row.run_id)
    assert [row.outcome for row in rows[-2:]] == ["auth_required", "ok"]
    # The failed scan measured no listing; the ok one its listing time and pages, aligned with the columns' end.
    assert story.history_columns(["c"])["c"].metrics == ({}, {"list_ms": 8.2, "list_pages": 1})
    assert rows[-1].metrics == {"list_ms": 8.2, "list_pages": 1}


def test_events_as_columns(story: Store) -> None:
    everything = story.events()
    assert [event.id for event in everything] == sorted(event.id for event in everything)
    assert {event.server for event in everything} == set(NAMES)
    assert all(isinstance(event.details, dict) and event.at.tzinfo is not None for event in everything)
    b = story.events("b")
    assert ("tool_removed", "add") in {(event.kind, event.tool) for event in b}
    assert [e.details for e in story.events("c", kind="outcome_changed")][:2] == [
        {"from": "timeout", "to": "ok"},
        {"from": "ok", "to": "auth_required"},
    ]
    last_run = everything[-1].run_id
    assert {event.run_id for event in story.events(run=last_run)} == {last_run}
    assert story.events(since=everything[-1].at + timedelta(seconds=1)) == []
    assert story.events(since=everything[-1].at.replace(tzinfo=None)) == [
        event for event in everything if event.at >= everything[-1].at
    ]
    with pytest.raises(InputError, match="no server named"):
        story.events("nobody")


def test_toolsets_tools_equal_toolset_tools(story: Store) -> None:
    shas = {row.toolset_sha256 for name in NAMES for row in story.history(name) if row.toolset_sha256}
    assert len(shas) >= 4
    found = story.toolsets_tools([*shas, "0" * 64, 5])  # type: ignore[list-item]
    assert found.keys() == shas
    for sha in shas:
        assert found[sha] == story.toolset_tools(sha)
    assert story.toolsets_tools([]) == {}


def test_bulk_load_writes_a_history_every_query_reads(store: Store) -> None:
    start = datetime(2025, 1, 1, 2, 0, tzinfo=UTC)
    tools = [ECHO, SEARCH_UNTYPED]
    data, size = compress_tools(tools)
    runs = [
        {
            "id": r,
            "started_at": start + timedelta(days=r),
            "finished_at": start + timedelta(days=r, minutes=5),
            "status": "finished",
            "source": "bench",
            "rule_version": "1",
            "options": {},
            "servers_scanned": 2,
            "servers_ok": 1,
        }
        for r in (1, 2, 3)
    ]
    scans = [
        {
            "id": r * 10 + s,
            "run_id": r,
            "server_id": s,
            "scanned_at": start + timedelta(days=r, minutes=1),
            "outcome": "ok" if s == 1 or r == 2 else "timeout",
            "detail": "",
            "transport": "streamable-http",
            "era": "legacy",
            "protocol_version": "2025-11-25",
            "server_name": f"s{s}",
            "server_version": "1.0",
            "capability_profile": None,
            "timings": {},
            "pages": 1,
            "toolset_id": 1 if s == 1 or r == 2 else None,
            "anonymous": False,
            "extra": {},
        }
        for r in (1, 2, 3)
        for s in (1, 2)
    ]
    finding = {
        "toolset_id": 1,
        "rule_version": "1",
        "code": "MCP205",
        "slug": "param-untyped",
        "severity": 0,
        "tool": "search",
        "tool_index": 1,
        "message": "search: untyped",
        "hint": "Give each a type.",
        "pointer": None,
        "details": {},
    }
    written = store.bulk_load(
        {
            "servers": [{"id": s, "name": f"server-{s}", "first_seen": start} for s in (1, 2)],
            "runs": runs,
            "toolsets": [
                {"id": 1, "sha256": "ab" * 32, "tools_count": 2, "raw_size": size, "data": data, "first_seen": start}
            ],
            "measurements": [{"toolset_id": 1, "rule_version": "1", "measured_at": start}],
            "toolset_tokens": [
                {"toolset_id": 1, "provider": p, "tokens": n, "method": "bench"}
                for p, n in (("openai", 100), ("anthropic", 140))
            ],
            "scans": iter(scans),  # any iterable, not only a list
            "findings": [{**finding, "scan_id": None}, {**finding, "scan_id": 11, "code": "MCP501", "severity": 1}],
        }
    )
    assert written == {
        "runs": 3,
        "servers": 2,
        "toolsets": 1,
        "measurements": 1,
        "toolset_tokens": 2,
        "scans": 6,
        "findings": 2,
    }
    one = store.history("server-1")
    assert [(row.run_id, row.problems, row.warnings) for row in one] == [(1, 1, 1), (2, 1, 0), (3, 1, 0)]
    assert one[0].tokens == {"openai": 100, "anthropic": 140} and one[0].toolset_sha256 == "ab" * 32
    assert store.histories() == {"server-1": one, "server-2": store.history("server-2")}
    assert store.toolset_tools("ab" * 32) == tools
    servers = {row.name: row for row in store.servers()}  # the newest-scan pointers were set from the scans
    assert (servers["server-1"].last_run_id, servers["server-1"].last_ok_run_id) == (3, 3)
    assert (servers["server-2"].last_outcome, servers["server-2"].last_ok_run_id) == ("timeout", 2)
    assert servers["server-2"].tools_count == 2


def test_bulk_load_refuses_an_unknown_table_and_writes_nothing(store: Store) -> None:
    with pytest.raises(ValueError, match="cannot bulk-load nope"):
        store.bulk_load({"servers": [{"name": "x", "first_seen": datetime.now(UTC)}], "nope": []})
    assert store.servers() == []


def test_bulk_load_sets_pointers_only_of_servers_it_loaded(store: Store, db_path: Path) -> None:
    run = store.start_run("list.txt", "1", {})
    store.record_scan(run, entry("crawled"), ok([ECHO]), local_measure)
    store.finish_run(run)
    with sqlite3.connect(db_path) as connection:  # a pointer the loader must not recompute
        connection.execute("UPDATE servers SET last_ok_scan_id = NULL WHERE name = 'crawled'")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    store.bulk_load(
        {
            "servers": [{"id": 50, "name": "loaded", "first_seen": start}],
            "scans": [
                {
                    "run_id": run,
                    "server_id": 50,
                    "scanned_at": start,
                    "outcome": "timeout",
                    "detail": "no answer",
                    "transport": "stdio",
                    "timings": {},
                    "extra": {},
                }
            ],
        }
    )
    servers = {row.name: row for row in store.servers()}
    assert servers["crawled"].last_ok_run_id is None and servers["crawled"].last_run_id == run
    assert (servers["loaded"].last_outcome, servers["loaded"].last_ok_run_id) == ("timeout", None)
