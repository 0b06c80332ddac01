"""NUL and lone surrogates from servers and registries never abort a scan or its resume (issue 8, item 7).

PostgreSQL refuses NUL in a text column (``psycopg.DataError``) and no driver encodes a lone surrogate, so one such
character used to abort the whole scan, and every ``--resume`` crashed on the same row. The parse edges replace
them (``scanner.wire``); the store's own text path replaces them too, whichever way they got in. Every test runs
on a real SQLite file and, when ``FATHOM_TEST_POSTGRES_URL`` names a scratch database, on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from scanner import wire
from scanner.cli import app
from scanner.models import ServerEntry, Transport
from scanner.rules import RULES_VERSION
from scanner.scan.night import source_key
from scanner.store import open_store
from scanner.store.engine import _clean_parameters, create_store_engine
from tests.servers.launch import running, start_sdk_http
from tests.store.conftest import local_measure, ok, tool

PG_URL = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")
runner = CliRunner()
NUL_TOOLS = [
    {
        "name": "echo\u0000probe",
        "description": "Echo the text back \u0000 unchanged.",
        "inputSchema": {"type": "object", "properties": {"te\u0000xt": {"type": "string"}}},
    },
    {"name": "add", "description": "Add two numbers.", "inputSchema": {"type": "object"}},
]


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


@pytest.fixture(scope="module")
def nul_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The official SDK server on loopback, serving a tool whose name, description and a parameter carry NUL."""
    tools = tmp_path_factory.mktemp("nul") / "tools.json"
    tools.write_text(json.dumps(NUL_TOOLS), encoding="utf-8")  # json.dumps writes NUL as the \u0000 escape
    with running(start_sdk_http(tools_file=tools)) as server:
        yield server.url()


def test_a_scan_of_a_server_with_nul_in_its_tools_and_name_finishes(
    db_url: str, nul_server: str, tmp_path: Path
) -> None:
    registry = tmp_path / "servers.json"
    servers = [{"name": "acme\u0000nul", "url": nul_server}]
    registry.write_text(json.dumps({"servers": servers}), encoding="utf-8")

    result = runner.invoke(app, ["scan", str(registry), "--db", db_url, "--allow-private", "--format", "json"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counts"] == {"ok": 1}
    with open_store(db_url) as store:
        (server,) = store.servers()
        assert server.name == "acme\ufffdnul" and server.last_outcome == "ok" and server.tools_count == 2
        (scan,) = store.history(server.name)
        tools = store.toolset_tools(scan.toolset_sha256)
    assert [item["name"] for item in tools] == ["echo\ufffdprobe", "add"]
    assert tools[0]["description"] == "Echo the text back \ufffd unchanged."
    assert list(tools[0]["inputSchema"]["properties"]) == ["te\ufffdxt"]
    shown = runner.invoke(app, ["servers", "--db", db_url, "--format", "json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout)[0]["server"] == "acme\ufffdnul"


def test_the_store_replaces_nul_and_surrogates_that_skipped_the_parse_edge_and_resume_finishes(
    db_url: str, nul_server: str, tmp_path: Path
) -> None:
    """An interrupted run holding a server written with raw NUL and lone surrogates everywhere a string can go
    (its name, tool names, finding text, server version, the outcome's extra), then ``--resume``."""
    registry = tmp_path / "servers.json"
    servers = [{"name": "acme\u0000nul", "url": nul_server}, {"name": "second", "url": nul_server}]
    registry.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    raw_entry = ServerEntry(name="acme\x00nul", transport=Transport.HTTP, url=nul_server)
    outcome = ok(
        [tool("echo\x00probe", "Echo \x00 back."), tool("x\x00y", None, q=None)],
        version="1.0\x00\ud800",
        extra={"message": "boom \ud800 here \x00", "k\x00ey": ["\udfff"]},
    )
    with open_store(db_url) as store:
        run_id = store.start_run(source_key(str(registry)), RULES_VERSION, {"note": "\x00\ud800"})
        record = store.record_scan(run_id, raw_entry, outcome, local_measure)
        store.finish_run(run_id, "interrupted")
        assert record.server == "acme\x00nul" and not record.duplicate
        (scan,) = store.history("acme\x00nul")  # the query parameter is cleaned the same way
        assert scan.server_version == "1.0\ufffd\ufffd"
        findings = store.findings(server="acme\ufffdnul")
        assert findings and all("\x00" not in (f.tool or "") + f.message for f in findings)
        assert {(f.code, f.tool) for f in findings} == {("MCP102", "x\ufffdy"), ("MCP205", "x\ufffdy")}

    result = runner.invoke(app, ["scan", str(registry), "--db", db_url, "--allow-private", "--resume"])

    assert result.exit_code == 0, result.output
    # Only "second" was left to scan; the run stored no address policy, so this command's --allow-private is used.
    # The line gives the whole run's totals (issue 19): the server written before the resume counts too.
    assert result.stdout == f"run {run_id} finished: 2 servers (1 done before this resume) · ok 2\n"
    assert "the run stored no 'allow_private'; this command's value is used" in result.stderr
    with open_store(db_url) as store:
        (run,) = store.runs()
        assert run.status == "finished" and run.servers_scanned == 2
        assert sorted(server.name for server in store.servers()) == ["acme\ufffdnul", "second"]


@pytest.mark.parametrize(
    "parameters",
    [
        {"a": 1, "b": "ok", "c": None},
        ("ok", 2, b"\x00bytes are not text"),
        [("ok", 1), ("fine", 2)],
        [{"a": "ok"}, {"a": "é still fine"}],
        [],
        None,
    ],
)
def test_the_text_guard_hands_back_writable_parameters_untouched(parameters: object) -> None:
    assert _clean_parameters(parameters) is parameters


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({"a": "x\x00y", "b": 1}, {"a": "x\ufffdy", "b": 1}),
        (("ok", "lone \ud800"), ("ok", "lone \ufffd")),
        ([("ok", 1), ("n\x00", 2)], [("ok", 1), ("n\ufffd", 2)]),
        ([{"a": "ok"}, {"a": "\udc00"}], [{"a": "ok"}, {"a": "\ufffd"}]),
        ((("\ud83d", "\ude00"),), (("\ufffd", "\ufffd"),)),  # two halves in two values stay two lone halves
        ([("é", 1), {"a": "\ud800"}], [("é", 1), {"a": "\ufffd"}]),  # rows of two kinds: each walked as it is
        ([("é" * 500, 1)] * 40 + [("x\ud800", 2)], [("é" * 500, 1)] * 40 + [("x\ufffd", 2)]),
        ([{"a": "ü", "b": 1}, {"a": "\x00", "b": 2}], [{"a": "ü", "b": 1}, {"a": "\ufffd", "b": 2}]),
    ],
)
def test_the_text_guard_finds_nul_and_lone_surrogates_anywhere_in_the_parameters(
    parameters: object, expected: object
) -> None:
    assert _clean_parameters(parameters) == expected


@pytest.mark.parametrize(
    "text", ["", "plain", "nul \x00 in ascii", "\x00\x00", "é", "é\x00", "lone \ud800", "\udfff é", "😀", "😀\x00"]
)
def test_clean_str_replaces_nul_and_surrogates_and_hands_back_clean_text_itself(text: str) -> None:
    cleaned = wire.clean_str(text)
    assert cleaned == re.sub("[\x00\ud800-\udfff]", "\ufffd", text)
    assert (cleaned is text) == (cleaned == text)
