"""``fathom check``'s text as a reader checks it at 80 columns (issue 46, item 9): what it says of a small list's
deferred loading, of the refusal cap, of an empty file, and how its lines wrap (one indent per block, a number
never parted from its unit)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from scanner.cli import app

runner = CliRunner()

# A root anyOf: the Anthropic API refuses the whole list (MCP801), so its score may not exceed 30.
REFUSED = {
    "name": "pick",
    "description": "Pick one record by its id, e.g. id 42.",
    "inputSchema": {
        "type": "object",
        "properties": {"id": {"type": "integer", "description": "The id, e.g. 42."}},
        "anyOf": [{"required": ["id"]}],
    },
}
UNDESCRIBED = [{"name": f"t{index}", "inputSchema": {"type": "object", "properties": {"a": {}}}} for index in range(6)]


def _tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Return the {name} of two numbers, e.g. 2 and 3.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number", "description": "The first, e.g. 2."}},
            "required": ["a"],
        },
        "annotations": {"readOnlyHint": True},
    }


def check(tmp_path: Path, tools: list[dict[str, Any]], *extra: str) -> str:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", str(path), *extra], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_three_tool_list_is_not_said_to_load_3_to_5(tmp_path: Path) -> None:
    out = check(tmp_path, [_tool("sum"), _tool("product"), _tool("difference")])
    said = " ".join(out.split())
    assert "with 3-5 loaded" not in said
    assert re.search(r"\(deferred, [\d,]+ with all 3 loaded\)", said), said
    assert not re.search(r"(\d[\d,]*)-\1 with", said)  # never "304-304"


def test_the_cap_is_said_as_a_ceiling_when_it_did_not_bind(tmp_path: Path) -> None:
    capped = " ".join(check(tmp_path, [REFUSED]).split())
    assert "Score 30.0 / 100" in capped and "capped at 30: a client refuses the whole list (MCP801)" in capped
    low = " ".join(check(tmp_path, [REFUSED, *UNDESCRIBED]).split())
    score = float(re.search(r"Score ([\d.]+) / 100", low).group(1))  # type: ignore[union-attr]
    assert score < 30
    assert "capped at 30" not in low
    assert "at most 30 while a client refuses the whole list (MCP801); this list scores below that anyway" in low


def test_an_empty_file_is_said_to_be_empty(tmp_path: Path) -> None:
    for text in ("", "  \n"):
        path = tmp_path / "tools.json"
        path.write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["check", "-f", str(path)])
        assert result.exit_code == 2
        assert result.stderr.startswith(f"fathom: {path} is empty: give a tool list"), result.stderr
        assert "Expecting value" not in result.stderr


UNITS = ("%", "ms", "s", "tokens", "token", "characters", "tools", "tool", "KB", "MB")


def test_verbose_lines_wrap_under_themselves_and_numbers_keep_their_units(tmp_path: Path) -> None:
    out = check(tmp_path, [REFUSED, _tool("sum"), *UNDESCRIBED], "--verbose")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    block = lines[lines.index("Tokens per turn") + 1 : next(i for i, line in enumerate(lines) if "% of a 200k" in line)]
    methods = [line for line in block if line.startswith(" " * 10)]  # every method line and its continuations
    assert len(methods) > 4 and len({len(line) - len(line.lstrip()) for line in methods}) == 1, methods
    for before, after in itertools.pairwise(lines):
        first = after.strip().split(" ")[0].rstrip(",;:.)")
        assert not (re.search(r"\d$", before) and first in UNITS), (before, after)


def test_markdown_tables_name_every_column(tmp_path: Path) -> None:
    """Issue 46: "| Gate | Result | |": a header cell left empty."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([REFUSED, *UNDESCRIBED]), encoding="utf-8")
    saved = tmp_path / "b.json"
    assert runner.invoke(app, ["check", "-f", str(path), "--save-baseline", str(saved)]).exit_code == 0
    path.write_text(json.dumps([REFUSED, _tool("sum")]), encoding="utf-8")
    result = runner.invoke(
        app, ["check", "-f", str(path), "--format", "markdown", "--baseline", str(saved), "--min-score", "1"]
    )
    lines = result.stdout.splitlines()
    headers = [line for line, rule in itertools.pairwise(lines) if rule.startswith("|---")]
    assert any(line.startswith("| Gate |") for line in headers) and any("| Finding |" in line for line in headers)
    for header in headers:
        cells = [cell.strip() for cell in header.strip().strip("|").split("|")]
        assert all(cells), f"an empty header cell: {header}"
