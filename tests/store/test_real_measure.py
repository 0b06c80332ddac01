"""The write path with the real ``scanner.measure.toollist.measure``: real token counts and real rule findings, stored
and
read back without a recount."""

from __future__ import annotations

from scanner.measure import toollist
from scanner.models import Toolset
from scanner.store import Store
from tests.store.conftest import entry, ok

TOOLS = [
    {
        "name": "search_docs",
        "description": "Search the documentation index and return the best matching pages with their URLs.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to look for, e.g. 'rate limits'."}},
            "required": ["query"],
        },
    },
    {"name": "fetch", "description": "fetch", "inputSchema": {"type": "object", "properties": {"url": {}}}},
]


def test_stored_numbers_are_what_measure_said(store: Store) -> None:
    report = toollist.measure(Toolset.from_tools(TOOLS))
    run = store.start_run("list.txt", "1", {})
    record = store.record_scan(run, entry("docs"), ok(TOOLS), toollist.measure)
    store.finish_run(run)

    (row,) = store.leaderboard(run)
    assert row.tokens == {provider: count.tokens for provider, count in report.tokens.items()}
    assert row.token_methods == {provider: count.method for provider, count in report.tokens.items()}
    assert row.findings == tuple(sorted(report.findings, key=lambda f: f.sort_key()))
    assert (row.problems, row.warnings, row.notes) == (
        report.summary.problems,
        report.summary.warnings,
        report.summary.notes,
    )
    sha = record.toolset_sha256 or ""
    assert store.toolset_costs(sha, largest=5) == list(report.largest_tools)
    assert store.trends()[0].median_tokens == report.max_tokens


def test_rescore_under_the_same_rules_reproduces_every_count(store: Store) -> None:
    # Keys out of alphabetical order: a provider view that keeps the given order must see the same document.
    tools = [
        {
            "name": "lookup",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "zone": {"type": "string", "description": "Time zone, e.g. Europe/Paris."},
                    "at": {"type": "string", "description": "When, ISO 8601."},
                },
                "required": ["zone"],
            },
            "description": "Look up the local time in a zone at a moment.",
        }
    ]
    run = store.start_run("list.txt", "1", {})
    record = store.record_scan(run, entry("clock"), ok(tools), toollist.measure)
    store.finish_run(run)
    sha = record.toolset_sha256 or ""
    assert list(store.toolset_tools(sha)[0]) == ["name", "inputSchema", "description"]
    before = (store.leaderboard(run), store.toolset_costs(sha), store.toolset_findings(sha, "1"))
    assert store.rescore("1", toollist.measure) == 1
    assert (store.leaderboard(run), store.toolset_costs(sha), store.toolset_findings(sha, "1")) == before


def test_rescore_brings_history_onto_catalogue_2(store: Store) -> None:
    """History scored under catalogue 1 (no MCP215, no earlier-Claude count) is re-scored onto the current one."""
    import dataclasses

    from scanner.models import CheckReport
    from scanner.rules import RULES_VERSION

    defs_tool = {
        "name": "get_user",
        "description": "Fetch one workspace member by id and return their name.",
        "inputSchema": {
            "type": "object",
            "properties": {"user_id": {"type": "string", "description": "The member's id."}},
            "$defs": {"PageFilter": {"type": "object", "properties": {"title": {"type": "string"}}}},
        },
    }

    def catalogue_1(toolset: Toolset) -> CheckReport:
        report = toollist.measure(toolset)
        return dataclasses.replace(
            report,
            tokens={key: count for key, count in report.tokens.items() if key != "anthropic-v3"},
            tool_costs=tuple(
                dataclasses.replace(cost, tokens={k: v for k, v in cost.tokens.items() if k != "anthropic-v3"})
                for cost in report.tool_costs
            ),
            findings=tuple(finding for finding in report.findings if finding.code != "MCP215"),
        )

    run = store.start_run("list.txt", "1", {})
    record = store.record_scan(run, entry("notion-like"), ok([defs_tool]), catalogue_1)
    store.finish_run(run)
    sha = record.toolset_sha256 or ""
    assert "anthropic-v3" not in store.toolset_tokens(sha)
    assert not [f for f in store.toolset_findings(sha, "1") if f.code == "MCP215"]

    assert int(RULES_VERSION) >= 2  # MCP215 and anthropic-v3 arrived with catalogue 2
    assert store.rescore(RULES_VERSION, toollist.measure) == 1
    (unused,) = [f for f in store.toolset_findings(sha, RULES_VERSION) if f.code == "MCP215"]
    assert unused.details["definitions"] == ["PageFilter"] and unused.details["tokens"] > 0
    tokens = store.toolset_tokens(sha)
    assert tokens["anthropic-v3"].tokens < tokens["anthropic"].tokens
    assert "Claude 3 to Opus 4.6" in tokens["anthropic-v3"].method
    (row,) = store.leaderboard(run)
    # The leaderboard counts under the new catalogue: MCP215, and (catalogue 4) MCP110 for a tool without annotations.
    assert {f.code for f in row.findings if f.severity.label == "note"} == {"MCP215", "MCP110"} and row.notes == 2
    assert not [f for f in store.toolset_findings(sha, "1") if f.code == "MCP215"]  # catalogue 1's rows kept as is
