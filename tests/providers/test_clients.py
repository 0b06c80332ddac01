"""Cost per client: load-everything clients pay the whole list; deferring ones pay names and a few tools, and
Claude Code defers only past 10 % of the window."""

from __future__ import annotations

import json
from pathlib import Path

from scanner import tokenizer
from scanner.check import measure
from scanner.models import Toolset
from scanner.providers.clients import CLIENTS, client_costs

REAL = Path(__file__).parent.parent / "fixtures" / "real"


def _costs(name: str):  # type: ignore[no-untyped-def]
    tools = json.loads((REAL / f"{name}.json").read_text(encoding="utf-8"))["tools"]
    report = measure(Toolset.from_tools(tuple(tools)))
    per_tool = {p: [cost.tokens[p] for cost in report.tool_costs] for p in report.tokens}
    listed = {p: count.tokens for p, count in report.tokens.items()}
    return {c.key: c for c in client_costs(tools, listed, per_tool, tokenizer.count)}, listed


def test_a_small_list_is_loaded_whole_everywhere() -> None:
    costs, listed = _costs("server-memory")
    assert all(not cost.defers for cost in costs.values() if cost.key != "anthropic-api-defer")
    assert costs["claude-code"].tokens == listed["anthropic"]
    assert costs["anthropic-api-defer"].defers and costs["anthropic-api-defer"].tokens < listed["anthropic"]


def test_a_list_past_the_threshold_is_deferred_by_claude_code() -> None:
    costs, listed = _costs("notion-mcp-server")
    assert listed["anthropic"] > 20_000  # over 10 % of a 200k window
    code = costs["claude-code"]
    assert code.defers and code.stubs_tokens and code.loaded_tokens
    assert code.tokens == code.stubs_tokens + code.loaded_tokens < listed["anthropic"] / 3
    assert costs["cursor"].tokens == listed["anthropic"] and costs["gemini-cli"].tokens == listed["gemini"]
    assert {client.key for client in CLIENTS} == set(costs)


def test_check_json_carries_the_cost_per_client() -> None:
    from typer.testing import CliRunner

    from scanner.cli import app

    done = CliRunner().invoke(app, ["check", "--format", "json", "--tools-file", str(REAL / "notion-mcp-server.json")])
    document = json.loads(done.output)
    by_key = {client["key"]: client for client in document["clients"]}
    assert by_key["claude-code"]["defers"] and by_key["claude-code"]["tokens"] < by_key["cursor"]["tokens"]
    assert by_key["cursor"]["tokens"] == document["tokens"]["anthropic"]["tokens"]
    assert by_key["claude-code"]["search_tool_tokens"] is None  # not published as text: never guessed
