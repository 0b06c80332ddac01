"""A store that cannot break a reader (issue 42 item 6): one crafted row, every reader.

The report said: one crafted database row made ``fathom report`` end in a traceback and build no site, ``check
--db`` gave tracebacks on 10 of 14 crafted rows, a finding of unknown severity passed ``--fail-on warning``, and a
10 MB server name cost ``report`` 5.5 GB. Here a real SQLite file is written by the store's own write path (the
report tests' three-run story), then one row is changed with ``sqlite3`` as a hand would change it: a value of
the wrong type, JSON that is not JSON or not an object, a date that is no date, a blob for text, an unknown
severity, a huge value, a tool list that does not inflate. Every reader then runs as a user runs it: ``report``,
``check --db``, ``servers``, ``history``, ``findings``, ``diff`` and ``runs``. None may end in a traceback; each
fault is said on stderr, each at most once; ``report`` still builds its site; an unknown severity fails a gate.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.store import open_store
from scanner.store.readsafe import _SAID
from tests.report.conftest import RUNS, FixedClock, write_runs

runner = CliRunner()
HUGE = "x" * 10_000_000
LATEST_SCAN = "(SELECT max(id) FROM scans)"

# name -> (SQL, its one parameter or None, what stderr must say of it or None when the value reads as it is)
CRAFTED: dict[str, tuple[str, str | None, str | None]] = {
    "scan-outcome-unknown": (f"UPDATE scans SET outcome='no_such_outcome' WHERE id={LATEST_SCAN}", None, None),
    "scan-extra-not-json": (f"UPDATE scans SET extra='{{not json' WHERE id={LATEST_SCAN}", None, "scans.extra"),
    "scan-extra-a-list": ("UPDATE scans SET extra='[1,2,3]'", None, "scans.extra"),
    "scan-timings-a-string": ("UPDATE scans SET timings='\"slow\"'", None, "scans.timings"),
    "scan-date-garbage": (f"UPDATE scans SET scanned_at='yesterday' WHERE id={LATEST_SCAN}", None, "scanned_at"),
    "scan-pages-text": ("UPDATE scans SET pages='many'", None, "scans.pages"),
    "scan-detail-10mb": (f"UPDATE scans SET detail=? WHERE id={LATEST_SCAN}", HUGE, "scans.detail"),
    "scan-package-a-string": ("UPDATE scans SET package='\"npm\"'", None, "scans.package"),
    "scan-metrics-wrong": ('UPDATE scans SET metrics=\'{"x": "y"}\'', None, None),
    "finding-severity-7": ("UPDATE findings SET severity=7", None, "findings.severity"),
    "finding-severity-text": ("UPDATE findings SET severity='bad'", None, "findings.severity"),
    "finding-message-blob": ("UPDATE findings SET message=x'00ff80'", None, "findings.message"),
    "finding-tool-index-text": ("UPDATE findings SET tool_index='first'", None, "findings.tool_index"),
    "finding-details-not-json": ("UPDATE findings SET details='{'", None, "findings.details"),
    "server-name-10mb": ("UPDATE servers SET name=? WHERE name='beta'", HUGE, "servers.name"),
    # Text affinity: SQLite stores these numbers as text, so they read as names, with nothing to say.
    "server-name-a-number": ("UPDATE servers SET name=12345 WHERE name='beta'", None, None),
    "toolset-data-corrupt": ("UPDATE toolsets SET data=x'deadbeef'", None, "tool list cannot be read"),
    "toolset-tokens-text": ("UPDATE toolset_tokens SET tokens='lots'", None, "toolset_tokens.tokens"),
    "tool-tokens-name-a-number": ("UPDATE tool_tokens SET name=42", None, None),
    "run-options-not-json": ("UPDATE runs SET options='{bad'", None, "runs.options"),
    "run-date-garbage": ("UPDATE runs SET started_at='yesterday' WHERE id=3", None, "runs.started_at"),
    "scan-of-no-run": (f"UPDATE scans SET run_id=999 WHERE id={LATEST_SCAN}", None, None),
    "scan-of-no-tool-list": ("UPDATE scans SET toolset_id=9999 WHERE toolset_id IS NOT NULL", None, None),
    "event-kind-unknown": ("UPDATE events SET kind='teleported'", None, None),
    "event-details-a-list": ("UPDATE events SET details='[1]'", None, "events.details"),
}
COMMANDS = {
    "report": ["report", "--db", "{db}", "--out", "{out}"],
    "check": ["check", "--db", "{db}", "--server", "gamma.tools/search"],
    "servers": ["servers", "--db", "{db}"],
    "history": ["history", "--db", "{db}", "gamma.tools/search"],
    "findings": ["findings", "--db", "{db}"],
    "diff": ["diff", "--db", "{db}", "gamma.tools/search"],
    "runs": ["runs", "--db", "{db}"],
}


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report tests' three runs, written once through the store's write path."""
    path = tmp_path_factory.mktemp("story") / "fathom.db"
    with pytest.MonkeyPatch.context() as patch:
        clock = FixedClock()
        patch.setattr("scanner.store.common.now", clock)
        with open_store(f"sqlite:///{path}") as store:
            write_runs(store, clock, RUNS)
    return path


