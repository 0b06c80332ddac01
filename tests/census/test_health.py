"""Health over time and the registry health page, from a real SQLite file written through the store's write path
(four runs on 2026-03-01, -20, -25 and -28, a fixed clock), rendered by the real report build."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scanner.measure.toollist import measure
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.report.build import build_report
from scanner.report.health import Census, census, nearest_rank, platform, server_health
from scanner.report.preview import showing
from scanner.report.registry_health import LISTED_NAMES
from scanner.rules.registry import RULES_VERSION
from scanner.rules.registrydata import registry_findings
from scanner.store import Store, open_store
from scanner.store.health import CensusRow, ScanSample
from tests.report.conftest import ALPHA, FixedClock, clock

__all__ = ["clock"]
DAYS = (1, 20, 25, 28)
URLS = {
    "steady": "https://steady.vercel.app/mcp",
    "flaky": "https://flaky.vercel.app/mcp",
    "gone": "https://gone.example.com/mcp",
    "broke": "https://api.broke.example.org/mcp",
    "back": "https://back.example.net/mcp",
    "fresh": "https://fresh.example.io/{tenant}/mcp",
}


def ok(total_ms: float) -> ScanOutcome:
    return ScanOutcome(
        outcome=Outcome.OK,
        transport="streamable-http",
        tools=tuple(ALPHA),
        timings_ms={"connect": 5.0, "handshake": total_ms - 20, "list": 20.0, "total": total_ms + 5},
    )


def failed(outcome: Outcome) -> ScanOutcome:
    return ScanOutcome(outcome=outcome, transport="streamable-http", detail=outcome.value)


STORY = {
    "steady": [ok(150), ok(200), ok(300), ok(400)],
    "flaky": [ok(100), failed(Outcome.CONNECT_ERROR), failed(Outcome.RATE_LIMITED), ok(120)],
    "gone": [ok(100), ok(100), ok(100), failed(Outcome.DELISTED)],
    "broke": [ok(100), ok(100), ok(100), failed(Outcome.CONNECT_ERROR)],
    "back": [failed(Outcome.TIMEOUT)] * 3 + [ok(90)],
    "fresh": [None, None, None, failed(Outcome.PAYMENT_REQUIRED)],
}


def build_store(path: Path, clock: FixedClock) -> Store:
    store = open_store(f"sqlite:///{path}")
    (fresh_findings,) = registry_findings([{"name": "fresh", "remotes": [{"url": URLS["fresh"]}]}])
    for index, day in enumerate(DAYS):
        clock.set(datetime(2026, 3, day, 2, 0, tzinfo=UTC))
        run_id = store.start_run("tests/census fixture", RULES_VERSION, {})
        for name, outcomes in STORY.items():
            outcome = outcomes[index]
            if outcome is None:
                continue
            findings = fresh_findings if name == "fresh" else ()
            entry = ServerEntry(name=name, transport=Transport.STREAMABLE_HTTP, url=URLS[name], findings=findings)
            store.record_scan(run_id, entry, outcome, measure)
        store.finish_run(run_id)
    return store


def test_uptime_and_latency_windows(tmp_path: Path, clock: FixedClock) -> None:
    store = build_store(tmp_path / "h.db", clock)
    try:
        out = tmp_path / "site"
        # the data faults are MCP7xx findings, all of preview rules: on the health page only with --preview
        build_report(store, out, now=datetime(2026, 3, 29, tzinfo=UTC), preview=True)
    finally:
        store.close()
    data = json.loads((out / "health.json").read_text(encoding="utf-8"))
    servers = {row["server"]: row for row in data["servers"]}
    steady = servers["steady"]
    assert (steady["uptime_7d"], steady["uptime_30d"], steady["scans_7d"], steady["scans_30d"]) == (1.0, 1.0, 2, 4)
    assert (steady["latency_p50_ms"], steady["latency_p95_ms"], steady["latency_samples"]) == (200.0, 400.0, 4)
    flaky = servers["flaky"]  # the 429 is not measured: 7 d = the ok on the 28th alone; 30 d = 2 of 3
    assert (flaky["uptime_7d"], flaky["scans_7d"], flaky["scans_30d"]) == (1.0, 1, 3)
    assert abs(flaky["uptime_30d"] - 2 / 3) < 1e-9
    assert servers["back"]["uptime_30d"] == 0.25 and servers["back"]["latency_p95_ms"] == 90.0
    assert servers["fresh"]["uptime_7d"] == 0.0 and servers["fresh"]["latency_p50_ms"] is None
    assert servers["gone"]["uptime_7d"] == 1.0  # the delisting is not downtime

    census_json = data["census"]
    assert census_json["entries"] == 6 and census_json["compared_with_run"] == 3
    assert census_json["tools"] == 3 * len(ALPHA)
    assert census_json["by_class"] == {"open": 3, "payment": 1, "unreachable": 1, "unmeasured": 1}
    assert census_json["by_type"] == {"remote": 6}
    assert census_json["faults"] == {"MCP701": 1, "MCP704": 1}  # a placeholder, and no description or version
    assert census_json["published"] == ["fresh"]
    assert census_json["delisted"] == ["gone"]
    assert census_json["newly_broken"] == ["broke"]
    assert census_json["recovered"] == ["back"]
    platforms = {item["platform"]: item for item in census_json["platforms"]}
    assert platforms["vercel.app"] == {"platform": "vercel.app", "entries": 2, "broken": 0}
    assert platforms["example.org"]["broken"] == 1 and "example.com" not in platforms  # delisted: not measured

    rows = list(csv.DictReader(io.StringIO((out / "health.csv").read_text(encoding="utf-8"))))
    assert [row["server"] for row in rows] == ["back", "broke", "flaky", "fresh", "gone", "steady"]
    assert rows[-1]["latency_p95_ms"] == "400.0"

    page = (out / "health.html").read_text(encoding="utf-8")
    # Every number links to its rows: each in-page link has its section, and its count is that section's rows.
    links = re.findall(r'<a href="#([^"]+)">(\d+)</a>', page)
    assert len(links) > 20
    for anchor, count in links:
        section = re.search(
            rf'<(?:section|details class="rows") id="{re.escape(anchor)}">(.*?)</(?:section|details)>', page, re.S
        )
        assert section is not None, anchor
        assert section.group(1).count("<li>") == min(int(count), LISTED_NAMES), anchor
    assert 'href="servers/' in page and "health.html" in (out / "index.html").read_text(encoding="utf-8")
    steady_page = (out / "servers" / "steady.html").read_text(encoding="utf-8")
    assert "<dt>Uptime</dt><dd>100.0% over 7 days (2 scans), 100.0% over 30 days (4 scans)</dd>" in steady_page
    assert "handshake + list p50 200 ms, p95 400 ms (4 scans, 30 days)" in steady_page
    assert "<dt>Latency</dt>" not in (out / "servers" / "fresh.html").read_text(encoding="utf-8")


def test_nearest_rank_and_platforms() -> None:
    assert nearest_rank([], 50) is None
    assert nearest_rank([5.0], 95) == 5.0
    assert nearest_rank([float(v) for v in range(1, 101)], 95) == 95.0
    assert platform("https://x.y.workers.dev/mcp") == "workers.dev"
    assert platform("https://MCP.Example.co/a") == "example.co"
    assert platform(None, "npm") == "package:npm"
    assert platform("https://10.0.0.1/mcp") == "(IP address)"
    assert platform("http://[::1") == "(invalid URL)"


def test_census_counts_and_health_windows_without_a_store() -> None:
    now = datetime(2026, 3, 31, tzinfo=UTC)
    samples = [
        ScanSample("a", now - timedelta(days=40), "ok", 10.0),  # outside both windows
        ScanSample("a", now - timedelta(days=10), "timeout", None),
        ScanSample("a", now - timedelta(days=1), "ok", 30.0),
        ScanSample("a", now + timedelta(days=1), "timeout", None),  # after the run: not counted
    ]
    health = server_health(samples, now)["a"]
    assert (health.uptime_7d, health.uptime_30d, health.latency_p50_ms, health.latency_samples) == (1.0, 0.5, 30.0, 1)
    rows = [
        CensusRow("a", "ok", "", "https://a.example/mcp", None, 4, False, "timeout"),
        CensusRow("b", "not_mcp", "", "https://b.example/mcp", None, None, True, None),
        CensusRow("c", "crashed", "ImportError: x", None, "pypi", None, False, "ok"),
    ]
    with showing(True):  # MCP703 is a preview rule: a data fault only when preview findings are asked for
        result: Census = census(rows, [("b", "MCP703"), ("b", "MCP703")], run_id=2, previous_run_id=1)
    assert census(rows, [("b", "MCP703")], run_id=2, previous_run_id=1).faults == {}  # out of sight by default
    assert result.recovered == ("a",) and result.newly_broken == ("c",) and result.published == ("b",)
    assert result.faults == {"MCP703": ("b",)}
    assert result.by_type == {"pypi": ("c",), "remote": ("a", "b")}
    assert result.tools == 4


def pypi_failure(outcome: Outcome, detail: str) -> ScanOutcome:
    return ScanOutcome(outcome=outcome, transport="stdio", detail=detail, extra={"exit_code": 1})


# Issue 36's night: PyPI showed 100 % broken, counting this host's missing or broken Python, Fathom's own disk
# budget and the mirror's gap; the details are the ones the package diagnosis writes for those causes.
HOST_AND_POLICY = {
    "py-python": pypi_failure(
        Outcome.RUNNER_MISSING,
        "needs Python >=3.12 (`uv python find >=3.12` said: error: Failed to inspect Python interpreter from search "
        "path at `~/.pyenv/shims/python3.12`; pyenv: python3.12: command not found): Because x==1.0 requires "
        "Python >=3.12",
    ),
    "py-budget": pypi_failure(Outcome.TOO_LARGE, "wrote more than its 4096 MiB disk budget (--disk-limit-mb)"),
    "py-memory": pypi_failure(
        Outcome.MEMORY_LIMIT, "ran out of memory under the 1024 MiB memory limit (raise it with --memory-limit-mb)"
    ),
    "py-mirror": pypi_failure(
        Outcome.PACKAGE_NOT_FOUND,
        "y==2.0 not found: error: Failed to fetch: `http://127.0.0.1:3141/simple/y/` (HTTP status 404 Not Found)",
    ),
    "py-crash": pypi_failure(Outcome.CRASHED, "ModuleNotFoundError: No module named 'mcp.server.fastmcp'"),
}


def test_host_and_policy_causes_are_apart_from_package_faults(tmp_path: Path, clock: FixedClock) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
    try:
        clock.set(datetime(2026, 3, 1, 2, 0, tzinfo=UTC))
        run_id = store.start_run("tests/census packages", RULES_VERSION, {})
        for name, outcome in HOST_AND_POLICY.items():
            package = {"registryType": "pypi", "identifier": name, "version": "1.0", "spec": f"{name}==1.0"}
            entry = ServerEntry(name=name, transport=Transport.STDIO, command=("uvx", f"{name}==1.0"), package=package)
            store.record_scan(run_id, entry, outcome, measure)
        store.finish_run(run_id)
        out = tmp_path / "site"
        build_report(store, out, now=datetime(2026, 3, 2, tzinfo=UTC))
    finally:
        store.close()
    data = json.loads((out / "health.json").read_text(encoding="utf-8"))
    census_json = data["census"]
    assert census_json["by_class"] == {"package": 5}  # memory_limit too: no "other"
    assert census_json["by_fault"] == {"server": 1, "host": 1, "policy": 2, "mirror": 1}
    platforms = {item["platform"]: item for item in census_json["platforms"]}
    assert platforms["package:pypi"] == {"platform": "package:pypi", "entries": 5, "broken": 1}
    faults = {row["server"]: row["fault"] for row in data["servers"]}
    assert faults == {"py-budget": "policy", "py-crash": "server", "py-memory": "policy", "py-mirror": "mirror"} | {
        "py-python": "host"
    }
    page = (out / "health.html").read_text(encoding="utf-8")
    assert "Failures by whose fault they are" in page and "Fathom&#39;s own budgets" in page
    section = re.search(r'<details class="rows" id="fault-of-host">(.*?)</details>', page, re.S)
    assert section is not None and "py-python" in section.group(1) and "py-crash" not in section.group(1)
    crash_page = (out / "servers" / "py-crash.html").read_text(encoding="utf-8")
    assert "crashed in its own code: the package&#39;s fault, tell its author" in crash_page
    budget_page = (out / "servers" / "py-budget.html").read_text(encoding="utf-8")
    assert "--disk-limit-mb 8192" in budget_page and "--max-input-mb" not in budget_page
