"""Nothing a server wrote can run or hide: hostile strings pushed through every page and every export.

The hostile server's name, its tool names and descriptions, its serverInfo, and another server's error detail all
carry script tags, attribute breakouts, ``javascript:`` URLs, control characters and bidi overrides. Each output is
then checked in its own terms: HTML is parsed (no script element, no event-handler attribute, no link or source
that is not ours), Markdown has no raw ``<`` at all, JSON has no raw ``<`` and still decodes to the exact
strings, CSV cells are formula-guarded, and no file holds a control or bidi character. (CSV alone keeps ``<`` and
``>`` verbatim: it is data for a spreadsheet, where markup does nothing and formulas are the hazard.)
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from scanner.models import Outcome
from scanner.report import build_report
from scanner.report.csv_out import csv_text
from scanner.report.text import clean_text, markdown_escape, slugify
from scanner.wire import clean_str

from .conftest import ALPHA, FIXED_NOW, failed, ok, tool

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
JS_URL = "javascript:alert(document.cookie)"
CONTROL = "\x1b[31mred\x07\x00"
BIDI = "\u202eevil\u202c\u2066iso\u2069\u200b"
HOSTILE = f"{SCRIPT}{BREAKOUT}[x]({JS_URL}){CONTROL}{BIDI}"
FORMULA_NAME = '=HYPERLINK("http://evil.test","x")'

# Markup that would act if it reached a page raw (the same words escaped, as text, are fine).
RAW_MARKERS = (SCRIPT, "<img", "<script")
HIDDEN = ("\x1b", "\x07", "\x00", "\u202e", "\u202c", "\u2066", "\u2069", "\u200b")


def hostile_runs() -> list[dict[str, Any]]:
    tools = [
        tool(f"{SCRIPT}tool", f"Reads {HOSTILE} and returns it, for the tests of escaping in the report."),
        tool(JS_URL, BREAKOUT + " second tool description with enough words to pass"),
        *ALPHA,
    ]
    scans = {
        f"evil {HOSTILE}": ok(tools, server_name=f"{SCRIPT}{BIDI}", version=f"{BREAKOUT}{CONTROL}"),
        FORMULA_NAME: ok(ALPHA, server_name="formula"),
        "-cmd": ok(ALPHA[:1], server_name="dash"),
        "broken": failed(Outcome.PROTOCOL_ERROR, f"bad frame: {HOSTILE}"),
        f"@auth {BIDI}": failed(Outcome.AUTH_REQUIRED, f"{JS_URL} {SCRIPT}"),
    }
    return [scans, scans]


class Structure(HTMLParser):
    """Collects what could run or load: element names, event attributes, URLs in href/src/action."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.handlers: list[str] = []
        self.urls: list[str] = []
        self.text: list[str] = []
        self.csp: list[str] = []
        self.scripts: list[str | None] = []  # the src of each <script>
        self.images: list[str | None] = []  # the src of each <img>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        values = dict(attrs)
        if tag == "script":
            self.scripts.append(values.get("src"))
        if tag == "img":
            self.images.append(values.get("src"))
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp.append(values.get("content") or "")
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(name)
            if name in ("href", "src", "action", "xlink:href", "formaction") and value is not None:
                self.urls.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture
def hostile_site(make_store, tmp_path: Path) -> Path:
    store = make_store(hostile_runs())
    out = tmp_path / "site"
    result = build_report(store, out, now=FIXED_NOW)
    assert result.servers_ranked == 3 and result.servers_unranked == 2
    return out


