"""The registry's view of clients (issue 43, deliverable 4), end to end on real scans of real servers (the official
Python SDK's, over HTTP) into a real SQLite file: three nights of two servers. ``files`` has a dotted tool name from
the first night (the APIs, Claude Desktop and Codex refuse it); ``memory`` adds a draft-07 ``outputSchema`` on the
second (Claude Desktop and Claude Code drop that tool) and keeps it. A registry operator asks "which of our
servers will Claude Desktop refuse tonight, and since when": ``fathom servers --client``, the Clients page,
``health.json`` and the leaderboard answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure.verdicts import REJECT_CLIENTS
from tests.servers.launch import sdk_http_server

runner = CliRunner()

PLAIN = {
    "name": "read_graph",
    "description": "Read the whole knowledge graph: entities and relations.",
    "inputSchema": {"type": "object", "properties": {}},
}
DIALECT = {**PLAIN, "name": "open_nodes", "outputSchema": {"$schema": "http://json-schema.org/draft-07/schema#"}}
DIALECT["outputSchema"] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"nodes": {"type": "array", "items": {"type": "string"}}},
}
DOTTED = {**PLAIN, "name": "files.read", "description": "Read a file by its path and return its text."}


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("clients")
    files, memory = tmp / "files.json", tmp / "memory.json"
    files.write_text(json.dumps([DOTTED, PLAIN]), encoding="utf-8")
    db = f"sqlite:///{tmp}/f.db"
    registry = tmp / "servers.json"
    with sdk_http_server(tools_file=files) as first, sdk_http_server(tools_file=memory) as second:
        entries = [
            {
                "name": "io.example/files",
                "version": "1.0.0",
                "remotes": [{"type": "streamable-http", "url": first.url()}],
            },
            {
                "name": "io.example/memory",
                "version": "1.0.0",
                "remotes": [{"type": "streamable-http", "url": second.url()}],
            },
        ]
        registry.write_text(json.dumps(entries), encoding="utf-8")
        for night in ([PLAIN], [PLAIN, DIALECT], [PLAIN, DIALECT]):
            memory.write_text(json.dumps(night), encoding="utf-8")
            done = runner.invoke(app, ["scan", str(registry), "--db", db, "--allow-private", "--timeout", "20"])
            assert done.exit_code == 0, (done.stdout, done.stderr)
    site = tmp / "site"
    built = runner.invoke(app, ["report", "--db", db, "--out", str(site)])
    assert built.exit_code == 0, built.stderr
    return {"db": db, "site": site}


def _servers(db: str, *args: str) -> list[dict[str, Any]]:
    done = runner.invoke(app, ["servers", "--db", db, "--format", "json", *args])
    assert done.exit_code == 0, done.stderr
    return list(json.loads(done.stdout))


def test_servers_by_client_and_state_since_when(scanned: dict[str, Any]) -> None:
    db = scanned["db"]
    refused = _servers(db, "--client", "claude-desktop", "--state", "refuses")
    assert [(row["server"], row["verdict"], row["rules"], row["since_run"]) for row in refused] == [
        ("io.example/files", "refuses the whole list", "MCP101", 1)
    ]
    dropped = _servers(db, "--client", "claude-desktop", "--state", "drops")
    assert [(row["server"], row["verdict"], row["rules"], row["since_run"]) for row in dropped] == [
        ("io.example/memory", "drops 1 tool", "MCP808", 2)
    ]
    both = _servers(db, "--client", "claude-desktop")
    assert [row["server"] for row in both] == ["io.example/files", "io.example/memory"]
    assert [row["server"] for row in _servers(db, "--client", "openai-api")] == ["io.example/files"]
    assert _servers(db, "--client", "windsurf") == []
    table = runner.invoke(app, ["servers", "--db", db, "--client", "claude-code"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "io.example/memory" in table.stdout and "io.example/files" not in table.stdout
    done = runner.invoke(app, ["history", "io.example/memory", "--db", db, "--format", "json"])
    cells = [row["will_it_load"] for row in json.loads(done.stdout)]
    assert cells[0] == "loads everywhere" and all("Claude Desktop (1)" in cell for cell in cells[1:])
    done = runner.invoke(app, ["history", "io.example/files", "--db", db, "--format", "json"])
    assert all("Anthropic API" in row["will_it_load"] for row in json.loads(done.stdout))  # MCP101, every night
    everyone = _servers(db)  # the plain listing's verdict cell counts MCP101 too
    cells = {row["server"]: row["will_it_load"] for row in everyone}
    assert "Anthropic API" in cells["io.example/files"] and "Claude Desktop (1)" in cells["io.example/memory"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--client", "claud-desktop"], "did you mean 'claude-desktop'?"),
        (["--client", "all"], "--client takes one client key"),
        (["--client", "codex", "--state", "loads"], "--state must be refuses or drops"),
        (["--state", "drops"], "--state goes with --client"),
    ],
)
def test_servers_client_mistakes(scanned: dict[str, Any], args: list[str], said: str) -> None:
    done = runner.invoke(app, ["servers", "--db", scanned["db"], *args])
    assert done.exit_code == 2 and said in done.stderr


def test_the_clients_page_health_json_and_leaderboard(scanned: dict[str, Any]) -> None:
    site: Path = scanned["site"]
    page = (site / "clients.html").read_text(encoding="utf-8")
    for client in REJECT_CLIENTS:
        assert f'id="client-{client.key}"' in page and f'id="trend-{client.key}"' in page

    def counts(key: str) -> tuple[str, str, str]:
        row = re.search(rf'<tr id="client-{key}">(.*?)</tr>', page, re.S)
        assert row is not None
        found = re.findall(r'data-label="(?:Loads|Drops tools|Refuses)">([\d,]+)</td>', row.group(1))
        return found[0], found[1], found[2]

    assert counts("claude-desktop") == ("0", "1", "1")
    assert counts("claude-code") == ("1", "1", "0")
    assert counts("openai-api") == ("1", "0", "1")
    assert counts("windsurf") == ("2", "0", "0")
    assert 'href="rules.html#mcp808">MCP808</a> output-schema-dialect: 1' in page
    assert "Claude Desktop: servers it does not load whole" in page
    health = json.loads((site / "health.json").read_text(encoding="utf-8"))["clients"]
    assert health["servers"] == 2
    assert health["by_client"]["claude-desktop"] == {
        "label": "Claude Desktop",
        "covers": next(client.covers for client in REJECT_CLIENTS if client.key == "claude-desktop"),
        "loads": 0,
        "drops": 1,
        "refuses": 1,
        "rules": {"MCP101": 1, "MCP808": 1},
    }
    board = json.loads((site / "leaderboard.json").read_text(encoding="utf-8"))
    by_name = {row["server"]: row for row in board["ranked"]}
    assert by_name["io.example/memory"]["verdicts"]["claude-desktop"]["state"] == "drops"
    assert by_name["io.example/files"]["verdicts"]["codex"]["state"] == "loads"  # a dated note since PR #8694
    assert "openai/codex#8174" in by_name["io.example/files"]["verdicts"]["codex"]["notes"][0]
    assert '<a href="clients.html">Clients</a>' in (site / "index.html").read_text(encoding="utf-8")


def test_a_registry_scan_builds_names_under_the_entrys_last_segment(tmp_path: Path) -> None:
    """MCP809 in a registry scan: the key is the entry's last name segment (`a-rather-long-server-name`), so
    `mcp__a-rather-long-server-name__` + 40 characters passes Claude Code's 64; the same list under a short
    entry name loads. Stored with the scan (a toolset is shared by every server serving it)."""
    tool = {**PLAIN, "name": "get_" + "x" * 36}
    served = tmp_path / "served.json"
    served.write_text(json.dumps([tool]), encoding="utf-8")
    db = f"sqlite:///{tmp_path}/f.db"
    registry = tmp_path / "servers.json"
    with sdk_http_server(tools_file=served) as server:
        remote = [{"type": "streamable-http", "url": server.url()}]
        entries = [
            {"name": "io.example/a-rather-long-server-name", "version": "1.0.0", "remotes": remote},
            {"name": "io.example/short", "version": "1.0.0", "remotes": remote},
        ]
        registry.write_text(json.dumps(entries), encoding="utf-8")
        done = runner.invoke(app, ["scan", str(registry), "--db", db, "--allow-private", "--timeout", "20"])
        assert done.exit_code == 0, done.stderr
    dropped = _servers(db, "--client", "claude-code", "--state", "drops")
    assert [(row["server"], row["rules"]) for row in dropped] == [("io.example/a-rather-long-server-name", "MCP809")]
    found = runner.invoke(app, ["findings", "--rule", "MCP809", "--run", "1", "--db", db, "--format", "json"])
    (row,) = json.loads(found.stdout)
    assert row["details"]["server_key"] == "a-rather-long-server-name"
