"""MCP214's shortcut: :func:`scanner.rules.metaschema.plainly_valid` may skip ``jsonschema`` only for schemas
``jsonschema`` finds valid, and its idea of each keyword's rule must be the meta-schema's."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from scanner.rules.metaschema import (
    PLAIN_DIALECTS,
    PLAIN_KEYWORDS,
    dialect_of,
    meta_validator,
    plainly_valid,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"
_TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]
_COUNT = {"type": "integer", "minimum": 0}

# The rules plainly_valid implements, as each meta-schema states them ("$ref": "#" is a schema).
_COMMON: dict[str, Any] = {
    "$schema": {"type": "string", "format": "uri"},
    "$ref": {"type": "string", "format": "uri-reference"},
    "$comment": {"type": "string"},
    "pattern": {"type": "string", "format": "regex"},
    "not": {"$ref": "#"},
    "propertyNames": {"$ref": "#"},
    "description": {"type": "string"},
    "title": {"type": "string"},
    "format": {"type": "string"},
    "minimum": {"type": "number"},
    "maximum": {"type": "number"},
    "exclusiveMinimum": {"type": "number"},
    "exclusiveMaximum": {"type": "number"},
    "uniqueItems": {"type": "boolean", "default": False},
    "enum": {"type": "array", "items": True},
    "examples": {"type": "array", "items": True},
    "default": True,
    "const": True,
    "properties": {"type": "object", "additionalProperties": {"$ref": "#"}, "default": {}},
    "additionalProperties": {"$ref": "#"},
}
_SCHEMAS_2020 = {"type": "array", "minItems": 1, "items": {"$ref": "#"}}
EXPECTED: dict[str, dict[str, Any]] = {
    "2020-12": _COMMON
    | {
        "type": {
            "anyOf": [
                {"enum": _TYPES},
                {"type": "array", "items": {"enum": _TYPES}, "minItems": 1, "uniqueItems": True},
            ]
        },
        "required": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "default": []},
        "minLength": {"allOf": [_COUNT], "default": 0},
        "maxLength": _COUNT,
        "minItems": {"allOf": [_COUNT], "default": 0},
        "maxItems": _COUNT,
        "items": {"$ref": "#"},
        "prefixItems": _SCHEMAS_2020,
        "anyOf": _SCHEMAS_2020,
        "oneOf": _SCHEMAS_2020,
        "allOf": _SCHEMAS_2020,
        "$defs": {"type": "object", "additionalProperties": {"$ref": "#"}},
        "definitions": {
            "$comment": '"definitions" has been replaced by "$defs".',
            "type": "object",
            "additionalProperties": {"$ref": "#"},
            "deprecated": True,
            "default": {},
        },
    },
    "draft-07": _COMMON
    | {
        "type": {
            "anyOf": [
                {"$ref": "#/definitions/simpleTypes"},
                {"type": "array", "items": {"$ref": "#/definitions/simpleTypes"}, "minItems": 1, "uniqueItems": True},
            ]
        },
        "required": {"$ref": "#/definitions/stringArray"},
        "minLength": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "maxLength": {"$ref": "#/definitions/nonNegativeInteger"},
        "minItems": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "maxItems": {"$ref": "#/definitions/nonNegativeInteger"},
        "items": {"anyOf": [{"$ref": "#"}, {"$ref": "#/definitions/schemaArray"}], "default": True},
        "anyOf": {"$ref": "#/definitions/schemaArray"},
        "oneOf": {"$ref": "#/definitions/schemaArray"},
        "allOf": {"$ref": "#/definitions/schemaArray"},
        "$defs": None,  # not a draft-07 keyword: anything passes, and the shortcut checks more
        "prefixItems": None,  # the same
        "definitions": {"type": "object", "additionalProperties": {"$ref": "#"}, "default": {}},
    },
}
DRAFT7_DEFINITIONS = {
    "schemaArray": _SCHEMAS_2020,
    "nonNegativeInteger": _COUNT,
    "nonNegativeIntegerDefault0": {"allOf": [{"$ref": "#/definitions/nonNegativeInteger"}, {"default": 0}]},
    "simpleTypes": {"enum": _TYPES},
    "stringArray": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "default": []},
}
# Besides properties, what each meta-schema asks of a schema as a whole: only to be an object or a boolean.
TOP = {
    "2020-12": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": ["object", "boolean"]},
    "draft-07": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "http://json-schema.org/draft-07/schema#",
        "title": "Core schema meta-schema",
        "type": ["object", "boolean"],
        "default": True,
    },
}


@pytest.mark.parametrize("dialect", PLAIN_DIALECTS)
def test_the_plain_keywords_are_the_meta_schemas(dialect: str) -> None:
    meta = meta_validator(dialect).schema
    assert set(EXPECTED[dialect]) == set(PLAIN_KEYWORDS)
    assert {key: meta["properties"].get(key) for key in PLAIN_KEYWORDS} == EXPECTED[dialect]
    assert {key: value for key, value in meta.items() if key not in ("properties", "definitions")} == TOP[dialect]
    if dialect == "draft-07":
        assert {key: meta["definitions"][key] for key in DRAFT7_DEFINITIONS} == DRAFT7_DEFINITIONS
    # "uri" and "uri-reference" (the formats of $schema and $ref) are not checked, so any string passes.
    checkers = meta_validator(dialect).format_checker.checkers
    assert "uri" not in checkers and "uri-reference" not in checkers and "regex" in checkers


def _real_schemas() -> list[Any]:
    found = []
    for path in sorted(FIXTURES.glob("**/*.json")):
        if "sarif" in path.parts or "registry" in path.parts:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        tools = data.get("tools", []) if isinstance(data, dict) else data
        found.extend(tool["inputSchema"] for tool in tools if isinstance(tool, dict) and "inputSchema" in tool)
    return found


_VALUES: list[Any] = [None, True, False, 0, -1, 2.5, 3.0, "", "x", "string", "integer", "uri", [], ["a"], ["a", "a"]]
_VALUES += [["string", "null"], ["string", "string"], ["text"], {}, {"type": "string"}, {"type": "text"}, [{}], [3]]
_VALUES += ["^[a-z]+$", "([a-z", "(?<name>x)", "\\d+", "#/$defs/A"]


def _random_schema(rng: random.Random, depth: int = 0) -> Any:
    """A schema of plain keywords (and now and then another one), their values right or wrong."""
    if depth > 3 or rng.random() < 0.15:
        return rng.choice([True, False, {}, {"type": "string"}, "not a schema", 3])
    schema: dict[str, Any] = {}
    for _ in range(rng.randrange(5)):
        key = rng.choice([*PLAIN_KEYWORDS, "multipleOf", "if", "patternProperties"])
        if key in ("properties", "$defs", "definitions") and rng.random() < 0.8:
            schema[key] = {f"p{n}": _random_schema(rng, depth + 1) for n in range(rng.randrange(3))}
        elif key in ("items", "additionalProperties", "not", "propertyNames") and rng.random() < 0.8:
            schema[key] = _random_schema(rng, depth + 1)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and rng.random() < 0.8:
            schema[key] = [_random_schema(rng, depth + 1) for _ in range(rng.randrange(3))]
        else:
            schema[key] = rng.choice(_VALUES)
    return schema


@pytest.mark.parametrize("dialect", PLAIN_DIALECTS)
def test_plainly_valid_never_accepts_what_jsonschema_rejects(dialect: str) -> None:
    rng = random.Random(24)
    schemas = _real_schemas() + [_random_schema(rng) for _ in range(3000)]
    validator = meta_validator(dialect)  # MCP214's; tests/rules/test_engine.py compares it with jsonschema's own
    accepted = rejected = 0
    for schema in schemas:
        valid = not list(validator.iter_errors(schema))
        if plainly_valid(schema, dialect):
            assert valid, schema
            accepted += 1
        elif not valid:
            rejected += 1
    assert accepted > 500 and rejected > 500  # the shortcut is taken often, and the sample holds invalid schemas


def test_most_real_schemas_are_plain() -> None:
    real = [schema for schema in _real_schemas() if isinstance(schema, dict)]
    assert sum(plainly_valid(schema, dialect_of(schema).name) for schema in real) > len(real) * 3 // 4
    assert not plainly_valid({"type": "string"}, "draft-04")  # other dialects always go to jsonschema
