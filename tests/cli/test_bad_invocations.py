"""Every bad command line is one line on stderr with its documented exit code, never a traceback (issue 8, 16).

The table sweeps every command: out-of-range, non-finite and malformed flag values, inputs that are not what the
flag wants (a FIFO, a directory, a file where a folder goes), names that are not UTF-8, and ids no database
integer can hold. Exit codes are README's: 2 for usage and input errors, 4 for an unusable database.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure.toollist import measure
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.rules import RULES_VERSION
from scanner.store import open_store

from .message_case import message_of, starts_right

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
TOOLS = [{"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object"}}]
BIG = "99999999999999999999"

# (arguments, exit code, a phrase the one line must hold). {db} a real database, {fifo} a FIFO, {file} a regular
# file, {dir} a folder, {list} a server list.
TABLE: list[tuple[list[str], int, str]] = [
    # check: every limit flag, every source mistake
    *[
        (["check", "--example", flag, value], 2, flag)
        for flag in ("--timeout", "--connect-timeout")
        for value in ("nan", "inf", "-inf", "-1", "0", "1e9", "abc")
    ],
    *[
        (["check", "--example", flag, value], 2, flag)
        for flag in ("--max-bytes", "--max-pages", "--max-tools", "--max-line-bytes")
        for value in ("0", "-5", BIG, "1.5", "nan")
    ],
    (["check", "--tools-file", "{fifo}"], 2, "not a regular file"),
    (["check", "--tools-file", "{dir}"], 2, "is a directory"),
    (["check", "--tools-file", "{dir}/missing.json"], 2, "no such file"),
    (["check", "--stdio", '"x'], 2, "no closing quotation"),
    (["check", "--stdio", "x\\"], 2, "--stdio"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--save", "/"], 2, "is a directory"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--save", "{dir}/no/such/file.json"], 2, "does not exist"),
    (["check"], 2, "give exactly one"),
    (["check", "--example", "--url", "http://127.0.0.1:9/mcp"], 2, "give exactly one"),
    (["check", "--example", "--profile", "bogus"], 2, "--profile"),
    (["check", "--example", "--format", "bogus"], 2, "--format"),
    (["check", "--example", "--as", "bogus"], 2, "--as"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--header", "no-colon"], 2, "--header"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--bearer-env", "FATHOM_TEST_SURELY_UNSET"], 2, "--bearer-env"),
    (["check", "--stdio", "true", "--env", "FATHOM_TEST_SURELY_UNSET"], 2, "--env FATHOM_TEST_SURELY_UNSET"),
    # doctor: its deadlines, its sources and credentials
    *(
        (["doctor", "--url", "http://127.0.0.1:9/mcp", flag, value], 2, flag)
        for flag in ("--timeout", "--connect-timeout")
        for value in ("nan", "inf", "0", "-1")
    ),
    (["doctor"], 2, "give a client config file (fathom doctor claude_desktop_config.json) or --url url"),
    (["doctor", "{list}", "--url", "http://127.0.0.1:9/mcp"], 2, "give a client config file or --url"),
    (["doctor", "--url", "http://127.0.0.1:9/mcp", "--bearer-env", "FATHOM_TEST_SURELY_UNSET"], 2, "--bearer-env"),
    (["doctor", "{dir}/missing.json"], 2, "no such file"),
    (["doctor", "--url", "http://127.0.0.1:9/mcp", "--format", "bogus"], 2, "--format"),
    # try: its limits, its model and its key (nothing is sent in any of these)
    *(
        (["try", "--example", "--model", "openai:gpt-4.1", "--prompt", "x", flag, value], 2, flag)
        for flag, value in (("--timeout", "nan"), ("--timeout", "0"), ("--repeat", "0"), ("--max-tokens", "-1"))
    ),
    (["try", "--example", "--prompt", "x"], 2, "--model"),
    (["try", "--example", "--model", "openai:gpt-4.1", "--prompt", "x", "--format", "bogus"], 2, "--format"),
    # a missing key names its variable (exit 4); nothing is sent
    (
        ["try", "--example", "--model", "anthropic:claude-x", "--prompt", "x", "--yes"],
        4,
        "ANTHROPIC_API_KEY",
    ),
    # scan: its limit flags and its database (its inputs are the registry readers' to check)
    *[
        (["scan", "{list}", "--dry-run", flag, value], 2, flag)
        for flag in ("--timeout", "--connect-timeout")
        for value in ("nan", "inf", "-1", "0")
    ],
    *[
        (["scan", "{list}", "--dry-run", flag, value], 2, flag)
        for flag, value in (
            ("--concurrency", "0"),
            ("--concurrency", BIG),
            ("--per-host", "0"),
            ("--per-host", "-1"),
            ("--retries", "-1"),
            ("--memory-limit-mb", "1"),
            ("--memory-limit-mb", BIG),
        )
    ],
    (["scan", "{list}", "--db", "bogus://nowhere"], 4, "cannot open database"),
    (["scan", "{list}", "--db", "{file}/sub/f.db"], 4, "cannot create the folder"),
    (["scan", "{list}", "--db", "{db}", "--enqueue"], 2, "distributed runs need PostgreSQL"),
    # worker: its flags, and a database that is not PostgreSQL
    (["worker"], 2, "missing option"),
    (["worker", "--db", "{db}"], 2, "distributed runs need PostgreSQL"),
    (["worker", "--db", "bogus://nowhere"], 2, "distributed runs need PostgreSQL"),
    *[
        (["worker", "--db", "{db}", flag, value], 2, flag)
        for flag, value in (
            ("--timeout", "nan"),
            ("--connect-timeout", "0"),
            ("--stall-timeout", "inf"),
            ("--stall-timeout", "-1"),
            ("--concurrency", "0"),
            ("--per-host", BIG),
            ("--retries", "-1"),
            ("--disk-limit-mb", "1"),
            ("--profile", "bogus"),
        )
    ],
    # the queries
    (["runs", "--db", "{dir}/missing.db"], 2, "no database at"),
    (["runs", "--db", "{db}", "--format", "bogus"], 2, "--format"),
    (["servers", "--db", "{dir}/missing.db"], 2, "no database at"),
    (["history", "\udcff", "--db", "{db}"], 2, "no server named"),  # argv byte 0xff, as Python decodes it
    (["history", "nobody", "--db", "{db}"], 2, "no server named"),
    (["history", "--db", "{db}"], 2, "missing argument"),
    (["findings", "--run", BIG, "--db", "{db}"], 2, "--run"),
    (["findings", "--run", "0", "--db", "{db}"], 2, "--run"),
    (["findings", "--run", "abc", "--db", "{db}"], 2, "--run"),
    (["findings", "--run", "424242", "--db", "{db}"], 2, "no run 424242"),
    (["findings", "--since", "yesterday", "--db", "{db}"], 2, "--since"),
    (["findings", "--server", "\udcff\udcfe", "--db", "{db}"], 2, "no server named"),
    (["diff", "alpha", "--from", BIG, "--db", "{db}"], 2, "--from"),
    (["diff", "alpha", "--to", "-1", "--db", "{db}"], 2, "--to"),
    (["diff", "nobody", "--db", "{db}"], 2, "no server named"),
    (["rescore", "--db", "{dir}/missing.db"], 2, "no database at"),
    (["report", "--db", "{db}", "--out", "{file}"], 2, "is a file"),
    (["report", "--db", "{db}", "--run", BIG, "--out", "{dir}/site"], 2, "--run"),
    (["report", "--db", "{db}", "--run", "424242", "--out", "{dir}/site"], 2, "no run 424242"),
    (["demo", "--workdir", "{file}"], 2, "is a file"),
    (["rules", "extra"], 2, "unexpected extra argument"),
    (["rule"], 2, "missing argument"),
    (["rule", "MCP999"], 2, "no rule"),
    (["nosuch"], 2, "no such command"),
    (["--bogus"], 2, "no such option"),
    (["check", "--bogus"], 2, "no such option"),
]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    base = tmp_path_factory.mktemp("bad")
    db = base / "f.db"
    with open_store(f"sqlite:///{db}") as store:
        run_id = store.start_run("list", RULES_VERSION, {})
        entry = ServerEntry(name="alpha", transport=Transport.STREAMABLE_HTTP, url="https://alpha.test/mcp")
        outcome = ScanOutcome(outcome=Outcome.OK, transport="streamable-http", tools=tuple(TOOLS))
        store.record_scan(run_id, entry, outcome, measure)
        store.finish_run(run_id)
    fifo = base / "fifo"
    os.mkfifo(fifo)
    regular = base / "regular.txt"
    regular.write_text("just text\n", encoding="utf-8")
    servers = base / "servers.json"
    servers.write_text('{"servers": [{"name": "x", "url": "http://127.0.0.1:9/mcp"}]}', encoding="utf-8")
    yield {"db": str(db), "fifo": str(fifo), "file": str(regular), "dir": str(base), "list": str(servers)}


def test_the_table_covers_every_command() -> None:
    commands = set(get_command(app).commands)  # type: ignore[attr-defined]
    assert commands <= {args[0] for args, _, _ in TABLE}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "code", "phrase"), TABLE, ids=[" ".join(args) for args, _, _ in TABLE])
def test_a_bad_invocation_is_one_line_with_its_exit_code(
    args: list[str], code: int, phrase: str, places: dict[str, str]
) -> None:
    argv = [arg.format(**places) for arg in args]

    result = runner.invoke(app, argv, prog_name="fathom")

    assert result.exit_code == code, (result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit | type(None)), result.exception  # nothing escaped
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("fathom"), lines[0]
    assert phrase.lower() in lines[0].lower(), lines[0]
    # Lower case after "fathom:" (or "fathom COMMAND:"), as git and cargo write (tests/cli/test_message_case.py).
    assert starts_right(message_of(lines[0])), lines[0]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ([b"history", b"\xff", b"--db", b"{db}"], 2),
        ([b"findings", b"--run", BIG.encode(), b"--db", b"{db}"], 2),
        ([b"check", b"--example", b"--timeout", b"nan"], 2),
        ([b"check", b"--stdio", b'"x'], 2),
    ],
)
def test_the_installed_entry_point_gives_the_same_one_line(
    args: list[bytes], code: int, places: dict[str, str]
) -> None:
    """Through ``python -m scanner`` with real argv bytes (0xff is not UTF-8)."""
    argv = [arg.replace(b"{db}", places["db"].encode()) for arg in args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command: list[str | bytes] = [sys.executable, "-m", "scanner", *argv]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=60, env=env)
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == code and b"Traceback" not in result.stderr, stderr
    assert len(stderr.splitlines()) == 1 and stderr.startswith("fathom"), stderr


def test_outputs_that_cannot_be_written_are_one_line_and_exit_4(sdk_http: Any, places: dict[str, str]) -> None:
    """A saved tool list or a report where nothing can be written (even root cannot create files in /proc)."""
    saved = runner.invoke(app, ["check", "--url", sdk_http.url(), "--save", "/proc/fathom-tools.json"])
    assert saved.exit_code == 4 and saved.stdout == ""
    assert saved.stderr.startswith("fathom: cannot save the tool list to /proc/fathom-tools.json: ")
    assert len(saved.stderr.splitlines()) == 1

    report = runner.invoke(app, ["report", "--db", places["db"], "--out", "/proc/fathom-site"])
    assert report.exit_code == 4 and len(report.stderr.splitlines()) == 1
    assert report.stderr.startswith("fathom: cannot write the report to /proc/fathom-site: ")
