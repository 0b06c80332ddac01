"""``fathom check`` gives a server the leaderboard's score: both come from ``scanner.measure.score.score_breakdown``.

The demo servers (real HTTP servers on loopback, both protocol eras, one sending instructions) are scanned into
a real SQLite database and ranked as the report ranks them; then each is checked with ``check --url`` and the
two numbers must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo.server import DemoHost
from scanner.demo.sites import sites
from scanner.mcp import ClientLimits
from scanner.report.build import build_leaderboard
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, run_scan
from scanner.store import open_store

runner = CliRunner()


def test_check_score_equals_the_leaderboard_score_on_the_demo_servers(tmp_path: Path) -> None:
    open_sites = [site for site in sites(1) if site.mode not in ("auth", "lanes")]
    db_url = f"sqlite:///{tmp_path / 'board.db'}"
    registry = tmp_path / "servers.json"
    with DemoHost(open_sites) as host:
        listed = [
            {
                "name": f"example/{site.name}",
                "version": site.version,
                "description": f"Demo server {site.name}.",
                "remotes": [{"type": "streamable-http", "url": host.url(site.name)}],
            }
            for site in open_sites
        ]
        registry.write_text(json.dumps(listed), encoding="utf-8")
        settings = CrawlSettings(
            concurrency=4, limits=ClientLimits(timeout=20.0, connect_timeout=5.0), allow_private=True
        )
        run_scan(ScanConfig(source=str(registry), db_url=db_url, crawl=settings))
        with open_store(db_url) as store:
            run = max(store.runs(), key=lambda item: item.id)
            board = build_leaderboard(store, run, None, store.leaderboard(run.id))
        ranked = {row.name: row.score for row in board.ranked}
        assert len(ranked) == len(open_sites)
        checked = {}
        for site in open_sites:
            result = runner.invoke(app, ["check", "--url", host.url(site.name), "--format", "json", "--timeout", "20"])
            assert result.exit_code == 0, result.output
            checked[f"example/{site.name}"] = json.loads(result.stdout)["score"]["score"]
    assert checked == ranked
    # not a trivial agreement: the demo servers spread over the scale
    assert len(set(checked.values())) >= 3 and min(checked.values()) < 80 and max(checked.values()) > 90
