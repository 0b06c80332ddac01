"""``fathom demo``: the whole product in one command, on loopback, with nothing of the user's needed.

Starts the example servers (:mod:`scanner.demo.sites`) on 127.0.0.1, scans them as a registry list, changes
some of them, scans again, and writes the report site. Everything it writes goes to one folder (the database,
the registry list it scanned, the site), so the user can go on with ``fathom history``, ``fathom diff`` and
``fathom findings`` against the same database afterwards.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path

from scanner.crawl import CrawlSettings
from scanner.mcp import ClientLimits
from scanner.scan import ScanConfig, ScanSummary, run_scan


@dataclass(frozen=True)
class DemoResult:
    database: Path
    report_index: Path
    scans: tuple[ScanSummary, ...]


def _closed_port() -> int:
    """A loopback port nothing listens on (for the server that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_demo(workdir: Path) -> DemoResult:
    """Scan the example servers twice with a change in between and build the report under ``workdir``."""
    from scanner.demo.server import DemoHost
    from scanner.demo.sites import sites
    from scanner.report import build_report
    from scanner.store import open_store

    workdir.mkdir(parents=True, exist_ok=True)
    database = workdir / "demo.db"
    for stale in (database, database.with_name("demo.db-wal"), database.with_name("demo.db-shm")):
        stale.unlink(missing_ok=True)
    db_url = f"sqlite:///{database}"
    registry = workdir / "servers.json"
    settings = CrawlSettings(concurrency=8, limits=ClientLimits(timeout=10.0, connect_timeout=3.0), allow_private=True)
    scans = []
    with DemoHost(sites(1)) as host:
        listed = [{"name": f"example/{site.name}", "url": host.url(site.name)} for site in sites(1)]
        listed.append({"name": "example/offline-service", "url": f"http://127.0.0.1:{_closed_port()}/mcp"})
        registry.write_text(json.dumps({"servers": listed}, indent=2) + "\n", encoding="utf-8")
        config = ScanConfig(source=str(registry), db_url=db_url, crawl=settings)
        scans.append(run_scan(config))
        host.set_sites(sites(2))
        scans.append(run_scan(config))
    with open_store(db_url) as store:
        report = build_report(store, workdir / "report")
    return DemoResult(database=database, report_index=report.out_dir / "index.html", scans=tuple(scans))
