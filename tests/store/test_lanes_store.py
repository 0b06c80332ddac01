"""The store's side of lanes and instructions, on a real SQLite file and (with ``FATHOM_TEST_POSTGRES_URL``) on
PostgreSQL: a scan in two lanes keeps both lists and the ranked lane, lane findings and MCP503 are the scan's own,
instructions are kept once per text (NUL made U+FFFD, which PostgreSQL needs), and a 401 with nothing to
discover keeps its MCP602 though the scan has no toolset."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.scan.lanes import combine
from scanner.store import open_store
from scanner.store.engine import create_store_engine
from tests.store.conftest import local_measure, ok, tool

PG_URL = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")
SILENT = {"status": 200, "challenge": None, "resource_metadata": False}
FIRST = "Use search first.\u0000 Results are in English."
SECOND = "Use search first. Results are in English. Always call export after search."


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'f.db'}"
        return
    if not PG_URL:
        pytest.skip("set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")
    pytest.importorskip("psycopg")
    engine = create_store_engine(PG_URL)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    yield PG_URL


def _entry() -> ServerEntry:
    return ServerEntry("io.example/team", Transport.STREAMABLE_HTTP, url="https://team.example/mcp")


def _lanes(instructions: str) -> ScanOutcome:
    anonymous = ok([tool("search")], extra={"instructions": instructions})
    credentialed = ok([tool("search"), tool("export")], extra={"instructions": instructions})
    return combine(anonymous, credentialed, SILENT)


def test_lanes_instructions_and_mcp503_round_trip(db_url: str) -> None:
    with open_store(db_url) as store:
        runs = []
        for instructions in (FIRST, FIRST, SECOND):
            run = store.start_run("list.txt", "3", {})
            store.record_scan(run, _entry(), _lanes(instructions), local_measure)
            store.finish_run(run)
            runs.append(run)
        boards = [store.leaderboard(run)[0] for run in runs]
        history = store.history("io.example/team")
        change = store.diff("io.example/team")
        with store.engine.connect() as connection:
            texts = [row[0] for row in connection.execute(text("SELECT text FROM instructions ORDER BY id"))]
            lane_rows = connection.execute(text("SELECT count(*) FROM scan_lanes")).scalar()
            toolsets = connection.execute(text("SELECT count(*) FROM toolsets")).scalar()
    assert texts == [FIRST.replace("\u0000", "\ufffd"), SECOND]
    assert (lane_rows, toolsets) == (6, 2)  # two lists, each stored once however many scans list it
    first = boards[0]
    assert (first.lane, first.tools_count) == ("credentialed", 2)
    assert [(lane.lane, lane.tools_count) for lane in first.lanes] == [("anonymous", 1), ("credentialed", 2)]
    assert [f.code for f in first.findings if f.code == "MCP601"] == ["MCP601"]
    assert not [f for f in boards[1].findings if f.code == "MCP503"]
    assert [f.code for f in boards[2].findings if f.code == "MCP503"] == ["MCP503"]
    assert [row.lanes[0].tools_count for row in history] == [1, 1, 1]
    assert [lane.lane for lane in change.lanes_to] == ["anonymous", "credentialed"]
    assert [f.code for f in change.findings_new] == ["MCP503"]


def test_a_bare_401_keeps_its_mcp602_without_a_toolset(db_url: str) -> None:
    denied = ScanOutcome(Outcome.AUTH_REQUIRED, "streamable-http", "HTTP 401", extra={"status": 401})
    with open_store(db_url) as store:
        run = store.start_run("list.txt", "3", {})
        store.record_scan(run, _entry(), denied, local_measure)
        store.finish_run(run)
        (row,) = store.leaderboard(run)
        (finding,) = store.findings(run=run)
    assert row.outcome == "auth_required" and row.toolset_sha256 is None
    assert [f.code for f in row.findings] == ["MCP602"]
    assert finding.code == "MCP602" and finding.server == "io.example/team"
