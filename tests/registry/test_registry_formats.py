"""The input formats are one table: the CLI's ``--kind`` help and docs/registry.md are generated from it."""

from __future__ import annotations

import json
from pathlib import Path

from registry_support import FIXTURES
from typer.testing import CliRunner

from scanner.cli import app
from scanner.registry import detect
from scanner.registry.formats import END, main, render, replace_section
from scanner.registry.loader import FORMATS, KINDS, kind_help

DOC = Path(__file__).resolve().parents[2] / "docs" / "registry.md"


def test_the_docs_section_is_generated_from_the_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    stale = "docs/registry.md is stale: run python -m scanner.registry.formats --write docs/registry.md"
    assert render() in text, stale
    for fmt in FORMATS:
        assert f"| `{fmt.kind}` |" in render()


def test_write_regenerates_a_stale_section(tmp_path: Path) -> None:
    stale = tmp_path / "registry.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("| `claude` |", "| `claude-old` |"), encoding="utf-8")
    assert main(["--write", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    assert replace_section(f"a\n{render()}\nb") == f"a\n{render()}\nb"
    assert render().endswith(END)


def test_the_kind_help_names_every_kind() -> None:
    result = CliRunner().invoke(app, ["scan", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    assert tuple(fmt.kind for fmt in FORMATS) == KINDS
    for fmt in FORMATS:
        assert f"{fmt.kind}: " in kind_help()
    help_text = " ".join(result.stdout.split())
    for kind in KINDS:
        assert f"{kind}: " in help_text, kind


def test_every_file_kind_is_detected_from_its_fixture() -> None:
    documents = {
        "claude": "claude_desktop_config.json",
        "list": "simple_list.json",
        "registry": "registry-sample.json",
        "server-json": "server_variables.json",
        "vscode": "vscode_settings.json",
    }
    for kind, name in documents.items():
        assert detect(json.loads((FIXTURES / name).read_text(encoding="utf-8"))) == kind
    readable = {fmt.kind for fmt in FORMATS if fmt.read is not None}
    assert readable == set(documents) and all(fmt.matches is not None for fmt in FORMATS if fmt.read is not None)
