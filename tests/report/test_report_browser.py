"""Headless Chromium opens every generated page over ``file://``: no console errors, the stylesheet applies.

CSP violations, failed loads and script errors all reach the DevTools log as errors, so an empty error list
means the page met its own policy with nothing blocked. The negative test proves the check can fail: the same
page with one inline script must produce a CSP error and the script must not run. The leaderboard screenshot is
kept under ``artifacts/`` (gitignored) for a person to look at.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scanner.report import build_report
from scanner.store import Store

from .chromium_cdp import Chromium, find_chromium
from .conftest import FIXED_NOW
from .test_report_safety import hostile_runs

CHROMIUM = find_chromium()
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
HEADER_BACKGROUND = "rgb(20, 33, 61)"  # header.site in style.css: proof the local stylesheet was applied
PROBE = "getComputedStyle(document.querySelector('header.site')).backgroundColor"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)"),
    pytest.mark.timeout(180),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    assert CHROMIUM is not None
    with Chromium(CHROMIUM) as chromium:
        yield chromium


def test_every_page_loads_cleanly(story_store: Store, make_store, tmp_path: Path, browser: Chromium) -> None:
    sites = {"story": tmp_path / "story", "hostile": tmp_path / "hostile"}
    build_report(story_store, sites["story"], now=FIXED_NOW)
    build_report(make_store(hostile_runs()), sites["hostile"], now=FIXED_NOW)
    opened = 0
    for label, site in sites.items():
        for page in sorted(site.rglob("*.html")):
            shot = ARTIFACTS / "leaderboard.png" if (label, page.name) == ("story", "index.html") else None
            report = browser.open(page.as_uri(), screenshot=shot, probe=PROBE)
            assert report.loaded, page
            assert report.errors == [], f"{label}/{page.relative_to(site)}: {report.errors}"
            assert report.probe == HEADER_BACKGROUND, f"stylesheet not applied on {page}"
            assert report.title.endswith("· Fathom")
            opened += 1
    assert opened == (4 + 6) + (4 + 5)  # index, trends, rules, health; the server pages
    assert (ARTIFACTS / "leaderboard.png").stat().st_size > 10_000


def test_the_check_fails_on_a_blocked_inline_script(story_store: Store, tmp_path: Path, browser: Chromium) -> None:
    site = tmp_path / "site"
    build_report(story_store, site, now=FIXED_NOW)
    page = site / "index.html"
    html = page.read_text(encoding="utf-8")
    bad = site / "injected.html"
    bad.write_text(html.replace("</main>", "<script>document.title = 'ran';</script></main>"), encoding="utf-8")
    report = browser.open(bad.as_uri(), probe=PROBE)
    assert report.loaded
    assert report.title != "ran", "the inline script ran: the CSP did not hold"
    assert any("Content Security Policy" in error for error in report.errors), report.errors


def test_the_check_fails_on_a_missing_stylesheet(story_store: Store, tmp_path: Path, browser: Chromium) -> None:
    site = tmp_path / "site"
    build_report(story_store, site, now=FIXED_NOW)
    (site / "style.css").unlink()
    report = browser.open((site / "rules.html").as_uri(), probe=PROBE)
    assert report.errors, "a failed stylesheet load must show up as an error"
    assert report.probe != HEADER_BACKGROUND
