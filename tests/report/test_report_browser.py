"""Headless Chromium opens every generated page over ``file://``: no console errors, the stylesheet applies.

CSP violations, failed loads and script errors all reach the DevTools log as errors, so an empty error list
means the page met its own policy with nothing blocked. The negative test proves the check can fail: the same
page with one inline script must produce a CSP error and the script must not run. The leaderboard screenshot is
kept under ``artifacts/`` (gitignored) for a person to look at.
"""

from __future__ import annotations

import json
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
    assert opened == (5 + 6) + (5 + 5)  # index, trends, rules, clients, health; the server pages
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


LAYOUT_PROBE = (Path(__file__).parent / "layout_probe.js").read_text(encoding="utf-8")
VISIBLE_ROWS = "Array.from(document.querySelectorAll('#board tbody tr')).filter(r => r.offsetParent !== null).length"


@pytest.mark.parametrize("width", [1400, 1280, 768, 390])
def test_pages_fit_at_desktop_and_phone_widths(
    story_store: Store, make_store, tmp_path: Path, browser: Chromium, width: int
) -> None:
    """No page scrolls sideways, no code, outcome, date or number breaks over two lines, chart text stays legible
    (9 px or more), no two chart labels overlap and every series of a chart is drawn (layout_probe.js)."""
    from .test_report_changes import scripted_runs

    sites = {"story": tmp_path / "story", "changes": tmp_path / "changes"}
    build_report(story_store, sites["story"], now=FIXED_NOW)
    build_report(make_store(scripted_runs()), sites["changes"], now=FIXED_NOW)
    for label, site in sites.items():
        shot_kinds: set[str] = set()
        for page in sorted(site.rglob("*.html")):
            # A screenshot of every page kind at every width, kept for a person to look at (artifacts/).
            kind = page.stem if page.parent == site else "server"
            shot = ARTIFACTS / f"{label}-{kind}-{width}.png" if kind not in shot_kinds else None
            shot_kinds.add(kind)
            report = browser.open(page.as_uri(), probe=LAYOUT_PROBE, width=width, screenshot=shot)
            assert report.loaded and report.errors == [], (page, report.errors)
            assert report.probe == [], f"{label}/{page.relative_to(site)} at {width} px: {report.probe}"
    index = browser.open((sites["changes"] / "index.html").as_uri(), width=width, probe="document.body.innerText")
    # The change block comes first, right under the lede, before the ranked table.
    text = str(index.probe)
    assert text.index("What changed in this run") < text.index("Ranked servers")
    for line in ("Added", "Gone", "Started failing", "Silent change", "Tools changed", "Version bump"):
        assert line in text[text.index("What changed") : text.index("Ranked servers")]


def test_the_layout_probe_catches_what_it_looks_for(story_store: Store, tmp_path: Path, browser: Chromium) -> None:
    """The probe fails on the faults the issue saw: a table that overflows the page and a code that breaks."""
    site = tmp_path / "site"
    build_report(story_store, site, now=FIXED_NOW)
    css = site / "style.css"
    broken = (
        "\n.wide { overflow-x: visible; } table { min-width: 900px; }\n"
        "td code { white-space: normal; word-break: break-all; display: inline-block; max-width: 3ch; }\n"
    )
    css.write_text(css.read_text(encoding="utf-8") + broken, encoding="utf-8")
    report = browser.open((site / "servers" / "zeta.html").as_uri(), probe=LAYOUT_PROBE, width=390)
    assert any(problem.startswith("page scrolls sideways") for problem in report.probe), report.probe
    assert any(problem.startswith("on two lines") for problem in report.probe), report.probe
    # The leaderboard's headers may wrap between words, never inside one.
    css.write_text(css.read_text(encoding="utf-8") + "\ntable.board thead th { word-break: break-all; }\n", "utf-8")
    report = browser.open((site / "index.html").as_uri(), probe=LAYOUT_PROBE, width=1101)
    assert any(problem.startswith("header word broken") for problem in report.probe), report.probe


