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
