"""Markdown that cannot be injected (issue 42 item 5): every Markdown output goes through one escaping function
(:func:`scanner.textsafe.markdown_text`): ``check --format markdown``, the GitHub Action's PR comment and step
summary (the same file), ``leaderboard.md`` and ``try``'s Markdown.

The report said: a property name in a pull request's tool list put ``<img src=...>``, a live link and a
table-breaking ``|`` into the PR comment, through the "Fix" column (a finding's own fix quotes the property's
name). Each output here is rendered by cmark-gfm, GitHub's own fork of cmark (with its raw HTML let through, so
anything raw shows), and checked as a reader of the comment would: no tag but the table's and our emphasis, no
link or image, every table row with its header's number of cells in the source (GFM drops extra cells silently),
every row still a row of its table once rendered (a line break would end it), and the hostile text shown as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from scanner.check.ci import run_action
from scanner.cli import app
from scanner.report.data import ChangeRow, Leaderboard, ServerRow
from scanner.report.markdown import render_markdown as leaderboard_markdown
from scanner.textsafe import clean_text, markdown_text
from scanner.wire import clean_str

runner = CliRunner()

FRAGMENTS = (
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "[pay here](https://evil.example/pay)",
    "![pixel](https://evil.example/p.png)",
    "[ref]: https://evil.example",
    "<https://evil.example>",
    "https://evil.example/x",
    "www.evil.example",
    "ops@evil.example",
    "@octocat",
    "|",
    "\\|",
    "\\",
    "`",
    "``",
    "*",
    "_",
    "~~",
    "$x$",
    "&lt;b&gt;",
    "&#60;img&#62;",
    "<!--",
    "-->",
    "\n",
    "\r\n",
    "\u2028",
    "\u202e",
    "\x1b[31m",
    "<",
    ">",
    '"',
    "# ",
    "- ",
    "1. ",
    "> ",
    "---",
)
hostile = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), min_size=1, max_size=6).map("".join)

# Tags a rendered check or leaderboard may hold: the tables, our own emphasis and code spans, headings, lists.
ALLOWED_TAGS = {"table", "thead", "tbody", "tr", "th", "td", "p", "h1", "h2", "h3", "strong", "em", "code", "ul", "li"}
# What GitHub would make live in a comment: a mention, an extended autolink (scheme or www.), an e-mail autolink.
LIVE = re.compile(r"(?<![\w@])@[A-Za-z0-9]|\b(?:https?|ftp)://|\bwww\.|\w@\w")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.tables: list[int] = []  # rows per rendered table
        self.cells: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "table":
            self.tables.append(0)
        elif tag == "tr":
            self.tables[-1] += 1
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _cells(line: str) -> int:
    """The cells GFM sees in a table row: ``|`` not escaped by a backslash split them (even in a code span)."""
    count, index = 0, 0
    while index < len(line):
        if line[index] == "\\":
            index += 2
            continue
        count += line[index] == "|"
        index += 1
    return count - 1


def _source_tables(markdown: str) -> Iterator[list[str]]:
    """Each table's lines in the source: a header row, its delimiter row, the rows up to the first other line."""
    lines = markdown.split("\n")
    for index, line in enumerate(lines[:-1]):
        if line.startswith("|") and re.fullmatch(r"\|(?:\s*:?-{3,}:?\s*\|)+", lines[index + 1]):
            table = [line]
            for row in lines[index + 2 :]:
                if not row.startswith("|"):
                    break
                table.append(row)
            yield table


def assert_inert(markdown: str, *, shown: tuple[str, ...] = ()) -> None:
    """What a reader of the PR comment would check; ``shown`` are texts that must appear as text in some cell."""
    rendered = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    parser = _Tags()
    parser.feed(rendered)
    assert set(parser.tags) <= ALLOWED_TAGS, (set(parser.tags) - ALLOWED_TAGS, markdown)
    assert not LIVE.search(markdown), [line for line in markdown.splitlines() if LIVE.search(line)]
    tables = list(_source_tables(markdown))
    assert len(tables) == len(parser.tables), (len(tables), parser.tables)
    for table, rows in zip(tables, parser.tables, strict=True):
        width = _cells(table[0])
        assert all(_cells(row) == width for row in table), [row for row in table if _cells(row) != width]
        assert all(row.endswith("|") for row in table), table
        assert rows == len(table), (rows, table)  # the header and every row line, each still a row
    texts = [cell.replace("\u200b", "") for cell in parser.cells]
    for text in shown:
        assert any(text.strip() in cell for cell in texts), (text, texts)  # a cell is trimmed


def hostile_tools(name: str, description: str, prop: str) -> list[dict[str, Any]]:
    """A list whose findings quote each string: an untyped, undescribed property (its fix names it), a
    description that says nothing of its parameter, a name no client accepts."""
    return [
        {
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {prop: {}, "q": {"type": "string"}}},
        },
        {"name": "search", "description": description, "inputSchema": {"type": "object", "properties": {prop: {}}}},
    ]


def check_markdown(tmp_path: Path, tools: list[dict[str, Any]], *flags: str) -> str:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", str(path), "--format", "markdown", "--tools", "--verbose", *flags])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_reported_property_name_no_longer_injects_the_fix_column(tmp_path: Path) -> None:
    prop = "<img src=x onerror=alert(1)>|[pay](https://evil.example)"
    out = check_markdown(tmp_path, hostile_tools("search_items", "Search items.", prop))
    fix_rows = [line for line in out.splitlines() if "MCP205" in line and line.startswith("| problem")]
    assert fix_rows and all("Add &quot;type&quot; to properties.&lt;img" in row for row in fix_rows), fix_rows
    assert "<img" not in out
    # The catalogue's own hint keeps its code span after the escaped fix.
    assert any("Give each a `type`" in row for row in fix_rows)
    assert_inert(out, shown=(clean_text(prop),))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=hostile, description=hostile, prop=hostile)
