"""The query commands as a user runs them: the score in servers/history, findings filters, unknown rules, rules
formats, and tables that fit the terminal without cutting anything (a real SQLite file, three runs)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure.score import score_breakdown
from scanner.models import Outcome
from scanner.rules import RULES
from scanner.store import open_store
from tests.store.conftest import entry, failed, local_measure, ok, tool

runner = CliRunner()

ECHO = tool("echo", "Echo the given text back, unchanged.", text="string")
ADD = tool("add", "Add two numbers and return the sum.", a="number", b="number")
SEARCH_UNTYPED = tool("search", "Search the index for documents.", query=None)
SEARCH = tool("search", "Search the index for documents.", query="string")
LONG = "a detail far longer than sixty characters, " * 4 + "ending in THE-END"


@pytest.fixture(autouse=True)
def no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """run 1: a [echo, untyped search], b [add], c timeout; run 2: a fixed, c answers three tools (two with
    problems); run 3: a unchanged, b a new version, c fails with a long detail."""
    path = tmp_path / "fathom.db"
    plan = [
        {"a": ok([ECHO, SEARCH_UNTYPED]), "b": ok([ADD]), "c": failed()},
        {"a": ok([ECHO, SEARCH]), "b": ok([ADD]), "c": ok([tool("x", "x"), ADD, SEARCH_UNTYPED])},
        {"a": ok([ECHO, SEARCH]), "b": ok([ECHO], version="2.0.0"), "c": failed(detail=LONG)},
    ]
    with open_store(f"sqlite:///{path}") as store:
        for number, scans in enumerate(plan, 1):
            run_id = store.start_run("list.txt", "1", {"round": number})
            for name, outcome in scans.items():
                store.record_scan(run_id, entry(name), outcome, local_measure)
            store.finish_run(run_id)
    return path


def invoke(*args: str, columns: int | None = None) -> tuple[int, str, str]:
    env = {"COLUMNS": str(columns)} if columns else None
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def report_scores(path: Path) -> dict[tuple[int, str], float]:
    """Every (run, server) score the report computes (leaderboard rows, as scanner.report.build scores them)."""
    with open_store(f"sqlite:///{path}") as store:
        return {
            (run.id, row.server): parts.score
            for run in store.runs()
            for row in store.leaderboard(run.id)
            if row.outcome == "ok"
            and (parts := score_breakdown(int(row.tools_count or 0), row.findings, tokens=row.max_tokens)) is not None
        }


def test_servers_and_history_carry_the_report_score_in_every_format(database: Path) -> None:
    scores = report_scores(database)
    code, out, _ = invoke("servers", "--db", str(database), "--format", "json")
    assert code == 0
    rows = {row["server"]: row for row in json.loads(out)}
    # c's last scan failed: its tools, score and counts are those of its last successful scan (run 2).
    assert {name: row["score"] for name, row in rows.items()} == {
        "a": scores[(3, "a")],
        "b": scores[(3, "b")],
        "c": scores[(2, "c")],
    }
    assert rows["c"]["score"] < rows["a"]["score"] and rows["c"]["problems"] == 2
    assert (rows["a"]["problems"], rows["a"]["warnings"], rows["a"]["notes"]) == (0, 0, 0)

    code, out, _ = invoke("history", "c", "--db", str(database), "--format", "json")
    history = json.loads(out)
    assert [row["score"] for row in history] == [None, scores[(2, "c")], None]

    code, out, _ = invoke("servers", "--db", str(database), "--format", "csv")
    table = list(csv.DictReader(io.StringIO(out)))
    assert [float(row["score"]) for row in table] == [rows[name]["score"] for name in ("a", "b", "c")]
    assert [row["problems"] for row in table] == ["0", "0", "2"]
    code, out, _ = invoke("history", "a", "--db", str(database), "--format", "csv")
    assert [row["score"] for row in csv.DictReader(io.StringIO(out))] == [str(scores[(r, "a")]) for r in (1, 2, 3)]

    code, out, _ = invoke("servers", "--db", str(database), "--wide")
    header = out.splitlines()[0].split()
    assert {"score", "problems", "warnings", "notes"} <= set(header)
    line_c = next(line for line in out.splitlines() if line.startswith("c "))
    assert str(scores[(2, "c")]) in line_c.split()


def test_findings_filters_and_unknown_rules(database: Path) -> None:
    code, out, _ = invoke("findings", "--db", str(database), "--format", "json")
    every = json.loads(out)
    assert {"problem", "warning"} <= {row["severity"] for row in every}
    code, out, _ = invoke("findings", "--db", str(database), "--format", "json", "--severity", "warning")
    assert json.loads(out) == [row for row in every if row["severity"] == "warning"] != []
    code, out, _ = invoke("findings", "--db", str(database), "--format", "json", "--open")
    still = json.loads(out)
    assert still == [row for row in every if row["gone_run"] is None]
    assert any(row["gone_run"] is not None for row in every)  # the filter left something out

    for typo, nearest in (("MCP2O5", "MCP205"), ("param-untypd", "param-untyped")):
        code, out, err = invoke("findings", "--db", str(database), "--rule", typo)
        assert code == 2 and out == ""
        assert f"did you mean {nearest}?" in err
    code, out, _ = invoke("findings", "--db", str(database), "--rule", "param-untyped", "--format", "json")
    assert code == 0 and {row["code"] for row in json.loads(out)} == {"MCP205"}


def test_rule_takes_a_slug_and_rules_takes_a_format() -> None:
    code, out, _ = invoke("rule", "descriptions-similar")
    assert code == 0 and out.startswith(f"MCP303 {RULES['MCP303'].slug} (")
    code, _, err = invoke("rule", "descriptions-similr")
    assert code == 2 and "did you mean descriptions-similar?" in err

    code, out, _ = invoke("rules", "--format", "json")
    listed = json.loads(out)
    assert [row["code"] for row in listed] == list(RULES)
    assert all(row["hint"] == RULES[row["code"]].hint and row["slug"] == RULES[row["code"]].slug for row in listed)
    code, out, _ = invoke("rules", "--format", "csv")
    assert [row["code"] for row in csv.DictReader(io.StringIO(out))] == list(RULES)


@pytest.mark.parametrize("columns", [60, 80, 100, 220])
def test_tables_fit_the_terminal_and_cut_nothing(database: Path, columns: int) -> None:
    for args in (("servers",), ("history", "c"), ("findings",), ("runs",), ("diff", "b"), ("rules",)):
        code, out, _ = (
            invoke(*args, "--db", str(database), columns=columns)
            if args[0] != "rules"
            else invoke(*args, columns=columns)
        )
        assert code == 0, args
        assert all(len(line) <= columns for line in out.splitlines()), (args, columns, out)
        table = out.split("\nnext step (")[0]  # history's next step may say "fathom scan … --timeout 60" itself
        assert "…" not in table or args[0] == "rules"  # a rule's hint may hold one itself
    code, out, _ = invoke("history", "c", "--db", str(database), columns=columns)
    words = " ".join(out.split())
    assert "THE-END" in words and "far longer than sixty" in words  # wrapped, never cut


def test_piped_tables_are_never_wrapped_and_wide_keeps_every_column(database: Path) -> None:
    _, out, _ = invoke("history", "c", "--db", str(database))
    assert LONG in out  # whole, on one line
    _, narrow, _ = invoke("servers", "--db", str(database), columns=60)
    _, wide, _ = invoke("servers", "--db", str(database), "--wide", columns=60)
    assert "--wide" in narrow.splitlines()[-1] or "--wide" in " ".join(narrow.split()[-12:])
    assert wide.splitlines()[0].split() == [
        "server", "last_outcome", "last_scanned_at", "version", "tools", "score", "problems", "warnings", "notes",
        "anthropic", "openai", "gemini", "will_it_load", "detail",
    ]  # fmt: skip


def test_tables_show_short_times_and_json_full_ones(database: Path) -> None:
    _, out, _ = invoke("runs", "--db", str(database), "--wide")
    assert re.search(r"^\s+1  \d{4}-\d\d-\d\d \d\d:\d\d  \d{4}-\d\d-\d\d \d\d:\d\d  finished", out, re.M), out
    assert "+00:00" not in out
    _, out, _ = invoke("runs", "--db", str(database), "--format", "json")
    first = json.loads(out)[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", first["started_at"])
    assert first["workers"] == []


def test_diff_groups_findings_by_rule(database: Path) -> None:
    code, out, _ = invoke("diff", "a", "--from", "1", "--to", "2", "--db", str(database), "--format", "json")
    assert code == 0
    found = [
        (row["detail"].split()[0], row["change"]) for row in json.loads(out) if row["change"].startswith("finding")
    ]
    assert len({rule for rule, _ in found}) >= 2  # a fixed and a new rule: the order below is a real choice
    assert found == sorted(found, key=lambda item: (item[0], item[1] != "finding new"))


@pytest.fixture
def renamed(tmp_path: Path) -> Path:
    """Server a, two scans: [echo, untyped search, x (one-word description)], then search renamed to find (same
    description and schema: its MCP205 follows it) and x removed with its MCP102."""
    path = tmp_path / "renamed.db"
    find = {**SEARCH_UNTYPED, "name": "find"}
    with open_store(f"sqlite:///{path}") as store:
        for tools in ([ECHO, SEARCH_UNTYPED, tool("x", "x")], [ECHO, find]):
            run_id = store.start_run("list.txt", "1", {})
            store.record_scan(run_id, entry("a"), ok(tools), local_measure)
            store.finish_run(run_id)
    return path


def test_diff_shows_a_rename_as_one_row_and_findings_gone_with_the_tool_in_every_format(renamed: Path) -> None:
    code, out, _ = invoke("diff", "a", "--db", str(renamed), "--format", "json")
    assert code == 0
    rows = [(row["change"], row["tool"], row["detail"].split(" ")[0]) for row in json.loads(out)[1:]]
    expected = [
        ("tool renamed", "find", "from"),
        ("tool removed", "x", ""),
        ("tokens", None, "anthropic"),
        ("tokens", None, "gemini"),
        ("tokens", None, "openai"),
        ("finding gone with the tool", "x", "MCP102"),  # not "fixed": x went away
        ("finding fixed", None, "MCP305"),  # two tools now: a real fix
        ("finding new", "x", "MCP502"),  # for x only: search was renamed, and its MCP205 followed it
    ]
    assert rows == expected
    assert json.loads(out)[1]["detail"] == "from search: same description and inputSchema"

    code, out, _ = invoke("diff", "a", "--db", str(renamed), "--format", "csv")
    assert [(row["change"], row["tool"] or None) for row in csv.DictReader(io.StringIO(out))][1:] == [
        (change, tool_name) for change, tool_name, _ in expected
    ]

    code, out, _ = invoke("diff", "a", "--db", str(renamed), columns=220)
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[:3] for line in lines if "renamed" in line] == [["tool", "renamed", "find"]]
    assert not any("fixed" in line and "MCP102" in line for line in lines)
    assert any(re.match(r"\s*finding gone with the tool\s+x\s+MCP102", line) for line in lines), out
    assert "MCP205" not in out and "tool added" not in out


def test_findings_follow_a_renamed_tool_as_diff_does(renamed: Path) -> None:
    """search's MCP205 followed it to find: one stretch open since run 1 under the new name, not one fixed on
    search and one new on find; x's MCP102 went with x."""
    code, out, _ = invoke("findings", "--server", "a", "--db", str(renamed), "--format", "json")
    assert code == 0
    rows = {(row["code"], row["tool"]): (row["first_seen_run"], row["gone_run"]) for row in json.loads(out)}
    assert rows[("MCP205", "find")] == (1, None)
    assert ("MCP205", "search") not in rows
    assert rows[("MCP102", "x")] == (1, 2)
    [moved] = [row for row in json.loads(out) if row["code"] == "MCP205"]
    assert "find" in moved["message"] and "search" not in moved["message"]  # the new name's own message
    code, out, _ = invoke(
        "findings", "--server", "a", "--db", str(renamed), "--open", "--rule", "MCP205", "--format", "json"
    )
    assert [(row["tool"], row["first_seen_run"]) for row in json.loads(out)] == [("find", 1)]
    # Each run's findings keep their names; search's in run 1 is not gone: it went on as find's.
    code, out, _ = invoke(
        "findings", "--server", "a", "--db", str(renamed), "--run", "1", "--rule", "MCP205", "--format", "json"
    )
    assert [(row["tool"], row["first_seen_run"], row["gone_run"]) for row in json.loads(out)] == [("search", 1, None)]
    code, out, _ = invoke(
        "findings", "--server", "a", "--db", str(renamed), "--run", "2", "--rule", "MCP205", "--format", "json"
    )
    assert [(row["tool"], row["first_seen_run"], row["gone_run"]) for row in json.loads(out)] == [("find", 1, None)]