def test_search_filter_and_sort_work_and_the_table_stands_without_script(
    make_store, tmp_path: Path, browser: Chromium
) -> None:
    from .test_report_changes import scripted_runs

    site = tmp_path / "site"
    build_report(make_store(scripted_runs()), site, now=FIXED_NOW)
    page = (site / "index.html").as_uri()
    plain = browser.open(page, probe=f"[{VISIBLE_ROWS}, document.getElementById('filters').hidden]", scripts=False)
    ranked = plain.probe[0]
    assert ranked >= 5 and plain.probe[1] is True  # every row, and no dead controls, without JavaScript
    typed = (
        "(() => { const box = document.getElementById('f-search'); box.value = 'second';"
        " box.dispatchEvent(new Event('input')); })()"
    )
    searched = browser.open(page, actions=(typed,), settle=0.6, probe=VISIBLE_ROWS)
    assert searched.errors == [] and searched.probe == 1
    pick = (
        "(() => { const s = document.getElementById('f-rule'); s.value = 'MCP102';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    rule = browser.open(page, actions=(pick,), probe=VISIBLE_ROWS)
    assert 1 <= rule.probe < ranked
    by_name = "document.querySelector('#board th[data-key=\"2\"] button').click()"
    names = "Array.from(document.querySelectorAll('#board tbody tr td:nth-child(3)')).map(c => c.textContent.trim())"
    sorted_once = browser.open(page, actions=(by_name,), probe=names)
    assert sorted_once.probe == sorted(sorted_once.probe) and len(sorted_once.probe) == ranked
    sorted_twice = browser.open(page, actions=(by_name, by_name), probe=names)
    assert sorted_twice.probe == sorted(sorted_once.probe, reverse=True)


def test_a_long_leaderboard_shows_its_first_rows_and_searches_and_sorts_all(
    make_store, tmp_path: Path, browser: Chromium, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``BOARD_ROWS`` the ranked rows wait in a closed <details> (not laid out: fast at 20 000 servers); the
    script still searches and sorts every row, and opens the rest when a match is there."""
    from scanner.report import html

    from .test_report_changes import scripted_runs

    monkeypatch.setattr(html, "BOARD_ROWS", 2)
    site = tmp_path / "site"
    build_report(make_store(scripted_runs()), site, now=FIXED_NOW)
    page = (site / "index.html").as_uri()
    count = (
        "[document.querySelectorAll('#board tbody tr').length,"
        " document.querySelectorAll('#board-rest tbody tr').length]"
    )
    plain = browser.open(page, probe=count, scripts=False)
    first, rest = plain.probe
    assert first == 2 and rest >= 3
    names = "Array.from(document.querySelectorAll('#board tbody tr td:nth-child(3)')).map(c => c.textContent.trim())"
    last = browser.open(
        page,
        scripts=False,
        probe=f"{names}.concat(Array.from(document.querySelectorAll("
        "'#board-rest tbody tr td:nth-child(3)')).map(c => c.textContent.trim()))",
    ).probe[-1]
    typed = (
        "(() => { const box = document.getElementById('f-search'); box.value = " + json.dumps(last) + ";"
        " box.dispatchEvent(new Event('input')); })()"
    )
    visible = (
        "Array.from(document.querySelectorAll('table.board tbody tr')).filter(r => r.offsetParent !== null).length"
    )
    found = browser.open(
        page, actions=(typed,), settle=0.6, probe=f"[{visible}, document.getElementById('board-more').open]"
    )
    assert found.errors == [] and found.probe == [1, True]
    by_name = "document.querySelector('#board th[data-key=\"2\"] button').click()"
    everyone = (
        f"{names}.concat(Array.from(document.querySelectorAll('#board-rest tbody tr td:nth-child(3)'))"
        ".map(c => c.textContent.trim()))"
    )
    ordered = browser.open(page, actions=(by_name,), probe=f"[{count}, {everyone}]").probe
    assert ordered[0] == [first, rest] and ordered[1] == sorted(ordered[1])


def test_the_demo_leaderboard_fits_at_1400_px(tmp_path: Path, browser: Chromium) -> None:
    """The demo's own site (every column, "Will it load?" among them) fits a 1,400 px window without scrolling."""
    from scanner.demo import run_demo

    result = run_demo(tmp_path / "demo")
    report = browser.open(result.report_index.resolve().as_uri(), probe=LAYOUT_PROBE, width=1400)
    assert report.loaded and report.errors == [], report.errors
    assert report.probe == [], report.probe
    # The Clients page (issue 43): every client with its counts, and a trend chart each, at every width.
    clients = result.report_index.resolve().parent / "clients.html"
    for width in (390, 768, 1400):
        shot = ARTIFACTS / f"demo-clients-{width}.png"
        page = browser.open(clients.as_uri(), probe=LAYOUT_PROBE, width=width, screenshot=shot)
        assert page.loaded and page.errors == [], (width, page.errors)
        assert page.probe == [], (width, page.probe)
    text = str(browser.open(clients.as_uri(), width=1400, probe="document.body.innerText").probe)
    from scanner.measure.verdicts import REJECT_CLIENTS

    for client in REJECT_CLIENTS:
        assert client.label in text and f"{client.label}: servers it does not load whole" in text
