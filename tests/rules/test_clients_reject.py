"""What clients reject (MCP801-MCP807): every shape the issue names fires, every near miss stays silent, each
finding names the clients, the effect, the pointer and the client's own error; google-genai's offline Schema model
agrees with the Gemini rules on the fixtures and on the real lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scanner.measure.tokenizer import count
from scanner.models import Finding
from scanner.rules import RULES, RuleContext, run_rules
from scanner.rules.clients_reject import gemini_cli_untyped

REAL = Path(__file__).parent.parent / "fixtures" / "real"
CTX = RuleContext(count_tokens=count)
STR = {"type": "string", "description": "A value."}


def _tool(schema: Any, name: str = "probe") -> dict[str, Any]:
    return {"name": name, "description": "Finds things for the caller and returns them.", "inputSchema": schema}


def _obj(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **extra}


def _hits(code: str, schema: Any) -> list[Finding]:
    return [finding for finding in run_rules([_tool(schema)], CTX, select=[code]) if finding.code == code]


ROOT_COMBINATORS = {
    "anyOf": _obj({"id": STR, "path": STR}, anyOf=[{"required": ["id"]}, {"required": ["path"]}]),
    "oneOf": {"oneOf": [_obj({"id": STR}), _obj({"path": STR})]},
    "allOf": _obj({"id": STR}, allOf=[{"required": ["id"]}]),
}


@pytest.mark.parametrize("keyword", sorted(ROOT_COMBINATORS))
def test_mcp801_root_combinator(keyword: str) -> None:
    (finding,) = _hits("MCP801", ROOT_COMBINATORS[keyword])
    assert finding.pointer == f"/inputSchema/{keyword}"
    assert f"`{keyword}` at the root" in finding.message
    assert "Anthropic API: whole request refused" in finding.message
    assert "input_schema does not support oneOf, allOf, or anyOf at the top level" in finding.message
    clients = {entry["client"]: entry["effect"] for entry in finding.details["clients"]}
    assert clients == {"anthropic-api": "refuses", "claude-code": "drops"}  # Claude Code since 2026-08


@pytest.mark.parametrize(
    "schema",
    [
        _obj({"target": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}),
        _obj({"mode": {"oneOf": [{"const": "a"}, {"const": "b"}]}, "x": {"allOf": [STR]}}),
        _obj({"id": STR}, **{"if": {"required": ["id"]}, "then": {"not": {"anyOf": [{"required": ["x"]}]}}}),
    ],
)
def test_mcp801_near_misses(schema: Any) -> None:
    assert _hits("MCP801", schema) == []


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("ids[]", "'[' ']'"),
        ("Account Number", "' '"),
        ("$.xgafv", "'$'"),
        ("naïve", "non-ASCII"),
        ("名前", "non-ASCII"),
        ("user@domain", "'@'"),
        ("k" * 65, "65 characters, over 64"),
        ("", "empty"),
    ],
)
def test_mcp802_root_key(key: str, why: str) -> None:
    (finding,) = _hits("MCP802", _obj({key: STR, "ok_key": STR}))
    assert finding.details["keys"] == [key] and finding.details["count"] == 1
    assert finding.pointer == "/inputSchema/properties/" + key
    assert why in finding.message
    assert "Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'" in finding.message
    clients = {entry["client"]: entry["effect"] for entry in finding.details["clients"]}
    assert clients == {"anthropic-api": "refuses", "claude-code": "drops"}


@pytest.mark.parametrize(
    "schema",
    [
        _obj({"filter": _obj({"ids[]": STR, "Account Number": STR, "$.x": STR, "k" * 70: STR})}),
        _obj({"rows": {"type": "array", "items": _obj({"naïve": STR})}}),
        _obj({"k" * 64: STR, "a.b-c_d": STR, "X9": STR}),
    ],
)
def test_mcp802_near_misses(schema: Any) -> None:
    assert _hits("MCP802", schema) == []


ARRAY = {"type": "array", "description": "Values."}
ARRAYS = {
    "root property": (_obj({"tags": ARRAY}), "/inputSchema/properties/tags", "('properties', 'tags')"),
    "nested": (
        _obj({"filter": _obj({"tags": ARRAY})}),
        "/inputSchema/properties/filter/properties/tags",
        "('properties', 'filter', 'properties', 'tags')",
    ),
    "in items": (
        _obj({"rows": {"type": "array", "items": _obj({"cells": ARRAY})}}),
        "/inputSchema/properties/rows/items/properties/cells",
        "('properties', 'rows', 'items', 'properties', 'cells')",
    ),
    "anyOf branch": (
        _obj({"v": {"anyOf": [{"type": "string"}, {"type": "array"}]}}),
        "/inputSchema/properties/v/anyOf/1",
        "('properties', 'v', 'anyOf', '1')",
    ),
    "oneOf branch": (
        _obj({"v": {"oneOf": [{"type": "array"}, {"type": "null"}]}}),
        "/inputSchema/properties/v/oneOf/0",
        "('properties', 'v', 'oneOf', '0')",
    ),
    "reached $defs": (
        _obj({"q": {"$ref": "#/$defs/Q"}}, **{"$defs": {"Q": _obj({"terms": ARRAY})}}),
        "/inputSchema/$defs/Q/properties/terms",
        "('$defs', 'Q', 'properties', 'terms')",
    ),
    "type list": (
        _obj({"value": {"type": ["string", "number", "array", "null"]}}),
        "/inputSchema/properties/value",
        "('properties', 'value')",
    ),
}


@pytest.mark.parametrize("shape", sorted(ARRAYS))
def test_mcp803_array_without_items(shape: str) -> None:
    schema, where, context = ARRAYS[shape]
    (finding,) = _hits("MCP803", schema)
    assert finding.pointer == where and finding.details["count"] == 1
    errors = {entry["client"]: (entry["effect"], entry["error"]) for entry in finding.details["clients"]}
    assert errors["openai-api"] == (
        "refuses",
        f"Invalid schema for function 'probe': In context={context}, array schema missing items.",
    )
    vscode = "Failed to validate tool probe: Error: tool parameters array type must have items"
    assert errors["vscode"] == ("drops", vscode)
    assert finding.message.endswith(".") and "OpenAI API: whole request refused" in finding.message


def test_mcp803_one_finding_per_tool_listing_every_array() -> None:
    (finding,) = _hits("MCP803", _obj({"a": ARRAY, "b": _obj({"c": ARRAY})}))
    assert finding.details["count"] == 2 and finding.details["parameters"] == ["a", "b.c"]
    assert "(and 1 more)" in finding.message


@pytest.mark.parametrize(
    "schema",
    [
        _obj({"tags": {"type": "array", "items": {"type": "string"}}}),
        _obj({"value": {"type": ["string", "array", "null"], "items": {"type": "string"}}}),
        _obj({"v": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]}}),
        _obj({"q": {"$ref": "#/$defs/Q"}}, **{"$defs": {"Q": _obj({"terms": {"type": "array", "items": {}}})}}),
        _obj({"tuple": {"type": "array", "items": [{"type": "string"}]}}),
    ],
)
def test_mcp803_near_misses(schema: Any) -> None:
    assert _hits("MCP803", schema) == []


def test_mcp810_counts_the_list_per_client() -> None:
    """129 tools: OpenAI, VS Code and Windsurf refuse; 128 is OpenAI's near miss, 100 Windsurf's; MCP804 (retired
    into MCP810) never runs."""
    tools = [_tool(_obj({}), f"tool_{index}") for index in range(513)]

    def over(count: int) -> dict[str, str]:
        found = run_rules(tools[:count], CTX, select=["MCP810", "MCP804"])
        assert all(finding.code == "MCP810" and finding.tool is None for finding in found)
        return {entry["client"]: entry["error"] for finding in found for entry in finding.details["clients"]}

    said = over(129)
    assert set(said) == {"openai-api", "vscode", "windsurf"}
    assert "maximum length 128, but got an array with length 129 instead" in said["openai-api"]
    assert said["windsurf"] == "adding this instance with 129 enabled tools would exceed max limit of 100."
    assert set(over(128)) == {"windsurf"}
    assert set(over(101)) == {"windsurf"}
    assert over(100) == {}
    assert set(over(513)) == {"openai-api", "vscode", "windsurf", "gemini-api", "gemini-cli"}
    assert set(over(512)) == {"openai-api", "vscode", "windsurf"}
    assert RULES["MCP804"].status == "removed" and RULES["MCP804"].check is None


@pytest.mark.parametrize(
    ("dialect", "fires"),
    [
        ("http://json-schema.org/draft-07/schema#", True),
        ("http://json-schema.org/draft-04/schema#", True),
        ("https://json-schema.org/draft/2019-09/schema", True),
        ("http://json-schema.org/draft/2020-12/schema", True),  # http: not the meta-schema's id
        ("https://json-schema.org/draft/2020-12/schema", False),
        ("https://json-schema.org/draft/2020-12/schema#", False),
        (None, False),
    ],
)
def test_mcp808_output_schema_dialect(dialect: str | None, fires: bool) -> None:
    out: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    if dialect is not None:
        out["$schema"] = dialect
    tool = {**_tool(_obj({})), "outputSchema": out}
    found = run_rules([tool], CTX, select=["MCP808"])
    assert bool(found) == fires
    if fires:
        (finding,) = found
        errors = {entry["client"]: (entry["effect"], entry["error"]) for entry in finding.details["clients"]}
        assert set(errors) == {"claude-desktop", "claude-code"}
        assert errors["claude-desktop"] == (
            "drops",
            f"Tool 'probe' has an invalid outputSchema: JSON Schema declares an unsupported dialect (\"$schema\": "
            f'"{dialect}"). The default validator supports JSON Schema 2020-12 only',
        )
    # the same dialect in the input schema is accepted by the same clients
    assert (
        run_rules([_tool({**_obj({}), "$schema": "http://json-schema.org/draft-07/schema#"})], CTX, select=["MCP808"])
        == []
    )


@pytest.mark.parametrize(
    ("key", "length", "clients"),
    [
        ("github", 51, set()),  # mcp__github__ + 51 = 64: fits Claude Code exactly
        ("github", 52, {"claude-code"}),
        ("github", 53, {"claude-code"}),  # 6 + 53 = 59: fits Cursor exactly
        ("github", 54, {"claude-code", "cursor"}),
        ("g", 59, {"claude-code", "cursor"}),  # ComposioHQ/composio#2788: "(60) exceeds 60 characters"
        ("", 70, set()),  # no server key known: the rule does not run
    ],
)
def test_mcp809_built_names(key: str, length: int, clients: set[str]) -> None:
    from dataclasses import replace

    name = "n" * length
    found = run_rules([_tool(_obj({}), name)], replace(CTX, server_key=key), select=["MCP809"])
    assert {entry["client"] for finding in found for entry in finding.details["clients"]} == clients
    if clients:
        (finding,) = found
        by_client = {entry["client"]: entry for entry in finding.details["names"]}
        assert by_client["claude-code"]["name"] == f"mcp__{key}__{name}"
        assert by_client["claude-code"]["headroom"] == 64 - len(f"mcp__{key}__{name}")


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (_obj({"value": {"description": "Anything."}}), ("inputSchema", "properties", "value")),
        (_obj({"t": {"$ref": "#/$defs/T"}}, **{"$defs": {"T": STR}}), ("inputSchema", "properties", "t")),
        (_obj({"v": {"anyOf": [STR, {}]}}), ("inputSchema", "properties", "v", "anyOf", "1")),
        (_obj({"v": {"type": "array", "items": {}}}), ("inputSchema", "properties", "v", "items")),
        ({"properties": {}}, ("inputSchema",)),
    ],
)
def test_gemini_cli_check_finds_the_untyped_schema(schema: Any, where: tuple[str, ...]) -> None:
    assert gemini_cli_untyped(schema) == where


@pytest.mark.parametrize(
    "schema",
    [
        _obj({"v": {"anyOf": [STR, {"type": "null"}]}, "n": {"type": ["string", "null"]}}),
        _obj({"v": {"type": "array", "items": False}, "o": {"type": "object", "properties": {"x": {"type": "x"}}}}),
        _obj({"deep": {"description": "not looked at: the parent has no type object"}}, type="string"),
    ],
)
def test_gemini_cli_check_accepts(schema: Any) -> None:
    assert gemini_cli_untyped(schema) is None


def test_preview_rules_are_marked_preview() -> None:
    assert [code for code in RULES if code.startswith("MCP8") and RULES[code].status == "stable"] == [
        "MCP801",
        "MCP802",
        "MCP803",
        "MCP805",  # catalogue 6: on the paths Gemini keeps
        "MCP808",
        "MCP809",
        "MCP810",
    ]
    assert RULES["MCP804"].status == "removed" and RULES["MCP806"].status == "preview"
    assert RULES["MCP807"].status == "removed"  # catalogue 6: no current Gemini CLI skips the shape
    for code in ("MCP801", "MCP802", "MCP803", "MCP805", "MCP806", "MCP807", "MCP808", "MCP809", "MCP810"):
        assert "Sources" in RULES[code].doc or "Source" in RULES[code].doc or "source" in RULES[code].doc, code


# --- google-genai as an oracle for the Gemini `parameters` rules -----------------------------------------------


def _genai_refuses(schema: Any) -> bool:
    """Whether google-genai's offline model of Gemini's `parameters` Schema refuses the schema's type and enum
    values (other keywords stripped first: the SDK also refuses every keyword outside the subset, which is not
    what MCP805/MCP806 judge)."""
    types = pytest.importorskip("google.genai.types")

    def keep(node: Any) -> Any:
        if isinstance(node, list):
            return [keep(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("type", "enum", "description", "nullable"):
                out[key] = value
            elif key == "properties" and isinstance(value, dict):
                out[key] = {name: keep(sub) for name, sub in value.items()}
            elif key in ("items",) and isinstance(value, dict):
                out[key] = keep(value)
            elif key == "anyOf" and isinstance(value, list):
                out["any_of"] = [keep(sub) for sub in value]
        return out

    try:
        types.Schema.model_validate(keep(schema))
    except Exception:
        return True
    return False


def _fixture_tools(code: str, kind: str) -> list[dict[str, Any]]:
    path = Path(__file__).parent.parent / "fixtures" / "rules" / code / f"{kind}.json"
    return list(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("code", ["MCP805", "MCP806"])
def test_google_genai_agrees_on_the_fixtures(code: str) -> None:
    for kind, want in (("positive", True), ("negative", False)):
        for tool in _fixture_tools(code, kind):
            assert _genai_refuses(tool["inputSchema"]) is want, (code, kind, tool["name"])


def test_google_genai_agrees_on_the_real_lists() -> None:
    """Every real tool google-genai's Schema refuses (type or enum) is flagged by MCP805 or MCP806, and the other
    way round: no disagreement on the saved lists (the schemas' $defs are not reached by `parameters`, which
    keeps no `$ref`; a tool whose only type list sits in a definition is the one known difference)."""
    disagree = []
    for path in sorted(REAL.glob("*.json")):
        if path.name in ("labels.json", "manifest.json"):
            continue
        tools = json.loads(path.read_text(encoding="utf-8")).get("tools") or []
        flagged = {
            finding.tool
            for finding in run_rules(tools, CTX, select=["MCP805", "MCP806"])
            if not finding.pointer or "/$defs/" not in finding.pointer
        }
        for tool in tools:
            refused = isinstance(tool.get("inputSchema"), dict) and _genai_refuses(tool["inputSchema"])
            if refused != (tool.get("name") in flagged):
                disagree.append((path.stem, tool.get("name"), refused))
    assert disagree == []


def test_effects_table_is_what_the_findings_say() -> None:
    """EFFECTS (what a verdict uses for a finding stored without details) names the same clients and effects as
    each rule's positive fixture's findings."""
    from scanner.rules.clients_reject import EFFECTS

    for code, effects in EFFECTS.items():
        for finding in run_rules(_fixture_tools(code, "positive"), CTX, select=[code]):
            said = tuple((entry["client"], entry["effect"]) for entry in finding.details["clients"])
            assert said == effects, code


def test_gemini_cli_cuts_names_as_its_issue_quotes() -> None:
    """google-gemini/gemini-cli#28970: both Confluence tools become the one name the issue quotes, the first is
    overwritten; a name of 63 characters or fewer is kept whole."""
    from scanner.rules.clients_limits import gemini_cli_name

    key = "atlassian-rovo-mcp-server-cloud"
    quoted = "mcp_atlassian-rovo-mcp-server-...eWithAttachmentsAndPermissions"
    assert gemini_cli_name(key, "createConfluencePageWithAttachmentsAndPermissions") == quoted
    assert gemini_cli_name(key, "deleteConfluencePageWithAttachmentsAndPermissions") == quoted
    assert gemini_cli_name("g", "x" * 57) == "mcp_g_" + "x" * 57  # 63: whole
    assert gemini_cli_name("my server", "a.b") == "mcp_my_server_a.b"
