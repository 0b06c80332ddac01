"""``fathom demo``: the whole product in one command, on loopback, with nothing of the user's needed.

Starts the example servers (:mod:`scanner.demo.sites`) on 127.0.0.1, scans them as a registry (an array of
server.json documents), changes some of them, scans again, and writes the report site. ``team-hub`` asks for a
secret ``Authorization`` header; the demo sets its own throwaway token in that server's ``FATHOM_SECRET_...``
variable for the two scans only, so it is scanned in both lanes (docs/lanes.md). Everything it writes goes to
one folder (the database, the registry it scanned, the site), so the user can go on with ``fathom history``,
``fathom diff`` and ``fathom findings`` against the same database afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scanner.mcp import ClientLimits
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, ScanSummary, run_scan


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


def _server_json(name: str, version: str, url: str, *, secret_header: bool = False) -> dict[str, Any]:
    remote: dict[str, Any] = {"type": "streamable-http", "url": url}
    if secret_header:
        remote["headers"] = [{"name": "Authorization", "isSecret": True, "isRequired": True}]
    return {"name": name, "version": version, "description": f"Demo server {name}.", "remotes": [remote]}


@contextlib.contextmanager
def _demo_secret(name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` in this process's environment while the block runs, then as it was."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def run_demo(workdir: Path) -> DemoResult:
    """Scan the example servers twice with a change in between and build the report under ``workdir``."""
    from scanner.demo.server import DemoHost
    from scanner.demo.sites import TEAM_TOKEN, sites
    from scanner.registry.secrets import secret_env_name
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
    secret = secret_env_name("example/team-hub", "Authorization")
    with DemoHost(sites(1)) as host, _demo_secret(secret, f"Bearer {TEAM_TOKEN}"):
        listed = [
            _server_json(f"example/{site.name}", site.version, host.url(site.name), secret_header=site.mode == "lanes")
            for site in sites(1)
        ]
        offline = f"http://127.0.0.1:{_closed_port()}/mcp"
        listed.append(_server_json("example/offline-service", "1.0.0", offline))
        registry.write_text(json.dumps(listed, indent=2) + "\n", encoding="utf-8")
        config = ScanConfig(source=str(registry), db_url=db_url, crawl=settings)
        scans.append(run_scan(config))
        host.set_sites(sites(2))
        scans.append(run_scan(config))
    with open_store(db_url) as store:
        report = build_report(store, workdir / "report")
    return DemoResult(database=database, report_index=report.out_dir / "index.html", scans=tuple(scans))
