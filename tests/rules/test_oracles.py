"""The clients' own validators as oracles (catalogue 6): where a client validates with a public library, that
library runs here with node on the rule fixtures, on shapes from the public reports and on every saved real list,
and Fathom agrees with it, or the difference is named in the rule's doc.

- MCP808 output-schema-dialect and Ajv's 2020-12 validator (npm ``ajv``, ``ajv/dist/2020``): Ajv refuses to compile
  an ``outputSchema`` exactly when MCP808 fires ("no schema with key or ref" naming the ``$schema``).
- A list that is not valid MCP and the MCP TypeScript SDK's ``ListToolsResultSchema`` (npm
  ``@modelcontextprotocol/sdk``, what Claude Code, Claude Desktop and Cursor validate ``tools/list`` with): the
  verdicts say those clients refuse the whole list exactly when the SDK's schema rejects it, and name the tools
  the SDK's issues point at.

Both packages are pinned in tests/npm (package.json and its lockfile; ``npm ci`` in .ci/run).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scanner.measure.toollist import measure
from scanner.measure.verdicts import verdicts
from scanner.models import Toolset
from scanner.rules import RuleContext, run_rules
from scanner.rules.clients_reject import SDK_CLIENTS, sdk_list_problem
from scanner.rules.tools import ToolInfo

ROOT = Path(__file__).parent.parent
NPM = ROOT / "npm"
REAL = ROOT / "fixtures" / "real"
RULE_FIXTURES = ROOT / "fixtures" / "rules"
ORACLES = NPM / "oracles.mjs"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (NPM / "node_modules" / "ajv").is_dir(),
    reason="node and tests/npm's packages (npm ci in tests/npm) are needed",
)

OBJ = {"type": "object", "properties": {"q": {"type": "string", "description": "A query."}}}


def _tool(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "description": "Finds things and returns them.", "inputSchema": OBJ, **fields}


# Shapes of lists that are not valid MCP from the public reports (and near misses that are valid).
SHAPES: dict[str, list[Any]] = {
    "properties-array": [_tool("get_user_info", inputSchema={"type": "object", "properties": []})],  # PHP
    "no-name": [{"description": "A tool without a name.", "inputSchema": OBJ}],
    "name-number": [{**_tool("x"), "name": 7}],
    "no-input-schema": [{"name": "ping", "description": "Pings."}],
    "input-type-missing": [_tool("search", inputSchema={"properties": {}})],  # mcp-wayback-machine#29
    "input-type-string": [_tool("search", inputSchema={"type": "string"})],
    "required-string": [_tool("search", inputSchema={**OBJ, "required": "q"})],
    "output-type-array": [_tool("search", outputSchema={"type": "array", "items": {"type": "string"}})],  # #10031
    "output-properties-array": [_tool("search", outputSchema={"type": "object", "properties": []})],
    "property-string": [_tool("search", inputSchema={"type": "object", "properties": {"q": "string"}})],
    "not-an-object": ["search"],
    "property-boolean": [_tool("search", inputSchema={"type": "object", "properties": {"q": True}})],
    # near misses: valid MCP
    "valid": [_tool("search")],
    "properties-empty-object": [_tool("ping", inputSchema={"type": "object", "properties": {}})],
    "no-properties": [_tool("ping", inputSchema={"type": "object"})],
    "output-object": [_tool("search", outputSchema={"type": "object", "properties": {}})],
    "dotted-name": [_tool("files.read")],  # valid MCP: refused by the APIs (MCP101), not by the SDK
}

KNOWN_DIFFERENCES: dict[str, str] = {}
"""Shapes where Fathom and the SDK disagree, each named in the doc of MCP201 (none today)."""


def _real_lists() -> dict[str, list[Any]]:
    out = {}
    for path in sorted(REAL.glob("*.json")):
        if path.name in ("labels.json", "manifest.json"):
            continue
        out[f"real:{path.stem}"] = list(json.loads(path.read_text(encoding="utf-8")).get("tools") or [])
    return out


def _fixture_lists() -> dict[str, list[Any]]:
    out = {}
    for path in sorted(RULE_FIXTURES.glob("*/*.json")):
        if path.stem not in ("positive", "negative"):
            continue
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, list):
            out[f"fixture:{path.parent.name}/{path.stem}"] = value
    return out


def _oracle(lists: dict[str, list[Any]]) -> dict[str, Any]:
    payload = json.dumps({"lists": {name: {"tools": tools} for name, tools in lists.items()}})
    done = subprocess.run(
        ["node", str(ORACLES)], input=payload, capture_output=True, text=True, cwd=NPM, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def answers() -> dict[str, Any]:
    return _oracle({**SHAPES, **_real_lists(), **_fixture_lists()})


@pytest.fixture(scope="module")
def everything() -> dict[str, list[Any]]:
    return {**SHAPES, **_real_lists(), **_fixture_lists()}


def test_ajv_2020_agrees_with_mcp808(answers: dict[str, Any], everything: dict[str, list[Any]]) -> None:
    """Every output schema on every list: Ajv 2020 refuses to compile it for its dialect exactly where MCP808
    fires, and the real lists give both answers (the reference servers' draft-07, brave-search's 2020-12)."""
    flagged_total = compiled_total = 0
    for name, tools in everything.items():
        fired = {
            finding.tool_index
            for finding in run_rules(tools, RuleContext(count_tokens=len), select=["MCP808"])
            if finding.code == "MCP808"
        }
        for entry in answers[name]["ajv2020"]:
            dialect_refused = not entry["compiled"] and "no schema with key or ref" in entry["message"]
            assert dialect_refused == (entry["index"] in fired), (name, entry)
            flagged_total += dialect_refused
            compiled_total += entry["compiled"]
    assert flagged_total >= 25 and compiled_total >= 5  # 25 draft-07 schemas on the real lists, and near misses


def _fathom_refuses(tools: list[Any]) -> set[int]:
    """The tools over which the verdicts say the SDK clients refuse the whole list."""
    report = measure(Toolset.from_tools(tuple(tools)))
    found = {verdict.client: verdict for verdict in verdicts(report.findings)}
    indices = set()
    for finding in report.findings:
        details = finding.details if isinstance(finding.details, dict) else {}
        entries = details.get("clients") if isinstance(details.get("clients"), list) else []
        named = {entry["client"] for entry in entries if "Failed to fetch tools" in entry["error"]}
        if named:
            assert named == set(SDK_CLIENTS), finding
            indices.add(finding.tool_index)
            for client in SDK_CLIENTS:  # the verdict (stable, or preview for MCP216) refuses the whole list
                assert "refuses" in (found[client].state, found[client].preview_state), (client, finding)
    return indices


def test_the_sdk_schema_agrees_with_the_verdicts(answers: dict[str, Any], everything: dict[str, list[Any]]) -> None:
    """Every list: the SDK's ListToolsResultSchema rejects it exactly when the verdicts say Claude Code, Claude
    Desktop and Cursor refuse it (stable or preview rules), over the same tools; the reports' shapes included."""
    rejected = 0
    for name, tools in everything.items():
        sdk = answers[name]["sdk"]
        sdk_tools = {int(path.split(".")[1]) for path in sdk["paths"] if path.startswith("tools.")}
        mirror = {index for index, raw in enumerate(tools) if sdk_list_problem(raw, index) is not None}
        assert mirror == sdk_tools, (name, sdk["paths"])  # Fathom's mirror of the schema
        if name in KNOWN_DIFFERENCES:
            continue
        assert _fathom_refuses(tools) == sdk_tools, (name, sdk["paths"])
        rejected += not sdk["ok"]
    assert rejected >= 10
    assert answers["valid"]["sdk"]["ok"] and answers["dotted-name"]["sdk"]["ok"]
    assert answers["properties-array"]["sdk"]["paths"] == ["tools.0.inputSchema.properties"]


def test_the_mirror_names_the_sdk_path() -> None:
    assert sdk_list_problem(SHAPES["properties-array"][0], 0) == (
        "tools[0].inputSchema.properties",
        "Invalid input: expected record, received array",
    )
    assert ToolInfo(SHAPES["valid"][0], 0).name == "search"
