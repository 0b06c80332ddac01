"""A server whose strings cannot be written as UTF-8 (lone surrogates) is scanned and stored like any other."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo.server import DemoHost, Site

runner = CliRunner()

LONE = {
    "name": "search\ud800",
    "description": "Search \udc00 the index and return matching documents with a snippet each.",
    "inputSchema": {"type": "object", "properties": {"q\ud800": {"type": "string", "description": "Query."}}},
}
FINE = {
    "name": "echo",
    "description": "Return the text it is given, unchanged, for testing a connection.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "Any text."}}},
}


def test_lone_surrogates_do_not_abort_the_scan(tmp_path: Path) -> None:
    sites = [
        Site("lone", "1.0.0\ud800", [LONE], title="lone\udc00name"),
        Site("fine", "1.0.0", [FINE]),
    ]
    with DemoHost(sites) as host:
        listing = tmp_path / "servers.json"
        servers = [{"name": f"t/{site.name}", "url": host.url(site.name)} for site in sites]
        listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
        database = tmp_path / "f.db"
        result = runner.invoke(
            app, ["scan", str(listing), "--db", str(database), "--allow-private", "--format", "json"]
        )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counts"] == {"ok": 2}
    rows = json.loads(runner.invoke(app, ["servers", "--db", str(database), "--format", "json"]).stdout)
    by_name = {row["server"]: row for row in rows}
    assert by_name["t/lone"]["tools"] == 1 and by_name["t/lone"]["version"] == "1.0.0\ufffd"
    found = json.loads(
        runner.invoke(app, ["findings", "--db", str(database), "--server", "t/lone", "--format", "json"]).stdout
    )
    assert found  # measured and stored like any list
