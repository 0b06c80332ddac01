"""What a config file did is said (issue 37, item 2): the file applied is named, a per-tool ignore for a tool the
list no longer has (or that sets nothing aside) is reported, and 23 identical "rule ignored" lines are one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from scanner.cli import app

runner = CliRunner()


def _tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Weather facts of kind {name} for one city, in metric units.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "description": "A city."}}},
    }  # no annotations: MCP110 on every tool


def _check(folder: Path, *args: str) -> Any:
    old = Path.cwd()
    os.chdir(folder)
    try:
        return runner.invoke(app, ["check", "-f", "tools.json", *args], prog_name="fathom")
    finally:
        os.chdir(old)


def test_the_config_applied_is_named_and_stale_ignores_are_reported(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "tools.json").write_text(json.dumps([_tool("forecast"), _tool("alerts")]), encoding="utf-8")
    (tmp_path / "fathom.toml").write_text(
        "[[per-tool-ignores]]\ntool = 'forcast'\nreason = 'typo, and it was renamed anyway'\n"
        "[[per-tool-ignores]]\ntool = 'alerts'\nrules = ['MCP104']\nreason = 'fixed long ago'\n"
        "[[per-tool-ignores]]\ntool = 'forecast'\nrules = ['MCP110']\nreason = 'annotations come in v2'\n",
        encoding="utf-8",
    )

    done = _check(tmp_path)

    assert done.exit_code == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("fathom: note:")]
    assert notes[0] == "fathom: note: config fathom.toml applied"
    assert any(
        "per-tool ignore of 'forcast': the list has no tool of that name; did you mean 'forecast'?" in n for n in notes
    )
    assert any("per-tool ignore of 'alerts' (MCP104): it set no finding aside" in n for n in notes)
    assert not any("'forecast' (MCP110)" in note for note in notes)  # it did set MCP110 aside


def test_repeated_ignore_lines_fold_into_one(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    tools = [_tool(f"kind{index}") for index in range(23)]
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")

    done = _check(tmp_path, "--ignore", "MCP110")

    assert done.exit_code == 0
    ignored = done.stdout.split("Ignored (")[1].split("\n\n")[0]
    assert ignored.count("MCP110") == 1  # one line (wrapped to the width), not 23
    folded = " ".join(ignored.split())
    assert "note MCP110 annotations-missing · 23 findings: kind0, kind1, kind2 and 20 more: rule ignored" in folded