def test_servers_and_history_say_what_each_client_sends(database: Path) -> None:
    from scanner.measure.clients import CLIENTS, measure_clients

    code, out, _ = invoke("servers", "--db", str(database), "--format", "json")
    assert code == 0
    rows = {row["server"]: row for row in json.loads(out)}
    with open_store(f"sqlite:///{database}") as store:
        for name, row in rows.items():
            costs = store.toolset_costs(row["toolset_sha256"])
            tools = store.toolset_tools(row["toolset_sha256"])
            expected = measure_clients(
                {p: row[p] for p in ("anthropic", "anthropic-v3", "openai", "gemini") if row.get(p) is not None},
                [cost.tokens for cost in costs],
                [cost.name for cost in costs],
                descriptions=[tools[cost.index].get("description") for cost in costs],
            )
            assert row["clients"] == {cost.client: cost.tokens for cost in expected}, name
            assert list(row["clients"]) == [client.key for client in CLIENTS]
            assert row["clients"]["windsurf"] == row["anthropic"]
    # c's last scan failed: its clients are those of its last successful list, like its tokens.
    code, out, _ = invoke("history", "c", "--db", str(database), "--format", "json")
    history = json.loads(out)
    assert [row["clients"] is None for row in history] == [True, False, True]
    assert history[1]["clients"] == rows["c"]["clients"]
    code, out, _ = invoke("servers", "--db", str(database), "--format", "csv")
    assert "clients" in next(csv.reader(io.StringIO(out)))


