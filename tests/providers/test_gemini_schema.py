"""JSON Schema to Gemini's OpenAPI-3.0 subset: what is kept, folded, dropped and cut."""

from __future__ import annotations

from typing import Any

import pytest

from scanner.models import SCHEMA_DEPTH_LIMIT
from scanner.providers import provider_view
from scanner.providers.base import clip_json
from scanner.providers.gemini import convert_schema

# The constraint keywords rules.md (MCP209) says the Gemini conversion drops, plus annotations.
DROPPED = {
    "oneOf": [{"type": "string"}, {"type": "integer"}],
    "allOf": [{"type": "string"}],
    "not": {"type": "null"},
    "const": "x",
    "pattern": "^a",
    "additionalProperties": {"type": "string"},
    "patternProperties": {"^x": {"type": "string"}},
    "propertyNames": {"maxLength": 3},
    "exclusiveMinimum": 0,
    "exclusiveMaximum": 9,
    "multipleOf": 2,
    "uniqueItems": True,
    "contains": {"type": "string"},
    "minContains": 1,
    "maxContains": 2,
    "if": {"type": "string"},
    "then": {"minLength": 1},
    "else": {"maxLength": 1},
    "dependentRequired": {"a": ["b"]},
    "dependentSchemas": {"a": {"required": ["b"]}},
    "unevaluatedProperties": False,
    "unevaluatedItems": False,
    "prefixItems": [{"type": "string"}],
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:x",
    "$comment": "hi",
    "examples": ["a"],
    "minLength": 1,
    "readOnly": True,
}


def test_kept_keywords_pass_through() -> None:
    schema = {
        "type": "array",
        "format": "list",
        "title": "Things",
        "description": "Some things",
        "nullable": True,
        "default": [],
        "items": {"type": "number", "minimum": 0, "maximum": 1.5, "format": "double"},
        "minItems": 1,
        "maxItems": 3,
    }
    assert convert_schema(schema) == {
        "type": "ARRAY",
        "format": "list",
        "title": "Things",
        "description": "Some things",
        "default": [],
        "items": {"type": "NUMBER", "minimum": 0, "maximum": 1.5, "format": "double"},
        "minItems": 1,
        "maxItems": 3,
        "nullable": True,
    }


def test_every_dropped_keyword_is_dropped() -> None:
    assert convert_schema({"type": "string", "description": "d", **DROPPED}) == {"type": "STRING", "description": "d"}


def test_type_array_with_null_becomes_nullable() -> None:
    assert convert_schema({"type": ["string", "null"]}) == {"type": "STRING", "nullable": True}
    assert convert_schema({"type": ["null", "integer"], "description": "n"}) == {
        "type": "INTEGER",
        "description": "n",
        "nullable": True,
    }


def test_type_array_of_several_types_becomes_any_of() -> None:
    assert convert_schema({"type": ["string", "number", "null"]}) == {
        "anyOf": [{"type": "STRING"}, {"type": "NUMBER"}],
        "nullable": True,
    }


def test_type_names_are_upper_case_and_unknown_ones_dropped() -> None:
    assert convert_schema({"type": "Boolean"}) == {"type": "BOOLEAN"}
    assert convert_schema({"type": "null"}) == {"type": "NULL"}
    assert convert_schema({"type": "file", "description": "d"}) == {"description": "d"}
    assert convert_schema({"type": 7}) == {}


def test_any_of_is_kept_and_converted() -> None:
    schema = {"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "array", "items": {"type": "integer"}}]}
    assert convert_schema(schema) == {
        "anyOf": [{"type": "STRING"}, {"type": "ARRAY", "items": {"type": "INTEGER"}}],
    }


def test_any_of_with_null_branch_folds_into_nullable() -> None:
    # pydantic's Optional[int] with a description on the property
    schema = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "description": "Page size"}
    assert convert_schema(schema) == {"type": "INTEGER", "default": None, "description": "Page size", "nullable": True}
    two = {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}
    assert convert_schema(two) == {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}], "nullable": True}


def test_ref_and_defs_are_dropped_never_resolved() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#"}},
        "$defs": {"A": {"type": "object", "properties": {"self": {"$ref": "#/$defs/A"}}}},
    }
    assert convert_schema(schema) == {"type": "OBJECT", "properties": {"a": {}, "b": {}}}


def test_nested_items_and_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {"type": "string", "description": "Text to find"},
                        "where": {
                            "type": "object",
                            "properties": {"line": {"type": "integer", "exclusiveMinimum": 0}},
                            "additionalProperties": False,
                        },
                    },
                    "required": ["oldText"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["edits"],
    }
    assert convert_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "edits": {
                "type": "ARRAY",
                "items": {
                    "type": "OBJECT",
                    "properties": {
                        "oldText": {"type": "STRING", "description": "Text to find"},
                        "where": {"type": "OBJECT", "properties": {"line": {"type": "INTEGER"}}},
                    },
                    "required": ["oldText"],
                },
            }
        },
        "required": ["edits"],
    }


def test_empty_properties_are_left_out() -> None:
    assert convert_schema({"type": "object", "properties": {}, "description": "free"}) == {
        "type": "OBJECT",
        "description": "free",
    }


def test_enum_members_become_strings() -> None:
    assert convert_schema({"type": "integer", "enum": [1, 2, 2, True, None, {"x": 1}]}) == {
        "type": "INTEGER",
        "enum": ["1", "2", "true"],
        "nullable": True,
    }


def test_wrong_types_of_kept_keywords_are_dropped() -> None:
    schema = {
        "type": "object",
        "title": 5,
        "description": ["x"],
        "minItems": -1,
        "maxItems": True,
        "minimum": "0",
        "maximum": False,
        "required": ["a", 3, "a"],
        "propertyOrdering": "a",
        "items": [{"type": "string"}],
        "properties": {"a": "not a schema", "b": 3},
        "anyOf": "nope",
        "nullable": "yes",
    }
    assert convert_schema(schema) == {"type": "OBJECT", "required": ["a"], "properties": {"a": {}, "b": {}}}


@pytest.mark.parametrize("schema", [None, 3, "object", ["type"], True])
def test_non_object_schema_converts_to_nothing(schema: Any) -> None:
    assert convert_schema(schema) == {}
    view = provider_view("gemini-openapi", [{"name": "t", "description": "d", "inputSchema": schema}])
    assert view == [{"functionDeclarations": [{"name": "t", "description": "d"}]}]


def test_deep_nesting_is_cut_at_the_limit() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(3 * SCHEMA_DEPTH_LIMIT):
        schema = {"type": "object", "properties": {"x": schema}}
    converted = convert_schema(clip_json(schema))
    depth = 0
    node = converted
    while "properties" in node:
        node = node["properties"]["x"]
        depth += 1
    assert 0 < depth <= SCHEMA_DEPTH_LIMIT
    assert node in ({}, {"type": "OBJECT"})  # the cut leaves an empty schema, never an error


def test_property_ordering_is_kept() -> None:
    schema = {"type": "object", "properties": {"b": {"type": "string"}}, "propertyOrdering": ["b"]}
    assert convert_schema(schema) == {
        "type": "OBJECT",
        "properties": {"b": {"type": "STRING"}},
        "propertyOrdering": ["b"],
    }
