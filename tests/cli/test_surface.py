"""The command line's surface: every command explains itself and is in the README; rules, rule, demo."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.main import get_command
from typer.testing import CliRunner

from scanner.cli import app
from scanner.rules import RULES

runner = CliRunner()
README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def command_names() -> list[str]:
    return sorted(get_command(app).commands)  # type: ignore[attr-defined]


def test_every_command_has_help_and_a_readme_mention() -> None:
    names = command_names()
    assert {
        "check",
        "rules",
        "rule",
        "scan",
        "runs",
        "servers",
        "history",
        "findings",
        "diff",
        "rescore",
        "report",
        "demo",
        "doctor",
    } <= set(names)
    for name in names:
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0, name
        assert len(result.stdout) > 200, f"{name} --help says too little"
        assert f"`fathom {name}" in README, f"README does not mention fathom {name}"


def test_readme_starts_with_the_two_setup_commands() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert block is not None
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 2
    assert lines[0].endswith("fathom demo") and lines[1] == "bash .ci/run"


def test_top_level_help_documents_exit_codes() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for code in ("0", "1", "2", "3", "4", "130"):
        assert re.search(rf"^\s*{code}\s+\S", result.stdout, re.M), code


def test_rules_lists_the_whole_catalogue() -> None:
    result = runner.invoke(app, ["rules"])
    assert result.exit_code == 0
    listed = re.findall(r"^(MCP\d{3})\s", result.stdout, re.M)
    assert listed == list(RULES)
    assert len(listed) >= 57 and listed[0] == "MCP101" and listed[-1] == "MCP810"  # catalogue 6
    assert {"MCP113", "MCP217", "MCP218", "MCP801", "MCP802", "MCP803", "MCP808", "MCP809", "MCP810"} <= set(listed)


def test_rule_explains_one_and_refuses_unknown_codes() -> None:
    result = runner.invoke(app, ["rule", "mcp205"])
    assert result.exit_code == 0
    assert result.stdout.startswith("MCP205 param-untyped (problem, stable)")
    assert RULES["MCP205"].hint in result.stdout
    assert "Status: stable: counts in the score and the gates." in result.stdout
    preview = runner.invoke(app, ["rule", "MCP403"]).stdout
    assert preview.startswith("MCP403 promotional-claims (warning, preview)")
    assert "shown only with --preview" in preview
    # too few labels to measure: the counts, never "not yet measured" (issue 45)
    assert re.search(r"Precision: 3 of 4 labelled findings right on real lists, too few to measure", preview)
    measured = runner.invoke(app, ["rule", "MCP104"]).stdout
    assert re.search(r"Precision: \d+ % right on real lists \(\d+ of \d+ labelled\)\.", measured)
    new = runner.invoke(app, ["rule", "MCP218"]).stdout
    assert "Precision: not yet measured: no finding of it labelled on real lists." in new
    retired = runner.invoke(app, ["rule", "MCP404"]).stdout
    assert retired.startswith("MCP404 secret-parameter (warning, removed)") and "Retired in catalogue 6" in retired
    assert runner.invoke(app, ["rule", "MCP999"]).exit_code == 2


def test_query_on_a_missing_database_is_an_error_not_an_empty_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    result = runner.invoke(app, ["servers", "--db", str(missing)])
    assert result.exit_code == 2 and "no database" in result.stderr
    assert not missing.exists()


def test_demo_scans_twice_and_writes_the_report(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--workdir", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    assert "scan 1 (run 1)" in result.stdout and "scan 2 (run 2)" in result.stdout
    index = tmp_path / "demo" / "report" / "index.html"
    assert index.is_file() and index.as_uri() in result.stdout
    database = tmp_path / "demo" / "demo.db"
    runs = json.loads(runner.invoke(app, ["runs", "--db", str(database), "--format", "json"]).stdout)
    assert [run["status"] for run in runs] == ["finished", "finished"]
    servers = {
        row["server"]: row
        for row in json.loads(runner.invoke(app, ["servers", "--db", str(database), "--format", "json"]).stdout)
    }
    assert servers["example/corp-crm"]["last_outcome"] == "auth_required"
    assert servers["example/offline-service"]["last_outcome"] == "connect_error"
    assert servers["example/alpenglow"]["last_outcome"] == "ok"
    silently = json.loads(
        runner.invoke(app, ["findings", "--db", str(database), "--rule", "MCP501", "--format", "json"]).stdout
    )
    assert [(row["server"], row["tool"]) for row in silently] == [("example/docs-search", "search_docs")]
    removed = json.loads(
        runner.invoke(app, ["findings", "--db", str(database), "--rule", "MCP502", "--format", "json"]).stdout
    )
    assert {row["tool"] for row in removed if row["server"] == "example/mega-suite"} == {
        "resource_42_manage",
        "resource_43_manage",
        "resource_44_manage",
    }
    # team-hub is scanned in both lanes with the demo's own token; alpenglow rewrites its instructions at 2.3.0
    lanes = json.loads(
        runner.invoke(app, ["history", "example/team-hub", "--db", str(database), "--format", "json"]).stdout
    )
    assert [row["lanes"] for row in lanes] == ["anonymous: 3 of 12 tools; credentialed: 12 tools"] * 2
    for code, server in (("MCP601", "example/team-hub"), ("MCP503", "example/alpenglow")):
        rows = json.loads(
            runner.invoke(app, ["findings", "--db", str(database), "--rule", code, "--format", "json"]).stdout
        )
        assert [row["server"] for row in rows] == [server], code
    assert "(credentialed lane)" in index.read_text(encoding="utf-8")
    (alpenglow,) = (tmp_path / "demo" / "report" / "servers").glob("example-alpenglow-*.html")
    assert "<dt>Instructions</dt><dd>" in alpenglow.read_text(encoding="utf-8")
