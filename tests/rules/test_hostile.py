"""Hostile tool lists: nothing a server sends may crash a rule, hang the engine, or go unreported."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from scanner.models import SCHEMA_DEPTH_LIMIT
from scanner.rules import RuleContext, run_rules
from scanner.rules.tools import ToolInfo
from tests.check_corpus import random_json


def _codes(findings: list[Any], index: int) -> set[str]:
    return {finding.code for finding in findings if finding.tool_index == index}


def _deep(levels: int, how: str) -> dict[str, Any]:
    """A schema nested ``levels`` deep, built iteratively (as a JSON parser would hand it over)."""
    leaf: dict[str, Any] = {"type": "string", "description": "Leaf."}
    for _ in range(levels):
        if how == "properties":
            leaf = {"type": "object", "description": "Level.", "properties": {"next": leaf}}
        elif how == "items":
            leaf = {"type": "array", "description": "Level.", "items": leaf}
        else:
            leaf = {"anyOf": [leaf, {"type": "null"}]}
    return {"type": "object", "properties": {"root": leaf}}


def test_ten_thousand_levels_deep(cheap_context: RuleContext) -> None:
    tools = [
        {"name": f"deep_{how}", "description": "A tool with a very deep schema.", "inputSchema": _deep(10_000, how)}
        for how in ("properties", "items", "anyOf")
    ]
    started = time.perf_counter()
    findings = run_rules(tools, cheap_context)
    assert time.perf_counter() - started < 60
    for index in range(3):
        deep = [finding for finding in findings if finding.tool_index == index and finding.code == "MCP212"]
        assert len(deep) == 1 and deep[0].details["truncated"] is True
        assert str(SCHEMA_DEPTH_LIMIT) in deep[0].message
    # The token count of the deep schema still works (the compact JSON is built without recursion).
    large = [finding for finding in findings if finding.code == "MCP210"]
    assert {finding.tool_index for finding in large} == {0, 1, 2}
    assert not [finding for finding in findings if finding.code == "MCP214"]  # too deep to check: not guessed


def test_ref_cycle_is_never_followed(cheap_context: RuleContext) -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/A", "description": "X."}},
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}, "Self": {"$ref": "#"}},
    }
    tools = [{"name": "cyclic", "description": "Uses references that point at each other.", "inputSchema": schema}]
    findings = run_rules(tools, cheap_context)
    (ref,) = [finding for finding in findings if finding.code == "MCP208"]
    # x -> A -> B, and B's reference back to A is not followed again: the model meets all of it at x.
    assert ref.details["parameters"] == ["x"]
    assert ref.details["refs"] == ["#/$defs/A", "#/$defs/B"]
    (unused,) = [finding for finding in findings if finding.code == "MCP215"]
    assert unused.details["definitions"] == ["Self"]
    assert "MCP214" not in _codes(findings, 0)  # the cycle is valid JSON Schema


def test_non_string_names_and_descriptions(cheap_context: RuleContext) -> None:
    names: list[Any] = [5, ["list"], None, {"a": 1}, True, "", "x" * 65, "y" * 100_000]
    tools = [{"name": name, "description": 12, "inputSchema": {"type": "object", "properties": {}}} for name in names]
    tools.append({"description": "A tool with no name at all here.", "inputSchema": {"type": "object"}})
    findings = run_rules(tools, cheap_context)
    for index in range(len(tools)):
        assert "MCP101" in _codes(findings, index), index
    for index, name in enumerate(names):
        (finding,) = [f for f in findings if f.code == "MCP101" and f.tool_index == index]
        expected = name if isinstance(name, str) and name else f"#{index}"
        assert finding.tool == (expected if len(expected) <= 200 else "y" * 199 + "…")
        assert len(finding.message) < 400
        assert finding.pointer == "/name"
        assert "MCP102" in _codes(findings, index)  # a description that is a number
    assert not [finding for finding in findings if finding.code == "MCP301"]  # non-string names are not compared


def test_tools_that_are_not_objects(cheap_context: RuleContext) -> None:
    tools: list[Any] = [5, "search", None, [], [{"name": "inner"}], 1.5, True]
    findings = run_rules(tools, cheap_context)
    for index in range(len(tools)):
        assert _codes(findings, index) == {"MCP101", "MCP102", "MCP201"}, index
        (finding,) = [f for f in findings if f.code == "MCP201" and f.tool_index == index]
        assert finding.tool == f"#{index}" and "not an object" in finding.message


def test_wrong_types_everywhere(cheap_context: RuleContext) -> None:
    schemas: list[Any] = [
        {"type": "object", "properties": ["a", "b"], "required": {"a": 1}},
        {"type": "object", "properties": {"a": "string", "b": 5, "c": None, "d": True}},
        {"type": "object", "properties": {"a": {"type": 7, "enum": "abc", "items": "x", "description": ["d"]}}},
        {"type": "object", "properties": {"a": {"anyOf": "x", "oneOf": [], "allOf": [1, 2]}}, "required": [1, None]},
        {"type": ["object"], "properties": {"a": {"properties": {"b": {"items": [1, {"type": "string"}]}}}}},
        {"type": "object", "$defs": [], "definitions": 3, "patternProperties": {"(": {"type": "string"}}},
        {"type": "object", "properties": {1: {"type": "string"}}, "$schema": 5},
        "schema",
        [],
        {"type": "object", "properties": {"a": {"type": "string", "description": "\ud800 lone surrogate"}}},
        {"type": "object", "properties": {"a": {"type": "string", "description": "\ud800 " + "ab1 cd2 " * 800}}},
    ]
    tools = [
        {"name": f"t{i}", "description": "Weird schema number one.", "inputSchema": s} for i, s in enumerate(schemas)
    ]
    findings = run_rules(tools, cheap_context)
    for finding in findings:
        json.dumps(finding.to_json())
    assert "MCP214" in _codes(findings, 0) and "MCP214" in _codes(findings, 2)
    assert "MCP205" in _codes(findings, 1)
    assert "MCP201" in _codes(findings, 4) and "MCP201" in _codes(findings, 7) and "MCP201" in _codes(findings, 8)
    invalid_regex = [f for f in findings if f.code == "MCP214" and f.tool_index == 5]
    assert invalid_regex
    assert "/inputSchema/patternProperties" in [error["pointer"] for error in invalid_regex[0].details["errors"]]
    # The lone surrogate (valid JSON text, not valid UTF-8) is counted, not crashed on.
    assert "MCP210" in _codes(findings, 10)


@pytest.mark.timeout(600)
def test_ten_thousand_tools(cheap_context: RuleContext) -> None:
    tools = [
        {
            "name": f"tool_{index}",
            "description": f"Handle record r{index} of kind {index % 17} and return its status.",
            "inputSchema": {
                "type": "object",
                "properties": {"id": {"type": "string", "description": "Record id, e.g. 'r1'."}},
                "required": ["id"],
            },
        }
        for index in range(10_000)
    ]
    tools[5_000] = 7
    tools[6_000] = {"name": "tool_1", "description": None}
    started = time.perf_counter()
    findings = run_rules(tools, cheap_context)
    elapsed = time.perf_counter() - started
    assert elapsed < 300, elapsed  # generous: a loaded machine is slow, not wrong
    codes = {finding.code for finding in findings}
    assert {"MCP304", "MCP301", "MCP101", "MCP201"} <= codes
    assert "MCP305" not in codes
    # Each later tool is paired at most once per pair rule, so findings stay proportional to the list.
    assert sum(1 for finding in findings if finding.code == "MCP301") < len(tools)


def test_ten_thousand_copies_do_not_explode(cheap_context: RuleContext) -> None:
    tools = [
        {"name": "search", "description": "Search the docs.", "inputSchema": {"type": "object", "properties": {}}}
        for _ in range(10_000)
    ]
    started = time.perf_counter()
    findings = run_rules(tools, cheap_context)
    assert time.perf_counter() - started < 60
    assert sum(1 for finding in findings if finding.code == "MCP301") == 9_999
    assert sum(1 for finding in findings if finding.code == "MCP302") == 9_999
    assert not [finding for finding in findings if finding.code == "MCP303"]  # identical is MCP302, not 303


def test_quadratic_uniqueness_is_not_attempted(cheap_context: RuleContext) -> None:
    """draft-04 wants unique enum values; jsonschema compares objects pairwise, which would take minutes here."""
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"a": {"description": "A.", "enum": [{"a": index} for index in range(20_000)]}},
    }
    tools = [{"name": "x", "description": "A tool with a giant enum of objects.", "inputSchema": schema}]
    started = time.perf_counter()
    findings = run_rules(tools, cheap_context)
    assert time.perf_counter() - started < 60
    assert {"MCP213", "MCP210"} <= {finding.code for finding in findings}


def test_a_very_wide_schema_is_not_called_deep(cheap_context: RuleContext) -> None:
    properties = {f"p{index}": {"type": "string", "description": "P."} for index in range(60_000)}
    tools = [
        {
            "name": "wide",
            "description": "A tool with far too many options.",
            "inputSchema": {"type": "object", "properties": properties},
        }
    ]
    started = time.perf_counter()
    findings = run_rules(tools, cheap_context)
    assert time.perf_counter() - started < 60
    codes = {finding.code for finding in findings}
    assert "MCP211" in codes and "MCP212" not in codes


def test_wide_branches_with_required_lists(cheap_context: RuleContext) -> None:
    branches = [{"required": [f"k{index}"]} for index in range(20_000)]
    schema = {"type": "object", "properties": {"k0": {"type": "string", "description": "K."}}, "anyOf": branches}
    tools = [{"name": "wide", "description": "A tool whose schema branches very widely.", "inputSchema": schema}]
    started = time.perf_counter()
    findings = run_rules(tools, cheap_context)
    assert time.perf_counter() - started < 60
    (missing,) = [finding for finding in findings if finding.code == "MCP204"]
    assert missing.details["parameters"][:2] == ["k1", "k2"] and len(missing.details["parameters"]) == 20


_KEYS = [
    "name",
    "description",
    "inputSchema",
    "title",
    "type",
    "properties",
    "items",
    "required",
    "enum",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "additionalProperties",
    "patternProperties",
    "not",
    "if",
    "then",
    "else",
    "const",
    "pattern",
    "prefixItems",
    "dependencies",
    "dependentSchemas",
    "$schema",
    "annotations",
    "minimum",
]
_ATOMS: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "object",
    "string",
    "array",
    "x\u200by",
    "<system>",
    "(",
    "#/$defs/a",
    "http://json-schema.org/draft-04/schema#",
    "\ud800",
]


def test_random_json_never_crashes(cheap_context: RuleContext) -> None:
    import random

    rng = random.Random(20261129)
    tools = [random_json(rng, 0, _ATOMS, _KEYS) for _ in range(400)]
    tools += [
        {
            "name": rng.choice(_ATOMS),
            "description": rng.choice(_ATOMS),
            "inputSchema": random_json(rng, 0, _ATOMS, _KEYS),
        }
        for _ in range(400)
    ]
    findings = run_rules(tools, cheap_context)
    for finding in findings:
        json.dumps(finding.to_json())
        assert finding.tool_index is None or 0 <= finding.tool_index < len(tools)
    assert {finding.code for finding in findings} >= {"MCP101", "MCP102", "MCP201"}


def test_deep_schema_text_matches_json_dumps() -> None:
    from scanner.rules.schema.size import _compact_iterative

    value = {"b": [1, "x\u00e9", None, {"z": True, "a": 2.5}], "a": {"c": []}, "d": "\ud800"}
    assert _compact_iterative(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_references_fanning_out_stay_bounded(cheap_context: RuleContext) -> None:
    """Definitions that each reference the next one ten times (10^k paths) and thousands of unused definitions:
    the walk stops at its node budget, nothing is reported twice, and the whole check stays fast."""
    import time

    defs: dict[str, Any] = {
        f"D{level}": {"type": "object", "properties": {f"p{i}": {"$ref": f"#/$defs/D{level + 1}"} for i in range(10)}}
        for level in range(8)
    }
    defs["D8"] = {"type": "string", "description": "leaf"}
    defs.update({f"U{i}": {"$ref": "#/$defs/D0", "description": f"unused {i}"} for i in range(1000)})
    schema = {"type": "object", "properties": {"root": {"$ref": "#/$defs/D0"}}, "$defs": defs}
    tools = [{"name": "fan", "description": "References that fan out exponentially.", "inputSchema": schema}]
    started = time.process_time()
    findings = run_rules(tools, cheap_context)
    assert time.process_time() - started < 60
    codes = _codes(findings, 0)
    assert "MCP208" in codes and "MCP212" in codes
    assert "MCP215" not in codes  # the walk was cut short: which definitions are unused is not known, not guessed


def test_relatives_among_thousands_sharing_name_words_stay_bounded(cheap_context: RuleContext) -> None:
    """Catalogue 5: a relative also needs a similar description, so tools that share a name word but not their
    words are each compared with many others; a list of thousands of them is searched only up to a budget."""
    from scanner.rules import vocabulary

    tools = [
        {"name": f"{'user' if index % 2 else 'item'}_thing{index}", "description": f"w{index}a w{index}b w{index}c"}
        for index in range(6_000)
    ]
    infos = [ToolInfo(tool, index) for index, tool in enumerate(tools)]
    facts = vocabulary.ListFacts.of(infos)
    assert facts.relatives == {}  # no two descriptions alike: no relatives (as far as the budget reached)
    started = time.perf_counter()
    findings = run_rules(tools, cheap_context)
    assert time.perf_counter() - started < 60
    assert not [finding for finding in findings if finding.code in ("MCP103", "MCP105")]
