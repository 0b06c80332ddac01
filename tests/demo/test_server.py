"""The demo host's failure modes and latency, as ``fathom scan`` sees them (the nightly benchmark serves them).

Each fault is a real loopback server scanned by the real scan into a real SQLite file; what a user checks is the
outcome each one is filed under: a 402 is payment_required, a 429 rate_limited, an HTML page not_mcp, a server
slower than the deadline and one whose body never ends are timeouts, and a healthy server beside them is scanned as
usual. The latency is checked as a lower bound on one request (the host waits before it answers), never as a tight
timing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from scanner.demo.server import DemoHost, Site, synthetic_sites
from scanner.mcp import ClientLimits
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, run_scan
from scanner.store import open_store

TOOLS = synthetic_sites(1, tools_per_server=3)[0].tools
FAULTS = ("", "402", "429", "not_mcp", "slow", "hang")


@pytest.fixture(scope="module")
def host() -> Iterator[DemoHost]:
    sites = [Site(name=f"f{index}", version="1.0.0", tools=TOOLS, fault=fault) for index, fault in enumerate(FAULTS)]
    with DemoHost(sites, stall=30.0) as running:
        yield running


def test_each_fault_is_filed_under_its_own_outcome(host: DemoHost, tmp_path: Path) -> None:
    listing = tmp_path / "servers.json"
    servers = [{"name": f"bench/{fault or 'healthy'}", "url": host.url(f"f{n}")} for n, fault in enumerate(FAULTS)]
    listing.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    database = tmp_path / "faults.db"
    limits = ClientLimits(timeout=3.0, connect_timeout=3.0)
    settings = CrawlSettings(concurrency=8, limits=limits, retries=0, allow_private=True)
    run_scan(ScanConfig(source=str(listing), db_url=f"sqlite:///{database}", crawl=settings))
    with open_store(f"sqlite:///{database}") as store:
        outcomes = {row.server: row.outcome for row in store.leaderboard(store.runs()[-1].id)}
    assert outcomes == {
        "bench/healthy": "ok",
        "bench/402": "payment_required",
        "bench/429": "rate_limited",
        "bench/not_mcp": "not_mcp",
        "bench/slow": "timeout",
        "bench/hang": "timeout",
    }


def test_latency_is_waited_before_each_answer(tmp_path: Path) -> None:
    with DemoHost([Site(name="s", version="1.0.0", tools=TOOLS)], latency=0.4) as slow:
        started = time.perf_counter()
        answer = httpx.post(slow.url("s"), json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=10)
        waited = time.perf_counter() - started
    assert answer.status_code == 200 and answer.json()["result"] == {}
    assert waited >= 0.4
