"""The per-scan metric registry is the one room a new number needs: a metric registered here in the test only
(nothing else changed) is stored by a real scan, shown by ``fathom history`` in every format, and on the report's
server page; the seeded metrics are measured on a real loopback scan, and what cannot be a number is never stored.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo.server import DemoHost, Site
from scanner.measure import metrics
from scanner.measure.metrics import METRICS, Metric
from scanner.models import Outcome, ScanOutcome
from scanner.store.tables import unkeyed

runner = CliRunner()
TOOLS = [
    {"name": "add", "description": "Adds two integers and returns their sum.", "inputSchema": {"type": "object"}},
    {"name": "echo", "description": "Returns the text it is given, unchanged.", "inputSchema": {"type": "object"}},
]


def fathom(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def scan_demo(tmp_path: Path) -> Path:
    """A real ``fathom scan`` of one demo server on loopback into a fresh SQLite file, then its report."""
    db = tmp_path / "f.db"
    with DemoHost([Site("demo", "1.0", TOOLS)]) as host:
        registry = tmp_path / "servers.json"
        registry.write_text(json.dumps({"servers": [{"name": "demo", "url": host.url("demo")}]}), encoding="utf-8")
        fathom("scan", str(registry), "--db", str(db), "--allow-private", "--timeout", "15")
    fathom("report", "--db", str(db), "--out", str(tmp_path / "site"))
    return db


def stored_metrics(db: Path) -> dict[str, float]:
    with sqlite3.connect(db) as connection:
        (raw,) = connection.execute("SELECT metrics FROM scans").fetchone()
    found: dict[str, float] = unkeyed(json.loads(raw))  # stored with its keys as codes
    return found


def test_a_metric_registered_in_one_place_is_stored_listed_and_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The only change: one registration. Its value is the outcome's tool count times 1000 plus the pages, so the
    # number is known in advance and cannot be any other metric's.
    monkeypatch.setitem(
        METRICS,
        "tools_x1000",
        Metric(
            name="tools_x1000",
            label="Tools <b>times</b> a thousand",
            unit="tools",
            doc="A test metric",
            read=lambda outcome: len(outcome.tools or ()) * 1000 + outcome.pages,
        ),
    )
    db = scan_demo(tmp_path)

    assert stored_metrics(db)["tools_x1000"] == 2001

    (scan,) = json.loads(fathom("history", "demo", "--db", str(db), "--format", "json"))
    assert scan["tools_x1000"] == 2001
    (row,) = csv.DictReader(io.StringIO(fathom("history", "demo", "--db", str(db), "--format", "csv")))
    assert row["tools_x1000"] == "2001"
    header, _rule, line = fathom("history", "demo", "--db", str(db)).splitlines()[:3]
    assert "tools_x1000" in header.split() and "2,001" in line.split()

    page = (tmp_path / "site" / "servers" / "demo.html").read_text(encoding="utf-8")
    assert "<h2>Per-scan metrics</h2>" in page
    # The label is escaped like every other text; the value is in its column.
    assert "Tools &lt;b&gt;times&lt;/b&gt; a thousand (tools)" in page and "<b>times</b>" not in page
    assert re.search(r'<td class="num"[^>]*>2,001</td>', page)


def test_the_seeded_metrics_are_measured_on_a_real_scan(tmp_path: Path) -> None:
    db = scan_demo(tmp_path)
    found = stored_metrics(db)
    # install_ms is only measured for registry packages (scanner.packages.install); the demo server is a command.
    assert set(found) == {"handshake_ms", "list_ms", "list_pages"} == set(METRICS) - {"install_ms"}
    assert found["list_pages"] == 1
    assert 0 < found["handshake_ms"] < 10_000 and 0 < found["list_ms"] < 10_000

    (scan,) = json.loads(fathom("history", "demo", "--db", str(db), "--format", "json"))
    assert {name: scan[name] for name in METRICS if scan[name] is not None} == found
    header = fathom("history", "demo", "--db", str(db)).splitlines()[0].split()
    # One column per metric, after the finding counts and before the detail; no existing column moved.
    assert header[header.index("notes") + 1 : header.index("notes") + 4] == ["handshake_ms", "list_ms", "list_pages"]
    page = (tmp_path / "site" / "servers" / "demo.html").read_text(encoding="utf-8")
    assert "Handshake (ms)" in page and "tools/list pages<" in page  # the unit is in the label: said once


def test_only_finite_numbers_are_stored_and_a_failed_scan_has_no_pages() -> None:
    failed = ScanOutcome(
        outcome=Outcome.REFUSED,
        transport="http",
        timings_ms={"handshake": float("nan"), "list": 12.345},
    )
    assert metrics.values(failed) == {"list_ms": 12.3}
    assert metrics.stored({"a": 1, "b": "2", "c": True, "d": float("inf"), "e": 2.5}) == {"a": 1, "e": 2.5}
    assert metrics.stored(None) == {}


def test_a_name_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        metrics.register(METRICS["list_ms"])