def test_every_file_is_free_of_raw_markup_and_hidden_characters(hostile_site: Path) -> None:
    files = [path for path in hostile_site.rglob("*") if path.is_file()]
    # stylesheet, script, five site pages (health.html and clients.html too), five server pages, two badges per
    # server, five exports (health.json and .csv too)
    assert len(files) == 2 + 5 + 5 + 2 * 5 + 5
    ours = ('<script src="board.js"></script>', '<img src="../badges/')  # the site's own script and badge
    for path in files:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".html":
            for tag in ours:
                text = text.replace(tag, "")
        # CSV is data for spreadsheets, not markup: it keeps < and > (its hazard, formulas, is tested below).
        for marker in RAW_MARKERS if path.suffix != ".csv" else ():
            assert marker not in text, f"{marker!r} raw in {path.name}"
        for char in HIDDEN:
            assert char not in text, f"U+{ord(char):04X} raw in {path.name}"
        assert not any(unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\r\t" for c in text), path.name


def test_html_pages_have_nothing_that_runs_or_loads(hostile_site: Path) -> None:
    pages = sorted(hostile_site.rglob("*.html"))
    assert len(pages) == 10  # clients.html too
    seen_hostile_text = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        parser = Structure()
        parser.feed(html)
        assert not parser.tags & {"iframe", "object", "embed", "form", "base"}, page.name
        # The one script is the site's own file, on the leaderboard only; the one image, the server's own badge.
        assert parser.scripts == (["board.js"] if page.name == "index.html" else []), (page.name, parser.scripts)
        badge = f"../badges/{page.stem}.svg"
        assert parser.images == ([badge] if page.parent.name == "servers" else []), (page.name, parser.images)
        assert parser.handlers == [], page.name
        for url in parser.urls:
            assert not url.lower().startswith(("javascript:", "http:", "https:", "//", "data:text")), (page, url)
            assert (
                url == "data:,"
                or url.endswith((".html", ".css", ".md", ".json", ".csv"))
                or "#" in url
                or (url in ("board.js", badge))
            ), url
        csp = parser.csp
        assert len(csp) == 1 and "script-src 'self'" in csp[0] and "default-src 'none'" in csp[0], csp
        assert "unsafe-inline" not in csp[0] and "unsafe-eval" not in csp[0]
        if SCRIPT in "".join(parser.text):  # the text survives, shown as text
            seen_hostile_text += 1
    assert seen_hostile_text >= 3  # the leaderboard, the hostile server's page, the unranked detail


def test_hostile_server_page_shows_hidden_characters_as_escapes(hostile_site: Path) -> None:
    # The store keeps the name with its NUL replaced (scanner.wire), and the page is named after the stored name.
    page = hostile_site / "servers" / f"{slugify(clean_str(f'evil {HOSTILE}'))}.html"
    html = page.read_text(encoding="utf-8")
    assert "\\u202e" in html and "\\u001b" in html and "\\u200b" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # serverInfo name and version, and the tool names, appear escaped too.
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html or "&quot;&gt;&lt;img" in html


def test_markdown_export_is_inert(hostile_site: Path) -> None:
    md = (hostile_site / "leaderboard.md").read_text(encoding="utf-8")
    assert "<" not in md and ">" not in md.replace("&gt;", "")
    assert not re.search(r"(?<!\\)\]\(javascript:", md) and "\\[x\\](javascript:" in md
    assert "&lt;script&gt;alert\\(1\\)" in md or "&lt;script&gt;alert(1)" in md


def test_json_export_is_inert_and_exact(hostile_site: Path) -> None:
    text = (hostile_site / "leaderboard.json").read_text(encoding="utf-8")
    assert "<" not in text and ">" not in text and text.isascii()
    document = json.loads(text)
    names = {row["server"] for row in document["ranked"] + document["unranked"]}
    # The data itself round-trips exactly, but for NUL, which the store keeps as U+FFFD (scanner.wire).
    assert clean_str(f"evil {HOSTILE}") in names
    details = {row["detail"] for row in document["unranked"]}
    assert clean_str(f"bad frame: {HOSTILE}") in details


def test_csv_export_guards_formulas(hostile_site: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((hostile_site / "leaderboard.csv").read_text(encoding="utf-8"))))
    servers = {row["server"] for row in rows}
    assert "'" + FORMULA_NAME in servers
    assert "'-cmd" in servers
    assert "'@auth \\u202eevil\\u202c\\u2066iso\\u2069\\u200b" in servers
    for row in rows:
        for column in ("server", "outcome", "detail"):
            assert not row[column].startswith(("=", "+", "-", "@")), (column, row[column])


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\\u0009x"),
        ("safe = yes", "safe = yes"),
        (None, ""),
        (12, "12"),
    ],
)
def test_csv_text(raw: Any, shown: str) -> None:
    assert csv_text(raw) == shown


def test_clean_text_and_markdown_escape() -> None:
    assert clean_text("a\u202eb\x1bc\u2028d") == "a\\u202eb\\u001bc\\u2028d"
    assert clean_text("line\nnext\ttab", keep_newlines=True) == "line\nnext\ttab"
    assert clean_text("x" * 10, limit=4) == "xxxx…"
    assert clean_text(["not", "a", "string"]) == "['not', 'a', 'string']"
    assert clean_text("\U000e0041tag") == "\\U000e0041tag"
    assert markdown_escape("[a](javascript:x) | <b> & *c*") == "\\[a\\](javascript:x) \\| &lt;b&gt; &amp; \\*c\\*"


def test_slugs_are_safe_stable_and_unique() -> None:
    assert slugify("alpha") == "alpha"
    names = ["Foo/Bar", "foo.bar", "foo-bar", "FOO BAR", "", "../../etc/passwd", SCRIPT, "ünïcode"]
    slugs = [slugify(name) for name in names]
    assert len(set(slugs)) == len(slugs)
    assert slugs[2] == "foo-bar"
    for slug in slugs:
        assert slug and all(c.isascii() and (c.isalnum() or c in "-_") for c in slug), slug
        assert len(slug) <= 60 + 9
    assert slugify("Foo/Bar") == slugs[0]  # stable
