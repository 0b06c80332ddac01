"""A delisting in an incremental fetch: the registry API (a real HTTP server on 127.0.0.1) returns a server it
deleted, and a deprecated one with its ``statusMessage``, under ``updated_since``. Each is recorded in that run as
``delisted`` / ``deprecated`` with the message, shown in ``history`` and the server page's change log, never
connected to and never counted as a failure."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from scanner.cli import app
from scanner.report.census import census_class, is_broken
from scanner.report.data import failure_cause
from scanner.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry"))
from registry_support import fake_registry, row

__all__ = ["fake_registry"]
runner = CliRunner()


def _status(entry: dict[str, Any], status: str, message: str | None = None) -> dict[str, Any]:
    meta = entry["_meta"]["io.modelcontextprotocol.registry/official"]
    meta["status"] = status
    meta["updatedAt"] = "2025-12-01T00:00:00Z"
    if message is not None:
        meta["statusMessage"] = message
    return entry


def test_a_delisting_in_an_incremental_fetch_is_recorded_not_failed(fake_registry, hostile_http, tmp_path: Path):
    db = f"sqlite:///{tmp_path / 'census.db'}"
    live = hostile_http.url("/ok")
    fake_registry.pages = {"": {"servers": [row("io.x/a", "1.0.0", url=live), row("io.x/b", "1.0.0", url=live)]}}
    first = runner.invoke(app, ["scan", fake_registry.url, "--db", db, "--allow-private", "--retries", "0"])
    assert first.exit_code == 0, first.output
    fake_registry.pages = {
        "": {
            "servers": [
                _status(row("io.x/a", "1.0.0", url=live), "deleted"),
                _status(row("io.x/b", "1.0.0", url=live), "deprecated", "Moved to io.x/c\u001b[2J"),
            ]
        }
    }
    requests_before = len(fake_registry.requests)
    second = runner.invoke(
        app,
        ["scan", fake_registry.url, "--db", db, "--allow-private", "--updated-since", "2025-11-01T00:00:00Z"],
    )
    assert second.exit_code == 0, second.output
    assert fake_registry.requests[requests_before]["updated_since"] == ["2025-11-01T00:00:00Z"]

    history_a = json.loads(runner.invoke(app, ["history", "io.x/a", "--db", db, "--format", "json"]).stdout)
    assert [(scan["run"], scan["outcome"]) for scan in history_a] == [(1, "ok"), (2, "delisted")]
    assert history_a[-1]["detail"] == "deleted from the registry"
    history_b = json.loads(runner.invoke(app, ["history", "io.x/b", "--db", db, "--format", "json"]).stdout)
    assert history_b[-1]["outcome"] == "deprecated"
    # the status message kept, one line, control characters never stored raw
    assert history_b[-1]["detail"].startswith("deprecated in the registry: Moved to io.x/c")
    assert history_b[-1]["detail"] == "deprecated in the registry: Moved to io.x/c\\u001b[2J"

    with open_store(db) as store:
        events = [(event.kind, dict(event.details)) for event in store.events("io.x/a")]
    assert ("outcome_changed", {"from": "ok", "to": "delisted"}) in events

    site = tmp_path / "site"
    assert runner.invoke(app, ["report", "--db", db, "--out", str(site)]).exit_code == 0
    page = next((site / "servers").glob("io-x-a*.html")).read_text(encoding="utf-8")
    assert "ok → delisted" in page

    for outcome in ("delisted", "deprecated"):
        assert not is_broken(outcome) and census_class(outcome) == "unmeasured"
        assert failure_cause(outcome) == ("delisted", "Delisted or deprecated in the registry")
