"""``fathom scan`` in lanes: a registry entry whose credential is set is listed without it and with it.

The servers are the demo host's ``lanes`` mode on loopback (tools registered by scope with a bearer token), named
by a server.json array whose remotes ask for a secret ``Authorization`` header, filled from
``FATHOM_SECRET_<SERVER>_AUTHORIZATION``. What a user checks: each lane's tool count is stored and shown side by
side (``anonymous: 3 of 14 tools``), the leaderboard ranks the richest lane and says which, MCP601 fires on the
silent lane and not on the one that publishes metadata, MCP602 on a bare 401, ``--lanes`` picks one lane, and the
token never reaches the database.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo.server import DemoHost, Site
from scanner.registry.secrets import secret_env_name
from scanner.store import open_store

runner = CliRunner()
MEMBER = "member-token-5f1c9a7e"
NAMES = [f"tool_{index:02d}" for index in range(14)]
TOOLS = [
    {
        "name": name,
        "description": f"Does task {name} for the team and returns the result as JSON.",
        "inputSchema": {"type": "object", "properties": {}},
    }
    for name in NAMES
]


def _site(name: str, **kwargs: Any) -> Site:
    return Site(
        name=name,
        version="1.0.0",
        tools=TOOLS,
        mode="lanes",
        tokens={MEMBER: NAMES},
        public=NAMES[:3],
        **kwargs,
    )


SITES = {
    "silent": _site("silent", metadata=False),
    "told": _site("told", metadata=True),
    "bare401": _site("bare401", anonymous="401", challenge=False, metadata=False),
}


@pytest.fixture(scope="module")
def host() -> Iterator[DemoHost]:
    with DemoHost(list(SITES.values())) as running:
        yield running


def _registry(tmp_path: Path, host: DemoHost, monkeypatch: pytest.MonkeyPatch, names: list[str]) -> Path:
    servers = []
    for name in names:
        full = f"io.example/{name}"
        servers.append(
            {
                "name": full,
                "version": "1.0.0",
                "remotes": [
                    {
                        "type": "streamable-http",
                        "url": host.url(name),
                        "headers": [{"name": "Authorization", "isSecret": True, "isRequired": True}],
                    }
                ],
            }
        )
        monkeypatch.setenv(secret_env_name(full, "Authorization"), f"Bearer {MEMBER}")
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(servers), encoding="utf-8")
    return path


def _scan(registry: Path, db: str, *extra: str) -> dict[str, Any]:
    args = ["scan", str(registry), "--db", db, "--allow-private", "--timeout", "10", "--format", "json", *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert MEMBER not in result.output
    return json.loads(result.stdout)


def test_both_lanes_are_stored_and_the_richest_is_ranked(
    tmp_path: Path, host: DemoHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = _registry(tmp_path, host, monkeypatch, list(SITES))
    db = f"sqlite:///{tmp_path}/f.db"
    summary = _scan(registry, db)
    assert summary["counts"] == {"ok": 3}

    with open_store(db) as store:
        (run,) = store.runs()
        rows = {row.server.split("/")[1]: row for row in store.leaderboard(run.id)}
    silent = rows["silent"]
    assert (silent.lane, silent.tools_count) == ("credentialed", 14)
    assert [(lane.lane, lane.outcome, lane.tools_count) for lane in silent.lanes] == [
        ("anonymous", "ok", 3),
        ("credentialed", "ok", 14),
    ]
    # the anonymous lane's list is stored like any toolset, by content hash
    assert silent.lanes[0].toolset_sha256 and silent.lanes[0].toolset_sha256 != silent.toolset_sha256
    assert [f.code for f in silent.findings if f.code.startswith("MCP6")] == ["MCP601"]
    (finding,) = [f for f in silent.findings if f.code == "MCP601"]
    assert finding.details["anonymous_tools"] == 3 and finding.details["credential_tools"] == 14
    assert finding.tool is None

    told = rows["told"]
    assert told.lanes[0].signals["resource_metadata"] is True
    assert told.lanes[0].signals["issuers"]
    assert not [f for f in told.findings if f.code.startswith("MCP6")]

    bare = rows["bare401"]
    assert [(lane.lane, lane.outcome) for lane in bare.lanes] == [
        ("anonymous", "auth_required"),
        ("credentialed", "ok"),
    ]
    assert bare.lane == "credentialed" and bare.tools_count == 14
    assert [f.code for f in bare.findings if f.code.startswith("MCP6")] == ["MCP602"]

    history = runner.invoke(app, ["history", "io.example/silent", "--db", db, "--format", "json"])
    (row,) = json.loads(history.stdout)
    assert row["lanes"] == "anonymous: 3 of 14 tools; credentialed: 14 tools"
    assert row["lane"] == "credentialed"

    with sqlite3.connect(f"{tmp_path}/f.db") as connection:  # the token is used, never stored
        for (table,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            for values in connection.execute(f'SELECT * FROM "{table}"'):
                assert MEMBER not in repr(values), table


def test_the_second_run_diffs_lanes_side_by_side(
    tmp_path: Path, host: DemoHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = _registry(tmp_path, host, monkeypatch, ["silent"])
    db = f"sqlite:///{tmp_path}/f.db"
    _scan(registry, db)
    _scan(registry, db)
    result = runner.invoke(app, ["diff", "io.example/silent", "--db", db, "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {row["change"]: row["detail"] for row in json.loads(result.stdout)}
    assert rows["lanes (from)"] == rows["lanes (to)"] == "anonymous: 3 of 14 tools; credentialed: 14 tools"
    # an unchanged server: the MCP601 of the first run is not reported as new again
    assert "finding new" not in rows


@pytest.mark.parametrize(("choice", "tools"), [("anonymous", 3), ("credentialed", 14)])
def test_lanes_option_scans_one_lane(
    tmp_path: Path, host: DemoHost, monkeypatch: pytest.MonkeyPatch, choice: str, tools: int
) -> None:
    registry = _registry(tmp_path, host, monkeypatch, ["silent"])
    db = f"sqlite:///{tmp_path}/f.db"
    _scan(registry, db, "--lanes", choice)
    with open_store(db) as store:
        (run,) = store.runs()
        (row,) = store.leaderboard(run.id)
        assert run.options["lanes"] == choice
    assert (row.tools_count, row.lanes, row.lane) == (tools, (), None)
    assert not [f for f in row.findings if f.code.startswith("MCP6")]  # one lane: nothing to compare


def test_an_entry_without_a_credential_is_scanned_once(tmp_path: Path, host: DemoHost) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"servers": [{"name": "plain", "url": host.url("silent")}]}), encoding="utf-8")
    db = f"sqlite:///{tmp_path}/f.db"
    _scan(path, db)
    with open_store(db) as store:
        (run,) = store.runs()
        (row,) = store.leaderboard(run.id)
    assert (row.tools_count, row.lanes) == (3, ())
