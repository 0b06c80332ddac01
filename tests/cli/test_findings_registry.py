"""``fathom findings`` over registry-data findings (MCP701-MCP705), on a registry the test makes.

A saved registry response of five entries, scanned twice into SQLite through the real CLI: a remote whose URL has an
unfilled ``{tenant}`` (MCP701, never connected), one with two such remotes (two MCP701, told apart by pointer), one
whose ``{port}`` has a default (the near miss: filled, it reaches the official SDK's server on loopback), and the same
live server plainly. Between the scans the tenant entry gets its default (its MCP701 goes) and a new entry with a
hole appears (a new MCP701). The queries must list what ``fathom scan --dry-run`` flags, with when each appeared and
went: by rule code and slug, by server, ``--open``, ``--since``, ``--run``, JSON and CSV.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from tests.servers.launch import RunningServer

runner = CliRunner()
pytestmark = pytest.mark.timeout(120)

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def fathom(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.exit_code, result.stdout, result.stderr, result.exception)
    return result.stdout


def entry(name: str, *urls: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    extra = {"variables": variables} if variables else {}
    remotes = [{"type": "streamable-http", "url": url, **extra} for url in urls]
    server = {"$schema": SCHEMA, "name": name, "description": "A test server", "version": "1.0.0", "remotes": remotes}
    return {"server": server, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active"}}}


def registry(path: Path, live: RunningServer, *, second: bool) -> Path:
    """The registry of the first scan, or of the second (the tenant's hole filled, a new entry with one)."""
    if second:  # the tenant's variable now has a default: the live server's port
        tenant = entry(
            "io.example/tenant", "http://127.0.0.1:{tenant}/mcp", variables={"tenant": {"default": str(live.port)}}
        )
    else:
        tenant = entry("io.example/tenant", "http://{tenant}.example.invalid/mcp")
    rows = [
        tenant,
        entry("io.example/two-holes", "http://{a}.example.invalid/mcp", "http://{b}.example.invalid/mcp"),
        entry("io.example/filled", "http://127.0.0.1:{port}/mcp", variables={"port": {"default": str(live.port)}}),
        entry("io.example/live", live.url("/mcp")),
    ]
    if second:
        rows.append(entry("io.example/new-hole", "http://{region}.example.invalid/mcp"))
    path.write_text(json.dumps({"servers": rows}), encoding="utf-8")
    return path


def flagged(path: Path, code: str) -> set[tuple[str, str]]:
    """(entry, pointer) of every ``code`` finding ``fathom scan --dry-run`` shows for the registry at ``path``."""
    rows = json.loads(fathom("scan", str(path), "--dry-run", "--format", "json"))
    return {(row["name"], finding["pointer"]) for row in rows for finding in row["findings"] if finding["code"] == code}


@dataclass
class Scanned:
    db: str
    first: set[tuple[str, str]]
    second: set[tuple[str, str]]
    between: datetime

    def findings(self, *args: str) -> list[dict[str, Any]]:
        rows = json.loads(fathom("findings", "--db", self.db, "--format", "json", *args))
        assert isinstance(rows, list)
        return rows


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory, sdk_http: RunningServer) -> Iterator[Scanned]:
    workdir = tmp_path_factory.mktemp("registry-findings")
    db = f"sqlite:///{workdir / 'f.db'}"
    first = registry(workdir / "one.json", sdk_http, second=False)
    second = registry(workdir / "two.json", sdk_http, second=True)
    scan = ("--db", db, "--allow-private", "--retries", "0", "--format", "json")
    fathom("scan", str(first), *scan)
    between = (datetime.now(UTC) + timedelta(seconds=1)).replace(microsecond=0, tzinfo=None)
    while datetime.now(UTC).replace(tzinfo=None) <= between:
        time.sleep(0.05)
    fathom("scan", str(second), *scan)
    yield Scanned(db=db, first=flagged(first, "MCP701"), second=flagged(second, "MCP701"), between=between)


def pairs(rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(row["server"], row["pointer"]) for row in rows}


def test_the_registry_is_what_the_test_says(scanned: Scanned) -> None:
    assert scanned.first == {
        ("io.example/tenant", "/remotes/0/url"),
        ("io.example/two-holes", "/remotes/0/url"),
        ("io.example/two-holes", "/remotes/1/url"),
    }
    assert scanned.second == {
        ("io.example/two-holes", "/remotes/0/url"),
        ("io.example/two-holes", "/remotes/1/url"),
        ("io.example/new-hole", "/remotes/0/url"),
    }
    servers = {row["server"]: row for row in json.loads(fathom("servers", "--db", scanned.db, "--format", "json"))}
    # The near miss and the fixed entry reached the live server; the holes were never connected.
    assert servers["io.example/filled"]["last_outcome"] == "ok"
    assert servers["io.example/tenant"]["last_outcome"] == "ok"
    assert servers["io.example/two-holes"]["last_outcome"] != "ok"


