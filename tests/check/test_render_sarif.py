"""``fathom check --format sarif`` is valid SARIF 2.1.0 that code scanning can place.

Validated against the OASIS SARIF 2.1.0 JSON schema (``tests/fixtures/sarif/sarif-schema-2.1.0.json``, from
oasis-tcs/sarif-spec ``sarif-2.1/schema``): a tools file in a repository, a server that answers, one that cannot
be reached, and ignored findings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
from typer.testing import CliRunner

from scanner.check.locate import locate_tools
from scanner.cli import app
from tests.servers.launch import RunningServer, free_port

runner = CliRunner()
SCHEMA = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
TOOLS = [
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
        "name": "lookup",
        "description": "Look up.\n\nArgs:\n    ctx: MCP context",
        "inputSchema": {
            "type": "object",
            "properties": {"key": {"description": "The key to look up, e.g. user:42."}, "when": {"type": "string"}},
            "required": ["key", "missing"],
        },
    },
]


def valid(text: str) -> dict[str, Any]:
    log = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log


def sarif(*args: str) -> Any:
    return runner.invoke(app, ["check", *args, "--format", "sarif", "--timeout", "10"])


def test_the_schema_fixture_is_the_sarif_2_1_0_schema() -> None:
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    assert SCHEMA["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    with pytest.raises(jsonschema.ValidationError):  # the validator does reject a broken log
        valid(json.dumps({"version": "2.1.0", "runs": [{"results": []}]}))


def test_a_tools_file_is_placed_by_repo_relative_uri_line_and_pointer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "server").mkdir()
    path = repo / "server" / "tools.json"
    text = json.dumps({"tools": TOOLS}, indent=2)
    path.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    monkeypatch.chdir(tmp_path)  # outside the repository: the URI is still relative to its root
    result = sarif("--tools-file", str(path), "--preview")  # MCP218 (placed below) is a preview rule
    assert result.exit_code == 0, result.output
    run = valid(result.stdout)["runs"][0]
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert run["properties"]["score"]["score"] < 100
    placed = {}
    for item in run["results"]:
        (location,) = item["locations"]
        physical, (logical,) = location["physicalLocation"], location["logicalLocations"]
        assert physical["artifactLocation"]["uri"] == "server/tools.json"
        placed[(item["ruleId"], logical["fullyQualifiedName"])] = physical["region"]["startLine"]
        assert logical["name"] == "lookup"
    assert placed[("MCP204", "/tools/1/inputSchema/required")] == next(
        number for number, line in enumerate(lines, 1) if '"required": [' in line and number > 20
    )
    assert placed[("MCP205", "/tools/1/inputSchema/properties/key")] == next(
        number for number, line in enumerate(lines, 1) if '"key": {' in line
    )
    assert placed[("MCP218", "/tools/1/description")] == next(
        number for number, line in enumerate(lines, 1) if '"Look up.' in line
    )
    statuses = {item["ruleId"]: item["properties"]["status"] for item in run["results"]}
    assert statuses["MCP218"] == "preview" and statuses["MCP204"] == "stable"
    rules = {rule["id"]: rule["properties"] for rule in run["tool"]["driver"]["rules"]}
    assert rules["MCP218"]["status"] == "preview" and rules["MCP218"]["precision"] is None  # never measured
    assert rules["MCP204"]["status"] == "stable"
    default = valid(sarif("--tools-file", str(path)).stdout)["runs"][0]["results"]
    assert "MCP218" not in {item["ruleId"] for item in default}  # preview: only with --preview


def test_ignored_findings_are_suppressed_results(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    result = sarif("--tools-file", str(path), "--ignore", "MCP205")
    run = valid(result.stdout)["runs"][0]
    suppressed = [item for item in run["results"] if "suppressions" in item]
    assert [item["ruleId"] for item in suppressed] == ["MCP205"]
    assert suppressed[0]["suppressions"] == [{"kind": "external", "justification": "rule ignored"}]
    assert len(run["results"]) == len(valid(sarif("--tools-file", str(path)).stdout)["runs"][0]["results"])


def test_a_server_that_answers_is_valid_sarif(sdk_http: RunningServer) -> None:
    result = sarif("--url", sdk_http.url("/mcp"))
    assert result.exit_code == 0, result.output
    run = valid(result.stdout)["runs"][0]
    assert run["properties"]["source"] == sdk_http.url("/mcp")
    for item in run["results"]:  # no file to stand in: never the server URL as an artifact
        assert "physicalLocation" not in item["locations"][0]
        assert item["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].startswith("/tools/")


@pytest.mark.parametrize("where", ["closed", "/error500"])
def test_a_server_that_cannot_be_reached_still_gives_valid_sarif(hostile_http: RunningServer, where: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp" if where == "closed" else hostile_http.url(where)
    result = sarif("--url", url)
    assert result.exit_code == 3
    run = valid(result.stdout)["runs"][0]
    assert run["results"] == []
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and url in note["message"]["text"]
    assert note["descriptor"]["id"] == ("connect_error" if where == "closed" else "http_error")


@pytest.mark.parametrize(
    ("text", "pointer", "lines"),
    [
        ('[\n {"name": "a"},\n {"name": "b"}\n]', "", (2, 3)),
        ('{"tools": "x", "tools": [\n\n {}]}', "/tools", (3,)),  # a repeated key: the last one, as parsed
        ('{"jsonrpc": "2.0", "id": 1,\n "result": {"tools": [{},\n{}]}}', "/result/tools", (2, 3)),
        ("\ufeff[{}]", "", (1,)),
    ],
)
def test_locate_tools_shapes(text: str, pointer: str, lines: tuple[int, ...]) -> None:
    found = locate_tools(text)
    assert found is not None and found.pointer == pointer
    assert tuple(found.line(index) for index in range(len(lines))) == lines


@pytest.mark.parametrize("text", ['{"result": 3}', "[1, 2", '{"other": []}', "not json", "3"])
def test_locate_tools_gives_up_quietly(text: str) -> None:
    assert locate_tools(text) is None


def test_a_pointer_that_is_not_there_falls_back_to_the_deepest_part_found() -> None:
    text = '[\n{"name": "a",\n "inputSchema": {\n  "properties": {"a/b": {},\n "x~y": 1}}}]'
    found = locate_tools(text)
    assert found is not None
    assert found.line(0, "/inputSchema/properties/a~1b") == 4
    assert found.line(0, "/inputSchema/properties/x~0y") == 5
    assert found.line(0, "/inputSchema/nothing/here") == 3
    assert found.line(7, "/inputSchema") == 1


def test_a_preview_result_says_so_in_its_message_and_never_reads_as_an_error(tmp_path: Path) -> None:
    """Issue 46: preview results carried their rule's plain level (an error in a code-scanning list) and nothing in
    the message said they are preview (never scored or gated)."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}, indent=2), encoding="utf-8")
    run = valid(sarif("--tools-file", str(path), "--preview").stdout)["runs"][0]
    preview = [item for item in run["results"] if item["properties"]["status"] == "preview"]
    stable = [item for item in run["results"] if item["properties"]["status"] == "stable"]
    assert preview and stable
    for item in preview:
        assert item["level"] == "note" and item["message"]["text"].startswith("[preview] "), item
    levels = {"problem": "error", "warning": "warning", "note": "note"}
    rules = {rule["id"]: rule["properties"]["severity"] for rule in run["tool"]["driver"]["rules"]}
    for item in stable:
        assert item["level"] == levels[rules[item["ruleId"]]] and not item["message"]["text"].startswith("[")


