"""``fathom check`` as a CI gate, against real servers: gates, baseline, config file, badge, --version.

The npm reference ``server-everything`` has only preview warnings (shown with --preview, never gated); the baseline
and config tests run the official-SDK server with a tools file the test edits between two checks (it re-reads
the file on every ``tools/list``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from tests.servers.launch import RunningServer, everything_command, everything_installed, sdk_http_server

runner = CliRunner()

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_forecast",
        "description": "Hourly weather forecast for the next two days at a latitude and longitude, in metric units.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "latitude": {"type": "number", "description": "Latitude in degrees, e.g. 47.37."},
                "longitude": {"type": "number", "description": "Longitude in degrees, e.g. 8.54."},
            },
            "required": ["latitude", "longitude"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "get_alerts",
        "description": "Current severe-weather alerts for one place, given its two-letter ISO code.",
        "inputSchema": {
            "type": "object",
            # the parameter through a $ref: MCP208, a warning of a stable rule
            "properties": {"country": {"$ref": "#/$defs/country"}},
            "required": ["country"],
            "$defs": {"country": {"type": "string", "description": "Two-letter ISO code, e.g. CH."}},
        },
        "annotations": {"readOnlyHint": True},
    },
]
# A write tool with no read-only or destructive hint: MCP112, a warning of a stable rule that costs points (MCP208
# above is a stable warning too, but the score weighs it less than this one).
UNANNOTATED_WRITE = {
    "name": "delete_alert_subscription",
    "description": "Stop the e-mails for one alert subscription. The subscription is removed and cannot be undone.",
    "inputSchema": {
        "type": "object",
        "properties": {"subscription_id": {"type": "string", "description": "The subscription, e.g. sub_42."}},
        "required": ["subscription_id"],
    },
}
ADDED = {
    "name": "get_history",
    "description": "Daily weather of the past ten years at one place: temperature, rain, wind, sunshine hours and "
    "snow depth for each day, with the station that measured it and how far away it stands.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "latitude": {"type": "number", "description": "Latitude in degrees, e.g. 47.37."},
            "longitude": {"type": "number", "description": "Longitude in degrees, e.g. 8.54."},
            "year": {"type": "integer", "description": "The year, e.g. 2021."},
        },
        "required": ["latitude", "longitude", "year"],
    },
    "annotations": {"readOnlyHint": True},
}


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "served.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    return path


@pytest.fixture
def server(tools_file: Path) -> Iterator[RunningServer]:
    with sdk_http_server(tools_file=tools_file) as running:
        yield running


def check(*args: str) -> Any:
    return runner.invoke(app, ["check", *args, "--timeout", "20"])


def gate_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("fathom: gate ")]


# --- gates on a real warning-only server ---------------------------------------------------------------------


@pytest.mark.npm
@pytest.mark.timeout(120)
@pytest.mark.skipif(not everything_installed(), reason="run `npm install` in tests/npm (node_modules missing)")
def test_a_server_whose_warnings_came_from_retired_rules_passes_every_gate() -> None:
    """server-everything's warnings were all from preview rules under catalogue 5 (issue 34: 20 of github's 31
    gated findings were preview); catalogue 6 retired those rules (issue 45), so with MCP808 ignored (its one
    stable finding: a draft-07 `outputSchema`, which Claude Desktop refuses to call) the real server draws no
    finding, with or without --preview, and --fail-on warning passes. Marking preview findings is tested on lists
    that still draw them (tests/cli/test_check.py, tests/report/test_preview_out_of_sight.py)."""
    command = everything_command("stdio")
    stable = json.loads(check("--format", "json", "--", *command).stdout)
    assert {finding["code"] for finding in stable["findings"]} == {"MCP808"}
    default = check("--fail-on", "warning", "--ignore", "MCP808", "--format", "json", "--", *command)
    assert default.exit_code == 0, default.output
    hidden = json.loads(default.stdout)
    assert hidden["findings"] == [] and hidden["summary"]["preview"] == 0
    shown = check("--preview", "--fail-on", "warning", "--ignore", "MCP808", "--format", "json", "--", *command)
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert data["findings"] == [] and data["summary"] == hidden["summary"]
    assert data["gates"] == [{"gate": "--fail-on warning", "passed": True, "message": "no finding at warning or worse"}]
    assert data["score"] == hidden["score"]


def test_min_score_and_max_tokens_say_which_gate_failed_and_by_how_much(
    server: RunningServer, tools_file: Path
) -> None:
    tools_file.write_text(json.dumps([*TOOLS, UNANNOTATED_WRITE]), encoding="utf-8")
    url = server.url("/mcp")
    data = json.loads(check("--url", url, "--format", "json").stdout)
    score = data["score"]["score"]
    assert 0 < score < 100  # MCP112 on delete_alert_subscription costs points
    assert data["score"]["rules"][0]["code"] == "MCP112" and data["score"]["rules"][0]["points"] > 0
    dearest = max(count["tokens"] for count in data["tokens"].values())
    openai = data["tokens"]["openai"]["tokens"]
    result = check("--url", url, "--min-score", str(score + 5), "--max-tokens", str(dearest - 10))
    assert result.exit_code == 1
    lines = gate_lines(result.stderr)
    assert len(lines) == 2
    assert lines[0] == f"fathom: gate --min-score {score + 5:g} failed: score {score:g} is 5.0 below {score + 5:g}"
    assert lines[1].startswith(f"fathom: gate --max-tokens {dearest - 10} failed: {dearest:,} tokens per turn with ")
    assert "10 over the limit" in lines[1]
    per_provider = check("--url", url, "--max-tokens", f"openai={openai}", "--min-score", str(score))
    assert per_provider.exit_code == 0, per_provider.output  # exactly at both limits passes
    over = check("--url", url, "--max-tokens", f"openai={openai - 1}")
    assert over.exit_code == 1 and "with OpenAI: 1 over the limit" in over.stderr
    unknown = check("--url", url, "--max-tokens", "mistral=5")
    assert unknown.exit_code == 2 and "no provider 'mistral'" in unknown.stderr


# --- baseline -----------------------------------------------------------------------------------------------


def test_a_tool_added_since_the_baseline_shows_in_the_delta_and_fails_max_increase(
    server: RunningServer, tools_file: Path, tmp_path: Path
) -> None:
    url = server.url("/mcp")
    baseline = tmp_path / "fathom-baseline.json"
    saved = check("--url", url, "--save-baseline", str(baseline), "--fail-on", "warning")
    assert saved.exit_code == 1  # the gate runs, and the baseline is still written
    document = json.loads(baseline.read_text(encoding="utf-8"))
    assert document["fathom_baseline"] == 1 and [tool["name"] for tool in document["tools"]] == [
        "get_forecast",
        "get_alerts",
    ]
    assert [finding["code"] for finding in document["findings"]] == ["MCP208"]
    # against an unchanged server: nothing new, so the baseline's warning no longer fails --fail-on warning
    same = check("--url", url, "--baseline", str(baseline), "--fail-on", "warning", "--max-increase", "0%")
    assert same.exit_code == 0, same.output
    tools_file.write_text(json.dumps([*TOOLS, ADDED]), encoding="utf-8")
    grown = check("--url", url, "--baseline", str(baseline), "--max-increase", "10%", "--format", "markdown")
    assert grown.exit_code == 1
    lines = gate_lines(grown.stderr)
    assert len(lines) == 1 and lines[0].startswith("fathom: gate --max-increase 10% failed: tokens grew more")
    comment = grown.stdout
    assert "### Since the baseline" in comment and "Tools 2 → 3" in comment
    added_row = next(line for line in comment.splitlines() if line.startswith("| get\\_history | added |"))
    assert all(cell.strip().startswith("+") for cell in added_row.split("|")[3:-1])
    assert "No finding new or fixed." in comment
    as_json = json.loads(check("--url", url, "--baseline", str(baseline), "--format", "json").stdout)
    delta = as_json["baseline"]
    assert [(tool["name"], tool["change"]) for tool in delta["tools"]] == [("get_history", "added")]
    for provider, change in delta["tokens"].items():
        assert change["after"] - change["before"] == change["delta"] > 0
        # the list grew by about the new tool's own cost (a list's rendering is not quite the sum of its tools)
        assert abs(change["delta"] - delta["tools"][0]["after"][provider]) <= 0.1 * change["delta"]
    # a generous budget passes; a new warning on a changed tool is new, the old one is still not
    assert check("--url", url, "--baseline", str(baseline), "--max-increase", "200%").exit_code == 0
    schema = {"type": "object", "properties": {"q": {"$ref": "#/$defs/q"}}, "$defs": {"q": {"type": "string"}}}
    changed = [dict(TOOLS[0], inputSchema=schema), TOOLS[1]]
    tools_file.write_text(json.dumps(changed), encoding="utf-8")
    worse = check("--url", url, "--baseline", str(baseline), "--fail-on", "warning", "--format", "json")
    assert worse.exit_code == 1
    new = json.loads(worse.stdout)["baseline"]["new_findings"]
    assert {(finding["code"], finding["tool"]) for finding in new} == {("MCP208", "get_forecast")}
    fixed = json.loads(worse.stdout)["baseline"]["fixed_findings"]
    assert fixed == []
    assert "1 finding at warning or worse new since the baseline" in worse.stderr


def test_baseline_errors_are_input_errors(tmp_path: Path) -> None:
    example = ("--example",)
    not_ours = tmp_path / "x.json"
    not_ours.write_text("{}", encoding="utf-8")
    result = check(*example, "--baseline", str(not_ours))
    assert result.exit_code == 2 and "not a fathom baseline" in result.stderr
    missing = check(*example, "--max-increase", "10%")
    assert missing.exit_code == 2 and "--baseline" in missing.stderr
    assert check(*example, "--baseline", str(tmp_path / "nope.json")).exit_code == 2


# --- configuration ------------------------------------------------------------------------------------------


PYPROJECT = """\
[project]
name = "my-server"

