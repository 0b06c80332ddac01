"""The top-level ``reports/`` folder: ``fathom report`` writes there by default, its README names every file a
build writes, and a build leaves that README alone."""

from __future__ import annotations

import inspect
import re
from datetime import UTC, datetime
from pathlib import Path

from scanner.cli.report import report as report_command
from scanner.report import build_report
from scanner.store import Store

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "reports" / "README.md"


def test_report_writes_to_reports_by_default() -> None:
    assert inspect.signature(report_command).parameters["out"].default == Path("reports")


def test_readme_names_every_file_a_build_writes_and_survives_it(story_store: Store, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    (out / "README.md").write_text(README.read_text(encoding="utf-8"), encoding="utf-8")
    result = build_report(story_store, out, now=datetime(2026, 3, 10, tzinfo=UTC))

    assert (out / "README.md").read_text(encoding="utf-8") == README.read_text(encoding="utf-8")
    assert out / "README.md" not in result.paths
    names = re.findall(r"`([a-z]+(?:/<slug>)?\.(?:html|md|json|csv|css|js|svg))`", README.read_text(encoding="utf-8"))
    documented = set(names)
    written = {
        f"{path.parent.name}/<slug>{path.suffix}" if path.parent.name in ("servers", "badges") else path.name
        for path in result.paths
        if path.name != "README.md"
    }
    assert written <= documented, f"written but not in reports/README.md: {sorted(written - documented)}"
    assert {"index.html", "trends.html", "rules.html", "style.css", "servers/<slug>.html"} <= written
