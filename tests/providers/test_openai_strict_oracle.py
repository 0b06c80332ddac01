"""The OpenAI Agents SDK's strict converter as an oracle for scanner.providers.strict.

``agents.strict_schema.ensure_strict_json_schema`` is what an agent built on the SDK runs over an MCP tool's
schema when it sets ``convert_schemas_to_strict`` (``agents/mcp/util.py``, ``MCPUtil.to_function_tool``: a copy,
``properties: {}`` added when absent, open objects refused unless the schema was empty); when it raises, the SDK
sends the tool without strict. Fathom's "after the conversion" verdict must agree with it: the SDK converts a
schema exactly when Fathom says the conversion is accepted, except the cases listed with ``by_design`` (the SDK
converts, OpenAI still refuses), and what the SDK sends must be accepted as sent by Fathom, or refused only for
the reasons Fathom said the conversion cannot fix. Without the package (a test extra) the tests skip and say why.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scanner.providers.strict import schema_reasons, strict_verdict
from tests.providers.strict_cases import CASES, Case

strict_schema = pytest.importorskip(
    "agents.strict_schema", reason="openai-agents (a test extra) is not installed: pip install -e '.[test]'"
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
LISTS = sorted(path for path in REAL.glob("*.json") if path.name not in {"labels.json", "manifest.json"})

REAL_DISAGREEMENTS: dict[tuple[str, str], str] = {}
"""(list, tool) -> why Fathom and the SDK differ on a real tool by design. None today: on every real tool the SDK
converts exactly the schemas Fathom says the conversion makes acceptable."""


def sdk_convert(schema: Any) -> dict[str, Any] | None:
    """What the Agents SDK sends with ``strict: true`` for an MCP tool's input schema, or None when it cannot convert
    it (and sends the tool non-strict), as ``MCPUtil.to_function_tool`` does."""
    copied = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    empty = copied == {}
    copied.setdefault("properties", {})
    try:
        converted: dict[str, Any] = strict_schema.ensure_strict_json_schema(copied, _reject_open_objects=not empty)
    except Exception:  # the SDK catches every exception here and falls back to non-strict
        return None
    return converted


def _tool(schema: Any) -> dict[str, Any]:
    return {"name": "probe", "description": "Finds things.", "inputSchema": schema}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_sdk_agrees_on_the_fixtures(case: Case) -> None:
    verdict = strict_verdict(_tool(case.schema))
    sent = sdk_convert(case.schema)
    assert (sent is not None) is case.sdk
    if case.by_design:
        assert sent is not None and not verdict.converted
    else:
        assert (sent is not None) is verdict.converted
    if sent is not None:
        left = Counter(reason.code for reason in schema_reasons(sent))
        assert left == Counter(reason.code for reason in verdict.reasons if not reason.fixable)


def test_the_sdk_agrees_on_the_real_lists() -> None:
    """Per real tool: the SDK converts it exactly when Fathom says the conversion is accepted, and what it sends
    Fathom accepts as sent. Counts: 228 tools in 22 lists; 22 accepted as sent, 183 after the conversion."""
    disagreements = {}
    converted = 0
    for path in LISTS:
        for tool in json.loads(path.read_text())["tools"]:
            verdict = strict_verdict(tool)
            sent = sdk_convert(tool.get("inputSchema"))
            converted += sent is not None
            if (sent is not None) is not verdict.converted:
                disagreements[(path.stem, tool["name"])] = verdict.state()
            if sent is not None:
                assert [reason.line() for reason in schema_reasons(sent)] == [], (path.stem, tool["name"])
    assert disagreements.keys() == REAL_DISAGREEMENTS.keys(), disagreements
    assert converted == 183