@pytest.fixture
def crafted(story: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    sql, parameter, _ = CRAFTED[request.param]
    path = tmp_path / "crafted.db"
    shutil.copy(story, path)
    connection = sqlite3.connect(path)
    try:
        changed = connection.execute(sql, (parameter,) if parameter is not None else ()).rowcount
        connection.commit()
    finally:
        connection.close()
    assert changed >= 1, sql
    _SAID.clear()  # each crafted row is said afresh (a process says each fault once)
    yield path


def _run(command: str, db: Path, out: Path) -> tuple[int, str, str]:
    argv = [part.format(db=db, out=out) for part in COMMANDS[command]]
    result = runner.invoke(app, argv)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{command}: {type(result.exception).__name__}: {result.exception}") from result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("crafted", sorted(CRAFTED), indirect=True)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_one_crafted_row_never_breaks_a_reader(crafted: Path, tmp_path: Path, command: str, request: Any) -> None:
    name = request.node.callspec.params["crafted"]
    said = CRAFTED[name][2]
    code, _, stderr = _run(command, crafted, tmp_path / "site")
    assert "Traceback" not in stderr
    # Each fault is said at most once, whatever the number of rows and pages that read it.
    warnings = Counter(line for line in stderr.splitlines() if line.startswith("fathom: warning: the store's"))
    assert all(count == 1 for count in warnings.values()), warnings
    if command == "report":
        assert code == 0, stderr
        assert (tmp_path / "site" / "index.html").is_file()
        if said is not None:
            assert said in stderr, stderr
    elif command == "check":
        # The server's stored list is checked (0, or 1 if its findings fail no gate here) unless the row that
        # was changed is the list itself: then one line says so (exit 4), never a traceback.
        assert code in (0, 1, 2, 4), stderr
        if code == 4:
            assert name == "toolset-data-corrupt" and "tool list cannot be read" in stderr
        if code == 2:  # its scans now name no tool list the store holds: said in one line
            assert name == "scan-of-no-tool-list" and "stored tool list of scan" in stderr, stderr
    else:
        assert code in (0, 2, 4), stderr  # 2: the server the query names no longer exists under that name
        if code:
            assert stderr.count("\n") <= 3 and stderr.startswith("fathom:"), stderr


@pytest.mark.parametrize("crafted", ["finding-severity-7", "finding-severity-text"], indirect=True)
def test_an_unknown_severity_counts_as_the_worst_for_gates(crafted: Path) -> None:
    """Issue 42: a finding of unknown severity passed ``--fail-on warning``; now it is a problem, said once."""
    result = runner.invoke(
        app, ["check", "--db", str(crafted), "--server", "gamma.tools/search", "--fail-on", "warning"]
    )
    assert result.exit_code == 1, result.output
    assert "findings.severity" in result.stderr
    assert "fathom: gate --fail-on warning failed" in result.stderr


def test_a_10mb_server_name_is_skipped_by_the_report_and_named_once(story: Path, tmp_path: Path) -> None:
    path = tmp_path / "crafted.db"
    shutil.copy(story, path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE servers SET name=? WHERE name='beta'", (HUGE,))
    _SAID.clear()
    code, _, stderr = _run("report", path, tmp_path / "site")
    assert code == 0
    assert stderr.count("servers.name") == 1 and "10,000,000 characters" in stderr
    site = tmp_path / "site"
    total = sum(file.stat().st_size for file in site.rglob("*") if file.is_file())
    assert total < 5_000_000, total  # the name is on no page (it would be on several, 10 MB each)
