"""``fathom check --tools-file``: the whole command as a user runs it, output formats, exit codes, hostile lists."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.rules import RULES

runner = CliRunner()
EXAMPLE = Path(__file__).parents[2] / "scanner" / "examples" / "example-tools.json"
GOOD = [
    {
        "name": "get_forecast",
        "description": "Hourly weather forecast for the next two days at a latitude and longitude, in metric units.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "latitude": {"type": "number", "description": "Latitude in degrees, e.g. 47.37."},
                "longitude": {"type": "number", "description": "Longitude in degrees, e.g. 8.54."},
            },
            "required": ["latitude", "longitude"],
        },
        "annotations": {"readOnlyHint": True},  # catalogue 4: a tool says whether it only reads (MCP110)
    },
    {
        "name": "get_alerts",
        "description": "Current severe-weather alerts for one country, given its two-letter ISO code.",
        "inputSchema": {
            "type": "object",
            "properties": {"country": {"type": "string", "description": "ISO 3166 alpha-2 code, e.g. CH."}},
            "required": ["country"],
        },
        "annotations": {"readOnlyHint": True},
    },
]


def write(tmp_path: Path, document: Any, name: str = "tools.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def check_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["check", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _leaky_example(tmp_path: Path) -> str:
    """The bundled example with a framework's `ctx` argument documented in one docstring (MCP218, a preview rule)."""
    document = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    tools = document["tools"] if isinstance(document, dict) else document
    tool = next(tool for tool in tools if tool["name"] == "check_stock")
    tool["description"] += "\n\nArgs:\n    ctx: MCP context"
    return write(tmp_path, document)


def test_json_contract_keys_and_values(tmp_path: Path) -> None:
    data = check_json("--tools-file", str(EXAMPLE))
    assert data["tools_count"] == 5
    assert set(data["tokens"]) == {"anthropic", "anthropic-v3", "openai", "gemini"}
    for count in data["tokens"].values():
        assert count["tokens"] > 0 and count["method"].startswith("o200k_base")
    dearest = max(count["tokens"] for count in data["tokens"].values())
    assert data["context_share"] == pytest.approx(dearest / 200_000, abs=1e-6)
    assert len(data["largest_tools"]) == 5
    assert data["largest_tools"][0]["name"] == "search_catalog"
    assert set(data["largest_tools"][0]["tokens"]) == {"anthropic", "anthropic-v3", "openai", "gemini"}
    # Every tool, sorted by its dearest provider's cost, each with its tokens per provider.
    tools = data["tools"]
    assert sorted(tool["index"] for tool in tools) == list(range(5))
    costs = [max(tool["tokens"].values()) for tool in tools]
    assert costs == sorted(costs, reverse=True)
    assert tools[:5] == [{"index": tool["index"], **tool} for tool in tools[:5]]
    assert [tool["name"] for tool in tools[:5]] == [tool["name"] for tool in data["largest_tools"]]
    summary = data["summary"]
    assert summary["problems"] >= 2  # check_stock: required key undefined, untyped `store`
    finding_keys = {"code", "rule", "severity", "tool", "message", "hint", "pointer", "details", "status"}
    assert all(finding_keys <= set(finding) for finding in data["findings"])
    assert {finding["status"] for finding in data["findings"]} == {"stable"}  # preview only with --preview
    severities = [finding["severity"] for finding in data["findings"]]
    order = {"problem": 0, "warning": 1, "note": 2}
    assert severities == sorted(severities, key=order.__getitem__)
    codes = {(finding["code"], finding["tool"]) for finding in data["findings"]}
    assert ("MCP204", "check_stock") in codes
    assert ("MCP205", "check_stock") in codes
    assert ("MCP202", "list_stores") in codes
    leaky = _leaky_example(tmp_path)
    hidden = check_json("--tools-file", leaky)
    assert ("MCP218", "check_stock") not in {(f["code"], f["tool"]) for f in hidden["findings"]}  # not by default
    shown = check_json("--tools-file", leaky, "--preview")
    (leak,) = [f for f in shown["findings"] if (f["code"], f["tool"]) == ("MCP218", "check_stock")]
    assert leak["status"] == "preview" and (leak["precision"] is None or 0 <= leak["precision"] < 0.8)
    assert shown["summary"] == hidden["summary"] | {"preview": len(shown["findings"]) - len(hidden["findings"])}
    assert shown["score"] == hidden["score"]  # preview findings never move the score


