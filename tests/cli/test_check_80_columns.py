"""``check`` in 80 columns (issue 37, item 2): on every real list, ``COLUMNS=80 fathom check -f LIST`` prints no
line over 80 characters (with ``--verbose`` and ``--preview`` too), a one-line summary comes first, and the
findings start within the first screen (about 45 lines came before the first finding)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
LISTS = sorted(path for path in REAL.glob("*.json") if path.name not in ("labels.json", "manifest.json"))
runner = CliRunner()


@pytest.mark.parametrize("path", LISTS, ids=[path.stem for path in LISTS])
def test_every_line_fits_80_columns_and_findings_come_first(path: Path) -> None:
    for extra in ([], ["--verbose"], ["--preview"]):
        done = runner.invoke(app, ["check", "-f", str(path), *extra], env={"COLUMNS": "80"})
        assert done.exit_code == 0, done.stderr
        lines = done.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80][:3]
        assert lines[1].startswith("  Score ")
        headline = next(i for i, line in enumerate(lines) if line.startswith(("Nothing a model", *"0123456789")))
        assert headline < 10, lines[:12]


def test_a_wider_terminal_gets_longer_lines() -> None:
    path = REAL / "server-github.json"
    wide = runner.invoke(app, ["check", "-f", str(path)], env={"COLUMNS": "160"}).stdout.splitlines()
    narrow = runner.invoke(app, ["check", "-f", str(path)], env={"COLUMNS": "80"}).stdout.splitlines()
    assert max(map(len, wide)) > 80 and len(wide) < len(narrow)


def test_a_long_path_wraps_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout deep in a ``mktemp -d`` folder (issue 48): the first line names the list's path, and a path
    longer than the width was printed whole, past 80 columns. It is cut to the width; the summary follows it."""
    deep = tmp_path.joinpath(*[f"folder-{index:02d}-of-a-checkout" for index in range(6)])
    deep.mkdir(parents=True)
    path = deep / "server-sequential-thinking.json"
    path.write_bytes((REAL / "server-sequential-thinking.json").read_bytes())
    assert len(str(path)) > 160
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # not beneath the working directory: the path is shown whole
    done = runner.invoke(app, ["check", "-f", str(path)], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80][:3]
    score = next(index for index, line in enumerate(lines) if line.startswith("  Score "))
    assert "".join(line.strip() for line in lines[:score]) == f"Tool list:{path}"


def test_a_path_beneath_the_working_directory_is_shown_relative(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REAL.parent)
    done = runner.invoke(app, ["check", "-f", str(REAL / "server-github.json")], env={"COLUMNS": "80"})
    assert done.stdout.splitlines()[0] == "Tool list: real/server-github.json"
