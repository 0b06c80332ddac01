"""Every query over three runs of three servers, checked the way a user reads them; then a rescore."""

from __future__ import annotations

import statistics
from dataclasses import replace
from datetime import timedelta

import pytest

from scanner.errors import InputError
from scanner.models import CheckReport, Finding, Outcome, Severity, Toolset
from scanner.rules import RULES
from scanner.store import Store
from tests.store.conftest import entry, failed, local_measure, ok, tool

ECHO = tool("echo", "Echo the given text back, unchanged.", text="string")
ADD = tool("add", "Add two numbers and return the sum.", a="number", b="number")
SEARCH_UNTYPED = tool("search", "Search the index for documents.", query=None)
SEARCH = tool("search", "Search the index for documents.", query="string")


@pytest.fixture
def runs(store: Store) -> list[int]:
    """run 1: a [echo, untyped search], b [add], c timeout.
    run 2: a fixes search (same version: MCP501), b unchanged, c answers [echo, add, untyped search].
    run 3: a unchanged, b drops add for echo at a new version (MCP502), c needs auth."""
    ids = []
    plan = [
        {"a": ok([ECHO, SEARCH_UNTYPED]), "b": ok([ADD]), "c": failed()},
        {"a": ok([ECHO, SEARCH]), "b": ok([ADD]), "c": ok([ECHO, ADD, SEARCH_UNTYPED])},
        {"a": ok([ECHO, SEARCH]), "b": ok([ECHO], version="2.0.0"), "c": failed(Outcome.AUTH_REQUIRED, "401")},
    ]
    for number, scans in enumerate(plan, 1):
        run_id = store.start_run("list.txt", "1", {"round": number})
        for name, outcome in scans.items():
            store.record_scan(run_id, entry(name), outcome, local_measure)
        store.finish_run(run_id)
        ids.append(run_id)
    return ids


def test_runs_and_servers(store: Store, runs: list[int]) -> None:
    listed = store.runs()
    assert [run.id for run in listed] == runs
    assert [(run.status, run.servers_scanned, run.servers_ok) for run in listed] == [
        ("finished", 3, 2),
        ("finished", 3, 3),
        ("finished", 3, 2),
    ]
    assert listed[0].options == {"round": 1} and listed[0].finished_at is not None

    servers = {row.name: row for row in store.servers()}
    assert sorted(servers) == ["a", "b", "c"]
    assert servers["a"].last_outcome == "ok" and servers["a"].tools_count == 2
    c = servers["c"]
    assert (c.last_outcome, c.last_detail, c.last_run_id) == ("auth_required", "401", runs[2])
    assert (c.last_ok_run_id, c.tools_count) == (runs[1], 3)  # tools and tokens of its last successful scan
    assert c.tokens == {
        p: t.tokens for p, t in local_measure(Toolset.from_tools([ECHO, ADD, SEARCH_UNTYPED])).tokens.items()
    }
    assert servers["b"].server_version == "2.0.0"


def test_history_counts_per_scan(store: Store, runs: list[int]) -> None:
    rows = store.history("a")
    assert [row.run_id for row in rows] == runs
    assert [(row.problems, row.warnings, row.notes) for row in rows] == [(1, 0, 0), (0, 1, 0), (0, 0, 0)]
    assert rows[1].toolset_sha256 == rows[2].toolset_sha256 != rows[0].toolset_sha256
    assert rows[0].tools_count == 2 and rows[0].tokens["openai"] > 0
    c = store.history("c")
    assert [(row.outcome, row.tools_count) for row in c] == [("timeout", None), ("ok", 3), ("auth_required", None)]
    with pytest.raises(InputError, match="no server named"):
        store.history("nobody")


def test_findings_with_first_seen_and_gone(store: Store, runs: list[int]) -> None:
    untyped = store.findings(rule="MCP205")
    assert [(row.server, row.first_seen_run, row.gone_run) for row in untyped] == [
        ("a", runs[0], runs[1]),
        ("c", runs[1], None),
    ]
    assert untyped[0].gone_at is not None and untyped[1].gone_at is None
    assert untyped[0].severity is Severity.PROBLEM and untyped[0].tool == "search"
    assert untyped[0].hint == RULES["MCP205"].hint  # listed from events: the catalogue's hint, by code

    assert [row.server for row in store.findings(rule="param-untyped", server="c")] == ["c"]

    in_run2 = {(row.server, row.code, row.tool): row for row in store.findings(run=runs[1])}
    assert set(in_run2) == {("a", "MCP501", "search"), ("c", "MCP205", "search"), ("c", "MCP305", None)}
    assert in_run2[("c", "MCP205", "search")].first_seen_run == runs[1]
    assert in_run2[("a", "MCP501", "search")].gone_run == runs[2]  # a one-off: not repeated in run 3

    removed = store.findings(rule="MCP502")
    assert [(row.server, row.tool, row.first_seen_run) for row in removed] == [("b", "add", runs[2])]

    run2_started = store.runs()[1].started_at
    recent = store.findings(since=run2_started)
    assert all(row.first_seen_at is not None and row.first_seen_at >= run2_started for row in recent)
    assert ("a", "MCP205") not in {(row.server, row.code) for row in recent}
    assert store.findings(since=run2_started + timedelta(days=1)) == []


