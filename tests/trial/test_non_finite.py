"""``fathom try`` and numbers JSON cannot hold (issue 33, low items): a NaN in a model's tool-call arguments made
``--format json`` and ``--save`` end in a traceback; a NaN or Infinity in the tool list or a case is bad input,
said in one line before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from tests.trial.stub import Stub

pytestmark = pytest.mark.timeout(120)
runner = CliRunner()
TOOLS = [
    {
        "name": "search_catalog",
        "description": "Search the catalog.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "number"}}},
    }
]


def _refuse(word: str) -> None:
    raise ValueError(f"bare {word} in the output")


def _answer(arguments: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "search_catalog", "arguments": arguments}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    return {"choices": [{"message": message, "finish_reason": "tool_calls"}], "usage": {}}


def _args(stub: Stub, tools: Path, *more: str) -> list[str]:
    return ["try", "--model", "m", "--base-url", stub.url + "/v1", "-f", str(tools), *more]


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    return path


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_argument_from_the_model_is_written_null(
    stub: Stub, tools_file: Path, tmp_path: Path, number: str
) -> None:
    stub.reply(200, _answer(f'{{"q": {number}}}'))
    save = tmp_path / "t.json"
    result = runner.invoke(app, [*_args(stub, tools_file, "--prompt", "x"), "--format", "json", "--save", str(save)])
    assert result.exit_code == 0, (result.output, result.exception)
    for text in (result.stdout, save.read_text(encoding="utf-8")):
        document = json.loads(text, parse_constant=_refuse)
        assert "search_catalog" in text and document is not None
    assert '"q": null' in result.stdout


def test_a_non_finite_number_in_the_tool_list_is_one_line_and_nothing_is_sent(stub: Stub, tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    schema = '{"type": "object", "properties": {"q": {"type": "number", "default": NaN}}}'
    tools.write_text(f'{{"tools": [{{"name": "search_catalog", "inputSchema": {schema}}}]}}', encoding="utf-8")
    stub.reply(200, _answer('{"q": 1}'))
    result = runner.invoke(app, [*_args(stub, tools, "--prompt", "x"), "--format", "json"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("fathom: ") and len(result.output.strip().splitlines()) == 1
    assert "NaN or Infinity at /0/inputSchema/properties/q/default" in result.output
    assert isinstance(result.exception, SystemExit)
    assert stub.requests == []


def test_a_non_finite_number_in_a_case_is_one_line(stub: Stub, tools_file: Path, tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text("- prompt: find tents\n  tool: search_catalog\n  arguments: {q: .nan}\n", encoding="utf-8")
    result = runner.invoke(app, [*_args(stub, tools_file, "--cases", str(cases)), "--format", "json"])
    assert result.exit_code == 2, result.output
    assert "arguments hold NaN or Infinity at /q" in result.output
    assert len(result.output.strip().splitlines()) == 1 and isinstance(result.exception, SystemExit)
