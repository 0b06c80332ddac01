"""The baseline file and the comparison with it, from tool-list files alone (no database, no server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scanner.check import baseline
from scanner.check.result import CheckRequest, CheckResult
from scanner.check.run import run_check
from scanner.errors import InputError

_TOPICS = {
    "a": "Current weather and the next hours for one city, in metric units.",
    "b": "Severe storm warnings issued today by the national weather service.",
    "gone": "Pollen counts per plant family, measured at the nearest station.",
    "new": "Sunrise, sunset and moon phase for a place on a given day.",
    "x": "Air quality index with the pollutant that drives it.",
}


def _tool(name: str, described: bool = True, extra: str = "") -> dict[str, Any]:
    """A read tool; ``described=False`` leaves out its annotations (MCP110, a stable note) and its parameter's
    description (MCP207, a preview rule: measured, never shown by default or compared)."""
    param: dict[str, Any] = {"type": "string"}
    if described:
        param["description"] = "The city, e.g. Zurich."
    tool = {
        "name": name,
        "description": _TOPICS[name] + extra,
        "inputSchema": {"type": "object", "properties": {"city": param}, "required": ["city"]},
    }
    if described:
        tool["annotations"] = {"readOnlyHint": True}  # read tools, said so (no MCP110 under catalogue 4)
    return tool


def _check(tmp_path: Path, tools: list[dict[str, Any]]) -> CheckResult:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    return run_check(CheckRequest(tools_file=str(path)))


def test_round_trip_and_the_comparison(tmp_path: Path) -> None:
    before = _check(tmp_path, [_tool("a"), _tool("b", described=False), _tool("gone")])
    saved = tmp_path / "base.json"
    baseline.save(before, saved)
    document = baseline.load(saved)
    assert before.score is not None and document["score"] == before.score.score
    after = _check(tmp_path, [_tool("a", extra=" Also wind."), _tool("b"), _tool("new", described=False)])
    delta = baseline.compare(document, after, path=str(saved))
    assert {(tool.name, tool.change) for tool in delta.tools} == {
        ("a", "changed"),
        ("b", "changed"),
        ("new", "added"),
        ("gone", "removed"),
    }
    changed = next(tool for tool in delta.tools if tool.name == "a")
    assert all(changed.delta(provider) > 0 for provider in changed.after)
    removed = next(tool for tool in delta.tools if tool.name == "gone")
    assert all(removed.delta(provider) < 0 for provider in removed.before)
    assert [(f.code, f.tool) for f in delta.new] == [("MCP110", "new")]
    assert [(f.code, f.tool) for f in delta.fixed] == [("MCP110", "b")]
    assert delta.tools_before == delta.tools_after == 3


def test_duplicate_names_are_compared_one_by_one(tmp_path: Path) -> None:
    document = baseline.baseline_dict(_check(tmp_path, [_tool("x"), _tool("x")]))
    after = _check(tmp_path, [_tool("x"), _tool("x"), _tool("x")])
    delta = baseline.compare(document, after)
    assert [(tool.name, tool.change) for tool in delta.tools] == [("x#3", "added")]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[]", "not a fathom baseline"),
        ('{"fathom_baseline": 2, "tokens": {}, "tools": [], "findings": []}', "baseline format 2"),
        ('{"fathom_baseline": 1, "tokens": [], "tools": [], "findings": []}', "'tokens' is missing"),
        ("{", "not valid JSON"),
    ],
)
def test_a_file_that_is_not_a_baseline_is_an_input_error(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        baseline.load(path)
    assert fragment in str(caught.value)
