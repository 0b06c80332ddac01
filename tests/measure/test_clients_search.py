"""Where tools are searched: the Codex, VS Code, OpenAI API and Windsurf rows (scanner.measure.clients) on a real
98-tool list (mcp-atlassian 0.23.1, ``tests/fixtures/clients/``) and a real 2-tool one (context7), their search
tools, what the server controls under deferral, and ``--max-tokens CLIENT:N``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure import tokenizer
from scanner.measure.clients import (
    CLIENTS,
    CLIENTS_BY_KEY,
    CLIENTS_VERSION,
    measure_clients,
    missing_rows,
    report_clients,
)
from scanner.measure.toollist import measure
from scanner.models import CheckReport, Toolset
from scanner.providers import text_cost

runner = CliRunner()
FIXTURES = Path(__file__).parents[1] / "fixtures"
ATLASSIAN = FIXTURES / "clients" / "mcp-atlassian.json"
CONTEXT7 = FIXTURES / "real" / "context7.json"
INSTRUCTIONS = "Jira and Confluence for one Atlassian site.\nSearch issues with JQL; pages with CQL."


def _tools(path: Path) -> list[dict[str, Any]]:
    tools = json.loads(path.read_text(encoding="utf-8"))["tools"]
    assert isinstance(tools, list)
    return tools


def _rows(path: Path, instructions: str | None = None) -> tuple[CheckReport, dict[str, Any]]:
    tools = _tools(path)
    report = measure(Toolset.from_tools(tools))
    return report, {cost.client: cost for cost in report_clients(report, tools, instructions)}


@pytest.mark.parametrize("path", [ATLASSIAN, CONTEXT7], ids=["atlassian-98", "context7-2"])
def test_every_row_present_and_every_deferring_row_below_its_provider(path: Path) -> None:
    report, rows = _rows(path)
    assert list(rows) == [client.key for client in CLIENTS]
    for key in ("codex", "vscode", "openai-api-defer", "openai-api-defer-functions", "windsurf"):
        assert key in rows
    full = {provider: count.tokens for provider, count in report.tokens.items()}
    for cost in rows.values():
        if cost.deferred:
            assert cost.tokens < full[cost.provider], f"{cost.client}: {cost.tokens} vs {full[cost.provider]}"
            assert cost.tokens <= cost.loaded_low <= cost.loaded_high
        else:
            assert cost.tokens == full[cost.provider]
        assert "source: " in cost.method  # every row names its public source


def test_codex_at_rest_is_a_small_fraction_of_the_full_openai_count() -> None:
    report, rows = _rows(ATLASSIAN)
    assert report.tools_count == 98
    openai = report.tokens["openai"].tokens
    codex = rows["codex"]
    assert codex.deferred and codex.provider == "openai"
    assert codex.tokens < 0.02 * openai  # 136 of 16,257: the search tool and the server's source line
    small_report, small = _rows(CONTEXT7)
    assert small["codex"].tokens < 0.25 * small_report.tokens["openai"].tokens
    # The search tool's size does not depend on the list: it is the same on both.
    assert codex.search_tokens == small["codex"].search_tokens


@pytest.mark.parametrize("path", [ATLASSIAN, CONTEXT7], ids=["atlassian-98", "context7-2"])
def test_every_search_tool_counted_or_its_absence_explained(path: Path) -> None:
    _, rows = _rows(path)
    for cost in rows.values():
        if not cost.deferred:
            continue
        kind = CLIENTS_BY_KEY[cost.client].search
        assert kind is not None and cost.search_source == kind.source
        if cost.search_tokens is None:
            assert kind.kind == "unpublished" and "not published" in cost.search_source
            assert "not counted" in cost.method
        else:
            assert kind.kind in ("measured", "vendor") and cost.search_tokens > 0
    assert rows["codex"].search_tokens and rows["vscode"].search_tokens  # counted from public definitions
    vendor = rows["anthropic-api-defer"]
    assert vendor.search_tokens == 500 and "vendor figure" in vendor.method and "advanced-tool-use" in vendor.method


def test_codex_shows_the_servers_instructions_cut_at_4_kib() -> None:
    _, bare = _rows(CONTEXT7)
    _, told = _rows(CONTEXT7, INSTRUCTIONS)
    assert bare["codex"].namespace == "- server" and bare["codex"].namespace_tokens == 0
    codex = told["codex"]
    assert codex.namespace == "- server: " + INSTRUCTIONS
    assert codex.namespace_tokens is not None
    assert abs(codex.namespace_tokens - tokenizer.count(": " + INSTRUCTIONS)) <= 3  # as '// ' comment lines
    assert codex.tokens == bare["codex"].tokens + codex.namespace_tokens
    # A search result carries the namespace again, its description the instructions: loading costs more too.
    assert codex.loaded_low - codex.tokens > bare["codex"].loaded_low - bare["codex"].tokens
    long = "Read the manual first. " * 600  # 13.8 kB: Codex shows the first 4 KiB
    _, cut = _rows(CONTEXT7, long)
    _, at_limit = _rows(CONTEXT7, long.encode()[:4096].decode())
    assert cut["codex"].namespace_tokens == at_limit["codex"].namespace_tokens
    assert cut["codex"].namespace_tokens < tokenizer.count(long) / 2


def test_openai_namespace_and_functions_rows() -> None:
    report, rows = _rows(ATLASSIAN, INSTRUCTIONS)
    namespace = rows["openai-api-defer"]
    assert namespace.namespace == f"## server\n\n{INSTRUCTIONS}\n\n"
    assert namespace.tokens == namespace.namespace_tokens == tokenizer.count(namespace.namespace)
    assert namespace.search_tokens is None  # the hosted tool_search's own text is not published
    functions = rows["openai-api-defer-functions"]
    tools = _tools(ATLASSIAN)
    # Name and description of every tool stay; the parameters are what is deferred.
    lean = sum(
        tokenizer.count(
            "".join(f"// {line}\n" for line in (tool.get("description") or "").splitlines())
            + f"type {tool['name']} = () => any;\n\n"
        )
        for tool in tools
    )
    assert abs(functions.tokens - lean) <= len(tools)  # blank description lines are written "//": a token or so
    assert namespace.tokens < functions.tokens < report.tokens["openai"].tokens


def test_vscode_keeps_mcp_server_names_and_its_search_prompt() -> None:
    _, rows = _rows(ATLASSIAN)
    vscode = rows["vscode"]
    names = [tool["name"] for tool in _tools(ATLASSIAN)]
    lines = sum(text_cost(f"mcp_server_{name}\n") for name in names)
    assert vscode.tokens == lines + vscode.search_tokens
    assert vscode.search_limit == 5 and "mcp_server_<tool>" in vscode.method


def test_windsurf_loads_everything_and_says_past_its_100_tools() -> None:
    report, rows = _rows(ATLASSIAN)
    assert not rows["windsurf"].deferred and rows["windsurf"].tokens == report.tokens["anthropic"].tokens
    many = [{"name": f"t{i}", "description": "Does one thing.", "inputSchema": {"type": "object"}} for i in range(101)]
    big = {cost.client: cost for cost in report_clients(measure(Toolset.from_tools(many)), many)}
    assert "enables at most 100" in big["windsurf"].method and "this list has 101" in big["windsurf"].method


def test_a_search_pulls_in_the_largest_tools_at_the_clients_limit() -> None:
    report, rows = _rows(ATLASSIAN)
    openai = sorted((cost.tokens["openai"] for cost in report.tool_costs), reverse=True)
    codex = rows["codex"]
    assert codex.search_limit == 8
    header = codex.loaded_low - codex.tokens - round(sum(openai) / len(openai) * 3)
    assert header > 0  # the namespace a search result carries
    assert codex.search_returns == header + sum(openai[:8])


def test_rows_read_from_counts_alone_leave_out_the_descriptions_row_and_say_which() -> None:
    report, _ = _rows(CONTEXT7)
    ordered = sorted(report.tool_costs, key=lambda cost: cost.index)
    costs = measure_clients(
        {p: c.tokens for p, c in report.tokens.items()}, [c.tokens for c in ordered], [c.name for c in ordered]
    )
    assert [cost.client for cost in costs] == [c.key for c in CLIENTS if c.key not in missing_rows()]
    assert missing_rows() == ("openai-api-defer-functions",)
    # With only the stored count of the instructions, Codex's namespace is that count and its separator.
    counted = measure_clients(
        {p: c.tokens for p, c in report.tokens.items()},
        [c.tokens for c in ordered],
        [c.name for c in ordered],
        instructions_tokens=tokenizer.count(INSTRUCTIONS),
    )
    _, told = _rows(CONTEXT7, INSTRUCTIONS)
    codex = next(cost for cost in counted if cost.client == "codex")
    assert abs(codex.tokens - told["codex"].tokens) <= 5


def _check(*args: str) -> Any:
    return runner.invoke(app, ["check", "--tools-file", str(ATLASSIAN), *args])


def test_check_json_has_the_new_rows_and_the_table_version() -> None:
    result = _check("--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["clients_version"] == CLIENTS_VERSION
    codex = data["clients"]["codex"]
    assert codex["deferred"] is True and codex["provider"] == "openai" and codex["search_limit"] == 8
    assert codex["search_tool"] > 0 and codex["namespace"] == "- server" and codex["search_returns"] > 0
    assert data["clients"]["windsurf"]["tokens"] == data["tokens"]["anthropic"]["tokens"]
    assert data["clients"]["openai-api-defer"]["search_tool"] is None
    assert "not published" in data["clients"]["openai-api-defer"]["search_tool_source"]


def test_check_text_and_markdown_say_what_the_server_controls() -> None:
    text = " ".join(_check().output.split())  # the text report wraps its lines
    markdown = _check("--format", "markdown").output
    for client in CLIENTS:
        assert client.label in text
    assert "show the server by its name alone (no instructions)" in text
    assert "One search loads the matched tools in full" in text
    assert "| Codex (tool\\_search, MCP tools deferred) | yes |" in markdown
    assert "- One search loads the matched tools in full" in markdown


def test_max_tokens_names_a_client() -> None:
    passed = _check("--max-tokens", "codex:2000")
    assert passed.exit_code == 0, passed.output
    assert "passed --max-tokens codex:2000: 136 tokens per turn with Codex" in passed.output.replace("\n    ", " ")
    failed = _check("--max-tokens", "vscode=100")
    assert failed.exit_code == 1
    assert "FAILED --max-tokens vscode:100" in failed.output and "over the limit of 100" in failed.output
    wrong = _check("--max-tokens", "kodex:5")
    assert (
        wrong.exit_code == 2
        and "no provider 'kodex'" in wrong.output
        and "nor a client" in wrong.output
        and "codex" in wrong.output
    )
