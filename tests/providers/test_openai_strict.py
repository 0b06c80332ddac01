"""OpenAI's strict mode as a view (scanner.providers.strict): each reason's exact shape is refused with a JSON
Pointer and OpenAI's words, its near miss is accepted, the conversion the Agents SDK applies is told apart from what
makes a tool impossible in strict mode, and hostile schemas stay bounded."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scanner.providers.strict import (
    MAX_REASONS,
    TEXTS,
    render_markdown,
    render_text,
    strict_verdict,
    strict_verdicts,
    summary,
    to_json,
)
from tests.providers.strict_cases import CASES, Case, S, closed

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
LISTS = sorted(path for path in REAL.glob("*.json") if path.name not in {"labels.json", "manifest.json"})


def _tool(schema: Any, name: str = "probe") -> dict[str, Any]:
    return {"name": name, "description": "Finds things.", "inputSchema": schema}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_shape_and_its_near_miss(case: Case) -> None:
    verdict = strict_verdict(_tool(case.schema))
    assert (verdict.as_sent, verdict.converted) == (case.as_sent, case.converted), [r.line() for r in verdict.reasons]
    assert Counter(reason.code for reason in verdict.reasons) == Counter(case.codes)
    for reason in verdict.reasons:
        assert reason.text.startswith(TEXTS[reason.code])
        assert reason.pointer.startswith("/inputSchema")


def test_every_reason_has_a_fixture() -> None:
    assert {code for case in CASES for code in case.codes} == set(TEXTS)


def test_pointers_name_where_the_schema_is_refused() -> None:
    optional = strict_verdict(_tool({**closed({"q": S, "n": S}), "required": ["q"]}))
    assert [(r.pointer, r.text) for r in optional.reasons] == [
        ("/inputSchema/required", "All fields must be required: n")
    ]
    odd = strict_verdict(_tool(closed({"a/b~c": {"type": "object"}})))
    assert [r.pointer for r in odd.reasons] == ["/inputSchema/properties/a~1b~0c"]
    deep = strict_verdict(
        _tool(closed({"list": {"type": "array", "items": {"type": "object", "properties": {"x": S}}}}))
    )
    assert sorted(r.pointer for r in deep.reasons) == [
        "/inputSchema/properties/list/items",
        "/inputSchema/properties/list/items/required",
    ]
    defs = strict_verdict(_tool(closed({"v": {"$ref": "#/$defs/d"}}, **{"$defs": {"d": {"type": "object"}}})))
    assert sorted(r.pointer for r in defs.reasons) == ["/inputSchema/$defs/d", "/inputSchema/properties/v"]


def test_the_value_allowed_beside_additional_properties_is_named() -> None:
    verdict = strict_verdict(_tool(closed({"q": S}, additionalProperties=True)))
    assert verdict.reasons[0].text == "additionalProperties: false must always be set in objects (it is true)"
    assert not verdict.reasons[0].fixable


def test_a_tool_that_is_not_an_object_and_a_nameless_tool() -> None:
    found = strict_verdicts([5, {"inputSchema": closed({"q": S})}])
    assert [(v.tool, v.as_sent, v.converted) for v in found] == [("#0", False, False), ("#1", True, True)]


def test_hostile_schemas_stay_bounded() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(20_000):
        deep = {"type": "object", "properties": {"p": deep}}
    verdict = strict_verdict(_tool(deep))
    assert not verdict.as_sent and len(verdict.reasons) == MAX_REASONS and verdict.count > MAX_REASONS
    many = strict_verdict(_tool({"type": "object", "properties": {f"p{i}": {"type": "object"} for i in range(300)}}))
    assert len(many.reasons) == MAX_REASONS and many.count == 302  # 300 open objects, the root's two


def test_summary_and_renderings() -> None:
    found = strict_verdicts(
        [
            _tool(closed({"q": S}), "good"),
            _tool({"type": "object", "properties": {"q": S}}, "fixable"),
            _tool({"type": "object"}, "free_form"),
        ]
    )
    assert summary(found) == "1 of 3 tools can be sent with strict: true; 2 of 3 after the Agents SDK's conversion"
    text = "\n".join(render_text(found))
    assert "good" not in text  # accepted tools are only counted
    assert "fixable: refused as sent, accepted after the Agents SDK's conversion" in text
    assert "free_form: refused, also after the Agents SDK's conversion" in text
    assert "/inputSchema: additionalProperties: false must always be set in objects (this one" in text
    data = json.loads(json.dumps(to_json(found)))
    assert (data["accepted_as_sent"], data["accepted_after_conversion"]) == (1, 2)
    assert data["tools"][1]["reasons"][0] == {
        "code": "additional-properties",
        "pointer": "/inputSchema",
        "text": "additionalProperties: false must always be set in objects",
        "refused_as_sent": True,
        "conversion_fixes": True,
    }
    table = render_markdown(found, lambda text: text.replace("|", "\\|"))
    assert "| free_form | refused | refused |" in "\n".join(table)


def test_real_lists_are_read_without_error() -> None:
    """Every real list gives a verdict for every tool; most tools need the conversion (MCP schemas leave
    properties optional), and the count stays what the report says."""
    sent = converted = total = 0
    for path in LISTS:
        tools = json.loads(path.read_text())["tools"]
        found = strict_verdicts(tools)
        assert len(found) == len(tools)
        sent += sum(v.as_sent for v in found)
        converted += sum(v.converted for v in found)
        total += len(found)
    assert (sent, converted, total) == (22, 183, 228)