def test_text_report_is_laid_out_like_the_card(tmp_path: Path) -> None:
    result = runner.invoke(app, ["check", "--example"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    # A one-line summary first (issue 37: about 45 lines came before the first finding), then the findings.
    summary = " ".join(" ".join(out.split("\n\n")[0].splitlines()[1:]).split())  # wrapped to 80 columns
    assert summary.startswith("Score ") and "tokens/turn" in summary and "loads it" in summary
    assert "Tokens per turn" in out and "Claude 4.7+" in out and "OpenAI" in out and "Gemini" in out
    assert "5 tools ·" in out and "% of a 200k context" in out
    assert "Largest tools" in out
    headline = next(line for line in out.splitlines()[2:] if "problem" in line and "note" in line)
    assert headline.startswith(("1 problem", "2 problems", "3 problems"))
    assert "[preview]" not in out and "preview" not in headline  # preview rules only with --preview
    shown = runner.invoke(app, ["check", "--tools-file", _leaky_example(tmp_path), "--preview"]).stdout
    marked = [line for line in shown.splitlines() if "[preview]" in line and "MCP" in line]
    assert marked and all(RULES[line.split()[1]].status == "preview" for line in marked)
    assert "preview)" in next(line for line in shown.splitlines()[2:] if "problem" in line and "note" in line)
    assert "never counted in the score or a gate" in " ".join(shown.split())
    assert out.index(headline) < out.index("Tokens per turn") < out.index("Largest tools")
    assert "\x1b[" not in out  # no colour when not a terminal


def test_clean_list_says_nothing_to_stumble_over(tmp_path: Path) -> None:
    result = runner.invoke(app, ["check", "--tools-file", write(tmp_path, GOOD)])
    assert result.exit_code == 0, result.output
    assert "Nothing a model would stumble over" in result.stdout


def test_one_tool_list_has_no_largest_tools(tmp_path: Path) -> None:
    data = check_json("--tools-file", write(tmp_path, GOOD[:1]))
    assert data["largest_tools"] == []
    result = runner.invoke(app, ["check", "--tools-file", write(tmp_path, GOOD[:1])])
    assert "Largest tools" not in result.stdout


def test_strict_exits_1_only_on_problems(tmp_path: Path) -> None:
    assert runner.invoke(app, ["check", "--example", "--strict"]).exit_code == 1
    assert runner.invoke(app, ["check", "--tools-file", write(tmp_path, GOOD), "--strict"]).exit_code == 0
    # warnings alone do not fail --strict (MCP112: a write name without readOnlyHint/destructiveHint)
    warn_only = [dict(GOOD[0], name="send_forecast", annotations={"idempotentHint": True})]
    result = runner.invoke(app, ["check", "--tools-file", write(tmp_path, warn_only), "--strict"])
    assert "warning" in result.stdout and result.exit_code == 0


def test_select_and_ignore_take_prefixes() -> None:
    only_schema = check_json("--example", "--select", "MCP2")
    assert only_schema["findings"] and all(f["code"].startswith("MCP2") for f in only_schema["findings"])
    ignored = check_json("--example", "--select", "MCP2", "--ignore", "MCP205,MCP204")
    assert not {f["code"] for f in ignored["findings"]} & {"MCP204", "MCP205"}


def test_stdin_and_jsonrpc_shape(tmp_path: Path) -> None:
    response = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": GOOD}})
    result = runner.invoke(app, ["check", "--tools-file", "-", "--format", "json"], input=response)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tools_count"] == 2


@pytest.mark.parametrize(
    ("content", "fragment"),
    [('{"name": "x"}', "without a tool list"), ("not json", "not valid JSON"), ('{"tools": 3}', "not an array")],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    result = runner.invoke(app, ["check", "--tools-file", str(path)])
    assert result.exit_code == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_no_source_or_two_sources_is_usage_error(tmp_path: Path) -> None:
    assert runner.invoke(app, ["check"]).exit_code == 2
    assert runner.invoke(app, ["check", "--example", "--tools-file", write(tmp_path, GOOD)]).exit_code == 2


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini", "gemini-openapi"])
def test_as_provider_prints_only_that_json(provider: str) -> None:
    result = runner.invoke(app, ["check", "--example", "--as", provider])
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)  # nothing but JSON on stdout: pipeable
    if provider == "anthropic":
        assert [tool["name"] for tool in view][:2] == ["search_catalog", "get_product"]
        assert "input_schema" in view[0]
    elif provider == "openai":
        assert view[0]["type"] == "function" and view[0]["function"]["name"] == "search_catalog"
        assert "parameters" in view[0]["function"]
    elif provider == "gemini":
        declarations = view[0]["functionDeclarations"]
        assert declarations[1]["name"] == "get_product"
        assert "pattern" in json.dumps(declarations)  # parametersJsonSchema: the schema as the server sent it
        assert all("parametersJsonSchema" in d and "parameters" not in d for d in declarations)
    else:
        declarations = view[0]["functionDeclarations"]
        assert declarations[1]["name"] == "get_product"
        assert "pattern" not in json.dumps(declarations)  # Gemini's OpenAPI subset drops it
        assert not any("parametersJsonSchema" in d for d in declarations)


def test_markdown_escapes_server_text(tmp_path: Path) -> None:
    hostile = [{"name": "x|y", "description": "<b>bold</b> | *star*", "inputSchema": {"type": "object"}}]
    result = runner.invoke(app, ["check", "--tools-file", write(tmp_path, hostile), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "<b>" not in result.stdout
    assert "| Provider | Tokens per turn | Method |" in result.stdout


def test_sarif_is_2_1_0_with_every_rule_and_results() -> None:
    result = runner.invoke(app, ["check", "--example", "--format", "sarif"])
    assert result.exit_code == 0, result.output
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert "MCP101" in rule_ids and "MCP402" in rule_ids
    levels = {res["level"] for res in run["results"]}
    assert "error" in levels
    for res in run["results"]:
        assert rule_ids[res["ruleIndex"]] == res["ruleId"]
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("example-tools.json")


def test_terminal_never_gets_control_characters(tmp_path: Path) -> None:
    hostile = [
        {"name": "evil\x1b[2Jname", "description": "clears\x1b]0;title\x07 the \u202escreen", "inputSchema": {}},
        {"name": "b", "description": "x", "inputSchema": {"type": "object"}},
    ]
    result = runner.invoke(app, ["check", "--tools-file", write(tmp_path, hostile)])
    assert result.exit_code == 0, result.output
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in result.stdout


# --- Hostile lists: a clear finding or a clear error within seconds, never a crash ---------------------------


def _timed(args: list[str], limit: float = 60.0) -> Any:  # generous: a loaded machine is slow, not wrong
    started = time.monotonic()
    result = runner.invoke(app, args)
    assert time.monotonic() - started < limit
    assert "Traceback" not in result.output
    return result


@pytest.mark.timeout(600)
def test_hostile_10000_tools(tmp_path: Path) -> None:
    tools = [dict(GOOD[0], name=f"tool_{index}") for index in range(10_000)]
    result = _timed(["check", "--tools-file", write(tmp_path, tools), "--format", "json"], limit=30.0)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["tools_count"] == 10_000
    assert "MCP304" in {finding["code"] for finding in data["findings"]}


def test_hostile_deep_but_parseable_schema_is_a_finding(tmp_path: Path) -> None:
    schema: dict[str, Any] = {"type": "string", "description": "leaf"}
    for _ in range(450):  # 900 JSON levels: just under what the parser accepts
        schema = {"type": "object", "description": "level", "properties": {"a": schema}}
    tools = [{"name": "deep", "description": "A very deeply nested tool schema.", "inputSchema": schema}]
    result = _timed(["check", "--tools-file", write(tmp_path, tools), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "MCP212" in {finding["code"] for finding in json.loads(result.stdout)["findings"]}


def test_hostile_10000_deep_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('[{"name":"d","inputSchema":' + '{"properties":{"a":' * 10_000 + "{}" + "}}" * 10_000 + "}]")
    result = _timed(["check", "--tools-file", str(path)])
    assert result.exit_code == 2 and "deeper than can be read" in result.stderr


def test_hostile_ref_cycle_and_wrong_types(tmp_path: Path) -> None:
    tools = [
        {
            "name": "cyclic",
            "description": "Refers to itself through $defs, forever.",
            "inputSchema": {
                "type": "object",
                "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
                "properties": {"root": {"$ref": "#/$defs/node"}},
            },
        },
        {"name": ["not", "a", "string"], "description": 42, "inputSchema": "nope"},
        "a tool that is a string",
        None,
        {"name": "ok_tool", "description": "Fine.", "inputSchema": {"type": "object", "properties": []}},
    ]
    # Items that are not objects make it no tool list (issue 34): one line, exit 2, naming the first of them.
    result = _timed(["check", "--tools-file", write(tmp_path, tools), "--format", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "item 2 is a string, not a tool object" in result.stderr
    # Objects, however malformed, are tools: the rules judge them.
    tools = [tool for tool in tools if isinstance(tool, dict)]
    result = _timed(["check", "--tools-file", write(tmp_path, tools), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_tool = {}
    for finding in data["findings"]:
        by_tool.setdefault(finding["tool"], set()).add(finding["code"])
    assert "MCP208" in by_tool["cyclic"]
    assert {"MCP101", "MCP102", "MCP201"} <= set().union(*by_tool.values())


def test_hostile_100_mb_file_is_refused_fast(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)
    result = _timed(["check", "--tools-file", str(path)], limit=30.0)  # generous: a loaded machine
    assert result.exit_code == 2 and "larger than the 32 MiB limit" in result.stderr


def test_console_script_and_module_entry_points() -> None:
    out = subprocess.run([sys.executable, "-m", "scanner", "--help"], capture_output=True, text=True, check=True)
    assert "Exit codes" in out.stdout and "check" in out.stdout


def test_missing_tokenizer_says_so_and_exits_4(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "FATHOM_TOKENIZER_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "scanner", "check", "--example"], capture_output=True, text=True, env=env
    )
    assert out.returncode == 4
    assert "o200k_base" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""  # no number printed without its tokenizer


_NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
_TOPICS = [
    "invoices sent to customers this quarter",
    "warehouse shelves holding frozen goods",
    "support tickets waiting for a reply",
    "flights leaving the airport tonight",
    "employees on holiday next month",
    "recipes using seasonal vegetables",
    "server certificates close to expiry",
    "library books overdue since spring",
]


def _many_undescribed(count: int) -> list[dict[str, Any]]:
    """Distinct tools without annotations (MCP110 on each, a stable rule; nothing else in common)."""
    return [
        {
            "name": _NAMES[index],
            "description": f"List the {_TOPICS[index]}, newest first.",
            "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer"}}},
        }
        for index in range(count)
    ]


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_a_rule_on_more_than_five_tools_is_shown_once(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, _many_undescribed(8))
    grouped = runner.invoke(app, ["check", "--tools-file", path, "--format", fmt])
    assert grouped.exit_code == 0, grouped.output
    assert _findings_part(grouped.stdout).count("MCP110") == 1
    assert "8 tools: alpha, bravo, charlie and 5 more" in " ".join(grouped.stdout.split())  # however wrapped
    assert "8 notes" in grouped.stdout  # the headline still counts every finding
    every = runner.invoke(app, ["check", "--tools-file", path, "--format", fmt, "--verbose"])
    assert _findings_part(every.stdout).count("MCP110") == 8
    few = runner.invoke(app, ["check", "--tools-file", write(tmp_path, _many_undescribed(5), "five.json")])
    assert _findings_part(few.stdout).count("MCP110") == 5  # five tools: not grouped


def _findings_part(out: str) -> str:
    """The report up to the score's breakdown (which names each rule that cost points once more)."""
    return out.split("\nScore ")[0].split("### Score ")[0]


def test_json_and_sarif_keep_every_finding(tmp_path: Path) -> None:
    path = write(tmp_path, _many_undescribed(8))
    data = check_json("--tools-file", path)
    assert sum(finding["code"] == "MCP110" for finding in data["findings"]) == 8
    sarif = json.loads(runner.invoke(app, ["check", "--tools-file", path, "--format", "sarif"]).stdout)
    assert sum(result["ruleId"] == "MCP110" for result in sarif["runs"][0]["results"]) == 8


def test_tools_flag_prints_every_tool_by_cost(tmp_path: Path) -> None:
    tools = _many_undescribed(8)
    tools[6]["description"] = "A much longer description than the others, " * 8
    path = write(tmp_path, tools)
    result = runner.invoke(app, ["check", "--tools-file", path, "--tools"])
    assert result.exit_code == 0, result.output
    section = result.stdout.split("Tools, most expensive first")[1].split("\n\n")[0].splitlines()
    header, rows = section[1], section[2:]
    assert header.split() == ["Claude", "4.7+", "Claude", "3-4.6", "OpenAI", "Gemini"]
    assert len(rows) == 8 and rows[0].split()[0] == "golf"
    data = check_json("--tools-file", path)
    assert [row.split()[0] for row in rows] == [tool["name"] for tool in data["tools"]]
    for row, tool in zip(rows, data["tools"], strict=True):
        numbers = [int(cell.replace(",", "")) for cell in row.split()[1:]]
        assert numbers == [tool["tokens"][key] for key in ("anthropic", "anthropic-v3", "openai", "gemini")]
    default = runner.invoke(app, ["check", "--tools-file", path])
    assert "Largest tools" in default.stdout and "Tools, most expensive first" not in default.stdout


def test_text_names_each_claude_generation_and_the_headline_one() -> None:
    result = runner.invoke(app, ["check", "--example"])
    assert "  Claude 4.7+ " in result.stdout and "  Claude 3-4.6 " in result.stdout  # short names in 80 columns
    assert "of a 200k context (Claude 4.7+)" in result.stdout
    verbose = " ".join(runner.invoke(app, ["check", "--example", "--verbose"]).stdout.split())
    assert "(Claude Opus 4.7+ tokenizer," in verbose and "(Claude 3 to Opus 4.6 tokenizer," in verbose
