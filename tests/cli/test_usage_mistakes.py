"""The usage mistakes a new user makes, each answered with what to do instead (issue 37, item 3).

Each case is a command line a user really typed: ``--tools FILE`` meaning ``--tools-file``, a global option after
the command, a server name with a typo, an out-of-range value (whose wording came from pydantic), and the demo's
closing hint, which must work as printed after the README's first command; and the demo's own rename, one row in
``fathom diff`` (item 6).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure.toollist import measure
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.rules import RULES_VERSION
from scanner.store import open_store

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
TOOLS = [{"name": "add", "description": "Add two numbers and return the sum.", "inputSchema": {"type": "object"}}]


def one_line(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args, prog_name="fathom")
    assert isinstance(result.exception, SystemExit | type(None)), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fathom"), result.stderr
    return result.exit_code, lines[0]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("usage") / "f.db"
    with open_store(f"sqlite:///{path}") as store:
        run_id = store.start_run("list", RULES_VERSION, {})
        for name in ("example/quickcalc", "example/weather-now"):
            entry = ServerEntry(name=name, transport=Transport.STREAMABLE_HTTP, url=f"https://{name}.test/mcp")
            outcome = ScanOutcome(outcome=Outcome.OK, transport="streamable-http", tools=tuple(TOOLS))
            store.record_scan(run_id, entry, outcome, measure)
        store.finish_run(run_id)
    yield str(path)


def test_tools_with_a_file_asks_whether_tools_file_was_meant(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text('{"tools": []}', encoding="utf-8")

    code, line = one_line(["check", "--tools", str(tools)])

    assert code == 2  # it was exit 3: the file was run as a server command
    assert f"did you mean --tools-file {tools}?" in line


def test_tools_before_a_real_command_still_runs_it() -> None:
    """A server command after --tools is not mistaken for a file (it is executable and not .json)."""
    code, line = one_line(["check", "--tools", "--timeout", "5", "--", sys.executable, "-c", "pass"])

    assert code == 3 and "did you mean" not in line


@pytest.mark.parametrize("option", [["--color", "always"], ["--quiet"], ["-q"], ["--version"]])
def test_a_global_option_after_the_command_says_where_it_goes(option: list[str]) -> None:
    code, line = one_line(["check", *option, "--example"])

    assert code == 2
    assert f"{option[0]} is an option of fathom itself: give it before the command" in line
    assert f"(fathom {option[0]} ... check ...)" in line


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["check", "--example", "--min-score", "200"], "--min-score': it must be at most 100"),
        (["check", "--example", "--min-score", "abc"], "--min-score': it must be a number"),
        (["check", "--example", "--format", "yaml"], "'yaml' is not one of 'text', 'json', 'markdown', 'sarif'"),
        (["scan", "x.json", "--concurrency", "0"], "--concurrency': it must be at least 1"),
        (["scan", "x.json", "--concurrency", "abc"], "--concurrency': it must be a whole number"),
        (["findings", "--severity", "bad"], "'bad' is not one of 'problem', 'warning', 'note'"),
    ],
)
def test_no_pydantic_wording_reaches_the_user(args: list[str], words: str) -> None:
    code, line = one_line(args)

    assert code == 2
    assert words in line
    assert "Input should" not in line and "Value error" not in line


@pytest.mark.parametrize("command", [["history"], ["diff"], ["findings", "--server"], ["check", "--server"]])
@pytest.mark.parametrize(
    ("typed", "meant"), [("example/quikcalc", "example/quickcalc"), ("quickcalc", "example/quickcalc")]
)
def test_an_unknown_server_names_the_nearest(db: str, command: list[str], typed: str, meant: str) -> None:
    code, line = one_line([*command, typed, "--db", db])

    assert code == 2
    assert f"no server named '{typed}' in this database. Did you mean '{meant}'?" in line


def test_an_unknown_server_with_nothing_near_says_where_names_are(db: str) -> None:
    code, line = one_line(["history", "zzzzzz", "--db", db])

    assert code == 2 and "fathom servers lists them" in line


@pytest.mark.timeout(180)
def test_the_demo_hint_works_as_printed_after_the_readme_command(tmp_path: Path) -> None:
    """The README runs ``.venv/bin/fathom demo``, so ``fathom`` is not on PATH: the hint must say how Fathom
    was started, and the printed command must run from the same folder."""
    script = tmp_path / "bin" / "fathom"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nfrom scanner.cli import main\nmain()\n", encoding="utf-8")
    script.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    assert shutil.which("fathom", path=env["PATH"]) is None

    demo = subprocess.run(
        ["bin/fathom", "demo", "--workdir", "d"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=170
    )

    assert demo.returncode == 0, demo.stderr
    hint = next(line for line in demo.stdout.splitlines() if line.startswith("database:"))
    assert "(try: bin/fathom servers --db d/demo.db; bin/fathom findings --db d/demo.db)" in hint
    first = hint.split("(try: ", 1)[1].split(";", 1)[0]
    again = subprocess.run(first.split(), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "example/quickcalc" in again.stdout

    # The demo's own rename (convert.units -> convert_units, its description and schema fixed) is one row; its
    # closing lines suggest the diff that shows it.
    suggested = next(line for line in demo.stdout.splitlines() if line.startswith("changes:"))
    assert suggested.split(None, 1)[1] == "bin/fathom diff example/quickcalc --db d/demo.db"
    changed = subprocess.run(
        [*suggested.split()[1:], "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = json.loads(changed.stdout)
    tools = [(row["change"], row["tool"]) for row in rows if row["change"].startswith("tool ")]
    assert ("tool renamed", "convert_units") in tools
    assert ("tool added", "convert_units") not in tools and ("tool removed", "convert.units") not in tools
    new = [row["detail"] for row in rows if row["change"] == "finding new"]
    assert not any("convert" in detail for detail in new), new  # no MCP502 for it, no finding that followed it
    fixed = [row["detail"] for row in rows if row["change"] == "finding fixed" and row["tool"] == "convert.units"]
    assert any(detail.startswith("MCP101 ") for detail in fixed), fixed

    # Issue 46: the stored findings (so `findings` and `check --db`) and the server page tell the same story.
    def run(*args: str) -> str:
        done = subprocess.run(["bin/fathom", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        return done.stdout

    found = json.loads(run("findings", "--db", "d/demo.db", "--server", "example/quickcalc", "--format", "json"))
    assert not [row for row in found if row["code"] == "MCP502" and row["tool"] == "convert.units"]
    assert [row["tool"] for row in found if row["code"] == "MCP502"] == ["evaluate"]  # really removed
    checked = run("check", "--db", "d/demo.db", "--server", "example/quickcalc")
    assert "MCP502 tool-removed · evaluate" in checked and "· convert.units" not in checked
    page = next((tmp_path / "d" / "report" / "servers").glob("example-quickcalc-*.html")).read_text(encoding="utf-8")
    log = page[page.index('id="log"') :]
    assert "name-invalid fixed on 1 tool" in log
    assert "name-invalid: its tool was removed" not in log and "required-undefined: its tool was removed" not in log
