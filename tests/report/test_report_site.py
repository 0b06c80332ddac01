"""The site built from a real three-run database: exports compared whole to snapshots, pages checked for numbers.

Snapshots live in ``tests/report/snapshots``; after a deliberate change, rewrite them with
``FATHOM_UPDATE_SNAPSHOTS=1 pytest tests/report`` and read the diff before committing.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest

from scanner.errors import InputError
from scanner.report import build_report
from scanner.report.text import slugify
from scanner.store import Store

from .conftest import FIXED_NOW

SNAPSHOTS = Path(__file__).parent / "snapshots"


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("FATHOM_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    expected = path.read_bytes().decode("utf-8")
    assert text == expected, f"{name} differs from its snapshot"


@pytest.fixture
def site(story_store: Store, tmp_path: Path) -> Path:
    out = tmp_path / "site"
    result = build_report(story_store, out, now=FIXED_NOW)
    assert result.run_id == 3
    assert (result.servers_ranked, result.servers_unranked, result.server_pages) == (4, 2, 6)
    assert result.runs_in_trends == 3
    return out


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def text_of(html: str) -> str:
    """The visible text of a page, tags removed and white space folded (for 'contains this number' checks)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.parametrize("name", ["leaderboard.md", "leaderboard.json", "leaderboard.csv"])
def test_exports_match_snapshots(site: Path, name: str) -> None:
    check_snapshot(name, (site / name).read_bytes().decode("utf-8"))


def test_ranking_movement_and_unranked_servers(site: Path) -> None:
    document = json.loads(read(site / "leaderboard.json"))
    ranked = [(row["rank"], row["server"], row["movement"]) for row in document["ranked"]]
    names = [server for _, server, _ in ranked]
    # beta fixed its problem in run 3, so it climbs; the two unreachable servers are not ranked at all.
    assert names.index("beta") < names.index("gamma.tools/search")
    assert {row["server"]: row["movement"] for row in document["ranked"]}["beta"] == "up"
    assert sorted(names) == ["alpha", "beta", "gamma.tools/search", "zeta"]
    assert [rank for rank, _, _ in ranked] == [1, 2, 3, 4]
    unranked = {row["server"]: (row["outcome"], row["detail"], row["rank"]) for row in document["unranked"]}
    assert unranked == {
        "delta": ("connect_error", "connection refused", None),
        "epsilon": ("auth_required", "401 Bearer: sign in at https://auth.epsilon.test", None),
    }
    assert document["score"]["version"] == "3"
    scores = [row["score"] for row in document["ranked"]]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= value <= 100 for value in scores)

    csv_rows = list(csv.DictReader(io.StringIO(read(site / "leaderboard.csv"))))
    # Unranked servers follow, grouped by outcome: epsilon (auth_required) before delta (connect_error).
    assert [row["server"] for row in document["unranked"]] == ["epsilon", "delta"]
    assert [row["server"] for row in csv_rows] == [*names, "epsilon", "delta"]
    md = read(site / "leaderboard.md")
    assert "| epsilon | auth\\_required | 401 Bearer: sign in at https:&#8203;//auth.epsilon.test |" in md

    index = text_of(read(site / "index.html"))
    assert "Score v3:" in index
    assert "Not ranked: 2 servers whose tool list could not be read" in index
    assert (
        "Unreachable (1 server) connection refused: 1 server Server Outcome Reason delta connect_error "
        "connection refused" in index
    )
    assert "Authentication required (1 server)" in index


