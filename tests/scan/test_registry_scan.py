"""``fathom scan`` of a 34-server local registry, twice with changes in between, and every query over the result.

One module-scoped fixture starts the fleet (:mod:`tests.scan.fleet`), scans it through the real CLI, changes some
servers (a tool added, one removed, a description changed without a version bump, a schema fixed, a version
bumped with a change, a server gone), and scans again. The tests then ask what a user would ask: ``runs``,
``servers``, ``history``, ``findings``, ``diff``, ``rescore``, and read the database's row counts.
"""

from __future__ import annotations

import csv
import io
import json
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.models import MEASURED_PROVIDERS
from scanner.rules import RULES_VERSION
from scanner.store import open_store
from tests.scan.fleet import CHANGED, FIRST, SECOND, SECRET, UNCHANGED_OK, WITH_SECRET, running_fleet

runner = CliRunner()
pytestmark = pytest.mark.timeout(120)


def fathom(*args: str, code: int = 0) -> str:
    """Run one fathom command in-process; check its exit code and return its standard output."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr, result.exception)
    return result.stdout


def query(*args: str) -> Any:
    return json.loads(fathom(*args, "--format", "json"))


@dataclass
class Scanned:
    db: str
    list_file: Path
    entries: list[dict[str, Any]]
    startup_seconds: float
    scan_seconds: tuple[float, float]
    summaries: tuple[dict[str, Any], dict[str, Any]]
    stats: tuple[dict[str, int], dict[str, int]]
    between: datetime  # a whole second after every first-scan write and before any second-scan write

    def q(self, *args: str) -> Any:
        return query(*args, "--db", self.db)


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scanned]:
    workdir = tmp_path_factory.mktemp("fleet")
    db = f"sqlite:///{workdir}/f.db"
    # 8 s, not 3: three SDK stdio servers start at once with everything else, and on two busy cores a Python
    # SDK server can take several seconds to answer its first message. The two hanging servers cost 8 s a scan.
    scan = (
        "scan",
        "--db",
        db,
        "--allow-private",
        "--run-commands",
        "--timeout",
        "8",
        "--connect-timeout",
        "8",
        "--format",
        "json",
    )
    with running_fleet(workdir) as fleet:
        started = time.monotonic()
        first = json.loads(fathom(scan[0], str(fleet.list_file), *scan[1:]))
        first_seconds = time.monotonic() - started
        stats_first = open_store(db).database_stats()
        between = (datetime.now(UTC) + timedelta(seconds=1)).replace(microsecond=0, tzinfo=None)
        while datetime.now(UTC).replace(tzinfo=None) <= between:
            time.sleep(0.05)
        fleet.change()
        started = time.monotonic()
        second = json.loads(fathom(scan[0], str(fleet.list_file), *scan[1:]))
        second_seconds = time.monotonic() - started
        stats_second = open_store(db).database_stats()
        yield Scanned(
            db=db,
            list_file=fleet.list_file,
            entries=fleet.entries,
            startup_seconds=fleet.startup_seconds,
            scan_seconds=(first_seconds, second_seconds),
            summaries=(first, second),
            stats=(stats_first, stats_second),
            between=between,
        )


def test_the_fleet_is_a_real_mixed_registry(scanned: Scanned) -> None:
    names = [entry["name"] for entry in scanned.entries]
    assert len(names) == len(set(names)) >= 30
    stdio = [entry for entry in scanned.entries if "command" in entry]
    assert len(stdio) >= 4 and len(names) - len(stdio) >= 26
    # 34 servers, 2 of which hang until the 8 s deadline: a scan is one deadline and a bit, not 34 in a row. The
    # bounds are generous (a loaded machine is slow, not wrong); the figures themselves belong to bench/.
    assert scanned.startup_seconds < 300
    assert max(scanned.scan_seconds) < 120, scanned.scan_seconds


def test_scan_summaries_count_every_outcome(scanned: Scanned) -> None:
    first, second = scanned.summaries
    assert (first["run_id"], second["run_id"]) == (1, 2)
    assert first["total"] == second["total"] == len(FIRST)
    assert first["counts"] == dict(Counter(FIRST.values()))
    assert second["counts"] == dict(Counter(SECOND.values()))
    assert not first["interrupted"] and not second["interrupted"] and not second["resumed"]


def test_servers_lists_every_server_with_its_last_outcome(scanned: Scanned) -> None:
    rows = {row["server"]: row for row in scanned.q("servers")}
    assert {name: row["last_outcome"] for name, row in rows.items()} == SECOND
    assert rows["sdk/add"]["tools"] == 3 and rows["sdk/remove"]["tools"] == 2
    assert rows["demo/bump"]["version"] == "1.1.0"
    assert rows["sdk/paged"]["tools"] == 5  # three pages of two
    for name, outcome in SECOND.items():
        if outcome == "ok":
            assert all(rows[name][provider] > 0 for provider in ("anthropic", "openai", "gemini")), name
        else:
            assert rows[name]["detail"], name  # every failure says why
    assert rows["demo/goes-down"]["tools"] == 1  # its last successful scan still shows
    assert "404" in rows["demo/goes-down"]["detail"]


def test_history_of_every_server_has_both_scans(scanned: Scanned) -> None:
    for name in FIRST:
        rows = scanned.q("history", name)
        assert [(row["run"], row["outcome"]) for row in rows] == [(1, FIRST[name]), (2, SECOND[name])], name
    sdk_rows = scanned.q("history", "sdk-stdio/default")
    assert {row["transport"] for row in sdk_rows} == {"stdio"}
    assert {row["era"] for row in scanned.q("history", "demo/stateless")} == {"stateless"}
    bump = scanned.q("history", "demo/bump")
    assert [row["version"] for row in bump] == ["1.0.0", "1.1.0"]
    assert bump[0]["toolset_sha256"] != bump[1]["toolset_sha256"]


def test_header_secrets_from_the_list_are_never_stored(scanned: Scanned) -> None:
    assert sum("headers" in entry for entry in scanned.entries) == len(WITH_SECRET)
    path = Path(scanned.db.removeprefix("sqlite:///"))
    stored = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    assert len(stored) > 100_000 and SECRET.encode() not in stored
    for name in WITH_SECRET:
        assert SECRET not in json.dumps(scanned.q("history", name))
    assert SECRET not in json.dumps(scanned.q("runs"))


def test_runs_are_finished_with_their_counts(scanned: Scanned) -> None:
    rows = scanned.q("runs")
    ok_first = sum(outcome == "ok" for outcome in FIRST.values())
    ok_second = sum(outcome == "ok" for outcome in SECOND.values())
    assert [(r["run"], r["status"], r["servers_scanned"], r["servers_ok"]) for r in rows] == [
        (1, "finished", 34, ok_first),
        (2, "finished", 34, ok_second),
    ]
    assert {row["source"] for row in rows} == {str(scanned.list_file)}
    table = fathom("runs", "--db", scanned.db)
    header, *lines = [line for line in table.splitlines() if line.strip() and not set(line) <= set("-─ ")]
    assert header.split()[:4] == ["run", "started_at", "finished_at", "status"]
    assert len(lines) == 2 and all("finished" in line for line in lines)


def test_an_unchanged_server_adds_a_scan_row_not_a_toolset(scanned: Scanned) -> None:
    first, second = scanned.stats
    grown = {table: second[table] - first[table] for table in first}
    assert grown["scans"] == len(FIRST) and grown["servers"] == 0 and grown["runs"] == 1
    # Only the six servers whose tools changed brought a new toolset (and only those were measured).
    assert grown["toolsets"] == len(CHANGED) and grown["measurements"] == len(CHANGED)
    # One row per stored provider key (both Claude generations, OpenAI, Gemini).
    assert grown["toolset_tokens"] == len(MEASURED_PROVIDERS) * len(CHANGED) == 4 * len(CHANGED)
    # Per-tool token rows: exactly the tools of the six new toolsets (3 + 2 + 2 + 1 + 2 + 1).
    assert grown["tool_tokens"] == 11
    for name in UNCHANGED_OK:
        rows = scanned.q("history", name)
        assert rows[0]["toolset_sha256"] == rows[1]["toolset_sha256"] is not None, name
    # The three servers serving the same list share one stored toolset.
    shas = {scanned.q("history", name)[0]["toolset_sha256"] for name in ("sdk/same", "sdk-stdio/same")}
    assert len(shas) == 1


def test_second_scan_events_are_exactly_the_changes_made(scanned: Scanned) -> None:
    events = [e for e in open_store(scanned.db).events() if e.run_id == 2]
    got = sorted((e.server, e.kind, e.tool or "", e.code or "") for e in events)
    assert got == sorted(
        [
            ("sdk/add", "tool_added", "delete_note", ""),
            ("sdk/add", "finding_appeared", "delete_note", "MCP102"),
            ("sdk/remove", "tool_removed", "void_invoice", ""),
            ("sdk/remove", "finding_appeared", "void_invoice", "MCP502"),
            ("sdk/rug", "tool_changed", "send_mail", ""),
            ("sdk/rug", "finding_appeared", "send_mail", "MCP501"),
            ("sdk/fix", "tool_changed", "search_docs", ""),
            ("sdk/fix", "finding_appeared", "search_docs", "MCP501"),  # schema changed, version 1.2.3 kept
            ("sdk/fix", "finding_resolved", "search_docs", "MCP205"),
            ("sdk-stdio/add", "tool_added", "flip_coin", ""),
            ("demo/bump", "tool_changed", "convert_units", ""),
            ("demo/bump", "server_version_changed", "", ""),
            ("demo/goes-down", "outcome_changed", "", ""),
        ]
    )
    changed = next(e for e in events if e.server == "sdk/rug" and e.kind == "tool_changed")
    assert "description" in json.dumps(changed.details)


def test_findings_by_rule_code_and_slug(scanned: Scanned) -> None:
    silent = scanned.q("findings", "--rule", "MCP501")
    assert sorted((r["server"], r["tool"], r["first_seen_run"], r["gone_run"]) for r in silent) == [
        ("sdk/fix", "search_docs", 2, None),
        ("sdk/rug", "send_mail", 2, None),
    ]
    assert "demo/bump" not in {r["server"] for r in silent}  # a version bump is not a rug pull
    removed = scanned.q("findings", "--rule", "tool-removed")
    assert [(r["server"], r["code"], r["tool"], r["severity"]) for r in removed] == [
        ("sdk/remove", "MCP502", "void_invoice", "note")
    ]


def test_findings_by_server_show_first_seen_and_gone(scanned: Scanned) -> None:
    rows = scanned.q("findings", "--server", "sdk/fix")
    by_code = {row["code"]: row for row in rows}
    assert (by_code["MCP205"]["first_seen_run"], by_code["MCP205"]["gone_run"]) == (1, 2)
    assert by_code["MCP205"]["gone_at"] is not None
    assert (by_code["MCP501"]["first_seen_run"], by_code["MCP501"]["gone_run"]) == (2, None)
    assert {row["server"] for row in rows} == {"sdk/fix"}
    assert scanned.q("findings", "--server", "sdk/same") == []  # a clean server has none


def test_findings_of_one_run_are_what_was_present_then(scanned: Scanned) -> None:
    run1 = {(r["server"], r["code"], r["tool"]) for r in scanned.q("findings", "--run", "1")}
    run2 = {(r["server"], r["code"], r["tool"]) for r in scanned.q("findings", "--run", "2")}
    assert ("sdk/fix", "MCP205", "search_docs") in run1 - run2
    assert {("sdk/rug", "MCP501", "send_mail"), ("sdk/add", "MCP102", "delete_note")} <= run2 - run1
    assert not any(code in ("MCP501", "MCP502") for _server, code, _tool in run1)
    assert all(row["run"] == 2 for row in scanned.q("findings", "--run", "2"))
    # A server down in run 2 has no findings in run 2 (no scan to have them in).
    assert not any(server == "demo/goes-down" for server, _code, _tool in run2)


def test_findings_since_a_moment_between_the_scans(scanned: Scanned) -> None:
    since = scanned.between.isoformat(timespec="seconds")
    recent = scanned.q("findings", "--since", since)
    assert sorted((r["server"], r["code"]) for r in recent) == [
        ("sdk/add", "MCP102"),
        ("sdk/fix", "MCP501"),
        ("sdk/remove", "MCP502"),
        ("sdk/rug", "MCP501"),
    ]
    assert len(scanned.q("findings", "--since", "2000-01-01")) == len(scanned.q("findings"))
    assert scanned.q("findings", "--since", "2999-01-01") == []
    fathom("findings", "--db", scanned.db, "--since", "last tuesday", code=2)


def test_findings_as_csv(scanned: Scanned) -> None:
    out = fathom("findings", "--db", scanned.db, "--rule", "MCP501", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted(row["server"] for row in rows) == ["sdk/fix", "sdk/rug"]
    assert {row["first_seen_run"] for row in rows} == {"2"} and {row["gone_run"] for row in rows} == {""}


def test_diff_default_and_explicit_runs(scanned: Scanned) -> None:
    added = scanned.q("diff", "sdk/add")
    assert added[0]["change"] == "runs" and "run 1" in added[0]["detail"] and "run 2" in added[0]["detail"]
    assert ("tool added", "delete_note") in {(r["change"], r["tool"]) for r in added}
    assert any(r["change"] == "finding new" and r["detail"].startswith("MCP102") for r in added)
    assert any(r["change"] == "tokens" and r["detail"].startswith("anthropic") for r in added)
    removed = scanned.q("diff", "sdk/remove", "--from", "1", "--to", "2")
    assert [(r["change"], r["tool"]) for r in removed if r["change"].startswith("tool")] == [
        ("tool removed", "void_invoice")
    ]
    fixed = scanned.q("diff", "sdk/fix", "--from", "1", "--to", "2")
    assert any(r["change"] == "finding fixed" and r["detail"].startswith("MCP205") for r in fixed)
    assert ("tool changed", "search_docs") in {(r["change"], r["tool"]) for r in fixed}
    bump = scanned.q("diff", "demo/bump")
    assert "version 1.0.0" in bump[0]["detail"] and "version 1.1.0" in bump[0]["detail"]
    # Nothing changed: only the header row.
    assert [r["change"] for r in scanned.q("diff", "sdk/paged", "--from", "1", "--to", "2")] == ["runs"]
    # Reversed: what was added is now removed.
    back = scanned.q("diff", "sdk/add", "--from", "2", "--to", "1")
    assert ("tool removed", "delete_note") in {(r["change"], r["tool"]) for r in back}


def test_diff_of_a_server_that_never_answered_shows_its_outcomes(scanned: Scanned) -> None:
    rows = scanned.q("diff", "hostile/hang")  # exit 0: what can be shown is shown
    assert rows == [
        {"change": "runs", "tool": None, "detail": "run 1 (timeout, version -) → run 2 (timeout, version -)"},
        {"change": "tools not compared", "tool": None, "detail": "run 1 ended timeout; run 2 ended timeout"},
    ]
    result = runner.invoke(app, ["diff", "hostile/hang", "--to", "9", "--db", scanned.db])
    assert result.exit_code == 2 and result.stderr == "fathom: server 'hostile/hang' has no scan in run 9.\n"
    result = runner.invoke(app, ["history", "no/such-server", "--db", scanned.db, "--format", "json"])
    assert result.exit_code == 2, (result.stdout, result.stderr)


def copy_db(scanned: Scanned, tmp_path: Path) -> str:
    """A private copy of the module's database (SQLite backup API, WAL included), for tests that write."""
    source = sqlite3.connect(scanned.db.removeprefix("sqlite:///"))
    target = sqlite3.connect(tmp_path / "copy.db")
    with source, target:
        source.backup(target)
    source.close()
    target.close()
    return f"sqlite:///{tmp_path / 'copy.db'}"


