"""Gates that compare nothing fail with one line (issue 33 item 4): ``--max-increase`` against a baseline that shares
no provider with the check, and ``--fail-on`` when a config's select/ignore leave no rule (``ignore = ["MCP"]``
would otherwise turn the workflow's ``--fail-on note`` into a silent pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.check.gates import rules_left
from scanner.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[2]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "tools.json").write_text(
        (ROOT / "scanner" / "examples" / "example-tools.json").read_text(encoding="utf-8"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def gate_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("fathom: gate ")]


def test_max_increase_against_a_baseline_sharing_no_provider_fails(tree: Path) -> None:
    assert runner.invoke(app, ["check", "-f", "tools.json", "--save-baseline", "base.json"]).exit_code == 0
    data = json.loads((tree / "base.json").read_text(encoding="utf-8"))
    data["tokens"] = {"mistral": 10}  # a provider this fathom does not measure
    (tree / "base.json").write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "base.json", "--max-increase", "10%"])
    assert result.exit_code == 1
    assert gate_lines(result.stderr) == [
        "fathom: gate --max-increase 10% failed: the baseline shares no provider with this check, "
        "so nothing was compared"
    ]


@pytest.mark.parametrize(
    "config, flags",
    [('ignore = ["MCP"]\n', []), ("", ["--ignore", "MCP"]), ('select = ["MCP1"]\nignore = ["MCP"]\n', [])],
)
def test_ignoring_every_rule_says_so_and_fail_on_note_fails(tree: Path, config: str, flags: list[str]) -> None:
    (tree / "fathom.toml").write_text(config, encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--fail-on", "note", *flags])
    assert result.exit_code == 1
    warning = [line for line in result.stderr.splitlines() if line.startswith("fathom: warning:")]
    assert len(warning) == 1 and "every rule is ignored" in warning[0]
    assert gate_lines(result.stderr) == [
        "fathom: gate --fail-on note failed: every rule is ignored (select/ignore leave none), so no finding was "
        "compared: ignore fewer rules"
    ]
    plain = runner.invoke(app, ["check", "-f", "tools.json", *flags])  # no gate: exit 0, the warning still said
    assert plain.exit_code == 0 and "every rule is ignored" in plain.stderr


def test_ignoring_some_rules_is_quiet_and_gates_as_before(tree: Path) -> None:
    assert rules_left((), ("MCP",)) == 0 and rules_left((), ("MCP1",)) > 0 and rules_left((), ()) > 0
    (tree / "fathom.toml").write_text('ignore = ["MCP1", "MCP2", "MCP3", "MCP4"]\n', encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--fail-on", "problem"])
    assert "every rule is ignored" not in result.stderr
    assert result.exit_code == 0 and gate_lines(result.stderr) == []