def test_the_queries_say_why_and_what_next_at_80_columns(tmp_path: Path) -> None:
    """Issue 46: at 80 columns `servers` hid why a server failed; `history` showed "HTTP 401" without the
    FATHOM_SECRET_... variable that `check` and the site name, and listed the oldest scan first; `diff` printed
    "run None" for a server whose first scan read no list."""
    path = tmp_path / "fathom.db"
    plan = [
        {"io.example/locked": failed(Outcome.AUTH_REQUIRED, "HTTP 401: authorization required"), "late": failed()},
        {"io.example/locked": failed(Outcome.AUTH_REQUIRED, "HTTP 401: authorization required"), "late": ok([ECHO])},
    ]
    with open_store(f"sqlite:///{path}") as store:
        for number, scans in enumerate(plan, 1):
            run_id = store.start_run("list.txt", "1", {"round": number})
            for name, outcome in scans.items():
                store.record_scan(run_id, entry(name), outcome, local_measure)
            store.finish_run(run_id)

    _, listed, _ = invoke("servers", "--db", str(path), columns=80)
    assert "HTTP 401: authorization required" in " ".join(listed.split())
    assert all(len(line) <= 80 for line in listed.splitlines())
    assert "io.example/locked " in listed  # the name whole, on one line

    _, history, _ = invoke("history", "io.example/locked", "--db", str(path), columns=80)
    runs = [line.split()[0] for line in history.splitlines()[2:] if line[:3].strip().isdigit()]
    assert runs == ["2", "1"]  # newest first
    assert all(len(line) <= 80 for line in history.splitlines())
    said = " ".join(history.split())
    assert "next step (run 2, auth_required): Set FATHOM_SECRET_IO_EXAMPLE_LOCKED_AUTHORIZATION to" in said

    _, changed, _ = invoke("diff", "late", "--db", str(path))
    assert "run None" not in changed and "no earlier scan to compare with → run 2 (ok" in changed
