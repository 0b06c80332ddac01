"""Catalogue 6 (rules.md, second half): tools the model never sees draw no model-facing findings, MCP807 names
the Gemini CLI versions it speaks of and decides no current verdict, MCP218 finds a framework's argument leaking
through a docstring (on a real FastMCP server's own list), and the status changes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from scanner.models import Finding
from scanner.rules import RULES, RuleContext, run_rules


def _tool(name: str, description: str, properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties or {}},
        **extra,
    }


def _codes(tools: list[dict[str, Any]], context_for: Callable[[Sequence[Any]], RuleContext]) -> list[Finding]:
    return run_rules(tools, context_for(tools))


APP_ONLY = {"ui": {"visibility": ["app"]}}


def test_an_app_only_tool_draws_no_model_facing_finding(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    """The same two tools draw MCP205/MCP302 findings when the model sees them, none when an app calls them;
    validity and size rules still run on them."""
    pair = [
        _tool("refresh_chart", "Refresh chart.", {"q": {"description": "Which chart."}}),
        _tool("refresh_chart_v2", "Refresh chart.", {"q": {"description": "Which chart."}}),
    ]
    seen = {finding.code for finding in _codes(pair, context_for)}
    assert {"MCP302", "MCP205"} <= seen  # identical descriptions, an untyped parameter
    hidden = [{**tool, "_meta": APP_ONLY} for tool in pair]
    found = _codes(hidden, context_for)
    assert not [f for f in found if f.code[:4] in ("MCP1", "MCP2", "MCP3") and f.code not in ("MCP301",)], found
    # one app-only tool beside a model-facing one: the pair rule does not compare them, the visible one is checked
    mixed = [pair[0], {**pair[1], "_meta": {"ui/visibility": ["app"]}}]
    found = _codes(mixed, context_for)
    assert not [f for f in found if f.code == "MCP302"]
    assert [f.tool for f in found if f.code == "MCP205"] == ["refresh_chart"]
    # a visibility that includes the model is seen: every finding comes back
    both = [{**tool, "_meta": {"ui": {"visibility": ["model", "app"]}}} for tool in pair]
    assert {finding.code for finding in _codes(both, context_for)} == seen


def test_an_app_only_tool_still_counts_in_size_and_validity(
    context_for: Callable[[Sequence[Any]], RuleContext],
) -> None:
    tools = [
        {"name": "files.read", "description": "Reads a file.", "inputSchema": {"type": "array"}, "_meta": APP_ONLY},
    ]
    codes = {finding.code for finding in _codes(tools, context_for)}
    assert {"MCP101", "MCP201"} <= codes  # a name clients refuse and a schema that is not an object


def test_mcp807_is_retired_and_its_note_names_the_versions(
    context_for: Callable[[Sequence[Any]], RuleContext],
) -> None:
    """Right 0 of 6 on real lists, no current client refuses: retired (never runs, code kept). Its check, kept as
    the record, names the Gemini CLI versions it spoke of and decides no current verdict."""
    from scanner.rules.clients_reject import gemini_cli_untyped_rule
    from scanner.rules.tools import ToolInfo

    tools = [_tool("put", "Stores a JSON value under a key.", {"value": {"description": "any JSON value"}})]
    assert RULES["MCP807"].status == "removed" and RULES["MCP807"].check is None
    assert not [f for f in _codes(tools, context_for) if f.code == "MCP807"]
    (hit,) = gemini_cli_untyped_rule(ToolInfo(tools[0], 0), context_for(tools))
    assert "v0.1.18-v0.1.19" in hit.message and "August-September 2025" in hit.message
    assert "v0.42.0" in hit.message and hit.details["current"] is False


def test_mcp218_on_a_real_fastmcp_servers_list(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    """MCPServer (the official Python SDK's FastMCP, renamed in mcp 2) takes a tool's docstring as its description
    and leaves its Context argument out of the schema: the docstring's `ctx: MCP context` line documents a
    parameter the model cannot send. The list is the server's own tool list, not written by hand."""
    server = MCPServer("notes")

    @server.tool()
    async def search_notes(ctx: Context, query: str, limit: int = 10) -> str:
        """Search the notes for a phrase.

        Args:
            ctx: MCP context
            query: words to find
            limit: how many notes to return
        """
        return query

    @server.tool()
    async def count_notes(query: str) -> int:
        """Count the notes that match a phrase.

        Args:
            query: words to find
        """
        return len(query)

    listed = asyncio.run(server.list_tools())
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]
    assert "ctx" not in tools[0]["inputSchema"]["properties"] and "ctx: MCP context" in tools[0]["description"]
    found = [f for f in _codes(tools, context_for) if f.code == "MCP218"]
    assert [(f.tool, f.details["names"]) for f in found] == [("search_notes", ["ctx"])]  # count_notes: a near miss
    assert "ctx" in found[0].message and RULES["MCP218"].status == "preview"


def test_catalogue_6_statuses() -> None:
    assert RULES["MCP217"].status == "stable" and RULES["MCP308"].status == "stable"
    assert RULES["MCP805"].status == "stable"
    # every preview rule of catalogue 5 left preview: fixed and measured, or retired (issue 45)
    for code in ("MCP103", "MCP105", "MCP209", "MCP303", "MCP807"):
        assert RULES[code].status == "removed" and RULES[code].doc.startswith("Retired in catalogue 6"), code
