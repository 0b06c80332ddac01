"""A registry of the user's own making goes through the same census and finding queries as the official one.

Two small files the test writes, each scanned into its own SQLite file through the real CLI and reported: a JSON
array of ``server.json`` documents (no registry API, no ``_meta``) with a live loopback server, an entry whose URL
keeps an unfilled ``{tenant}`` (MCP701, never connected), one that answers 404 and one on a closed port; and a
simple list (``{"servers": [{"name", "url"}]}``) of the live server and the 404. The health page's census
(``health.json``: entries by class, by outcome, data faults by rule) must count what ``fathom servers`` and
``fathom findings --rule MCP701`` say about the same run, entry by entry.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.report.census import census_class
from tests.servers.launch import RunningServer

runner = CliRunner()
pytestmark = pytest.mark.timeout(120)

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def fathom(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code in (0, 1), (args, result.exit_code, result.stdout, result.stderr, result.exception)
    return result.stdout


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_json(name: str, url: str) -> dict[str, Any]:
    remote = {"type": "streamable-http", "url": url}
    return {"$schema": SCHEMA, "name": name, "description": "Mine", "version": "1.0.0", "remotes": [remote]}


def scanned(workdir: Path, source: Path) -> tuple[str, dict[str, Any]]:
    """Scan ``source`` into a new database, build the report; the database URL and ``health.json``'s census."""
    db = f"sqlite:///{workdir / (source.stem + '.db')}"
    fathom("scan", str(source), "--db", db, "--allow-private", "--retries", "0", "--timeout", "10")
    out = workdir / (source.stem + "-site")
    fathom("report", "--db", db, "--out", str(out), "--preview")  # MCP7xx data faults are preview rules
    health = json.loads((out / "health.json").read_text(encoding="utf-8"))
    return db, health


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory, sdk_http: RunningServer) -> Iterator[dict[str, tuple[str, Any]]]:
    workdir = tmp_path_factory.mktemp("own-registry")
    documents = workdir / "mine.json"
    documents.write_text(
        json.dumps(
            [
                server_json("me.example/live", sdk_http.url("/mcp")),
                server_json("me.example/hole", "http://{tenant}.example.invalid/mcp"),
                server_json("me.example/missing", sdk_http.url("/no-such-path")),
                server_json("me.example/closed", f"http://127.0.0.1:{closed_port()}/mcp"),
            ]
        ),
        encoding="utf-8",
    )
    simple = workdir / "list.json"
    simple.write_text(
        json.dumps(
            {
                "servers": [
                    {"name": "live", "url": sdk_http.url("/mcp")},
                    {"name": "missing", "url": sdk_http.url("/no-such-path")},
                ]
            }
        ),
        encoding="utf-8",
    )
    yield {"server-json": scanned(workdir, documents), "list": scanned(workdir, simple)}


def outcomes(db: str) -> dict[str, str]:
    rows = json.loads(fathom("servers", "--db", db, "--format", "json"))
    return {row["server"]: row["last_outcome"] for row in rows}


@pytest.mark.parametrize("kind", ["server-json", "list"])
def test_the_census_counts_what_the_queries_list(own: dict[str, tuple[str, Any]], kind: str) -> None:
    db, health = own[kind]
    census, rows = health["census"], health["servers"]
    seen = outcomes(db)
    assert census["entries"] == len(seen) == len(rows)
    assert {row["server"]: row["outcome"] for row in rows} == seen
    assert {key: count for key, count in census["by_outcome"].items() if count} == Counter(seen.values())
    classes = Counter(census_class(outcome) for outcome in seen.values())
    assert {key: count for key, count in census["by_class"].items() if count} == classes
    assert {row["server"]: row["census_class"] for row in rows} == {
        name: census_class(outcome) for name, outcome in seen.items()
    }
    # The live server was read; the wrong path is not (whatever its outcome, it is not open).
    live = "me.example/live" if kind == "server-json" else "live"
    assert seen[live] == "ok" and census["by_class"]["open"] == 1


def test_data_faults_are_the_findings_query(own: dict[str, tuple[str, Any]]) -> None:
    db, health = own["server-json"]
    rows = json.loads(fathom("findings", "--db", db, "--rule", "MCP701", "--run", "1", "--format", "json"))
    assert {(row["server"], row["pointer"]) for row in rows} == {("me.example/hole", "/remotes/0/url")}
    assert health["census"]["faults"] == {"MCP701": 1}
    assert (
        json.loads(fathom("findings", "--db", db, "--server", "me.example/hole", "--format", "json", "--preview"))[0][
            "code"
        ]
        == "MCP701"
    )
    every = json.loads(fathom("findings", "--db", db, "--open", "--format", "json", "--preview"))
    faults = Counter(row["code"] for row in every if row["code"].startswith("MCP7"))
    assert dict(faults) == health["census"]["faults"]


def test_a_simple_list_has_no_data_faults(own: dict[str, tuple[str, Any]]) -> None:
    """A plain list declares nothing a registry-data rule reads: none found, by the page or the query."""
    db, health = own["list"]
    assert health["census"]["faults"] == {}
    assert json.loads(fathom("findings", "--db", db, "--rule", "MCP701", "--format", "json")) == []