def test_check_markdown_is_inert_for_any_names_descriptions_and_property_names(
    tmp_path: Path, name: str, description: str, prop: str
) -> None:
    if prop in ("q", "") or name in ("search", ""):
        return
    out = check_markdown(tmp_path, hostile_tools(name, description, prop))
    # A NUL or lone surrogate is read as U+FFFD (scanner.wire: a store cannot hold it), then shown escaped.
    assert_inert(out, shown=(clean_text(clean_str(name)),))


@settings(max_examples=300, deadline=None)
@given(text=hostile)
def test_markdown_text_is_one_inert_cell_that_shows_the_text(text: str) -> None:
    cell = markdown_text(text)
    assert "\n" not in cell and "\r" not in cell
    assert_inert(f"| a | b |\n|---|---|\n| {cell} | x |\n", shown=(clean_text(text),))


@settings(max_examples=200, deadline=None)
@given(prefix=hostile)
def test_a_hint_keeps_only_the_catalogues_code_spans(prefix: str) -> None:
    """The "Fix" cell: a stranger's fix before the catalogue's hint is escaped; the hint's code spans stay."""
    from scanner.check.render_markdown import hint_cell
    from scanner.models import Finding, Severity
    from scanner.rules import RULES

    rule = RULES["MCP205"]
    finding = Finding("MCP205", rule.slug, Severity.PROBLEM, "t", "m", f"{prefix} {rule.hint}")
    cell = hint_cell(finding)
    assert cell.endswith(markdown_text(rule.hint, code_spans=True)) and "`type`" in cell
    assert_inert(f"| Fix |\n|---|\n| {cell} |\n", shown=(clean_text(prefix),))
    stranger = Finding("MCP205", rule.slug, Severity.PROBLEM, "t", "m", f"{prefix} `<img src=x>` |")
    assert_inert(f"| Fix |\n|---|\n| {hint_cell(stranger)} |\n")


def test_a_hostile_baseline_cannot_inject_the_pr_comments_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull request commits the baseline too: its findings' code, rule, tool and message reach the comment."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    tools = hostile_tools("search_items", "Search items.", "p")
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    assert runner.invoke(app, ["check", "-f", "tools.json", "--save-baseline", "base.json"]).exit_code == 0
    data = json.loads((tmp_path / "base.json").read_text(encoding="utf-8"))
    bad = "<img src=x>|[l](https://evil.example)\n| x |"
    data["findings"].append(
        {"code": "MCP999" + bad, "rule": bad, "severity": "problem", "tool": bad, "message": bad, "hint": bad}
    )
    (tmp_path / "base.json").write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "base.json", "--format", "markdown"])
    if result.exit_code == 2:  # the baseline reader refused the row: nothing reached the comment
        assert "base.json" in result.stderr
        return
    assert result.exit_code == 0, result.output
    assert "fixed" in result.stdout and "<img" not in result.stdout
    assert_inert(result.stdout)


def test_the_actions_step_summary_and_comment_file_are_inert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    prop = "<img src=x onerror=alert(1)>|[pay](https://evil.example)\n| injected |"
    tools = hostile_tools("@octocat <b>x</b> | y", "See www.evil.example or ops@evil.example.\n\n# Title", prop)
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    env = {
        "INPUT_TOOLS_FILE": "tools.json",
        "INPUT_MARKDOWN": "fathom.md",
        "INPUT_SARIF": "fathom.sarif",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
    }
    assert run_action(env) == 0
    comment = (tmp_path / "fathom.md").read_text(encoding="utf-8")  # what the comment step posts
    assert "MCP205" in comment and "<img" not in comment
    assert_inert(comment, shown=(clean_text("@octocat <b>x</b> | y"),))
    assert_inert(summary.read_text(encoding="utf-8"))


def _row(name: str, **changes: Any) -> ServerRow:
    values: dict[str, Any] = {
        "name": name,
        "slug": "s",
        "outcome": "ok",
        "detail": "",
        "rank": 1,
        "movement": "new",
        "moved_by": 0,
        "score": 80.0,
        "tools_count": 2,
        "tokens": {"openai": 10},
        "problems": 0,
        "warnings": 1,
        "notes": 0,
        "toolset_sha256": None,
    }
    values.update(changes)
    return ServerRow(**values)


@settings(max_examples=60, deadline=None)
@given(name=hostile, detail=hostile, lane=hostile, other=hostile)
def test_leaderboard_md_is_inert(name: str, detail: str, lane: str, other: str) -> None:
    board = Leaderboard(
        run_id=2,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=None,
        rule_version=other,
        score_version="3",
        score_formula="100 - x",
        previous_run_id=1,
        providers=("openai",),
        ranked=(_row(name, lane=lane), _row(other, rank=2)),
        unranked=(_row(other, rank=None, outcome="protocol_error", detail=detail, score=None),),
        changes=(ChangeRow("added", name, None, detail),),
    )
    out = leaderboard_markdown(board)
    assert_inert(out, shown=(clean_text(name, limit=500),))