def test_by_rule_lists_every_entry_the_dry_runs_flagged_with_when(scanned: Scanned) -> None:
    rows = scanned.findings("--rule", "MCP701")
    assert {row["code"] for row in rows} == {"MCP701"}
    assert pairs(rows) == scanned.first | scanned.second
    assert len(rows) == len(scanned.first | scanned.second)  # one row per finding, not per (server, code)
    when = {(row["server"], row["pointer"]): (row["first_seen_run"], row["gone_run"]) for row in rows}
    assert when == {
        ("io.example/tenant", "/remotes/0/url"): (1, 2),
        ("io.example/two-holes", "/remotes/0/url"): (1, None),
        ("io.example/two-holes", "/remotes/1/url"): (1, None),
        ("io.example/new-hole", "/remotes/0/url"): (2, None),
    }
    assert scanned.findings("--rule", "url-placeholder") == rows
    tenant = next(row for row in rows if row["server"] == "io.example/tenant")
    assert tenant["severity"] == "problem" and "{tenant}" in tenant["message"]
    assert tenant["details"]["variables"] == ["tenant"]


def test_open_lists_what_the_newest_dry_run_flags(scanned: Scanned) -> None:
    assert pairs(scanned.findings("--rule", "MCP701", "--open")) == scanned.second
    every_open = scanned.findings("--open", "--preview")  # MCP701 is a preview rule: shown when asked for
    assert {pair for pair in pairs(every_open) if pair[1] and pair[1].startswith("/remotes/")} >= scanned.second
    assert not [row for row in scanned.findings("--open") if row["code"] == "MCP701"]  # out of sight by default
    assert ("io.example/tenant", "/remotes/0/url") not in pairs(every_open)


def test_by_server(scanned: Scanned) -> None:
    rows = scanned.findings("--server", "io.example/two-holes", "--preview")
    assert all(row["status"] == "preview" and "precision" in row for row in rows)
    assert pairs(rows) == {("io.example/two-holes", "/remotes/0/url"), ("io.example/two-holes", "/remotes/1/url")}
    assert {row["code"] for row in rows} == {"MCP701"}
    assert pairs(scanned.findings("--server", "io.example/tenant", "--rule", "MCP701")) == {
        ("io.example/tenant", "/remotes/0/url")
    }
    assert scanned.findings("--server", "io.example/filled", "--rule", "MCP701") == []


def test_since_keeps_what_appeared_in_the_second_run(scanned: Scanned) -> None:
    rows = scanned.findings("--rule", "MCP701", "--since", scanned.between.isoformat())
    assert pairs(rows) == {("io.example/new-hole", "/remotes/0/url")}


def test_without_a_rule_registry_findings_are_among_the_rest(scanned: Scanned) -> None:
    rows = scanned.findings("--preview")  # MCP701 is a preview rule: among the rest when preview is asked for
    assert pairs([row for row in rows if row["code"] == "MCP701"]) == scanned.first | scanned.second
    # The live server's own list findings are there too, each once.
    live = [(row["code"], row["tool"], row["pointer"]) for row in rows if row["server"] == "io.example/live"]
    assert live and len(live) == len(set(live))


def test_run_rows_carry_when_each_appeared(scanned: Scanned) -> None:
    rows = scanned.findings("--rule", "MCP701", "--run", "2")
    assert pairs(rows) == scanned.second
    assert {(row["server"], row["first_seen_run"]) for row in rows} == {
        ("io.example/two-holes", 1),
        ("io.example/new-hole", 2),
    }
    assert pairs(scanned.findings("--rule", "MCP701", "--run", "1")) == scanned.first


def test_csv_and_table(scanned: Scanned) -> None:
    text = fathom("findings", "--db", scanned.db, "--rule", "MCP701", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {(row["server"], row["pointer"]) for row in rows} == scanned.first | scanned.second
    table = fathom("findings", "--db", scanned.db, "--rule", "MCP701", "--open")
    assert "io.example/new-hole" in table and "io.example/tenant" not in table and "(none)" not in table


def test_rescore_keeps_them(scanned: Scanned, tmp_path: Path) -> None:
    """``fathom rescore`` recomputes each scan's own findings from the store; the entry's are kept, not dropped."""
    source = Path(scanned.db.removeprefix("sqlite:///"))
    copy = tmp_path / "copy.db"
    copy.write_bytes(source.read_bytes())
    db = f"sqlite:///{copy}"
    assert "MCP701" not in fathom("rescore", "--db", db, "--dry-run")
    fathom("rescore", "--db", db)
    rows = json.loads(fathom("findings", "--db", db, "--rule", "MCP701", "--format", "json"))
    assert pairs(rows) == scanned.first | scanned.second
