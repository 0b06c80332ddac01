"""Preview rules out of sight everywhere (issue 45, rules.md status): on the demo's own database, no preview rule's
code appears in any default answer of `findings`, `servers`, `history`, `diff` (table, JSON, CSV) or in any page
or export of the site, whose counts are the stable rules'; with `--preview` (or `preview = true` in the config
file) every preview row is marked with its status and its rule's measured precision; asking for one preview rule by
code shows it, marked."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.rules import RULES

PREVIEW = sorted(code for code, rule in RULES.items() if rule.status == "preview")
CODE = re.compile(r"\bMCP\d{3}\b")
runner = CliRunner()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The demo, built once: two scans of the example servers (a real SQLite file) and its site."""
    from scanner.demo import run_demo

    result = run_demo(tmp_path_factory.mktemp("demo"))
    yield result.report_index.parent.parent / "demo.db"


def _run(*args: str) -> str:
    done = runner.invoke(app, list(args), env={"COLUMNS": "400"})
    assert done.exit_code == 0, done.output
    return done.output


def _preview_codes(text: str) -> set[str]:
    return {code for code in CODE.findall(text) if code in PREVIEW}


def _servers(db: Path) -> list[str]:
    return [row["server"] for row in json.loads(_run("servers", "--db", str(db), "--format", "json"))]


def test_no_preview_code_in_any_default_answer(demo: Path) -> None:
    db = str(demo)
    with_preview = _preview_codes(_run("findings", "--db", db, "--preview", "--format", "json"))
    assert with_preview, "the demo has preview findings: the test would prove nothing without them"
    for fmt in ("table", "json", "csv"):
        assert not _preview_codes(_run("findings", "--db", db, "--format", fmt)), fmt
        assert not _preview_codes(_run("servers", "--db", db, "--format", fmt)), fmt
        for server in _servers(demo):
            assert not _preview_codes(_run("history", server, "--db", db, "--format", fmt)), (fmt, server)
            assert not _preview_codes(_run("diff", server, "--db", db, "--format", fmt)), (fmt, server)


def test_no_preview_code_on_any_default_page_or_export(demo: Path, tmp_path: Path) -> None:
    """The rule catalogue (rules.html) documents every rule, preview ones as such; no other file names one."""
    _run("report", "--db", str(demo), "--out", str(tmp_path / "site"))
    files = [path for path in (tmp_path / "site").rglob("*") if path.is_file() and path.suffix != ".svg"]
    assert len(files) > 10
    for path in files:
        if path.name == "rules.html":
            continue
        assert not _preview_codes(path.read_text(encoding="utf-8")), path.name
    board = json.loads((tmp_path / "site" / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["ranked"] and all(row["preview"] == 0 and row["preview_rules"] == [] for row in board["ranked"])


def test_with_preview_every_preview_row_is_marked(demo: Path) -> None:
    db = str(demo)
    rows = json.loads(_run("findings", "--db", db, "--preview", "--format", "json"))
    previews = [row for row in rows if row["code"] in PREVIEW]
    assert previews and all(row["status"] == "preview" and "precision" in row for row in previews)
    assert all(row["precision_text"] for row in previews)
    assert all(row["status"] == "stable" for row in rows if row["code"] not in PREVIEW)
    table = _run("findings", "--db", db, "--preview")
    marked = [line for line in table.splitlines() if _preview_codes(line)]
    assert marked and all(" preview " in line for line in marked)
    for server in _servers(demo):
        for line in _run("diff", server, "--db", db, "--preview").splitlines():
            for code in _preview_codes(line):
                assert f"{code} {RULES[code].slug} [preview: " in line, line


def test_asking_for_a_preview_rule_by_code_shows_it_marked(demo: Path) -> None:
    every = json.loads(_run("findings", "--db", str(demo), "--preview", "--format", "json"))
    code = sorted(row["code"] for row in every if row["code"] in PREVIEW)[0]
    rows = json.loads(_run("findings", "--db", str(demo), "--rule", code, "--format", "json"))
    assert rows and {row["code"] for row in rows} == {code}
    assert all(row["status"] == "preview" and row["precision_text"] for row in rows)


def test_the_site_with_preview_marks_each_preview_code(demo: Path, tmp_path: Path) -> None:
    _run("report", "--db", str(demo), "--out", str(tmp_path / "site"), "--preview")
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    options = re.findall(r'<option value="(MCP\d{3})">([^<]*)</option>', index)
    assert any(code in PREVIEW for code, _ in options)
    for code, text in options:
        assert ("[preview: " in text) == (code in PREVIEW), text
    trends = (tmp_path / "site" / "trends.html").read_text(encoding="utf-8")
    for code in _preview_codes(trends):
        assert f"{code} {RULES[code].slug} (preview)" in trends
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "site" / "servers").glob("*.html"))
    assert 'id="preview"' in pages  # the preview findings, apart from the scored ones


def test_preview_true_in_the_config_file_shows_them(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fathom.toml").write_text("preview = true\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    rows = json.loads(_run("findings", "--db", str(demo), "--format", "json"))
    assert any(row["status"] == "preview" for row in rows)
