"""Will it load? Each client's verdict on a list (scanner.measure.verdicts) in every check format, on the saved real
lists,
and as a gate: `check --fail-on-reject CLIENT[,CLIENT]` (flag, config file, Action input) against a real server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.measure.clients import CLIENTS_BY_KEY
from scanner.measure.toollist import measure
from scanner.measure.verdicts import REJECT_CLIENTS, compact, render_text, verdicts
from scanner.models import Finding, Severity, Toolset
from tests.servers.launch import sdk_http_server

runner = CliRunner()
REAL = Path(__file__).parents[1] / "fixtures" / "real"

# Grafana's update_dashboard shape (an array-typed value without items, inside operations[]) and a root key
# with brackets: OpenAI refuses the list, VS Code drops one tool, Anthropic refuses, Claude Code drops the other.
GRAFANA_LIKE: dict[str, Any] = {
    "name": "update_dashboard",
    "description": "Apply a list of JSON-patch operations to one dashboard and return its new version number.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "uid": {"type": "string", "description": "The dashboard's uid, e.g. abc123."},
            "operations": {
                "type": "array",
                "description": "The operations, applied in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "description": "add, replace or remove."},
                        "path": {"type": "string", "description": "A JSON pointer, e.g. /title."},
                        "value": {"type": ["string", "number", "boolean", "array", "null"], "description": "New."},
                    },
                },
            },
        },
        "required": ["uid", "operations"],
    },
    "annotations": {"readOnlyHint": False, "destructiveHint": False},
}
BRACKETS: dict[str, Any] = {
    "name": "list_contacts",
    "description": "List the contacts whose ids are given, with their names and e-mail addresses.",
    "inputSchema": {
        "type": "object",
        "properties": {"ids[]": {"type": "array", "items": {"type": "string"}, "description": "Ids, e.g. c_1."}},
    },
    "annotations": {"readOnlyHint": True},
}
CLEAN: dict[str, Any] = {
    "name": "get_contact",
    "description": "One contact by its id: name, e-mail address and the company it belongs to.",
    "inputSchema": {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "The contact's id, e.g. c_1."}},
        "required": ["id"],
    },
    "annotations": {"readOnlyHint": True},
}


def _states(tools: list[Any]) -> dict[str, str]:
    report = measure(Toolset.from_tools(tuple(tools)))
    return {verdict.client: verdict.phrase() for verdict in verdicts(report.findings)}


def test_every_client_row_fathom_knows_has_a_verdict() -> None:
    keys = [client.key for client in REJECT_CLIENTS]
    for key in ("claude-code", "anthropic-api", "cursor", "gemini-cli", "openai-api", "vscode"):
        assert key in keys
    for key in ("claude-code", "cursor", "gemini-cli"):
        assert key in CLIENTS_BY_KEY  # the same client as the cost row of that key
    assert _states([CLEAN]) == dict.fromkeys(keys, "loads")


def test_verdicts_say_who_refuses_and_who_drops() -> None:
    states = _states([CLEAN, GRAFANA_LIKE, BRACKETS])
    assert states["openai-api"] == "refuses the whole list"
    assert states["vscode"] == "drops 1 tool"
    assert states["anthropic-api"] == "refuses the whole list"
    assert states["claude-code"] == "drops 1 tool"
    assert states["cursor"] == "loads" and states["gemini-cli"] == "loads"
    report = measure(Toolset.from_tools((CLEAN, GRAFANA_LIKE, BRACKETS)))
    found = {verdict.client: verdict for verdict in verdicts(report.findings)}
    assert found["vscode"].dropped == ("update_dashboard",) and found["claude-code"].dropped == ("list_contacts",)
    assert any("array schema missing items" in reason for reason in found["openai-api"].reasons)
    # the type list on a path Gemini's `parameters` keeps: a stable refusal since catalogue 6 (MCP805)
    assert found["gemini-api"].state == "refuses" and found["gemini-api"].preview_state is None
    assert compact(tuple(found.values())) == (
        "refused by Anthropic API, Gemini API (parameters), OpenAI API; tools dropped by Claude Code (1), "
        "VS Code (Copilot) (1)"
    )


def test_stored_details_of_any_shape_are_read_as_data() -> None:
    odd = [
        Finding("MCP803", "array-items-missing", Severity.PROBLEM, "t", "m.", "h", details={"clients": "x"}),
        Finding("MCP803", "array-items-missing", Severity.PROBLEM, "t", "m.", "h", details={"clients": [1, {}]}),
        Finding(
            "MCP803",
            "array-items-missing",
            Severity.PROBLEM,
            "t",
            "m.",
            "h",
            details={"clients": [{"client": "openai-api", "effect": "explodes"}]},
        ),
        Finding("MCP205", "param-untyped", Severity.PROBLEM, "t", "m.", "h", details={"clients": [{"client": "x"}]}),
    ]
    assert {verdict.state for verdict in verdicts(odd)} == {"loads"}


def test_the_real_lists() -> None:
    """The saved real lists (catalogue 6): the reference servers whose SDK writes a draft-07 `outputSchema`
    (filesystem 14 tools, memory 9, everything 1, sequential-thinking 1) lose those tools in Claude Desktop and
    Claude Code, with the client's verbatim error; two lists carry a `type` list where Gemini's `parameters` keeps
    it (MCP805, stable since catalogue 6; Notion's are in `$defs`, which the conversion drops); every other list
    loads everywhere, and no preview rule says worse (MCP807, Notion's untyped schemas, is retired: Gemini CLI
    v0.42 loads them)."""
    stable: dict[str, dict[str, str]] = {}
    preview: dict[str, dict[str, str]] = {}
    noted: dict[str, list[str]] = {}
    for path in sorted(REAL.glob("*.json")):
        if path.name in ("labels.json", "manifest.json"):
            continue
        tools = json.loads(path.read_text(encoding="utf-8")).get("tools") or []
        found = verdicts(measure(Toolset.from_tools(tuple(tools))).findings)
        worse = {verdict.client: verdict.phrase() for verdict in found if verdict.state != "loads"}
        if worse:
            stable[path.stem] = worse
        worse = {
            verdict.client: verdict.to_json()["preview"]["verdict"]
            for verdict in found
            if verdict.preview_state not in (None, "loads")
        }
        if worse:
            preview[path.stem] = worse
        if any(verdict.notes for verdict in found):
            noted[path.stem] = [verdict.client for verdict in found if verdict.notes]
        if path.stem in ("server-filesystem", "server-memory"):
            text = "\n".join(render_text(found, reasons=40))
            count = len(tools)
            assert f"Claude Desktop drops {count} tools." in text
            assert (
                "Tool 'list_allowed_directories' has an invalid outputSchema: JSON Schema declares an unsupported "
                'dialect ("$schema": "http://json-schema.org/draft-07/schema#"). The default validator supports '
                "JSON Schema 2020-12 only" in text
            ) == (path.stem == "server-filesystem")
    drops = {"claude-code": "drops {}", "claude-desktop": "drops {}"}
    assert stable == {
        "server-everything": {key: value.format("1 tool") for key, value in drops.items()},
        "server-filesystem": {key: value.format("14 tools") for key, value in drops.items()},
        "server-memory": {key: value.format("9 tools") for key, value in drops.items()},
        "server-sequential-thinking": {
            **{key: value.format("1 tool") for key, value in drops.items()},
            "gemini-api": "refuses the whole list",
        },
        "sentry-mcp": {"gemini-api": "refuses the whole list"},
    }
    assert preview == {}
    assert noted == {}


# --- check's formats and the gate -------------------------------------------------------------------------------


@pytest.fixture
def refused_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [CLEAN, GRAFANA_LIKE]}), encoding="utf-8")
    return path


def check(*args: str) -> Any:
    return runner.invoke(app, ["check", *args, "--timeout", "20"])


def test_every_format_shows_the_verdicts(refused_file: Path) -> None:
    text = check("--tools-file", str(refused_file))
    assert text.exit_code == 0
    block = text.stdout.split("Will it load?", 1)[1].split("\n\n", 1)[0]
    assert "OpenAI API" in block and "refuses the whole list" in block
    assert "VS Code (Copilot)" in block and "drops 1 tool (update_dashboard)" in block
    assert "Invalid schema for function 'update_dashboard'" in block
    data = json.loads(check("--tools-file", str(refused_file), "--format", "json").stdout)
    assert data["verdicts"]["openai-api"]["state"] == "refuses"
    assert data["verdicts"]["vscode"]["dropped"] == ["update_dashboard"]
    assert data["verdicts"]["claude-code"]["verdict"] == "loads"
    markdown = check("--tools-file", str(refused_file), "--format", "markdown").stdout
    assert "### Will it load?" in markdown and "| OpenAI API | refuses the whole list |" in markdown
    sarif = json.loads(check("--tools-file", str(refused_file), "--format", "sarif").stdout)
    assert sarif["runs"][0]["properties"]["verdicts"]["vscode"]["state"] == "drops"


def test_fail_on_reject_against_a_real_server(tmp_path: Path) -> None:
    served = tmp_path / "served.json"
    served.write_text(json.dumps([CLEAN, GRAFANA_LIKE]), encoding="utf-8")
    with sdk_http_server(tools_file=served) as server:
        failed = check("--url", server.url(), "--fail-on-reject", "claude-code,vscode")
        assert failed.exit_code == 1
        lines = [line for line in failed.stderr.splitlines() if line.startswith("fathom:")]
        assert lines == [
            "fathom: gate --fail-on-reject claude-code,vscode failed: VS Code (Copilot) drops 1 tool (MCP803)"
        ]
        passed = check("--url", server.url(), "--fail-on-reject", "claude-code,cursor,anthropic-api")
        assert passed.exit_code == 0 and "fail-on-reject claude-code,cursor,anthropic-api: every named" in (
            passed.stdout
        )
        # Gemini's `parameters` and the type list: a stable refusal since catalogue 6 (MCP805), so it fails
        gemini = check("--url", server.url(), "--fail-on-reject", "gemini-api")
        assert gemini.exit_code == 1 and "MCP805" in gemini.stderr


def test_unknown_client_names_the_nearest(refused_file: Path, tmp_path: Path, monkeypatch: Any) -> None:
    typo = check("--tools-file", str(refused_file), "--fail-on-reject", "vs-code")
    assert typo.exit_code == 2
    assert typo.stderr.startswith("fathom: --fail-on-reject: no client 'vs-code'; did you mean 'vscode'?")
    assert len(typo.stderr.strip().splitlines()) == 1
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fathom.toml").write_text('fail-on-reject = ["openai-api"]\n', encoding="utf-8")
    configured = check("--tools-file", str(refused_file))
    assert configured.exit_code == 1 and "gate --fail-on-reject openai-api failed: OpenAI API refuses" in (
        configured.stderr
    )
    assert check("--tools-file", str(refused_file), "--fail-on-reject", "cursor").exit_code == 0  # the flag wins
    (tmp_path / "fathom.toml").write_text('fail-on-reject = ["open-ai"]\n', encoding="utf-8")
    bad = check("--tools-file", str(refused_file))
    assert bad.exit_code == 2 and "fail-on-reject: no client 'open-ai'; did you mean 'openai-api'?" in bad.stderr
    (tmp_path / "fathom.toml").write_text("fail-on-reject = 3\n", encoding="utf-8")
    assert check("--tools-file", str(refused_file)).exit_code == 2


def test_action_input_becomes_the_flag() -> None:
    from scanner.check.ci import action_argv

    argv = action_argv({"INPUT_TOOLS_FILE": "t.json", "INPUT_FAIL_ON_REJECT": "openai-api,vscode"}, "s", "m", "d")
    assert argv[argv.index("--fail-on-reject") + 1] == "openai-api,vscode"
    action = (Path(__file__).parents[2] / "action.yml").read_text(encoding="utf-8")
    assert "  fail-on-reject:" in action and "INPUT_FAIL_ON_REJECT: ${{ inputs.fail-on-reject }}" in action


# --- over history: a real server scanned three times into SQLite -------------------------------------------------


def test_findings_and_history_show_when_a_client_started_and_stopped_refusing(tmp_path: Path) -> None:
    """Run 1 serves a clean list, run 2 adds Grafana's array without items (OpenAI refuses, VS Code drops it),
    run 3 gives the array its items: `findings --rule MCP803` says it appeared in run 2 and went in run 3, and
    `history`/`servers` carry each run's verdicts."""
    served = tmp_path / "served.json"
    served.write_text(json.dumps([CLEAN]), encoding="utf-8")
    registry = tmp_path / "servers.json"
    db = f"sqlite:///{tmp_path}/f.db"
    fixed = json.loads(json.dumps(GRAFANA_LIKE))
    fixed["inputSchema"]["properties"]["operations"]["items"]["properties"]["value"]["items"] = {"type": "string"}
    with sdk_http_server(tools_file=served) as server:
        entry = {"name": "io.example/grafana", "version": "1.0.0"}
        entry["remotes"] = [{"type": "streamable-http", "url": server.url()}]  # type: ignore[assignment]
        registry.write_text(json.dumps([entry]), encoding="utf-8")
        for tools in ([CLEAN], [CLEAN, GRAFANA_LIKE], [CLEAN, fixed]):
            served.write_text(json.dumps(tools), encoding="utf-8")
            scanned = runner.invoke(app, ["scan", str(registry), "--db", db, "--allow-private", "--timeout", "20"])
            assert scanned.exit_code == 0, (scanned.stdout, scanned.stderr)
    found = runner.invoke(app, ["findings", "--rule", "MCP803", "--db", db, "--format", "json"])
    assert found.exit_code == 0, found.stderr
    (row,) = json.loads(found.stdout)
    assert (row["server"], row["tool"], row["first_seen_run"], row["gone_run"]) == (
        "io.example/grafana",
        "update_dashboard",
        2,
        3,
    )
    in_run = runner.invoke(app, ["findings", "--rule", "MCP803", "--run", "2", "--db", db, "--format", "json"])
    (row,) = json.loads(in_run.stdout)
    assert {entry["client"] for entry in row["details"]["clients"]} == {"openai-api", "vscode"}
    assert "array schema missing items" in row["message"]
    history = json.loads(runner.invoke(app, ["history", "io.example/grafana", "--db", db, "--format", "json"]).stdout)
    assert [item["will_it_load"] for item in history] == [
        "loads everywhere",
        "refused by Gemini API (parameters), OpenAI API; tools dropped by VS Code (Copilot) (1)",
        "refused by Gemini API (parameters)",  # the type list stays (MCP805, stable since catalogue 6)
    ]
    assert history[1]["verdicts"]["openai-api"]["state"] == "refuses"
    table = runner.invoke(app, ["history", "io.example/grafana", "--db", db, "--wide"], env={"COLUMNS": "400"})
    assert "refused by Gemini API (parameters), OpenAI API" in table.stdout
    (now,) = json.loads(runner.invoke(app, ["servers", "--db", db, "--format", "json"]).stdout)
    assert now["will_it_load"] == "refused by Gemini API (parameters)"
    site = tmp_path / "site"
    assert runner.invoke(app, ["report", "--db", db, "--out", str(site)]).exit_code == 0
    trends = (site / "trends.html").read_text(encoding="utf-8")
    rows = re.findall(
        r'<tr><td class="num"[^>]*>(\d+)</td>.*?<td class="num" data-label="Client refusals">([\d,–-]+)</td></tr>',
        trends,
        re.S,
    )
    assert [(run, refusals) for run, refusals in rows] == [("3", "1"), ("2", "2"), ("1", "0")]
    [page] = (site / "servers").glob("io-example-grafana*.html")
    assert "OpenAI API: loads" in page.read_text(encoding="utf-8")  # the newest run: fixed


def test_a_hostile_tool_name_is_escaped_in_every_verdict_block(tmp_path: Path) -> None:
    hostile = json.loads(json.dumps(GRAFANA_LIKE))
    hostile["name"] = "evil<img src=x>|\u202etool"
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [hostile]}), encoding="utf-8")
    markdown = check("--tools-file", str(path), "--format", "markdown").stdout
    block = markdown.split("### Will it load?", 1)[1].split("\n\n###", 1)[0]
    assert "<img" not in block and "\u202e" not in block and "| OpenAI API | refuses the whole list |" in block
    text = check("--tools-file", str(path)).stdout
    assert "\u202e" not in text.split("Will it load?", 1)[1]