def test_rescore_under_the_same_rules_keeps_every_finding(scanned: Scanned, tmp_path: Path) -> None:
    db = copy_db(scanned, tmp_path)
    before = [query("findings", "--db", db), query("findings", "--run", "2", "--db", db)]
    stats = open_store(db).database_stats()
    out = fathom("rescore", "--db", db, "--all")  # every list measured again, not only those of older code
    assert out.startswith(
        f"rules {RULES_VERSION}: {stats['toolsets']} tool lists measured; changed 0 tool lists and 0 scans"
    )
    assert "nothing changed; nothing written" in out
    assert [query("findings", "--db", db), query("findings", "--run", "2", "--db", db)] == before
    after = open_store(db).database_stats()
    assert {k: after[k] for k in ("toolsets", "scans", "events")} == {
        k: stats[k] for k in ("toolsets", "scans", "events")
    }


def test_rescore_under_the_same_rules_keeps_every_token_count(scanned: Scanned, tmp_path: Path) -> None:
    # The stored list must be the document the scan measured (the Gemini view keeps the key order it is given).
    db = copy_db(scanned, tmp_path)
    before = query("servers", "--db", db)
    assert "tool lists measured;" in fathom("rescore", "--db", db, "--all")  # every list measured again
    assert query("servers", "--db", db) == before