def test_diff(store: Store, runs: list[int]) -> None:
    latest = store.diff("a")
    assert (latest.from_run, latest.to_run) == (runs[1], runs[2])
    assert latest.from_sha256 == latest.to_sha256 and latest.tools_changed == () and latest.findings_new == ()
    assert [f.code for f in latest.findings_fixed] == ["MCP501"]  # a one-off finding of run 2's scan
    assert not latest.unchanged

    fix = store.diff("a", from_run=runs[0], to_run=runs[1])
    assert fix.tools_changed == (("search", ("inputSchema",)),)
    assert fix.tools_added == () and fix.tools_removed == ()
    assert [f.code for f in fix.findings_new] == ["MCP501"]
    assert [(f.code, f.tool) for f in fix.findings_fixed] == [("MCP205", "search")]
    assert set(fix.token_deltas) == {"anthropic", "openai", "gemini"}
    assert fix.token_deltas["openai"] == fix.tokens_to["openai"] - fix.tokens_from["openai"] != 0

    dropped = store.diff("b")
    assert dropped.tools_removed == ("add",) and dropped.tools_added == ("echo",)
    assert (dropped.from_version, dropped.to_version) == ("1.0.0", "2.0.0")

    first = store.diff("c")  # only one successful scan: everything is new
    assert first.from_run is None and first.tools_added == ("echo", "add", "search")
    assert first.outcome_changes == ((runs[1], "timeout", "ok"),)  # the way to its first answer
    failed = store.diff("c", to_run=runs[2])  # a failed scan is compared with the scan before it, by outcome
    assert (failed.from_run, failed.from_outcome, failed.to_outcome) == (runs[1], "ok", "auth_required")
    assert not failed.tools_compared and failed.tools_added == failed.tools_removed == () and not failed.unchanged
    assert failed.outcome_changes == ((runs[2], "ok", "auth_required"),)
    with pytest.raises(InputError, match="has no scan in run 999"):
        store.diff("c", to_run=999)


def test_events(store: Store, runs: list[int]) -> None:
    b = [(event.run_id, event.kind, event.tool, event.code) for event in store.events("b")]
    assert b == [
        (runs[2], "tool_added", "echo", None),
        (runs[2], "tool_removed", "add", None),
        (runs[2], "server_version_changed", None, None),
        (runs[2], "finding_appeared", "add", "MCP502"),
    ]
    everything = store.events()
    assert [event.id for event in everything] == sorted(event.id for event in everything)
    assert {event.server for event in everything} == {"a", "b", "c"}
    outcome_changes = [dict(e.details) for e in everything if e.server == "c" and e.kind == "outcome_changed"]
    assert outcome_changes == [{"from": "timeout", "to": "ok"}, {"from": "ok", "to": "auth_required"}]
    assert [e.server for e in store.events(kind="outcome_changed")] == ["c", "c"]
    assert {e.run_id for e in store.events(run=runs[2])} == {runs[2]}
    assert store.events(since=everything[-1].at + timedelta(seconds=1)) == []
    assert store.events("a", kind="server_version_changed") == []


def test_leaderboard_and_report_helpers(store: Store, runs: list[int]) -> None:
    board = {row.server: row for row in store.leaderboard(runs[1])}
    assert sorted(board) == ["a", "b", "c"]
    c = board["c"]
    assert (c.outcome, c.tools_count, c.problems, c.warnings, c.notes) == ("ok", 3, 1, 1, 0)
    assert c.tool_severities == ((0, 0, 0), (0, 0, 0), (1, 0, 0))
    assert c.list_severities == (0, 1, 0)
    assert [f.code for f in c.findings] == ["MCP205", "MCP305"]  # worst first
    assert c.token_methods["openai"] == "chars/4x1.0"
    assert board["a"].findings[0].code == "MCP501" and board["a"].tool_severities == ((0, 0, 0), (0, 1, 0))

    run3 = {row.server: row for row in store.leaderboard(runs[2])}
    assert run3["c"].outcome == "auth_required" and run3["c"].tokens == {} and run3["c"].findings == ()
    assert run3["b"].list_severities == (0, 0, 1)  # MCP502 on a tool that is no longer there

    assert store.rule_hits(runs[1]) == {"MCP205": 1, "MCP305": 1, "MCP501": 1}
    sha = c.toolset_sha256 or ""
    assert store.toolset_tools(sha) == [ECHO, ADD, SEARCH_UNTYPED]
    assert [f.code for f in store.toolset_findings(sha, "1")] == ["MCP205", "MCP305"]
    assert store.toolset_findings(sha, "0-unknown") == []
    assert store.toolset_tokens(sha)["gemini"].method == "chars/4x1.05"
    costs = store.toolset_costs(sha)
    assert [cost.name for cost in costs] == ["echo", "add", "search"]
    dearest = store.toolset_costs(sha, largest=1)
    assert dearest[0].name == max(costs, key=lambda cost: max(cost.tokens.values())).name
    with pytest.raises(InputError):
        store.toolset_tools("0" * 64)