[tool.fathom]
fail-on = "warning"
format = "json"

[[tool.fathom.per-tool-ignores]]
tool = "get_alerts"
rules = ["MCP208"]
reason = "the definition is shared on purpose"
"""


def test_a_per_tool_ignore_in_pyproject_moves_the_finding_to_ignored(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (project / ".git").mkdir()  # the repository root SARIF locations are relative to
    url = server.url("/mcp")
    before = json.loads(check("--url", url, "--format", "json").stdout)  # no config in the test's folder
    assert [finding["code"] for finding in before["findings"]] == ["MCP208"]
    monkeypatch.chdir(project / "src" / "deep")  # found from here upwards
    result = check("--url", url)
    assert result.exit_code == 0, result.output  # fail-on warning from the file, and nothing left to fail on
    data = json.loads(result.stdout)  # format json from the file
    assert data["findings"] == [] and data["summary"] == {"problems": 0, "warnings": 0, "notes": 0, "preview": 0}
    assert [(item["code"], item["tool"], item["reason"]) for item in data["ignored"]] == [
        ("MCP208", "get_alerts", "the definition is shared on purpose")
    ]
    assert data["score"]["score"] == before["score"]["score"]  # the leaderboard's number: ignores do not change it
    assert data["gates"][0]["gate"] == "--fail-on warning" and data["gates"][0]["passed"]
    text = check("--url", url, "--format", "text")  # flags win over the file
    assert "Ignored (1; still counted in the score)" in text.stdout and "(1 ignored)" in text.stdout
    assert "MCP208 uses-ref · get_alerts: the definition is shared on purpose" in text.stdout
    # a server has no file: its results stand in the config file, by a path relative to the repository
    sarif = json.loads(check("--url", url, "--format", "sarif").stdout)
    (suppressed,) = sarif["runs"][0]["results"]
    assert suppressed["suppressions"] == [{"kind": "external", "justification": "the definition is shared on purpose"}]
    assert suppressed["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "pyproject.toml"},
        "region": {"startLine": PYPROJECT.splitlines().index("[tool.fathom]") + 1},
    }


def test_config_file_rules_and_flags_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fathom.toml").write_text('fail-on = "note"\nmin-score = 99\n', encoding="utf-8")
    assert check("--example").exit_code == 1
    loose = check("--example", "--fail-on", "problem", "--min-score", "0")
    assert loose.exit_code == 1 and len(gate_lines(loose.stderr)) == 1  # problems remain: only that gate fails
    (tmp_path / "fathom.toml").write_text('fail-on = "problme"\n', encoding="utf-8")
    typo = check("--example")
    assert typo.exit_code == 2 and "'problme' is not one of problem, warning, note" in typo.stderr
    (tmp_path / "fathom.toml").write_text('fail_on = "note"\n', encoding="utf-8")
    unknown = check("--example")
    assert unknown.exit_code == 2 and "unknown key 'fail_on'" in unknown.stderr
    (tmp_path / "fathom.toml").write_text('[[per-tool-ignores]]\ntool = "check_stock"\n', encoding="utf-8")
    reasonless = check("--example")
    assert reasonless.exit_code == 2 and "needs a reason" in reasonless.stderr
    elsewhere = tmp_path / "ci" / "fathom-ci.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text('select = ["MCP2"]\nmax-tokens = {openai = 1}\n', encoding="utf-8")
    named = check("--example", "--config", str(elsewhere), "--format", "json")
    assert named.exit_code == 1 and "--max-tokens openai=1 failed" in named.stderr
    data = json.loads(named.stdout)
    assert {finding["code"][:4] for finding in data["findings"]} == {"MCP2"}
    assert {item["reason"] for item in data["ignored"]} == {"rule not selected"}
    empty = tmp_path / "ci" / "fathom.toml"
    empty.write_text("", encoding="utf-8")
    every = json.loads(check("--example", "--config", str(empty), "--format", "json").stdout)
    assert every["ignored"] == [] and len(data["findings"]) + len(data["ignored"]) == len(every["findings"])
    assert data["score"] == every["score"]


# --- badge, version, bad URL ------------------------------------------------------------------------------


def test_badge_writes_an_svg_and_a_shields_endpoint(tmp_path: Path) -> None:
    badge = tmp_path / "fathom.svg"
    result = check("--example", "--badge", str(badge), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    endpoint = json.loads((tmp_path / "fathom.json").read_text(encoding="utf-8"))
    score = data["score"]["score"]
    assert endpoint == {
        "schemaVersion": 1,
        "label": "fathom",
        "message": f"{score:g} · {max(c['tokens'] for c in data['tokens'].values()) / 1000:.1f}k tokens",
        "color": "red" if score < 40 else "orange" if score < 60 else "yellow",
    }
    svg = ET.fromstring(badge.read_text(encoding="utf-8"))
    texts = [element.text for element in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == ["fathom", endpoint["message"]]


def test_version_and_a_url_that_is_not_one() -> None:
    from scanner import __version__

    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.strip() == f"fathom {__version__}"
    for bad in ("notaurl", "ftp://example.org/mcp", "http://"):
        result = check("--url", bad)
        assert result.exit_code == 2, bad
        assert "is not an http:// or https:// URL" in result.stderr


def test_the_score_and_its_breakdown_are_in_every_format() -> None:
    data = json.loads(check("--example", "--format", "json").stdout)
    score = data["score"]
    assert score["version"] and 0 < score["score"] < 100 and score["rules"]
    dearest = score["rules"][0]
    text = check("--example").stdout
    assert f"Score {score['score']:.1f} / 100" in text
    assert f"{-dearest['points']:.1f}  {dearest['code']} {dearest['rule']}" in text
    markdown = check("--example", "--format", "markdown").stdout
    assert f"**Score:** {score['score']:.1f} / 100" in markdown
    assert f"| {dearest['code']} {dearest['rule']} | {dearest['findings']} | {-dearest['points']:.1f} |" in markdown
    sarif = json.loads(check("--example", "--format", "sarif").stdout)
    assert sarif["runs"][0]["properties"]["score"] == score


def test_as_provider_takes_no_gate_baseline_or_badge(tmp_path: Path) -> None:
    for extra in (
        ["--fail-on", "note"],
        ["--badge", str(tmp_path / "b.svg")],
        ["--save-baseline", str(tmp_path / "b")],
    ):
        result = check("--example", "--as", "openai", *extra)
        assert result.exit_code == 2 and "--as prints only the provider's JSON" in result.stderr
    assert not list(tmp_path.iterdir())


def test_as_provider_in_a_project_with_gates_in_its_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fathom.toml").write_text('fail-on = "note"\nbaseline = "missing.json"\n', encoding="utf-8")
    result = check("--example", "--as", "openai")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["type"] == "function"


@pytest.mark.parametrize(
    "gate",
    [
        ["--strict"],
        ["--fail-on", "note"],
        ["--max-tokens", "100000"],
        ["--max-tokens", "openai=100000"],
        ["--fail-on-reject", "claude-code"],
        ["--min-score", "0"],
    ],
)
@pytest.mark.parametrize("document", ["[]", '{"tools": []}'])
def test_an_empty_list_fails_every_gate(tmp_path: Path, gate: list[str], document: str) -> None:
    """Issue 46: ``[]`` (or a server whose build broke and lists nothing) passed ``--strict`` and ``--fail-on``;
    docs/ci.md says such a list never passes. Every gate fails on it, and says why."""
    empty = tmp_path / "tools.json"
    empty.write_text(document, encoding="utf-8")

    result = runner.invoke(app, ["check", "-f", str(empty), *gate])

    assert result.exit_code == 1, (gate, result.output)
    assert "the list has no tools" in result.stderr, result.stderr


def test_an_empty_list_fails_against_a_baseline(tmp_path: Path) -> None:
    full, empty, saved = tmp_path / "full.json", tmp_path / "empty.json", tmp_path / "baseline.json"
    full.write_text(json.dumps(TOOLS), encoding="utf-8")
    empty.write_text("[]", encoding="utf-8")
    assert runner.invoke(app, ["check", "-f", str(full), "--save-baseline", str(saved)]).exit_code == 0

    for gate in (["--max-increase", "10%"], ["--fail-on-new", "note"]):
        result = runner.invoke(app, ["check", "-f", str(empty), "--baseline", str(saved), *gate])
        assert result.exit_code == 1, (gate, result.output)
        assert "the list has no tools" in result.stderr, result.stderr


def test_badge_and_write_say_what_they_wrote(tmp_path: Path) -> None:
    """Issue 46: --badge and --write wrote their files and said nothing of them."""
    badge, sarif = tmp_path / "fathom.svg", tmp_path / "fathom.sarif"

    result = runner.invoke(app, ["check", "--example", "--badge", str(badge), "--write", f"sarif={sarif}"])

    assert result.exit_code == 0, result.output
    endpoint = json.loads((tmp_path / "fathom.json").read_text(encoding="utf-8"))
    assert f"fathom: wrote the check as sarif to {sarif}\n" in result.stderr
    said = f"fathom: wrote the badge {badge} and its endpoint {tmp_path / 'fathom.json'} ({endpoint['message']})\n"
    assert said in result.stderr
    assert sarif.stat().st_size > 1000 and "<svg" in badge.read_text(encoding="utf-8")
    quiet = runner.invoke(app, ["--quiet", "check", "--example", "--badge", str(badge)])
    assert quiet.exit_code == 0 and "wrote" not in quiet.stderr


def test_refreshing_a_baseline_in_place_says_how(tmp_path: Path) -> None:
    """Issue 46: `--baseline b.json --save-baseline b.json` was refused without saying how to refresh it."""
    saved = tmp_path / "b.json"
    assert runner.invoke(app, ["check", "--example", "--save-baseline", str(saved)]).exit_code == 0

    result = runner.invoke(app, ["check", "--example", "--baseline", str(saved), "--save-baseline", str(saved)])

    assert result.exit_code == 2
    assert "to refresh the baseline, run fathom check ... --save-baseline" in result.stderr
    assert "without --baseline" in result.stderr