# --- the address policy ----------------------------------------------------------------------------------


class CountingListener:
    """A loopback TCP listener that only counts the connections it accepts (and closes them)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def test_loopback_servers_are_refused_without_allow_private(tmp_path: Path) -> None:
    listener = CountingListener()
    try:
        urls = {
            "loop/ip": f"http://127.0.0.1:{listener.port}/mcp",
            "loop/name": f"http://localhost:{listener.port}/mcp",
            "loop/other-127": f"http://127.0.0.2:{listener.port}/mcp",
            "loop/ipv6": f"http://[::1]:{listener.port}/mcp",
            "private/10": "http://10.0.0.1/mcp",
            "metadata/link-local": "http://169.254.169.254/mcp",
        }
        registry = tmp_path / "servers.json"
        servers = [{"name": name, "url": url} for name, url in urls.items()]
        registry.write_text(json.dumps({"servers": servers}), encoding="utf-8")
        db = f"sqlite:///{tmp_path}/f.db"
        summary = query("scan", str(registry), "--db", db, "--timeout", "3")
        assert summary["counts"] == {"refused": len(urls)}
        rows = {row["server"]: row for row in query("servers", "--db", db)}
        assert {name: row["last_outcome"] for name, row in rows.items()} == dict.fromkeys(urls, "refused")
        assert all(row["detail"] and row["tools"] is None for row in rows.values())
        time.sleep(0.2)
        assert listener.accepted == 0  # refused means never connected
    finally:
        listener.close()
