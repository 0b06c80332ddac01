"""``fathom check --openai-strict``: the strict-mode view appears in text, JSON and Markdown only when asked for,
says per tool whether OpenAI's strict mode takes it (as sent, after the Agents SDK's conversion) with the first
reasons, and never changes the findings, the score, a gate or the exit code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from scanner.cli import app

runner = CliRunner()
STR = {"type": "string", "description": "A page id, e.g. 42."}
TOOLS = [
    {
        "name": "read_page",
        "description": "Reads one page by its id and returns its title and text.",
        "inputSchema": {"type": "object", "properties": {"id": STR}, "required": ["id"], "additionalProperties": False},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "find_pages",
        "description": "Finds pages whose text has the words given and returns their ids and titles.",
        "inputSchema": {"type": "object", "properties": {"words": STR, "limit": {"type": "integer"}}, "required": []},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "tag_page",
        "description": "Sets free-form tags on one page, given its id, and returns the page's tags.",
        "inputSchema": {
            "type": "object",
            "properties": {"id": STR, "tags": {"type": "object", "description": "Tag names to values."}},
            "required": ["id", "tags"],
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    },
]


def _check(tmp_path: Path, *args: str) -> tuple[int, str]:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}))
    result = runner.invoke(app, ["check", "--tools-file", str(path), *args])
    return result.exit_code, result.stdout


def _without_view(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "openai_strict"}


def test_off_by_default_in_every_format(tmp_path: Path) -> None:
    code, text = _check(tmp_path)
    assert code == 0 and "strict mode" not in text
    _, raw = _check(tmp_path, "--format", "json")
    assert "openai_strict" not in json.loads(raw)
    _, markdown = _check(tmp_path, "--format", "markdown")
    assert "strict mode" not in markdown


def test_text_names_each_refused_tool_and_why(tmp_path: Path) -> None:
    code, text = _check(tmp_path, "--openai-strict")
    assert code == 0
    block = text[text.index("OpenAI strict mode") : text.index("Score 100.0 / 100")]
    flat = re.sub(r"\s+", " ", block)
    assert "1 of 3 tools can be sent with strict: true; 2 of 3 after the Agents SDK's conversion." in flat
    assert "find_pages: refused as sent, accepted after the Agents SDK's conversion" in flat
    assert "/inputSchema/required: All fields must be required: words, limit" in flat
    assert "tag_page: refused, also after the Agents SDK's conversion" in flat
    assert "/inputSchema/properties/tags: additionalProperties: false must always be set in objects" in flat
    assert "read_page" not in block  # accepted tools are counted, not listed


def test_json_and_markdown_carry_the_view_and_nothing_else_changes(tmp_path: Path) -> None:
    _, plain = _check(tmp_path, "--format", "json")
    code, raw = _check(tmp_path, "--format", "json", "--openai-strict")
    assert code == 0
    data = json.loads(raw)
    view = data["openai_strict"]
    assert (view["accepted_as_sent"], view["accepted_after_conversion"]) == (1, 2)
    assert [(t["tool"], t["as_sent"], t["after_conversion"]) for t in view["tools"]] == [
        ("read_page", "accepted", "accepted"),
        ("find_pages", "refused", "accepted"),
        ("tag_page", "refused", "refused"),
    ]
    assert view["source"].startswith("https://platform.openai.com/docs/guides/structured-outputs")
    assert _without_view(data) == json.loads(plain)  # findings, score, verdicts, gates: the same
    _, markdown = _check(tmp_path, "--format", "markdown", "--openai-strict")
    assert "| tag\\_page | refused | refused |" in markdown  # names escaped as every Markdown cell
    assert "1 of 3 tools can be sent with strict: true" in markdown


def test_never_a_gate(tmp_path: Path) -> None:
    """Strict mode is the client's choice: a list no tool of which strict mode takes passes every gate it passed."""
    code, _ = _check(tmp_path, "--openai-strict", "--fail-on-reject", "openai-api", "--fail-on", "warning")
    assert code == 0


def test_refused_with_as(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}))
    result = runner.invoke(app, ["check", "--tools-file", str(path), "--as", "openai", "--openai-strict"])
    assert result.exit_code == 2
    assert "fathom: --as prints only the provider's JSON: it takes no --openai-strict" in result.stderr


def test_the_config_file_turns_it_on(tmp_path: Path) -> None:
    (tmp_path / "fathom.toml").write_text("openai-strict = true\n", encoding="utf-8")
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}))
    result = runner.invoke(app, ["check", "--tools-file", str(path), "--config", str(tmp_path / "fathom.toml")])
    assert result.exit_code == 0 and "OpenAI strict mode" in result.stdout
    plain = runner.invoke(
        app, ["check", "--tools-file", str(path), "--as", "openai", "--config", str(tmp_path / "fathom.toml")]
    )
    assert plain.exit_code == 0 and "strict mode" not in plain.stdout  # --as prints the provider's JSON only