def test_trends_page_has_each_runs_numbers(site: Path, story_store: Store) -> None:
    page = read(site / "trends.html")
    visible = text_of(page)
    trends = story_store.trends()
    assert [t.run_id for t in trends] == [1, 2, 3]
    for trend in trends:
        share = f"{100 * trend.servers_with_problems / trend.servers_ok:.1f}%"
        row = (
            f"{trend.run_id} {trend.started_at:%Y-%m-%d %H:%M} {trend.servers_scanned} {trend.servers_ok} "
            f"{trend.servers_with_problems} {share} {trend.median_tokens:,} {trend.p90_tokens:,}"
        )
        assert row in visible
    # Run 1: beta has a problem among 4 answering servers; run 2: beta and gamma among 5; run 3: beta is fixed,
    # delta is down, gamma keeps its untyped parameter: 1 of 4.
    assert re.search(r"1 2026-03-01 \d\d:\d\d 5 4 1 25.0%", visible)
    assert re.search(r"2 2026-03-02 \d\d:\d\d 6 5 2 40.0%", visible)
    assert re.search(r"3 2026-03-03 \d\d:\d\d 6 4 1 25.0%", visible)
    # Servers hit per rule: one small chart per rule, titled with its code and name, each on its own scale; a
    # preview rule's (MCP218 on zeta) only with --preview (issue 45).
    from scanner.rules.registry import is_preview

    hits: dict[str, int] = {}
    for trend in trends:
        for code in (code for code in trend.findings_by_rule if not is_preview(code)):
            hits[code] = hits.get(code, 0) + 1
    rules = sorted(hits)[:8]
    panels = re.findall(r"<title>(MCP\d+) ([a-z0-9-]+)</title>", page)
    assert sorted(code for code, _ in panels) == rules and len(rules) >= 2
    assert "Servers hit per rule (the" in page
    # The problem share and the outcomes drawn twice (wide, and for a phone); tokens: 1 chart drawn twice, or 2.
    assert page.count("<svg") == 6 + len(rules) or page.count("<svg") == 6 + len(rules)
    assert page.count('class="chart-narrow"') in (2, 3)
    for title in ("Share of answering servers", "Tokens per turn", "Outcomes by kind"):
        assert f"<title>{title}" in page


def test_server_pages(site: Path, story_store: Store, tmp_path: Path) -> None:
    beta = read(site / "servers" / "beta.html")
    visible = text_of(beta)
    assert "Fixed MCP102 problem description-missing fixed on 1 tool fetch_page" in visible
    assert "Version changed 1.0.0 → 1.0.1" in visible
    # Catalogue 4: its two tools carry no annotations (MCP110 notes), and nothing else.
    assert "2 notes" in visible and "MCP110" in visible
    assert beta.count("<details>") == 3
    # The first provider's view in full, the others as the wrapping of each tool around the same parts.
    assert "<summary>Anthropic (Claude Opus 4.7+ tokenizer)</summary>" in beta
    for provider in ("OpenAI", "Google Gemini"):
        assert f"<summary>{provider}: each tool as</summary>" in beta
    assert '"name": "fetch_page"' in beta  # quotes in a <pre> left as they are
    assert '{"type": "function", "function": {"name": NAME, "description": DESCRIPTION, "parameters": SCHEMA}}' in beta
    assert "Claude 3 to Opus 4.6" not in beta  # the earlier generation is stored, not a column or a view
    assert "input_schema" in beta  # Anthropic's view of the list
    assert "functionDeclarations" in beta and "parametersJsonSchema" in beta  # Gemini's view, as clients send it

    gamma = read(site / "servers" / f"{slugify('gamma.tools/search')}.html")
    current = story_store.leaderboard(3)
    gamma_row = next(row for row in current if row.server == "gamma.tools/search")
    assert gamma_row.findings, "the fixture gives gamma an untyped parameter in run 2"
    for finding in gamma_row.findings:
        assert finding.code in gamma
    gamma_findings = gamma.split('<table class="findings cards">')[1].split("</table>")[0]
    severities = re.findall(r'<td class="sev (problem|warning|note)">', gamma_findings)
    assert severities == sorted(severities, key=["problem", "warning", "note"].index)
    assert (
        f"Anthropic (Claude Opus 4.7+ tokenizer) {gamma_row.tokens['anthropic']:,}, "
        f"OpenAI {gamma_row.tokens['openai']:,}" in text_of(gamma)
    )
    assert gamma.count("<svg") == 4  # tokens and findings, each drawn for wide screens and for a phone
    assert "<title>Tokens per turn, by provider</title>" in gamma
    hidden = read(site / "servers" / "zeta.html")
    assert "MCP305" in text_of(hidden) and "MCP218" not in hidden and 'id="preview"' not in hidden  # by default
    build_report(story_store, tmp_path / "preview", now=FIXED_NOW, preview=True)
    zeta_html = read(tmp_path / "preview" / "servers" / "zeta.html")
    zeta = text_of(zeta_html)
    # MCP218 is a preview rule: with --preview its row stands in the preview block, after the scored findings.
    assert "<code>MCP218</code>" not in zeta_html.split('<table class="findings cards">')[1].split("</table>")[0]
    assert zeta_html.index('<table class="findings cards">') < zeta_html.index('<h2 id="preview">Preview findings</h2>')
    findings_table = zeta_html.split('<table class="findings preview cards">')[1].split("</table>")[0]
    assert findings_table.count("<code>MCP218</code>") == 1
    assert "not counted in the score above or in any gate" in zeta and "not yet measured" in findings_table
    assert "45 tools: op_00, op_01, op_02 and 42 more" in zeta  # MCP110 on every tool: one row with its count
    zeta_row = next(row for row in current if row.server == "zeta")
    assert [finding.tool for finding in zeta_row.findings if finding.code == "MCP218"] == ["op_00"]

    delta = text_of(read(site / "servers" / "delta.html"))
    assert "connect_error: connection refused" in delta
    assert "No tool list was read in this run." in delta
    assert "Outcome changed ok → connect_error" in delta


