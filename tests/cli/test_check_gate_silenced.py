"""No input switches a gate off (issue 42 item 8).

A ``pyproject.toml`` in the checked project that is not valid TOML (``min-score = 70 70``) or cannot be read was
passed over as "someone else's": every gate its ``[tool.fathom]`` set was off and ``check`` exited 0 without a
word. Now it is exit 2 naming the file and the line, wherever the error is. A ``select`` that keeps only rules
that never fire in ``check`` (``MCP7``: registry data) fails ``--fail-on`` loudly, as ``ignore = ["MCP"]`` does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.check.gates import rules_that_fire
from scanner.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "scanner" / "examples" / "example-tools.json"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "tools.json").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("fathom: ")]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # The new user's file: the error inside [tool.fathom].
        ('[project]\nname = "x"\n\n[tool.fathom]\nfail-on = "note"\nmin-score = 70 70\n', 6),
        # The error elsewhere: the table may be there, unread; the gate must not go quietly.
        ('[project]\nname = "x\n\n[tool.fathom]\nmin-score = 99\n', 2),
        # A file whose only fault is outside our table still cannot be told to hold none.
        ("[project\n", 1),
    ],
)
def test_an_invalid_pyproject_is_exit_2_naming_the_file_and_line(tree: Path, text: str, line: int) -> None:
    (tree / "pyproject.toml").write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 2, result.output
    lines = error_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert str(tree / "pyproject.toml") in lines[0]
    assert f"line {line}" in lines[0]
    assert "Traceback" not in result.output


def test_an_invalid_pyproject_in_a_parent_folder_is_exit_2_too(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "pyproject.toml").write_text("[tool.fathom]\nmin-score = 70 70\n", encoding="utf-8")
    (tree / "sub").mkdir()
    (tree / "sub" / "tools.json").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tree / "sub")
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 2 and "line 2" in result.stderr and "pyproject.toml" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_pyproject_is_exit_2_naming_it(tree: Path) -> None:
    path = tree / "pyproject.toml"
    path.write_text('[tool.fathom]\nfail-on = "note"\n', encoding="utf-8")
    path.chmod(0)
    try:
        result = runner.invoke(app, ["check", "-f", "tools.json"])
    finally:
        path.chmod(0o644)
    assert result.exit_code == 2 and str(path) in result.stderr


@pytest.mark.parametrize("fault", ["dangling-link", "not-utf8"])
def test_a_pyproject_that_cannot_be_read_is_exit_2_naming_it_as_root_too(tree: Path, fault: str) -> None:
    path = tree / "pyproject.toml"
    if fault == "dangling-link":
        path.symlink_to(tree / "gone.toml")
    else:
        path.write_bytes(b'[tool.fathom]\nfail-on = "note"\n# caf\xe9\n')
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 2, result.output
    assert len(error_lines(result.stderr)) == 1 and str(path) in result.stderr


def test_a_valid_pyproject_without_our_table_is_still_passed_over(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("where", ["pyproject", "flag"])
def test_a_select_keeping_only_rules_that_never_fire_in_check_fails_fail_on(tree: Path, where: str) -> None:
    flags = ["--select", "MCP7"] if where == "flag" else []
    if where == "pyproject":
        (tree / "pyproject.toml").write_text('[tool.fathom]\nselect = ["MCP7"]\n', encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--fail-on", "warning", *flags])
    assert result.exit_code == 1, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("fathom: warning:")]
    assert len(warnings) == 1 and "never fire in check" in warnings[0], result.stderr
    gates = [line for line in result.stderr.splitlines() if line.startswith("fathom: gate ")]
    assert len(gates) == 1 and gates[0].startswith("fathom: gate --fail-on warning failed:")
    assert "never fire in check" in gates[0]
    plain = runner.invoke(app, ["check", "-f", "tools.json", *flags])  # no gate asked: exit 0, still said
    assert plain.exit_code == 0 and "never fire in check" in plain.stderr


def test_rules_that_fire_counts_only_what_check_can_report() -> None:
    assert rules_that_fire(("MCP7",), ()) == 0
    assert rules_that_fire(("MCP1",), ()) > 0
    assert rules_that_fire((), ("MCP",)) == 0
    assert rules_that_fire(("MCP7", "MCP1"), ()) == rules_that_fire(("MCP1",), ())
