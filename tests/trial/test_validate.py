"""Arguments against a tool's inputSchema: JSON Pointer, expected, got; the declared draft; nothing fetched."""

from __future__ import annotations

from typing import Any

import pytest

from scanner.trial.validate import ArgError, SchemaUnusable, check_arguments, check_expected, check_schema
from tests.trial.stub import Stub

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 2},
        "size": {"enum": ["S", "M", "L"]},
        "filters": {"type": "object", "properties": {"max/price": {"type": "number"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def test_valid_arguments_have_no_errors() -> None:
    assert check_arguments(SCHEMA, {"query": "tent", "size": "M", "tags": ["a"]}) == ()


def test_each_error_names_the_argument_what_was_expected_and_what_came() -> None:
    errors = check_arguments(
        SCHEMA, {"size": "XL", "filters": {"max/price": "cheap"}, "tags": ["ok", 3], "colour": "red"}
    )
    assert set(errors) == {
        ArgError("/query", "a required argument", "<missing>"),
        ArgError("/colour", "no such argument", '"red"'),
        ArgError("/size", 'one of ["S", "M", "L"]', '"XL"'),
        ArgError("/filters/max~1price", 'type "number"', '"cheap"'),
        ArgError("/tags/1", 'type "string"', "3"),
    }


def test_the_declared_draft_is_used() -> None:
    # Draft 4: exclusiveMaximum is a boolean beside maximum; in 2020-12 the same schema is invalid.
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"n": {"type": "integer", "maximum": 5, "exclusiveMaximum": True}},
    }
    assert check_arguments(draft4, {"n": 5}) == (ArgError("/n", "maximum: 5", "5"),)
    assert check_arguments(draft4, {"n": 4}) == ()
    with pytest.raises(SchemaUnusable, match="not a valid schema"):
        check_arguments({k: v for k, v in draft4.items() if k != "$schema"}, {"n": 5})


def test_default_draft_is_2020_12() -> None:
    # prefixItems exists only from 2020-12 on.
    schema = {"properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}}
    assert check_arguments(schema, {"pair": ["a", "b"]}) == (ArgError("/pair/1", 'type "integer"', '"b"'),)


def test_a_remote_ref_is_never_fetched(stub: Stub) -> None:
    schema = {"properties": {"q": {"$ref": f"{stub.url}/schema.json"}}}
    with pytest.raises(SchemaUnusable, match="does not resolve inside it"):
        check_arguments(schema, {"q": 1})
    assert stub.requests == []


def test_local_refs_resolve() -> None:
    schema = {"$defs": {"id": {"type": "string"}}, "properties": {"id": {"$ref": "#/$defs/id"}}}
    assert check_arguments(schema, {"id": 7}) == (ArgError("/id", 'type "string"', "7"),)


def test_a_bad_pattern_is_reported_not_raised_through() -> None:
    with pytest.raises(SchemaUnusable, match=r"not a valid schema: '\(unclosed' is not a 'regex'"):
        check_arguments({"properties": {"q": {"type": "string", "pattern": "(unclosed"}}}, {"q": "x"})


def test_missing_schema_means_an_object() -> None:
    assert check_arguments(None, {"anything": 1}) == ()
    assert check_arguments(None, ["not", "an", "object"]) == (ArgError("", 'type "object"', '["not", "an", "object"]'),)


def test_expected_values() -> None:
    assert check_expected({"query": "tent", "n": 2}, {"query": "tent", "n": 2.0}) == ()
    assert check_expected({"query": "tent", "flag": True}, {"flag": 1}) == (
        ArgError("/query", '"tent"', "<missing>"),
        ArgError("/flag", "true", "1"),
    )


def test_check_schema_of_a_case() -> None:
    assert check_schema({"required": ["query"]}) is None
    assert check_schema({"type": "strnig"}) is not None
    assert check_schema(["not a schema"]) == "arguments_schema must be a JSON Schema object"


def test_a_huge_enum_of_objects_is_checked_quickly() -> None:
    import time

    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"a": {"enum": [{"k": i} for i in range(4000)]}},
    }
    started = time.monotonic()
    assert check_arguments(schema, {"a": {"k": 1}}) == ()
    assert check_arguments(schema, {"a": {"k": -1}})[0].pointer == "/a"
    assert time.monotonic() - started < 30  # the meta-schema's quadratic uniqueness check would take about a minute
