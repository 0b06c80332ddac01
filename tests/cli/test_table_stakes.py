"""Table stakes of the command line: exit codes from one table (help, README and the code agree), --quiet,
--color / FORCE_COLOR, shell completion, metavars that say what a value is, and the limits help promises."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from scanner import errors, exitcodes
from scanner.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMANDS = sorted(get_command(app).commands)  # type: ignore[attr-defined]


def help_codes(text: str) -> dict[int, str]:
    """The exit-code rows of a help text, each meaning's wrapped lines joined (rows fit 80 columns)."""
    codes: dict[int, str] = {}
    last = None
    for line in text.split("Exit codes:", 1)[1].splitlines():
        row = re.match(r"^\s+(\d+)\s+(.+)$", line)
        if row:
            last = int(row.group(1))
            codes[last] = row.group(2).strip()
        elif last is not None and line.strip():
            codes[last] += " " + line.strip()
        elif last is not None:  # the block ends at its first blank line
            break
    return codes


def test_every_command_help_ends_with_its_own_exit_codes() -> None:
    assert set(exitcodes.COMMAND_CODES) == set(COMMANDS)
    for name in COMMANDS:
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0
        assert help_codes(result.stdout) == exitcodes.COMMAND_CODES[name], name
    for name in ("scan", "worker"):  # they have no --strict and never exit 3
        codes = help_codes(runner.invoke(app, [name, "--help"]).stdout)
        assert 1 not in codes and 3 not in codes and "--strict" not in " ".join(codes.values())


def test_readme_top_help_and_the_code_agree_on_exit_codes() -> None:
    top = help_codes(runner.invoke(app, ["--help"]).stdout)
    assert top == exitcodes.TOP_LEVEL
    section = README.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    readme = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert readme == set(top) == {code for codes in exitcodes.COMMAND_CODES.values() for code in codes}
    # Every exit code the code can produce is in the table: the errors' codes and every literal exit in the CLI.
    raised = {cls.exit_code for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, Exception)}
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in (ROOT / "scanner" / "cli").glob("*.py")]
    literal = {
        node.args[-1].value
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", "")) in {"Exit", "_fail", "exit"}
        and node.args
        and isinstance(node.args[-1], ast.Constant)
        and isinstance(node.args[-1].value, int)
    }
    assert literal >= {1, 2, 3, 130}  # the scan found the CLI's own exits
    assert raised | literal <= set(top)
    from scanner.scan.doctor import Diagnosis

    verdicts = {"healthy", "silent-lane", "auth-undiscoverable", "unreachable", "not-http"}
    doctor_codes = {Diagnosis.exit_code.fget(type("D", (), {"verdict": v})()) for v in verdicts}  # type: ignore[attr-defined]
    assert doctor_codes <= set(exitcodes.COMMAND_CODES["doctor"])


def test_quiet_silences_notes_and_progress_but_not_errors(tmp_path: Path) -> None:
    listing = tmp_path / "servers.json"
    listing.write_text(json.dumps({"servers": [{"name": "a", "url": "http://127.0.0.1:9/mcp"}]}), encoding="utf-8")
    db = f"sqlite:///{tmp_path}/f.db"
    loud = runner.invoke(app, ["scan", str(listing), "--db", db])
    assert loud.exit_code == 0 and "needs --allow-private" in loud.stderr
    quiet = runner.invoke(app, ["--quiet", "scan", str(listing), "--db", db])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert quiet.stdout.startswith("run 2 finished: 1 server")
    failed = runner.invoke(app, ["-q", "servers", "--db", str(tmp_path / "missing.db")])
    assert failed.exit_code == 2 and failed.stderr.startswith("fathom: no database at")


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        (["--color", "always"], {}, True),
        (["--color", "never"], {"FORCE_COLOR": "1"}, False),
        ([], {"FORCE_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "0"}, False),
        ([], {}, False),  # not a terminal
    ],
)
def test_color_follows_the_flag_then_force_color(args: list[str], env: dict[str, str], coloured: bool) -> None:
    result = runner.invoke(app, [*args, "check", "--example"], env={"FORCE_COLOR": "", **env})
    assert result.exit_code == 0
    assert ("\x1b[" in result.stdout) is coloured


def test_shell_completion_is_offered() -> None:
    import os
    import subprocess
    import sys

    # A real process: the completion script is built from the program's own environment, not the test runner's.
    # The shell is named, not detected from the process's ancestors (which differ from one test runner to another).
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "scanner", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "_FATHOM_COMPLETE" in done.stdout and "complete " in done.stdout


def test_metavars_say_what_a_value_is() -> None:
    for name in COMMANDS:
        text = runner.invoke(app, [name, "--help"]).stdout
        assert not re.search(r"<(str|int|float|path|list\[str\])", text), name
    check = runner.invoke(app, ["check", "--help"]).stdout
    assert "--url URL" in check and "--stdio CMD" in check and "--tools-file PATH" in check


def test_try_repeat_help_and_limit_match_the_library() -> None:
    from scanner.trial.run import MAX_REPEAT

    command = get_command(app).commands["try"]  # type: ignore[attr-defined]
    repeat = next(param for param in command.params if param.name == "repeat")
    assert repeat.max == MAX_REPEAT
    result = runner.invoke(app, ["try", "--model", "openai:x", "--example", "--repeat", str(MAX_REPEAT + 1)])
    assert result.exit_code == 2 and "--repeat" in result.stderr


def test_enqueue_on_sqlite_says_sqlite_first_even_without_the_postgres_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "procrastinate", None)  # the extra is not installed: importing it fails
    listing = tmp_path / "servers.json"
    listing.write_text(json.dumps({"servers": [{"name": "a", "url": "http://127.0.0.1:9/mcp"}]}), encoding="utf-8")
    result = runner.invoke(app, ["scan", str(listing), "--db", str(tmp_path / "f.db"), "--enqueue"])
    assert result.exit_code == 2
    assert "need PostgreSQL" in result.stderr and "pip install" not in result.stderr
