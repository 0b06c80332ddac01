"""``fathom rescore`` says what changed per rule, writes nothing with --dry-run or when nothing changed, and
recomputes each scan's own findings (MCP5xx from the scans in order) from what the store kept."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure import toollist
from scanner.models import CheckReport, Toolset
from scanner.store import Store
from tests.store.conftest import entry, ok

ECHO = [
    {
        "name": "get_user",
        "description": "Gets the user.",
        # an untyped parameter: MCP205 (a stable rule) finds it
        "inputSchema": {"type": "object", "properties": {"id": {"description": "The user's id."}}},
    },
    {
        "name": "get_user_roles",
        "description": "Roles of one user by id; returns role names and when each was granted.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def without(code: str):  # type: ignore[no-untyped-def]
    """A measure that leaves one rule out: what an older catalogue would have said."""

    def measure(toolset: Toolset) -> CheckReport:
        report = toollist.measure(toolset)
        return CheckReport(**{**report.__dict__, "findings": tuple(f for f in report.findings if f.code != code)})

    return measure


def written_by_older_code(store: Store) -> None:
    """Stamp every stored measurement with another basis: what older code (another catalogue digest, another
    tokenizer method) measured. A rescore measures again only what this code did not measure."""
    from sqlalchemy import text

    with store.engine.begin() as connection:
        connection.execute(text("UPDATE measurements SET basis = 'older code'"))


def _counts(store: Store) -> tuple[int, ...]:
    with store.engine.connect() as connection:
        from sqlalchemy import text

        return tuple(
            connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
            for table in ("findings", "measurements", "toolset_tokens")
        )


def test_rescore_reports_per_rule_and_is_a_no_op_the_second_time(store: Store) -> None:
    run = store.start_run("list.txt", "4", {})
    store.record_scan(run, entry("a"), ok(ECHO), without("MCP205"))
    store.finish_run(run)
    written_by_older_code(store)
    before = _counts(store)

    dry = store.rescore_history("4", toollist.measure, dry_run=True)
    assert dry.added["MCP205"] == 1 and dry.toolsets_changed == 1 and dry.dry_run
    assert _counts(store) == before  # a dry run writes nothing

    done = store.rescore_history("4", toollist.measure)
    assert done.added["MCP205"] == 1 and not done.removed and done.toolsets_changed == 1
    assert [f.code for f in store.leaderboard(run)[0].findings].count("MCP205") == 1
    after = _counts(store)

    # Measured by this code now: not measured again, unless asked for every list.
    again = store.rescore_history("4", toollist.measure)
    assert not again.anything and (again.measured, again.current) == (0, 1) and "nothing changed" in again.text()
    assert "1 already measured under this catalogue and basis (--all measures them again)" in again.text()
    every = store.rescore_history("4", toollist.measure, every=True)
    assert not every.anything and (every.measured, every.current) == (1, 0)
    assert _counts(store) == after


def test_rescore_recomputes_over_time_findings_in_scan_order(store: Store) -> None:
    changed = [dict(ECHO[0], description="Look up one user by id; returns name and role."), ECHO[1]]
    for tools in (ECHO, changed):
        run = store.start_run("list.txt", "4", {})
        store.record_scan(run, entry("a"), ok(tools), toollist.measure)
        store.finish_run(run)
    scans = store.history("a")
    # Drop the stored MCP501 to stand for a store written before the rule existed; rescore brings it back.
    with store.engine.begin() as connection:
        from sqlalchemy import text

        connection.execute(text("DELETE FROM findings WHERE code = 'MCP501'"))
    result = store.rescore_history("4", toollist.measure)
    assert result.added["MCP501"] == 1 and result.scans_changed == 1
    assert [f.code for f in store.findings(rule="MCP501")] == ["MCP501"]
    assert len(scans) == 2


def test_rescore_dry_run_on_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    from scanner.store import open_store

    with open_store(f"sqlite:///{db}") as store:
        run = store.start_run("list.txt", "4", {})
        store.record_scan(run, entry("a"), ok(ECHO), without("MCP205"))
        store.finish_run(run)
    runner = CliRunner()
    first = runner.invoke(app, ["rescore", "--db", str(db), "--dry-run"])
    assert first.exit_code == 0, first.output
    assert "would change 1 tool lists" in first.output and "MCP205  +1" in first.output
    second = runner.invoke(app, ["rescore", "--db", str(db)])
    assert "changed 1 tool lists" in second.output
    third = runner.invoke(app, ["rescore", "--db", str(db)])
    assert "nothing changed; nothing written" in third.output


def test_rescore_relabels_a_count_made_by_an_older_method(store: Store) -> None:
    """A count stored under an older method string (the OpenAI render before it followed openai-harmony) is
    measured again and relabelled, even where the number came out the same."""
    from sqlalchemy import text

    from scanner.providers.openai import METHOD

    run = store.start_run("list.txt", "4", {})
    store.record_scan(run, entry("a"), ok(ECHO), toollist.measure)
    store.finish_run(run)
    sha = Toolset.from_tools(tuple(ECHO)).sha256
    with store.engine.begin() as connection:
        old = "o200k_base(harmony namespace render)+15"
        connection.execute(text("UPDATE toolset_tokens SET method = :old WHERE provider = 'openai'"), {"old": old})
    written_by_older_code(store)  # an older method is another basis
    assert store.rescore_history("4", toollist.measure, dry_run=True).toolsets_changed == 1
    store.rescore_history("4", toollist.measure)
    assert store.toolset_tokens(sha)["openai"].method == METHOD
    assert store.rescore_history("4", toollist.measure, dry_run=True).toolsets_changed == 0


def test_rescore_brings_a_store_of_catalogue_4_onto_catalogue_5(store: Store) -> None:
    """A store scored under an older catalogue (here: without MCP110, and with MCP112 on a calculator's `add`)
    is brought onto the current catalogue by one rescore: findings under the new version, every run recounted,
    and the leaderboard reading them."""
    from scanner.rules import RULES_VERSION
    from scanner.rules.registry import make_finding

    tools = [
        {"name": "add", "description": "Adds two numbers.", "inputSchema": {"type": "object", "properties": {}}},
        {
            "name": "login",
            "description": "Signs in to the service with a user name and password.",
            "inputSchema": {"type": "object", "properties": {"password": {"type": "string", "description": "P."}}},
            "annotations": {"readOnlyHint": False, "destructiveHint": False},
        },
    ]

    def catalogue_4(toolset: Toolset) -> CheckReport:
        report = toollist.measure(toolset)
        kept = [f for f in report.findings if f.code != "MCP110"]
        kept.append(make_finding("MCP112", tool="add", message="'add' changes things (add).", tool_index=0))
        return CheckReport(**{**report.__dict__, "findings": tuple(kept)})

    run = store.start_run("list.txt", "4", {})
    store.record_scan(run, entry("calc"), ok(tools), catalogue_4)
    store.finish_run(run)
    done = store.rescore_history(RULES_VERSION, toollist.measure)
    assert done.added["MCP110"] == 1 and done.removed["MCP112"] == 1 and done.toolsets_changed == 1
    (row,) = store.leaderboard(run)
    codes = sorted(f.code for f in row.findings)
    assert "MCP110" in codes and "MCP112" not in codes
    again = store.rescore_history(RULES_VERSION, toollist.measure)
    assert not again.anything and again.runs_recounted == 0


CATALOGUE_6_CHANGES = [
    # MCP218 (new): a FastMCP docstring's `ctx` line
    {
        "name": "search_notes",
        "description": "Search the notes.\n\nArgs:\n    ctx: MCP context\n    query: words to find",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "Words."}}},
        "annotations": {"readOnlyHint": True},
    },
    # MCP404 (retired in catalogue 6): its stored finding on a sync token goes
    {
        "name": "sync_events",
        "description": "Sync calendar events since the last sync.",
        "inputSchema": {"type": "object", "properties": {"sync_token": {"type": "string", "description": "Where."}}},
        "annotations": {"readOnlyHint": True},
    },
]


def test_rescore_brings_a_store_of_catalogue_5_onto_catalogue_6(tmp_path: Path) -> None:
    """A SQLite file scored under catalogue 5 (MCP404, now retired, on a sync token; no MCP218) is brought onto
    catalogue 6 by `fathom rescore`: the command says what changed per rule, and the leaderboard then reads
    catalogue 6's findings; a second rescore changes nothing."""
    from scanner.rules import RULES_VERSION
    from scanner.rules.registry import make_finding
    from scanner.store import open_store

    assert RULES_VERSION == "6"

    def catalogue_5(toolset: Toolset) -> CheckReport:
        report = toollist.measure(toolset)
        kept = [f for f in report.findings if f.code != "MCP218"]
        kept.append(
            make_finding(
                "MCP404",
                tool="sync_events",
                message="'sync_events' asks the model for a credential in its parameters: sync_token.",
                pointer="/inputSchema/properties/sync_token",
                details={"parameters": ["sync_token"]},
                tool_index=1,
            )
        )
        return CheckReport(**{**report.__dict__, "findings": tuple(kept)})

    db = tmp_path / "catalogue5.db"
    with open_store(f"sqlite:///{db}") as store:
        run = store.start_run("list.txt", "5", {})
        store.record_scan(run, entry("notes"), ok(CATALOGUE_6_CHANGES), catalogue_5)
        store.finish_run(run)
        (before,) = store.leaderboard(run)
        assert "MCP404" in {f.code for f in before.findings} and "MCP218" not in {f.code for f in before.findings}
    runner = CliRunner()
    done = runner.invoke(app, ["rescore", "--db", str(db)])
    assert done.exit_code == 0, done.output
    assert "changed 1 tool lists" in done.output
    assert "MCP218  +1  -0" in done.output and "MCP404  +0  -1" in done.output
    with open_store(f"sqlite:///{db}") as store:
        (row,) = store.leaderboard(run)
        codes = {f.code for f in row.findings}
        assert "MCP218" in codes and "MCP404" not in codes
    again = runner.invoke(app, ["rescore", "--db", str(db)])
    assert "nothing changed; nothing written" in again.output


def test_rescore_keeps_mcp809_under_the_registry_entrys_key(store: Store) -> None:
    """MCP809 is stored with each scan under the key a client gives the server (the entry's last name segment):
    a rescore recomputes it from the stored name, so it neither drops it nor adds one where the key is short
    (it once removed every MCP809 of a store: 60,918 on the 100 000-server night)."""
    tool = {"name": "get_" + "x" * 36, "description": "Gets x.", "inputSchema": {"type": "object", "properties": {}}}
    run = store.start_run("servers.json", "6", {})
    for name in ("io.example/a-rather-long-server-name", "io.example/short"):
        store.record_scan(run, entry(name), ok([tool]), toollist.measure)
    store.finish_run(run)
    found = {row.server: [f.code for f in row.findings if f.code == "MCP809"] for row in store.leaderboard(run)}
    assert found == {"io.example/a-rather-long-server-name": ["MCP809"], "io.example/short": []}
    before = _counts(store)

    dry = store.rescore_history("6", toollist.measure, dry_run=True)
    assert not dry.anything and not dry.removed and dry.scans_changed == 0
    done = store.rescore_history("6", toollist.measure)
    assert not done.anything and _counts(store) == before
    after = {row.server: [f.code for f in row.findings if f.code == "MCP809"] for row in store.leaderboard(run)}
    assert after == found
