"""What ``--help`` says, as a new user reads it at 80 columns (issue 46, item 13): every command's summary whole,
never cut with "...", and a run's range said as a person would, not as the database's integer limit."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from scanner.cli import app

runner = CliRunner()


def _summaries() -> dict[str, str]:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    block = result.stdout.split("Commands:\n", 1)[1]
    found: dict[str, str] = {}
    name = ""
    for line in block.splitlines():
        head = re.match(r"  (\S+)\s+(.*)", line)
        if head:
            name = head.group(1)
            found[name] = head.group(2)
        elif line.strip() and name:
            found[name] += " " + line.strip()
    return found


def test_every_command_summary_is_whole() -> None:
    summaries = _summaries()
    assert {"check", "scan", "servers", "history", "diff", "report", "demo"} <= set(summaries)
    for name, text in summaries.items():
        assert not text.endswith("..."), f"{name}: {text}"
        assert text.endswith((".", ")")), f"{name}: {text}"  # a sentence, not a cut
        assert text.count("(") == text.count(")"), f"{name}: {text}"
    assert summaries["check"].startswith("Check one tool list: tokens per turn per provider")


@pytest.mark.parametrize(("command", "flag"), [("findings", "--run"), ("diff", "--from"), ("report", "--run")])
def test_a_run_option_says_its_range_plainly(command: str, flag: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert "9223372036854775807" not in result.stdout
    said = " ".join(result.stdout.split())
    assert f"{flag} RUN" in said and "[x>=1]" in said