def test_rules_page_counts_servers_hit(site: Path, story_store: Store) -> None:
    from scanner.rules import RULES

    page = read(site / "rules.html")
    hits = story_store.rule_hits(3)
    assert hits.get("MCP305") == 1
    for code, rule in RULES.items():
        match = re.search(rf'<tr id="{code}">.*?<td class="num"[^>]*>(\d+)</td>', page, re.S)
        assert match, code
        assert int(match.group(1)) == hits.get(code, 0)
        assert rule.slug in page


def test_an_earlier_run_can_be_shown(story_store: Store, tmp_path: Path) -> None:
    result = build_report(story_store, tmp_path / "run1", run_id=1, now=FIXED_NOW)
    document = json.loads(read(tmp_path / "run1" / "leaderboard.json"))
    assert result.run_id == 1 and document["run"]["previous_run_id"] is None
    assert {row["movement"] for row in document["ranked"]} == {"new"}
    assert "beta" in {row["server"] for row in document["ranked"]}


def test_unknown_run_and_empty_database(story_store: Store, tmp_path: Path, make_store) -> None:
    with pytest.raises(InputError, match="no run 99"):
        build_report(story_store, tmp_path / "x", run_id=99)
    with pytest.raises(InputError, match="no runs"):
        build_report(make_store([]), tmp_path / "y")


def test_leaderboard_scores_are_the_score_of_the_stored_findings(story_store: Store, tmp_path: Path) -> None:
    from scanner.measure.score import score
    from scanner.rules.registry import is_preview

    site = tmp_path / "preview"
    build_report(story_store, site, now=FIXED_NOW, preview=True)  # preview findings counted apart, shown
    document = json.loads(read(site / "leaderboard.json"))
    stored = {row.server: row for row in story_store.leaderboard(3)}
    assert any(row["preview"] for row in document["ranked"])
    for row in document["ranked"]:
        leader = stored[row["server"]]
        assert row["score"] == score(leader.tools_count or 0, leader.findings, tokens=leader.max_tokens)
        held = [finding for finding in leader.findings if is_preview(finding.code)]
        by_level = [sum(1 for finding in held if int(finding.severity) == level) for level in range(3)]
        # the scored findings counted; preview rules' apart (never in the score)
        assert (row["problems"], row["warnings"], row["notes"]) == (
            leader.problems - by_level[0],
            leader.warnings - by_level[1],
            leader.notes - by_level[2],
        )
        assert row["preview"] == len(held) and row["preview_rules"] == sorted({f.code for f in held})
        assert row["tokens"] == dict(leader.tokens)
