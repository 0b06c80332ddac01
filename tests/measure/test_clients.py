"""Cost per client (scanner.measure.clients): the preset math, the threshold switch, and what ``check`` shows in each
format."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure.clients import (
    CLAUDE_CODE_NAME_PREFIX,
    CLIENTS,
    CLIENTS_BY_KEY,
    Client,
    client_cost,
    measure_clients,
    report_clients,
)
from scanner.measure.toollist import measure
from scanner.models import Toolset
from scanner.providers import text_cost

runner = CliRunner()
REALISTIC = Path(__file__).parents[1] / "providers" / "fixtures" / "realistic-tools.json"
SMALL = [
    {"name": "get_forecast", "description": "Hourly forecast.", "inputSchema": {"type": "object"}},
    {"name": "get_alerts", "description": "Severe-weather alerts.", "inputSchema": {"type": "object"}},
    {"name": "list_stations", "description": "Weather stations near a place.", "inputSchema": {"type": "object"}},
]


def test_deferring_client_costs_names_plus_search_and_loads_at_the_mean() -> None:
    client = Client("c", "C", "anthropic", defers=True, name_prefix="x__")
    # Six tools of 100..600 (mean 350), names at 5 tokens each, a search tool of 40.
    cost = client_cost(client, 2_500, [100, 200, 300, 400, 500, 600], [5] * 6, 40)
    assert cost.deferred
    assert cost.tokens == 6 * 5 + 40
    assert cost.loaded_low == 70 + 3 * 350 and cost.loaded_high == 70 + 5 * 350
    assert cost.search_tokens == 40 and "6 name lines" in cost.method and "search tool 40" in cost.method
    # One search returns the typical five, the largest ones: what it pulls in at most.
    assert cost.search_returns == 600 + 500 + 400 + 300 + 200


def test_fewer_tools_than_typical_loads_them_all() -> None:
    client = Client("c", "C", "anthropic", defers=True, name_prefix="")
    cost = client_cost(client, 999, [100, 300], [4, 6], 10)
    assert cost.tokens == 20 and cost.loaded_low == 20 + 400 and cost.loaded_high == 20 + 400


def test_unpublished_search_tool_is_left_out_and_said() -> None:
    client = Client("api", "API", "anthropic", defers=True)  # no name line in context
    cost = client_cost(client, 999, [100, 200, 300], [], None)
    assert cost.tokens == 0 and cost.search_tokens is None
    assert cost.loaded_low == 600 and "not published" in cost.method


def test_load_everything_client_sends_the_full_list() -> None:
    client = Client("g", "G", "gemini", defers=False)
    cost = client_cost(client, 1_234, [500, 600], [3, 3], 99)
    assert (cost.deferred, cost.tokens, cost.loaded_low, cost.loaded_high) == (False, 1_234, 1_234, 1_234)


def test_threshold_switch_below_loads_everything_above_defers() -> None:
    client = Client("auto", "Auto", "anthropic", defers=True, threshold=0.10, context_window=1_000, name_prefix="")
    assert client.threshold_tokens == 100
    below = client_cost(client, 500, [50, 50], [2, 2], 10)  # 100 tokens of definitions: not past 100
    assert not below.deferred and below.tokens == 500 and "below its threshold" in below.method
    above = client_cost(client, 500, [50, 51], [2, 2], 10)  # 101: past it
    assert above.deferred and above.tokens == 14


def test_claude_code_presets_on_a_real_list() -> None:
    tools = json.loads(REALISTIC.read_text(encoding="utf-8"))
    report = measure(Toolset.from_tools(tools))
    costs = {cost.client: cost for cost in report_clients(report, tools)}
    assert set(costs) == {client.key for client in CLIENTS}
    names = [tool["name"] for tool in tools]
    lines = sum(text_cost(f"{CLAUDE_CODE_NAME_PREFIX}{name}\n") for name in names)
    default = costs["claude-code"]
    # The search tool's own size is not published: left out, and the method says so.
    assert default.deferred and default.tokens == lines and "not published" in default.method
    assert default.tokens < report.tokens["anthropic"].tokens
    # The realistic list is far below 10 % of 200k: with ENABLE_TOOL_SEARCH=auto Claude Code loads it all.
    auto = costs["claude-code-auto"]
    assert not auto.deferred and auto.tokens == report.tokens["anthropic"].tokens
    assert costs["gemini-cli"].tokens == report.tokens["gemini"].tokens


def test_auto_defers_a_list_past_ten_percent() -> None:
    big = [
        {"name": f"tool_{i}", "description": "Does one thing well. " * 60, "inputSchema": {"type": "object"}}
        for i in range(120)
    ]
    report = measure(Toolset.from_tools(big))
    own = sum(cost.tokens["anthropic"] for cost in report.tool_costs)
    assert own > CLIENTS_BY_KEY["claude-code-auto"].threshold_tokens  # type: ignore[operator]
    auto = {cost.client: cost for cost in report_clients(report)}["claude-code-auto"]
    assert auto.deferred and auto.tokens < report.tokens["anthropic"].tokens


def test_measure_clients_skips_unmeasured_providers() -> None:
    costs = measure_clients({"gemini": 10}, [{"gemini": 10}], ["a"], count_text=len)
    assert [cost.client for cost in costs] == ["gemini-cli"]


def _check(tmp_path: Path, *args: str) -> str:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": SMALL}), encoding="utf-8")
    result = runner.invoke(app, ["check", "--tools-file", str(path), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_check_json_has_clients(tmp_path: Path) -> None:
    data = json.loads(_check(tmp_path, "--format", "json"))
    clients = data["clients"]
    assert list(clients) == [client.key for client in CLIENTS]
    code = clients["claude-code"]
    assert code["deferred"] is True and code["provider"] == "anthropic" and code["method"]
    assert code["tokens"] <= code["loaded_3"] <= code["loaded_5"]
    assert clients["gemini-cli"]["tokens"] == data["tokens"]["gemini"]["tokens"]
    assert clients["claude-code-auto"]["tokens"] == data["tokens"]["anthropic"]["tokens"]


def test_check_text_and_markdown_show_each_client(tmp_path: Path) -> None:
    text = _check(tmp_path)
    markdown = _check(tmp_path, "--format", "markdown")
    assert "Per client (what each sends per turn)" in text
    assert "| Client | Defers | Per turn | With 3-5 tools loaded | Method |" in markdown
    for client in CLIENTS:
        assert client.label in text
    assert "Claude Code (ENABLE\\_TOOL\\_SEARCH=auto) | no |" in markdown
    assert "Claude Code (tool search, the default) | yes |" in markdown
