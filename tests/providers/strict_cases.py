"""Fixtures for OpenAI's strict mode (scanner.providers.strict): every reason's exact shape beside its near miss.

Each :class:`Case` says what Fathom must answer (refused as sent? after the Agents SDK's conversion?), the reason
codes it must give, and what the Agents SDK's converter does with it (``sdk``: converts or raises). Where the SDK
converts a schema that OpenAI still refuses, ``by_design`` says why the two answers differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

S = {"type": "string"}


def closed(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An object strict mode takes: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
        **extra,
    }


def nested(levels: int) -> dict[str, Any]:
    """A closed root whose property ``p`` nests ``levels`` closed objects below it."""
    inner: dict[str, Any] = closed({"leaf": S})
    for _ in range(levels - 1):
        inner = closed({"p": inner})
    return closed({"p": inner})


@dataclass(frozen=True)
class Case:
    name: str
    schema: Any
    as_sent: bool
    converted: bool
    codes: tuple[str, ...] = ()
    sdk: bool = True  # the Agents SDK converts it (False: it raises, and sends the tool non-strict)
    by_design: str = ""  # why the SDK converts what OpenAI still refuses


CASES: tuple[Case, ...] = (
    # objects: closed and fully required is the only shape taken as sent
    Case("closed-all-required", closed({"q": S, "n": {"type": "integer"}}), True, True),
    Case("one-optional-property", {**closed({"q": S, "n": S}), "required": ["q"]}, False, True, ("not-required",)),
    Case(
        "no-required-list",
        {"type": "object", "properties": {"q": S}, "additionalProperties": False},
        False,
        True,
        ("not-required",),
    ),
    Case(
        "additional-properties-missing",
        {"type": "object", "properties": {"q": S}, "required": ["q"]},
        False,
        True,
        ("additional-properties",),
    ),
    Case(
        "plain-mcp-schema",
        {"type": "object", "properties": {"q": S}},
        False,
        True,
        ("additional-properties", "not-required"),
    ),
    Case(
        "additional-properties-true",
        closed({"q": S}, additionalProperties=True),
        False,
        False,
        ("additional-properties",),
        sdk=False,
    ),
    Case(
        "additional-properties-schema",
        closed({"q": S}, additionalProperties={}),
        False,
        False,
        ("additional-properties",),
        sdk=False,
    ),
    Case("nested-free-form-object", closed({"meta": {"type": "object"}}), False, False, ("open-object",), sdk=False),
    Case("nested-closed-object", closed({"meta": closed({"k": S})}), True, True),
    Case("no-arguments", {"type": "object"}, False, False, ("open-object",), sdk=False),
    Case("no-arguments-closed", {"type": "object", "properties": {}, "additionalProperties": False}, True, True),
    Case("empty-schema", {}, False, True, ("root-not-object",)),
    # the root
    Case(
        "root-anyOf", {"anyOf": [closed({"id": S}), closed({"path": S})]}, False, False, ("root-not-object",), sdk=False
    ),
    Case(
        "root-oneOf", {"oneOf": [closed({"id": S}), closed({"path": S})]}, False, False, ("root-not-object",), sdk=False
    ),
    Case(
        "root-nullable", {**closed({"q": S}), "type": ["object", "null"]}, False, False, ("root-not-object",), sdk=False
    ),
    Case(
        "root-untyped-with-properties",
        {k: v for k, v in closed({"q": S}).items() if k != "type"},
        False,
        True,
        ("root-not-object",),
    ),
    Case("nested-anyOf", closed({"v": {"anyOf": [S, {"type": "number"}]}}), True, True),
    # keywords
    Case("nested-oneOf", closed({"v": {"oneOf": [S, {"type": "number"}]}}), False, True, ("one-of",)),
    Case("single-allOf", closed({"v": {"allOf": [S]}}), False, True, ("all-of",)),
    Case(
        "two-allOf",
        closed({"v": {"allOf": [S, {"minLength": 1}]}}),
        False,
        False,
        ("all-of", "untyped"),
        by_design="the SDK keeps an allOf of several entries (OpenAI lists allOf as unsupported), and does not type "
        "an entry that has no type",
    ),
    Case(
        "not",
        closed({"v": {"type": "string", "not": {"const": "x"}}}),
        False,
        False,
        ("unsupported",),
        by_design="the SDK leaves `not` in place; OpenAI lists it as unsupported",
    ),
    Case(
        "if-then",
        closed({"kind": S, "id": S}, **{"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["id"]}}),
        False,
        False,
        ("unsupported", "unsupported"),
        by_design="the SDK leaves `if`/`then` in place; OpenAI lists them as unsupported",
    ),
    Case(
        "dependentRequired",
        closed({"a": S, "b": S}, dependentRequired={"a": ["b"]}),
        False,
        False,
        ("unsupported",),
        by_design="the SDK leaves `dependentRequired` in place; OpenAI lists it as unsupported",
    ),
    Case(
        "untyped-property",
        closed({"v": {"description": "any JSON value"}}),
        False,
        False,
        ("untyped",),
        by_design='the SDK does not type a schema without `properties`; the API answers "schema must have a '
        "'type' key\"",
    ),
    Case("enum-without-type", closed({"v": {"enum": ["a", "b"]}}), True, True),
    Case(
        "untyped-with-properties",
        closed({"v": {k: v for k, v in closed({"a": S}).items() if k != "type"}}),
        False,
        True,
        ("untyped",),
    ),
    Case("boolean-schema", closed({"v": True}), False, False, ("untyped",), sdk=False),
    Case(
        "array-without-items",
        closed({"tags": {"type": "array"}}),
        False,
        False,
        ("items-missing",),
        by_design='the SDK does not add `items`; the API answers "array schema missing items" (strict or not)',
    ),
    Case("array-with-items", closed({"tags": {"type": "array", "items": S}}), True, True),
    Case(
        "ref-with-description",
        closed({"v": {"$ref": "#/$defs/name", "description": "Who."}}, **{"$defs": {"name": S}}),
        False,
        True,
        ("ref-siblings",),
    ),
    Case(
        "ref-with-type",
        closed({"v": {"$ref": "#/$defs/name", "type": "string"}}, **{"$defs": {"name": S}}),
        False,
        False,
        ("ref-siblings",),
        sdk=False,
    ),
    Case(
        "bare-ref",
        closed({"v": {"$ref": "#/$defs/name"}}, **{"$defs": {"name": S}}),
        True,
        False,
        ("ref-unconverted",),
        sdk=False,
    ),
    # limits
    Case("ten-levels", nested(10), True, True),
    Case(
        "eleven-levels",
        nested(11),
        False,
        False,
        ("depth",),
        by_design="the SDK does not count nesting; OpenAI allows up to 10 levels",
    ),
    Case("5000-properties", closed({f"p{i}": S for i in range(5000)}), True, True),
    Case(
        "5001-properties",
        closed({f"p{i}": S for i in range(5001)}),
        False,
        False,
        ("properties",),
        by_design="the SDK does not count properties; OpenAI allows up to 5000",
    ),
    Case(
        "1000-enum-values",
        closed(
            {
                "a": {"type": "string", "enum": [f"v{i}" for i in range(500)]},
                "b": {"type": "string", "enum": [f"w{i}" for i in range(500)]},
            }
        ),
        True,
        True,
    ),
    Case(
        "1001-enum-values",
        closed(
            {
                "a": {"type": "string", "enum": [f"v{i}" for i in range(500)]},
                "b": {"type": "string", "enum": [f"w{i}" for i in range(501)]},
            }
        ),
        False,
        False,
        ("enum-values",),
        by_design="the SDK does not count enum values; OpenAI allows up to 1000",
    ),
    Case(
        "long-enum-250-values",
        closed({"a": {"type": "string", "enum": [f"{i:03d}" + "x" * 97 for i in range(250)]}}),
        True,
        True,
    ),
    Case(
        "long-enum-251-values",
        closed({"a": {"type": "string", "enum": [f"{i:03d}" + "x" * 57 for i in range(251)]}}),
        False,
        False,
        ("enum-length",),
        by_design="the SDK does not measure enums; OpenAI caps a string enum of over 250 values at 15,000 characters",
    ),
    Case("strings-at-limit", closed({"c": {"type": "string", "const": "x" * 119_999}}), True, True),
    Case(
        "strings-over-limit",
        closed({"c": {"type": "string", "const": "x" * 120_000}}),
        False,
        False,
        ("string-length",),
        by_design="the SDK does not measure strings; OpenAI allows 120,000 characters",
    ),
)