def test_trends(store: Store, runs: list[int]) -> None:
    trends = store.trends()
    assert [trend.run_id for trend in trends] == runs
    second = trends[1]
    assert second.outcomes == {"ok": 3} and second.servers_with_problems == 1
    assert second.findings_by_rule == {"MCP205": 1, "MCP305": 1, "MCP501": 1}
    sizes = [
        local_measure(Toolset.from_tools(tools)).max_tokens
        for tools in ([ECHO, SEARCH], [ADD], [ECHO, ADD, SEARCH_UNTYPED])
    ]
    assert second.median_tokens == statistics.median_low(sizes)
    assert second.p90_tokens == max(sizes)
    assert second.median_tools == 2
    assert trends[0].outcomes == {"ok": 2, "timeout": 1}
    assert trends[2].findings_by_rule == {"MCP502": 1}


def test_rescore_recounts_toolsets_and_trends(store: Store, runs: list[int]) -> None:
    def with_new_rule(toolset: Toolset) -> CheckReport:
        report = local_measure(toolset)
        extra = Finding("MCP999", "new-rule", Severity.WARNING, None, "a new list rule", "Do better.")
        return replace(report, findings=(*report.findings, extra))

    sha = store.leaderboard(runs[1])[2].toolset_sha256 or ""
    before = store.toolset_findings(sha, "1")
    assert store.rescore("2", with_new_rule) == 5  # a twice, b twice, c once

    assert store.toolset_findings(sha, "1") == before  # the old catalogue's findings stay
    assert [f.code for f in store.toolset_findings(sha, "2")] == ["MCP205", "MCP305", "MCP999"]
    trends = store.trends()
    assert all(trend.rule_version == "2" for trend in trends)
    assert [trend.findings_by_rule.get("MCP999") for trend in trends] == [2, 3, 2]
    assert store.rule_hits(runs[1])["MCP999"] == 3
    assert store.leaderboard(runs[1])[0].warnings == 2  # MCP501 (a scan's) + MCP999 (the toolset's)
    assert [row.rule_version for row in store.history("a")] == ["2", "2", "2"]


def test_rescore_skips_a_list_the_checker_crashes_on(store: Store, runs: list[int]) -> None:
    def picky(toolset: Toolset) -> CheckReport:
        if len(toolset) == 3:
            raise RecursionError("too deep")
        return local_measure(toolset)

    assert store.rescore("2", picky) == 4
    c = next(row for row in store.leaderboard(runs[1]) if row.server == "c")
    assert c.tokens and c.findings == ()  # old tokens kept; no findings under a version it was never measured in


def test_diff_says_a_rename_once_and_findings_gone_with_their_tool(store: Store) -> None:
    """run 1: [echo, untyped search, x (one-word description)]; run 2: search renamed to find (same description and
    schema, so its MCP205 follows it), x removed with its MCP102."""
    find = {**SEARCH_UNTYPED, "name": "find"}
    for tools in ([ECHO, SEARCH_UNTYPED, tool("x", "x")], [ECHO, find]):
        run_id = store.start_run("list.txt", "1", {})
        store.record_scan(run_id, entry("a"), ok(tools), local_measure)
        store.finish_run(run_id)
    change = store.diff("a")
    assert change.tools_renamed == (("search", "find"),)
    assert change.tools_added == () and change.tools_removed == ("x",)
    assert [(f.code, f.tool) for f in change.findings_gone_with_tool] == [("MCP102", "x")]
    assert [(f.code, f.tool) for f in change.findings_fixed] == [("MCP305", None)]  # two tools now: really fixed
    assert [(f.code, f.tool) for f in change.findings_new] == [("MCP502", "x")]  # not for the renamed search
    # The store still holds the MCP205 of find: it followed the rename, it is neither fixed nor new.
    assert ("MCP205", "find") in {(row.code, row.tool) for row in store.findings(server="a", still_open=True)}
