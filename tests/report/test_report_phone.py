"""The demo's site as a reader sees it on a phone (390 px), a tablet (768 px) and laptops (1,100 to 1,400 px), in
Chromium.

What a reader came for must be in view without scrolling sideways: on the leaderboard every server's score, its
tokens and "Will it load?" (cards up to 1,100 px, the table from 1,101 px: its box never scrolls, its headers
wrap between words, never inside one); no label runs over another cell; a server's name never breaks inside a
word. A server's page stays short on a phone: a 42-tool list's "Tokens per tool" is a compact table, not 42 cards; a
card says what each bare value is (the run, a metric with its unit); a column no scan filled is not shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .chromium_cdp import Chromium, find_chromium

CHROMIUM = find_chromium()

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)"),
    pytest.mark.timeout(240),
]

WIDTHS = (390, 768, 1400)
# The leaderboard: cards up to 1,100 px, the whole table from 1,101 px (its tightest width) to 1,400 px and over.
BOARD_WIDTHS = (390, 768, 1100, 1101, 1280, 1400)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    assert CHROMIUM is not None
    with Chromium(CHROMIUM) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scanner.demo import run_demo

    result = run_demo(tmp_path_factory.mktemp("demo") / "demo")
    return result.report_index.resolve().parent


# Every ranked row: where its score, token and "Will it load?" cells sit against the window, whether the board's
# box scrolls, where the lane label sits against the score, and on how many lines the server's name is drawn.
BOARD_PROBE = """(() => {
  const width = Math.min(window.innerWidth, screen.width);
  const lines = (element) => {
    const tops = new Set();
    const range = document.createRange();
    range.selectNodeContents(element);
    for (const rect of range.getClientRects()) { if (rect.width > 0) { tops.add(Math.round(rect.bottom)); } }
    return tops.size;
  };
  const out = {width: width, page: document.documentElement.scrollWidth, boxes: [], rows: []};
  for (const box of document.querySelectorAll('.wide')) {
    if (box.querySelector('table.board') && box.offsetParent !== null) {
      out.boxes.push([box.scrollWidth, box.clientWidth]);
    }
  }
  // The columns a reader came for, by their headers: the score, each provider's tokens, "Will it load?".
  const heads = Array.from(document.querySelectorAll('#board thead th')).map((th) => th.textContent.trim());
  const wanted = heads.map((h, i) => [h, i]).filter(([h]) => h === 'Score' || h.endsWith('tokens')
    || h === 'Will it load?');
  for (const row of document.querySelectorAll('#board tbody tr')) {
    const name = row.querySelector('td.key a');
    const cells = {};
    for (const [head, index] of wanted) {
      const r = row.children[index].getBoundingClientRect();
      cells[head] = [Math.round(r.left), Math.round(r.right)];
    }
    const lane = row.querySelector('.lane');
    const score = row.querySelector('td.score').getBoundingClientRect();
    let laneOverScore = false;
    if (lane) {
      for (const r of lane.getClientRects()) {
        if (r.right > score.left + 0.5 && r.left < score.right - 0.5 && r.bottom > score.top + 0.5
            && r.top < score.bottom - 0.5) { laneOverScore = true; }
      }
    }
    out.rows.push({name: name.textContent, nameLines: lines(name), cells: cells, laneOverScore: laneOverScore});
  }
  return out;
})()"""


@pytest.mark.parametrize("width", BOARD_WIDTHS)
def test_the_leaderboard_shows_score_tokens_and_loads_without_scrolling_sideways(
    demo_site: Path, browser: Chromium, width: int
) -> None:
    report = browser.open((demo_site / "index.html").as_uri(), width=width, probe=BOARD_PROBE)
    assert report.loaded and report.errors == [], report.errors
    board = report.probe
    assert board["page"] <= board["width"] + 1, f"the page scrolls sideways at {width} px"
    assert board["boxes"] and all(scroll <= client + 1 for scroll, client in board["boxes"]), (
        f"the leaderboard scrolls in its box at {width} px (a column is cut): {board['boxes']}"
    )
    assert len(board["rows"]) == 8
    for row in board["rows"]:
        # The score, one cell per provider's tokens and "Will it load?", each wholly inside the window.
        assert len(row["cells"]) == 1 + 3 + 1, row
        for cell, (left, right) in row["cells"].items():
            assert left >= 0 and right <= width, f"{row['name']}: {cell} at {left}-{right} px, the window is {width}"


@pytest.mark.parametrize("width", BOARD_WIDTHS)
def test_the_lane_label_never_runs_over_the_score_and_names_never_break(
    demo_site: Path, browser: Chromium, width: int
) -> None:
    board = browser.open((demo_site / "index.html").as_uri(), width=width, probe=BOARD_PROBE).probe
    assert any(row["name"] == "example/team-hub" for row in board["rows"])  # the demo's credentialed lane
    for row in board["rows"]:
        assert not row["laneOverScore"], f"{row['name']}: the lane label runs over the score at {width} px"
        assert row["nameLines"] == 1, f"{row['name']} breaks over {row['nameLines']} lines at {width} px"


# The table's headers: the words drawn broken over two lines (a word in two boxes), and the board's box against
# what it holds. Run after NAME (a longer server name, set into the first row) and a click on a header's sort
# button, which adds its arrow.
HEADER_PROBE = """(() => {
  const name = NAME;
  if (name) { document.querySelector('#board td.key a').textContent = name; }
  const broken = [];
  for (const th of document.querySelectorAll('#board thead th')) {
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rows = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0)
          .map((r) => Math.round(r.top)));
        if (rows.size > 1) { broken.push(match[0]); }
      }
    }
  }
  const box = document.getElementById('board').closest('.wide');
  const shown = getComputedStyle(document.querySelector('#board thead')).position !== 'absolute';
  return {broken: broken, box: [box.scrollWidth, box.clientWidth], table: shown};
})()"""
SORT_PROBLEMS = """Array.from(document.querySelectorAll('#board thead th button.sort'))
  .find((b) => b.textContent.trim() === 'Problems').click()"""


@pytest.mark.parametrize("width", (1101, 1280, 1400))
@pytest.mark.parametrize(
    "name",
    [
        "",
        # The official registry's median name length (33 characters; fixtures of 2025-12-18, 2,794 names).
        "io.github.GLips/Figma-Context-MCP",
    ],
)
def test_the_whole_table_fits_its_box_with_headers_broken_only_between_words(
    demo_site: Path, browser: Chromium, width: int, name: str
) -> None:
    """Issue 46: from 1,101 to 1,400 px the table scrolled sideways in its box (1,342 px in 1,063 at 1,101 px), "Will
    it load?" cut, with only the server's name pinned."""
    probe = HEADER_PROBE.replace("NAME", repr(name))
    for actions in ((), (SORT_PROBLEMS,)):  # sorted, a header carries its arrow too
        report = browser.open((demo_site / "index.html").as_uri(), width=width, probe=probe, actions=actions)
        assert report.loaded and report.errors == [], report.errors
        seen = report.probe
        assert seen["table"], f"the leaderboard is cards at {width} px, not the table"
        assert seen["broken"] == [], f"header words broken over two lines at {width} px: {seen['broken']}"
        scroll, client = seen["box"]
        assert scroll <= client + 1, f"the table scrolls in its box at {width} px ({scroll} in {client}), {name!r}"