# --- catalogue 6: the acceptance of issue 43 on the command line --------------------------------------------------


def _listed(tmp_path: Path, tools: list[Any], name: str = "tools.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    return str(path)


def test_a_dotted_name_is_refused_by_both_apis_and_fails_their_gate(tmp_path: Path) -> None:
    dotted = {**CLEAN, "name": "files.read"}
    said = check("--tools-file", _listed(tmp_path, [dotted]))
    assert said.exit_code == 0
    assert "Anthropic API and OpenAI API refuse the whole list." in said.stdout
    assert "Every client loads" not in said.stdout
    assert "'^[a-zA-Z0-9_-]{1,128}$'" in said.stdout  # the API's own error (wrapped to the terminal)
    gate = check("--tools-file", _listed(tmp_path, [dotted]), "--fail-on-reject", "anthropic-api,openai-api")
    assert gate.exit_code == 1
    assert (
        "fathom: gate --fail-on-reject anthropic-api,openai-api failed: Anthropic API refuses the whole list "
        "(MCP101); OpenAI API refuses the whole list (MCP101)"
    ) in gate.stderr
    near = check("--tools-file", _listed(tmp_path, [{**CLEAN, "name": "files_read"}]), "--fail-on-reject", "all")
    assert near.exit_code == 0 and "Every client loads the whole list" in near.stdout


def test_fail_on_reject_all_names_every_client(tmp_path: Path) -> None:
    filesystem = json.loads((REAL / "server-filesystem.json").read_text(encoding="utf-8"))["tools"]
    failed = check("--tools-file", _listed(tmp_path, filesystem), "--fail-on-reject", "all")
    assert failed.exit_code == 1
    gate = next(line for line in failed.stderr.splitlines() if "gate --fail-on-reject" in line)
    assert ",".join(client.key for client in REJECT_CLIENTS) in gate
    assert "Claude Code drops 14 tools (MCP808); Claude Desktop drops 14 tools (MCP808)" in gate
    passed = check("--tools-file", _listed(tmp_path, filesystem), "--fail-on-reject", "openai-api,windsurf,codex")
    assert passed.exit_code == 0


@pytest.mark.parametrize(
    ("count", "refusing"),
    [
        (129, "OpenAI API refuses the whole list.\n  VS Code (Copilot) and Windsurf refuse the whole list."),
        (128, "Windsurf refuses the whole list."),
        (101, "Windsurf refuses the whole list."),
        (100, None),
    ],
)
def test_tool_counts_against_each_clients_limit(tmp_path: Path, count: int, refusing: str | None) -> None:
    tools = [{**CLEAN, "name": f"get_contact_{index}"} for index in range(count)]
    found = verdicts(measure(Toolset.from_tools(tuple(tools))).findings)
    text = "\n".join(render_text(found))
    if refusing is None:
        assert "Every client loads the whole list" in text
    else:
        assert refusing in text
    assert ({verdict.client for verdict in found if verdict.state == "refuses"} >= {"openai-api"}) == (count > 128)


@pytest.mark.parametrize(
    ("dialect", "drops"),
    [
        ("http://json-schema.org/draft-07/schema#", True),
        ("https://json-schema.org/draft/2020-12/schema", False),
        (None, False),
    ],
)
def test_the_filesystem_server_near_misses(dialect: str | None, drops: bool) -> None:
    tools = json.loads((REAL / "server-filesystem.json").read_text(encoding="utf-8"))["tools"]
    for tool in tools:
        tool["outputSchema"].pop("$schema", None)
        if dialect is not None:
            tool["outputSchema"]["$schema"] = dialect
    found = {verdict.client: verdict for verdict in verdicts(measure(Toolset.from_tools(tuple(tools))).findings)}
    assert found["claude-desktop"].phrase() == ("drops 14 tools" if drops else "loads")


def test_server_key_builds_the_clients_names(tmp_path: Path, monkeypatch: Any) -> None:
    """`check --server-key` (or `server-key` in the config): a 52-character tool name fits Cursor but not Claude
    Code under `github` (mcp__github__ + 52 = 65); 51 fits exactly; without a key a file has no built names."""
    long_name = "get_" + "x" * 44 + "_one"
    exact = "get_" + "z" * 43 + "_ok1"
    listed = _listed(tmp_path, [{**CLEAN, "name": long_name}, {**CLEAN, "name": exact}])
    data = json.loads(check("--tools-file", listed, "--server-key", "github", "--format", "json").stdout)
    assert data["verdicts"]["claude-code"]["verdict"] == "drops 1 tool"
    assert data["verdicts"]["claude-code"]["dropped"] == [long_name]
    assert data["verdicts"]["cursor"]["verdict"] == "loads"
    assert "at most 64 characters (mcp__github__" in data["verdicts"]["claude-code"]["reasons"][0]
    unnamed = json.loads(check("--tools-file", listed, "--format", "json").stdout)
    assert unnamed["verdicts"]["claude-code"]["verdict"] == "loads"
    gate = check("--tools-file", listed, "--server-key", "github-enterprise", "--fail-on-reject", "cursor")
    assert gate.exit_code == 1 and "Cursor drops 2 tools (MCP809)" in gate.stderr  # 17 + 51 = 68 > 59
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fathom.toml").write_text('server-key = "github"\nfail-on-reject = "claude-code"\n', encoding="utf-8")
    configured = check("--tools-file", listed)
    assert configured.exit_code == 1 and "Claude Code drops 1 tool (MCP809)" in configured.stderr
    bad = check("--tools-file", listed, "--server-key", " ")
    assert bad.exit_code == 2 and "--server-key must be" in bad.stderr


def test_server_info_name_is_the_default_key(tmp_path: Path) -> None:
    """Against a real server (the official Python SDK's), without --server-key, MCP809 uses serverInfo.name."""
    long_name = "get_" + "x" * 60
    served = tmp_path / "served.json"
    served.write_text(json.dumps([{**CLEAN, "name": long_name}]), encoding="utf-8")
    with sdk_http_server(tools_file=served) as server:
        data = json.loads(check("--url", server.url(), "--format", "json").stdout)
    reasons = data["verdicts"]["claude-code"]["reasons"]
    assert data["verdicts"]["claude-code"]["dropped"] == [long_name]
    assert any("mcp__" in reason and f"__{long_name}" in reason for reason in reasons)
