"""A baseline that tells the truth (issue 37, item 4): each reproduction runs ``fathom check`` as a CI job would.

The README's own example (``--baseline ... --max-increase 10%``) passed while a new problem appeared and nothing
said so; the ``10%`` gate named the largest absolute change, not the figure nearest its limit; an
annotations-only change printed rows of "changed (+0 tokens)" without saying what changed, unfolded; and findings
of a removed tool were called "fixed".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app

runner = CliRunner()


def _tool(name: str, *, described: bool = True, note: str = "", read_only: bool = True) -> dict[str, Any]:
    city: dict[str, Any] = {"type": "string"}
    if described:
        city["description"] = "The city, e.g. Zurich."
    return {
        "name": name,
        "description": f"Weather facts of kind {name} for one city, in metric units.{note}",
        "inputSchema": {"type": "object", "properties": {"city": city}, "required": ["city"]},
        "annotations": {"readOnlyHint": read_only},
    }


def _write(folder: Path, name: str, tools: list[dict[str, Any]]) -> str:
    path = folder / name
    path.write_text(json.dumps(tools), encoding="utf-8")
    return name


def _run(folder: Path, *args: str) -> Any:
    old = Path.cwd()
    os.chdir(folder)  # outputs stay inside the working tree (docs/ci.md)
    try:
        return runner.invoke(app, ["check", *args], prog_name="fathom")
    finally:
        os.chdir(old)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # a working tree, as in CI
    return tmp_path


def _saved(tree: Path, tools: list[dict[str, Any]]) -> None:
    _write(tree, "before.json", tools)
    done = _run(tree, "-f", "before.json", "--save-baseline", "base.json")
    assert done.exit_code == 0, done.stderr


def test_a_new_problem_that_no_gate_covers_is_said_and_fail_on_new_gates_it(tree: Path) -> None:
    _saved(tree, [_tool("a"), _tool("b")])
    broken = _tool("b")
    broken["inputSchema"]["required"] = ["town"]  # MCP204: a problem
    _write(tree, "after.json", [_tool("a"), broken])

    readme = _run(tree, "-f", "after.json", "--baseline", "base.json", "--max-increase", "10%")
    gated = _run(tree, "-f", "after.json", "--baseline", "base.json", "--fail-on-new", "problem")

    assert readme.exit_code == 0  # the gates asked for passed ...
    assert (
        "fathom: note: 1 problem new since the baseline went through no gate: --fail-on-new problem fails on them"
        in readme.stderr
    )  # ... and it says the new problem was not gated
    assert gated.exit_code == 1
    assert "gate --fail-on-new problem failed: 1 finding new since the baseline (1 problem)" in gated.stderr
    assert "note:" not in gated.stderr


def test_fail_on_new_without_a_baseline_is_a_usage_error(tree: Path) -> None:
    _write(tree, "after.json", [_tool("a")])

    done = _run(tree, "-f", "after.json", "--fail-on-new", "warning")

    assert done.exit_code == 2 and "--fail-on-new compares with a baseline" in done.stderr


def test_the_increase_gate_names_the_figure_nearest_its_limit(tree: Path) -> None:
    _saved(tree, [_tool("a"), _tool("b")])
    _write(tree, "after.json", [_tool("a", note=" Also wind speed and gusts."), _tool("b")])

    done = _run(tree, "-f", "after.json", "--baseline", "base.json", "--max-increase", "10%", "--format", "json")

    assert done.exit_code == 0, done.stderr
    document = json.loads(done.stdout)
    tokens = document["baseline"]["tokens"]
    nearest = max(tokens, key=lambda provider: tokens[provider]["percent"])
    gate = next(gate for gate in document["gates"] if gate["gate"] == "--max-increase 10%")
    assert gate["passed"] and gate["message"].startswith("nearest the limit: ")
    assert f"{tokens[nearest]['percent']:+.1f} %" in gate["message"]
    assert gate["message"].endswith("; 10% allowed")


def test_a_changed_tool_says_what_changed_and_many_rows_fold(tree: Path) -> None:
    names = [f"t{index}" for index in range(8)]
    _saved(tree, [_tool(name) for name in names])
    _write(tree, "after.json", [_tool(name, read_only=False) for name in names])  # annotations only

    text = _run(tree, "-f", "after.json", "--baseline", "base.json")
    data = _run(tree, "-f", "after.json", "--baseline", "base.json", "--format", "json")

    assert text.exit_code == 0
    changed = [line for line in text.stdout.splitlines() if line.startswith("  changed ")]
    assert len(changed) == 5 and all("(annotations)" in line for line in changed)
    assert "  ... and 3 more changed tools (--format json lists every one)" in text.stdout
    tools = json.loads(data.stdout)["baseline"]["tools"]
    assert len(tools) == 8 and all(tool["fields"] == ["annotations"] for tool in tools)


def _broken(name: str) -> dict[str, Any]:
    tool = _tool(name)
    tool["inputSchema"]["required"] = ["town"]  # MCP204, a stable problem
    return tool


def test_findings_of_a_removed_tool_are_gone_with_it_not_fixed(tree: Path) -> None:
    _saved(tree, [_tool("a"), _broken("b"), _broken("c")])
    _write(tree, "after.json", [_tool("a"), _tool("c")])  # b removed; c's finding fixed

    text = _run(tree, "-f", "after.json", "--baseline", "base.json")
    data = json.loads(_run(tree, "-f", "after.json", "--baseline", "base.json", "--format", "json").stdout)

    assert "(gone with the tool)" in text.stdout and "· b (gone with the tool)" in text.stdout
    assert [f["tool"] for f in data["baseline"]["gone_findings"]] == ["b"]
    assert [f["tool"] for f in data["baseline"]["fixed_findings"]] == ["c"]


def test_the_json_document_carries_its_format_version(tree: Path) -> None:
    _write(tree, "after.json", [_tool("a")])

    document = json.loads(_run(tree, "-f", "after.json", "--format", "json").stdout)

    assert next(iter(document)) == "format_version" and document["format_version"] == 2
