"""The words of the demo's published site, as a reader meets them (issue 46, item 11): no Fathom-internal file
path, no raw Markdown backticks, no garbled phrase, the rule filter naming each rule, the Markdown export's
columns named as the page names them."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from scanner.models import PROVIDER_SHORT


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scanner.demo import run_demo

    return run_demo(tmp_path_factory.mktemp("demo") / "demo").report_index.resolve().parent


class _Cells(HTMLParser):
    """The text of every ``<td data-label="What">`` of a page, with the tags inside it left out."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "td" and ("data-label", "What") in attrs:
            self.cells.append("")
            self._depth = 1
        elif self._depth and tag == "td":
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self._depth and tag == "td":
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.cells[-1] += data


def test_no_page_shows_a_raw_backtick_or_an_internal_path(site: Path) -> None:
    whats = 0
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        assert "docs/outcomes.md" not in html and "<code>docs/" not in html, page.name  # no path a reader cannot open
        parser = _Cells()
        parser.feed(html)
        whats += len(parser.cells)
        assert not [cell for cell in parser.cells if "`" in cell], page.name
    assert whats > 10
    docs = next((site / "servers").glob("example-docs-search-*.html")).read_text(encoding="utf-8")
    assert '<code class="inline">parametersJsonSchema</code>' in docs  # a message's code span, shown as code


def test_the_words_read_as_sentences(site: Path) -> None:
    health = (site / "health.html").read_text(encoding="utf-8")
    assert "by whose they are" not in health and "Failures by whose fault they are" in health
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "At most tokens" not in index and "Tokens per turn, at most (dearest provider)" in index
    options = re.findall(r'<option value="(MCP\d+)">([^<]*)</option>', index)
    assert options and all(text.startswith(code + " ") and len(text) > len(code) + 3 for code, text in options)
    for page in (site / "servers").glob("*.html"):
        assert "left with its tool on 1 tool" not in page.read_text(encoding="utf-8")


def test_the_markdown_export_names_its_token_columns_as_the_page_does(site: Path) -> None:
    exported = (site / "leaderboard.md").read_text(encoding="utf-8").splitlines()
    header = next(line for line in exported if "| Rank" in line)
    index = (site / "index.html").read_text(encoding="utf-8")
    for provider in ("anthropic", "openai", "gemini"):
        said = f"{PROVIDER_SHORT[provider]} tokens"
        assert f"| {said} |" in header and said in index
    assert "anthropic tokens" not in header