PAGE_PROBE = """(() => {
  const label = (cell) => getComputedStyle(cell, '::before').content;
  const tools = document.querySelector('table.tools');
  const rows = Array.from(tools.querySelectorAll('tbody tr'));
  return {
    height: document.documentElement.scrollHeight,
    toolsHeight: Math.round(tools.getBoundingClientRect().height),
    toolRows: rows.length,
    tallestToolRow: Math.max(...rows.map((r) => r.getBoundingClientRect().height)),
    toolNameLines: Math.max(...rows.map((r) => new Set(Array.from(r.querySelector('code').getClientRects())
      .map((b) => Math.round(b.bottom))).size)),
    lineHeight: parseFloat(getComputedStyle(document.body).lineHeight),
    runLabels: Array.from(document.querySelectorAll('table.events tbody td.run')).map(label),
    metricLabels: Array.from(document.querySelectorAll('table.metrics tbody tr:first-child td')).map(label),
    text: document.body.innerText,
  };
})()"""


def test_a_42_tool_server_page_on_a_phone_is_a_compact_table(demo_site: Path, browser: Chromium) -> None:
    page = next((demo_site / "servers").glob("example-mega-suite-*.html"))
    report = browser.open(page.as_uri(), width=390, probe=PAGE_PROBE)
    assert report.loaded and report.errors == [], report.errors
    seen = report.probe
    assert seen["toolRows"] == 42
    # One line per tool (a row no taller than two lines of text with its padding), not a card of four lines.
    assert seen["toolNameLines"] == 1, "a tool's name breaks over two lines"
    assert seen["tallestToolRow"] < 2 * seen["lineHeight"] + 8, seen["tallestToolRow"]
    # The 42 tools in about a screen and a half of a 900 px phone (as 42 cards they were 4,000 px).
    assert seen["toolsHeight"] < 1400, seen["toolsHeight"]


def test_phone_cards_say_what_each_value_is(demo_site: Path, browser: Chromium) -> None:
    page = next((demo_site / "servers").glob("example-quickcalc-*.html"))
    report = browser.open(page.as_uri(), width=390, probe=PAGE_PROBE)
    seen = report.probe
    # The change log's cards: "Run: 2", never a bare "2".
    assert seen["runLabels"] and all("Run" in label for label in seen["runLabels"]), seen["runLabels"]
    # The metrics' cards keep their units ("Handshake (ms): 64.9"), as the table's headers do.
    handshake = [label for label in seen["metricLabels"] if "Handshake" in label]
    assert handshake and "ms" in handshake[0], seen["metricLabels"]
    # No scan of the demo installs a package: the column is not shown at all.
    assert "Package install" not in seen["text"]
