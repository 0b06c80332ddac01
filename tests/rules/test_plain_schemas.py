"""MCP214's shortcut: :func:`scanner.rules.metaschema.plainly_valid` may skip ``jsonschema`` only for schemas
``jsonschema`` finds valid, and its idea of each keyword's rule must be the 2020-12 meta-schema's."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from scanner.rules.metaschema import PLAIN_KEYWORDS, meta_validator, official_validator, plainly_valid

FIXTURES = Path(__file__).parent.parent / "fixtures"
_TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]
_SCHEMA = {"$dynamicRef": "#meta"}

# The rules plainly_valid implements, as the flattened meta-schema states them ("$ref": "#" is a schema).
EXPECTED = {
    "type": {
        "anyOf": [
            {"enum": _TYPES},
            {"type": "array", "items": {"enum": _TYPES}, "minItems": 1, "uniqueItems": True},
        ]
    },
    "description": {"type": "string"},
    "title": {"type": "string"},
    "properties": {"type": "object", "additionalProperties": {"$ref": "#"}, "default": {}},
    "required": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "default": []},
    "items": {"$ref": "#"},
    "enum": {"type": "array", "items": True},
    "default": True,
    "examples": {"type": "array", "items": True},
    "minimum": {"type": "number"},
    "maximum": {"type": "number"},
    "additionalProperties": {"$ref": "#"},
}


def test_the_plain_keywords_are_the_meta_schemas() -> None:
    meta = meta_validator("2020-12").schema
    assert set(EXPECTED) == set(PLAIN_KEYWORDS)
    assert {key: meta["properties"][key] for key in PLAIN_KEYWORDS} == EXPECTED
    # Nothing else constrains a schema object as a whole (no propertyNames, required or dependent keywords).
    assert {key: value for key, value in meta.items() if key != "properties"} == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": ["object", "boolean"],
    }


def _real_schemas() -> list[Any]:
    found = []
    for path in sorted(FIXTURES.glob("**/*.json")):
        if "sarif" in path.parts or "registry" in path.parts:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        tools = data.get("tools", []) if isinstance(data, dict) else data
        found.extend(tool["inputSchema"] for tool in tools if isinstance(tool, dict) and "inputSchema" in tool)
    return found


_VALUES: list[Any] = [None, True, False, 0, -1, 2.5, "", "x", "string", "integer", "object", [], ["a"], ["a", "a"]]
_VALUES += [["string", "null"], ["string", "string"], ["text"], {}, {"type": "string"}, {"type": "text"}]


def _random_schema(rng: random.Random, depth: int = 0) -> Any:
    """A schema of plain keywords (and now and then another one), their values right or wrong."""
    if depth > 3 or rng.random() < 0.15:
        return rng.choice([True, False, {}, {"type": "string"}, "not a schema", 3])
    schema: dict[str, Any] = {}
    for _ in range(rng.randrange(5)):
        key = rng.choice([*PLAIN_KEYWORDS, "pattern", "$ref", "minLength", "format"])
        if key in ("properties",):
            schema[key] = {f"p{n}": _random_schema(rng, depth + 1) for n in range(rng.randrange(3))}
        elif key in ("items", "additionalProperties"):
            schema[key] = _random_schema(rng, depth + 1)
        else:
            schema[key] = rng.choice(_VALUES)
    return schema


def test_plainly_valid_never_accepts_what_jsonschema_rejects() -> None:
    rng = random.Random(24)
    schemas = _real_schemas() + [_random_schema(rng) for _ in range(3000)]
    validators = (meta_validator("2020-12"), official_validator("2020-12"))
    accepted = rejected = 0
    for schema in schemas:
        valid = all(not list(validator.iter_errors(schema)) for validator in validators)
        if plainly_valid(schema):
            assert valid, schema
            accepted += 1
        elif not valid:
            rejected += 1
    assert accepted > 500 and rejected > 500  # the shortcut is taken often, and the sample holds invalid schemas


def test_most_real_schemas_are_plain() -> None:
    real = _real_schemas()
    assert sum(map(plainly_valid, real)) > len(real) // 3
