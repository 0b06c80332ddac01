"""``fathom check --db DB --server NAME`` and one score everywhere (issue 34, score version 3).

``fathom demo`` starts its real HTTP servers on loopback, scans them twice with a change in between (quickcalc
removes two tools, so its newest scan carries MCP502 notes on tools no longer in the list) into a real SQLite
file, and builds the report. Every server is then checked from the store and its number compared with the
leaderboard's, the CSV's, the badge's, ``fathom servers`` and ``fathom history``; the stored tool list checked
from a file gives the same number too. A second real scan holds a server whose list is empty: no score anywhere.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo import run_demo
from scanner.demo.server import DemoHost, Site
from scanner.mcp import ClientLimits
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, run_scan
from scanner.store import open_store

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's folder: demo.db and report/ (leaderboard.json, leaderboard.csv, badges/)."""
    workdir = tmp_path_factory.mktemp("demo")
    run_demo(workdir)
    return workdir


def board(workdir: Path) -> dict[str, Any]:
    return json.loads((workdir / "report" / "leaderboard.json").read_text(encoding="utf-8"))


def stored_score(db: Path, name: str, *extra: str) -> Any:
    result = invoke("check", "--db", str(db), "--server", name, "--format", "json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["score"]


def test_check_from_the_store_prints_the_leaderboard_score_of_every_demo_server(demo: Path) -> None:
    db = demo / "demo.db"
    document = board(demo)
    ranked = {row["server"]: row for row in document["ranked"]}
    assert len(ranked) >= 6
    checked = {name: stored_score(db, name) for name in ranked}
    assert {name: parts["score"] for name, parts in checked.items()} == {
        name: row["score"] for name, row in ranked.items()
    }
    for name, row in ranked.items():  # the parts too, cost included
        parts = checked[name]
        assert parts["cost_penalty"] == row["score_parts"]["cost_penalty"]
        assert parts["tokens"] == row["score_parts"]["tokens"] == max(row["tokens"].values())
        assert parts["version"] == row["score_parts"]["version"] == "3"
    # not a trivial agreement: the scores spread and the cost takes points from the large list
    assert len({row["score"] for row in ranked.values()}) >= 4
    assert ranked["example/mega-suite"]["score_parts"]["cost_penalty"] > 10
    mega = ranked["example/mega-suite"]
    page = (demo / "report" / "servers" / f"{mega['slug']}.html").read_text(encoding="utf-8")
    parts = mega["score_parts"]
    assert f'<h2 id="score">Why {mega["score"]:.1f}</h2>' in page
    assert (
        f'<tr><td>Tokens per turn</td><td class="num">{parts["tokens"]:,}</td>'
        f'<td class="num">−{parts["cost_penalty"]:.1f}</td></tr>'
    ) in page
    text = invoke("check", "--db", str(db), "--server", "example/mega-suite")
    assert text.exit_code == 0
    assert f"Score {ranked['example/mega-suite']['score']:g} / 100" in text.stdout
    assert f"cost {ranked['example/mega-suite']['score_parts']['cost_penalty']:g} (" in text.stdout


def test_the_score_reads_the_same_in_check_as_on_the_leaderboard(demo: Path) -> None:
    """Issue 46: check printed "97/100" (text) and "97 / 100" (Markdown) where the site, servers and the badge
    say 97.0: one format, to the decimal, everywhere."""
    db = demo / "demo.db"
    ranked = {row["server"]: row for row in board(demo)["ranked"]}
    whole = next(name for name, row in ranked.items() if row["score"] == int(row["score"]))  # a score like 97.0
    said = f"{ranked[whole]['score']:.1f}"
    text = invoke("check", "--db", str(db), "--server", whole, "--min-score", "10").stdout
    markdown = invoke("check", "--db", str(db), "--server", whole, "--format", "markdown").stdout
    assert f"Score {said} · " in text and f"Score {said} / 100" in text
    assert f"--min-score 10: score {said}" in text
    assert f"**Score:** {said} / 100" in markdown and f"### Score {said} / 100" in markdown
    assert f"{int(ranked[whole]['score'])}/100" not in text + markdown


def test_servers_history_csv_and_badges_give_the_same_number(demo: Path) -> None:
    db = demo / "demo.db"
    ranked = {row["server"]: row for row in board(demo)["ranked"]}
    listed = invoke("servers", "--db", str(db), "--format", "json")
    assert listed.exit_code == 0
    servers = {row["server"]: row["score"] for row in json.loads(listed.stdout)}
    table = csv.reader(io.StringIO((demo / "report" / "leaderboard.csv").read_text(encoding="utf-8")))
    header = next(table)
    at = header.index("score_v3")
    in_csv = {row[2]: float(row[at]) for row in table if row[0]}
    for name, row in ranked.items():
        assert servers[name] == row["score"] == in_csv[name]
        history = invoke("history", name, "--db", str(db), "--format", "json")
        assert json.loads(history.stdout)[-1]["score"] == row["score"]
        endpoint = json.loads((demo / "report" / row["badge"]["endpoint"]).read_text(encoding="utf-8"))
        assert endpoint["message"].startswith(f"{row['score']:.1f} · ")


def test_removed_tools_do_not_raise_the_score(demo: Path, tmp_path: Path) -> None:
    """quickcalc's newest scan carries MCP502 notes on two tools that are gone: its score is the score of the
    list it serves, checked from a file, to the decimal (score v2 counted the notes as extra tools: 91.7 vs
    90.6), and no rule cost on its page is negative."""
    db = demo / "demo.db"
    row = next(row for row in board(demo)["ranked"] if row["server"] == "example/quickcalc")
    assert "MCP502" in row["rules"]
    with open_store(f"sqlite:///{db}") as store:
        tools = store.toolset_tools(row["toolset_sha256"])
    path = tmp_path / "quickcalc.json"
    path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    from_file = invoke("check", "-f", str(path), "--format", "json")
    assert from_file.exit_code == 0
    assert (
        json.loads(from_file.stdout)["score"]["score"] == row["score"] == stored_score(db, "example/quickcalc")["score"]
    )
    page = (demo / "report" / "servers" / f"{row['slug']}.html").read_text(encoding="utf-8")
    shares = page.split('<table class="shares">', 1)[1].split("</table>", 1)[0]
    assert "MCP502" not in shares and '<td class="num">-' not in shares and "−" not in shares


def test_every_gate_and_format_works_on_a_stored_list(demo: Path, tmp_path: Path) -> None:
    db = str(demo / "demo.db")
    row = next(row for row in board(demo)["ranked"] if row["server"] == "example/docs-search")
    name = row["server"]
    failed = invoke("check", "--db", db, "--server", name, "--min-score", "99", "--fail-on", "note")
    assert failed.exit_code == 1
    assert f"gate --min-score 99 failed: score {row['score']:g}" in failed.stderr
    passed = invoke("check", "--db", db, "--server", name, "--min-score", str(row["score"]), "--max-tokens", "100000")
    assert passed.exit_code == 0, passed.output
    ignored = stored_score(demo / "demo.db", name, "--ignore", "MCP1,MCP2")  # set aside, still scored
    assert ignored["score"] == row["score"]
    provider = invoke("check", "--db", db, "--server", name, "--as", "openai")
    assert provider.exit_code == 0 and len(json.loads(provider.stdout)) == row["tools"]
    for fmt in ("markdown", "sarif"):
        result = invoke("check", "--db", db, "--server", name, "--format", fmt)
        assert result.exit_code == 0 and f"{row['score']:g}" in result.stdout
    badge = tmp_path / "badge.svg"
    saved = tmp_path / "baseline.json"
    result = invoke("check", "--db", db, "--server", name, "--badge", str(badge), "--save-baseline", str(saved))
    assert result.exit_code == 0, result.output
    assert json.loads(badge.with_suffix(".json").read_text())["message"].startswith(f"{row['score']:g} · ")
    again = invoke("check", "--db", db, "--server", name, "--baseline", str(saved), "--format", "json")
    compared = json.loads(again.stdout)["baseline"]
    assert again.exit_code == 0 and compared["new_findings"] == [] and compared["fixed_findings"] == []
    assert compared["score"] == {"before": row["score"], "after": row["score"]}


def test_a_server_without_a_stored_list_or_a_wrong_invocation_is_one_line(demo: Path) -> None:
    db = str(demo / "demo.db")
    unranked = [row["server"] for row in board(demo)["unranked"]]
    assert unranked
    for args in (
        ("--db", db, "--server", unranked[0]),
        ("--db", db, "--server", "example/nobody"),
        ("--db", db),
        ("--server", "example/quickcalc"),
        ("--db", db, "--server", "example/quickcalc", "--example"),
        ("--db", str(demo / "missing.db"), "--server", "example/quickcalc"),
    ):
        result = invoke("check", *args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == "" and result.stderr.count("\n") == 1 and result.stderr.startswith("fathom")


EMPTY = Site(name="empty", version="1.0.0", tools=[])
ONE = Site(
    name="one",
    version="1.0.0",
    tools=[
        {
            "name": "get_time",
            "description": "Return the current UTC time as an ISO 8601 string.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        }
    ],
)


def test_a_server_with_an_empty_list_gets_no_score_anywhere(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    registry = tmp_path / "servers.json"
    with DemoHost([EMPTY, ONE]) as host:
        registry.write_text(
            json.dumps(
                [
                    {
                        "name": f"example/{site.name}",
                        "version": "1.0.0",
                        "description": "A test server.",
                        "remotes": [{"type": "streamable-http", "url": host.url(site.name)}],
                    }
                    for site in (EMPTY, ONE)
                ]
            ),
            encoding="utf-8",
        )
        settings = CrawlSettings(
            concurrency=2, limits=ClientLimits(timeout=20.0, connect_timeout=5.0), allow_private=True
        )
        run_scan(ScanConfig(source=str(registry), db_url=f"sqlite:///{db}", crawl=settings))
    site = tmp_path / "site"
    built = invoke("report", "--db", str(db), "--out", str(site))
    assert built.exit_code == 0, built.output
    document = json.loads((site / "leaderboard.json").read_text(encoding="utf-8"))
    assert [row["server"] for row in document["ranked"]] == ["example/one"]
    empty = next(row for row in document["unranked"] if row["server"] == "example/empty")
    assert empty["score"] is None and empty["outcome"] == "ok" and empty["cause"] == "no_tools"
    assert {"cause": "no_tools", "label": "Listed no tools (no score)", "servers": 1} in document["unranked_by_cause"]
    page = (site / "servers" / f"{empty['slug']}.html").read_text(encoding="utf-8")
    assert "answered with no tools, so it has no score" in page and 'id="score"' not in page
    badge = json.loads((site / "badges" / f"{empty['slug']}.json").read_text(encoding="utf-8"))
    assert (badge["message"], badge["color"]) == ("no tools", "lightgrey")
    listed = {
        row["server"]: row["score"] for row in json.loads(invoke("servers", "--db", str(db), "--format", "json").stdout)
    }
    assert listed["example/empty"] is None and listed["example/one"] is not None

    gated = invoke("check", "--db", str(db), "--server", "example/empty", "--min-score", "0")
    assert gated.exit_code == 1
    assert gated.stderr == "fathom: gate --min-score 0 failed: no score: the list has no tools\n"
    assert "No score: the list has no tools" in gated.stdout
    as_json = invoke("check", "--db", str(db), "--server", "example/empty", "--format", "json")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["score"] is None
    badge_path = tmp_path / "empty.svg"
    invoke("check", "--db", str(db), "--server", "example/empty", "--badge", str(badge_path))
    assert "no tools" in badge_path.read_text() and "#9f9f9f" in badge_path.read_text()
    # the same list read from a file: the same answer
    empty_file = tmp_path / "empty.json"
    empty_file.write_text('{"tools": []}', encoding="utf-8")
    from_file = invoke("check", "-f", str(empty_file), "--min-score", "50", "--fail-on", "warning")
    assert from_file.exit_code == 1 and "no score: the list has no tools" in from_file.stderr
    assert stored_score(db, "example/one") == stored_score(db, "example/one")


@pytest.mark.parametrize("document", ["[1, 2, 3]", '{"tools": ["a", "b"]}', '[{"name": "x"}, null]', '{"tools": [[]]}'])
def test_a_list_of_things_that_are_not_tools_exits_2(tmp_path: Path, document: str) -> None:
    path = tmp_path / "tools.json"
    path.write_text(document, encoding="utf-8")
    result = invoke("check", "-f", str(path), "--min-score", "0")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "is not a tool list" in result.stderr