RULES_URL = "https://github.com/acme/fathom/blob/v0.1.0/docs/rules.md"


def _github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_rules_carry_no_help_uri_without_a_published_address(tmp_path: Path) -> None:
    """Issue 46: Fathom has no published address of its own, so no helpUri is invented."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    result = sarif("--tools-file", str(path))
    rules = valid(result.stdout)["runs"][0]["tool"]["driver"]["rules"]
    assert rules and all("helpUri" not in rule and "markdown" not in rule["help"] for rule in rules)


def test_every_rule_links_its_section_of_the_published_rules_md(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: with --rules-url (or rules-url in the config) every rule's helpUri is an absolute URI that lands on
    its own section of docs/rules.md (the anchor GitHub gives its heading), and code scanning, which shows
    help.markdown and not helpUri, gets the link there too."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    docs = (Path(__file__).parents[2] / "docs" / "rules.md").read_text(encoding="utf-8")
    headings = {_github_anchor(line[4:]) for line in docs.splitlines() if line.startswith("### ")}
    result = sarif("--tools-file", str(path), "--rules-url", RULES_URL)
    assert result.exit_code == 0, result.output
    run = valid(result.stdout)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert len(rules) == len(headings) > 50
    for rule in rules:
        uri = urlsplit(rule["helpUri"])
        assert uri.scheme == "https" and uri.netloc == "github.com", rule["helpUri"]  # absolute (SARIF 2.1.0)
        assert rule["helpUri"] == f"{RULES_URL}#{uri.fragment}" and uri.fragment in headings, rule["helpUri"]
        assert _github_anchor(rule["id"]) == uri.fragment
        assert rule["help"]["markdown"].endswith(f"]({rule['helpUri']})") and rule["help"]["text"]
    # the same from the config file; a flag given wins over it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fathom.toml").write_text('rules-url = "https://docs.example.org/fathom/rules.md"\n', encoding="utf-8")
    rules = valid(sarif("--tools-file", str(path)).stdout)["runs"][0]["tool"]["driver"]["rules"]
    assert rules[0]["helpUri"] == f"https://docs.example.org/fathom/rules.md#{rules[0]['id'].lower()}"
    rules = valid(sarif("--tools-file", str(path), "--rules-url", RULES_URL).stdout)["runs"][0]["tool"]["driver"]
    assert rules["rules"][0]["helpUri"].startswith(RULES_URL + "#")


@pytest.mark.parametrize(
    "url",
    [
        "docs/rules.md",
        "/docs/rules.md",
        "ftp://example.org/rules.md",
        "https://example.org/rules.md#mcp101",
        "https://example.org/a b.md",
        "https://example.org/rules.md)[x](javascript:alert(1)",
        "https://",
    ],
)
def test_a_rules_url_that_is_not_an_absolute_address_is_refused(tmp_path: Path, url: str) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    result = sarif("--tools-file", str(path), "--rules-url", url)
    assert result.exit_code == 2
    assert "--rules-url must be the absolute http(s) address of docs/rules.md" in result.stderr
    (tmp_path / "fathom.toml").write_text(f"rules-url = {json.dumps(url)}\n", encoding="utf-8")
    result = sarif("--tools-file", str(path), "--config", str(tmp_path / "fathom.toml"))
    assert result.exit_code == 2 and "rules-url must be the absolute http(s) address" in result.stderr
