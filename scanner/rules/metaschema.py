"""Meta-schema validation for MCP214: which dialect a schema declares, and a validator for it, built once.

``jsonschema``'s own 2020-12 and 2019-09 meta-schemas are split into seven vocabulary documents joined by
``allOf`` and ``$dynamicRef``; validating a tool schema against them costs about 1.6 ms, too slow for a list of a
hundred tools checked in well under 0.1 s. :func:`_flatten` builds an equivalent single document from the very
same vocabulary documents (shipped with ``jsonschema``): their ``properties`` merged into one map (no keyword is
defined by two vocabularies), ``$dynamicRef: "#meta"`` / ``$recursiveRef: "#"`` turned into ``$ref: "#"``
(they resolve to the top meta-schema when a schema is checked against the standard one) and the small
non-recursive ``$defs`` inlined. It validates the same schemas about seven times faster; a test compares both on
valid and invalid schemas. Drafts 3 to 7 are single documents already and are used as they are.

Dialects are looked up by ``$schema`` with the trailing ``#`` and the ``http``/``https`` difference ignored.
A ``$schema`` that names no known dialect is checked as 2020-12 (the MCP default dialect) and the finding says
so; a ``$schema`` that is not a string is itself reported by the meta-schema (it must be a URI string).

:func:`plainly_valid` answers for most tool schemas without ``jsonschema``: a 2020-12 or draft-07 schema made
only of keywords whose rule is simple (type, description, properties, required, items, enum, anyOf ...) and
meeting those rules is valid (a ``pattern`` is checked by the validator's own format checker). Anything else
goes to the validator.

Formats are checked as ``jsonschema`` checks them, except ``regex``: JSON Schema patterns are ECMA-262, and the
few ECMA constructs Python's ``re`` lacks are rewritten before the syntax check (:func:`_python_pattern`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import (
    Draft3Validator,
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    FormatChecker,
)
from jsonschema.protocols import Validator

DEFAULT_DIALECT = "2020-12"
_CLASSES: dict[str, Any] = {
    "2020-12": Draft202012Validator,
    "2019-09": Draft201909Validator,
    "draft-07": Draft7Validator,
    "draft-06": Draft6Validator,
    "draft-04": Draft4Validator,
    "draft-03": Draft3Validator,
}
_SPLIT = {"2020-12": "https://json-schema.org/draft/2020-12/", "2019-09": "https://json-schema.org/draft/2019-09/"}


def _key(uri: str) -> str:
    uri = uri.strip().rstrip("#").lower()
    return uri.removeprefix("https://").removeprefix("http://")


_BY_URI: dict[str, str] = {_key(cls.META_SCHEMA["$schema"]): name for name, cls in _CLASSES.items()}
_BY_URI.update({_key(cls.META_SCHEMA.get("$id", cls.META_SCHEMA.get("id", ""))): n for n, cls in _CLASSES.items()})


@dataclass(frozen=True)
class Dialect:
    """The dialect a schema is checked against; ``declared`` is its ``$schema`` when that was not recognised."""

    name: str
    unknown: str | None = None


def dialect_of(schema: dict[str, Any]) -> Dialect:
    declared = schema.get("$schema")
    if not isinstance(declared, str):
        return Dialect(DEFAULT_DIALECT)
    name = _BY_URI.get(_key(declared))
    if name is None:
        return Dialect(DEFAULT_DIALECT, unknown=declared)
    return Dialect(name)


def _rewrite(node: Any, base: str) -> Any:
    """Point every recursion at the flattened document itself and every cross-document ``$ref`` at its ``$defs``."""
    if isinstance(node, list):
        return [_rewrite(item, base) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$dynamicRef", "$recursiveRef") and isinstance(value, str):
            out["$ref"] = "#"
        elif key == "$ref" and isinstance(value, str) and "#/$defs/" in value:
            out["$ref"] = "#/$defs/" + value.split("#/$defs/", 1)[1]
        elif key == "$ref" and isinstance(value, str) and value.startswith("meta/"):
            out["$ref"] = "#"
        else:
            out[key] = _rewrite(value, base)
    return out


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """Replace ``$ref: "#/$defs/x"`` by the (non-recursive) definition itself."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    target = node.get("$ref")
    if isinstance(target, str) and target.startswith("#/$defs/"):
        resolved = _inline(defs[target.removeprefix("#/$defs/")], defs)
        rest = {key: _inline(value, defs) for key, value in node.items() if key != "$ref"}
        return {"allOf": [resolved], **rest} if rest else resolved
    return {key: _inline(value, defs) for key, value in node.items()}


def _flatten(name: str) -> dict[str, Any]:
    from jsonschema_specifications import REGISTRY

    base = _SPLIT[name]
    top = REGISTRY[base + "schema"].contents
    assert isinstance(top, dict)
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    parts = [REGISTRY[base + part["$ref"]].contents for part in top.get("allOf", [])] + [top]
    for part in parts:
        assert isinstance(part, dict)
        for key, value in part.get("properties", {}).items():
            if key in properties:
                raise RuntimeError(f"{key} is defined by two vocabularies of {name}")
            properties[key] = _rewrite(value, base)
        for key, value in part.get("$defs", {}).items():
            defs[key] = _rewrite(value, base)
    flat = {"$schema": top["$schema"], "type": ["object", "boolean"], "properties": properties}
    return _inline(flat, defs)


def _python_pattern(pattern: str) -> str:
    """An ECMA-262 pattern rewritten so Python's ``re`` can compile it, for a syntax check only.

    JSON Schema patterns are ECMA-262 regular expressions; ``re`` rejects some valid ones (``\\p{L}``, named
    groups ``(?<name>...)``, ``\\u{1F600}``, ``\\cJ``, ``[^]``), which would make MCP214 call a good schema invalid.
    """
    out: list[str] = []
    position = 0
    length = len(pattern)
    while position < length:
        char = pattern[position]
        following = pattern[position + 1] if position + 1 < length else ""
        if char == "\\" and following:
            if following in "pP" and pattern.startswith("{", position + 2):
                end = pattern.find("}", position + 3)
                if end != -1:
                    out.append("x")
                    position = end + 1
                    continue
            if following == "u" and pattern.startswith("{", position + 2):
                end = pattern.find("}", position + 3)
                if end != -1:
                    out.append("x")
                    position = end + 1
                    continue
            if following == "k" and pattern.startswith("<", position + 2):
                end = pattern.find(">", position + 3)
                if end != -1:
                    out.append(f"(?P={pattern[position + 3 : end]})")
                    position = end + 1
                    continue
            if following == "c" and position + 2 < length and pattern[position + 2].isalpha():
                out.append("x")
                position += 3
                continue
            out.append(char + following)
            position += 2
            continue
        if pattern.startswith("(?<", position) and not pattern.startswith(("(?<=", "(?<!"), position):
            out.append("(?P<")
            position += 3
            continue
        if pattern.startswith("[^]", position):
            out.append("[\\s\\S]")
            position += 3
            continue
        out.append(char)
        position += 1
    return "".join(out)


def _is_ecma_regex(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    re.compile(_python_pattern(instance))
    return True


def _format_checker(cls: Any) -> FormatChecker:
    """The dialect's format checker with ``regex`` checked as ECMA-262 (see :func:`_python_pattern`)."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(cls.FORMAT_CHECKER.checkers)
    if "regex" in checker.checkers:
        checker.checkers["regex"] = (_is_ecma_regex, re.error)
    return checker


_lock = threading.Lock()
_validators: dict[str, Validator] = {}


def meta_validator(name: str) -> Validator:
    """The validator that checks schemas of dialect ``name`` (built on first use, then reused)."""
    with _lock:
        found = _validators.get(name)
        if found is None:
            cls = _CLASSES[name]
            meta = _flatten(name) if name in _SPLIT else cls.META_SCHEMA
            found = cls(meta, format_checker=_format_checker(cls))
            _validators[name] = found
        return found


_SIMPLE_TYPES = frozenset(("array", "boolean", "integer", "null", "number", "object", "string"))
PLAIN_KEYWORDS: dict[str, str] = {
    "$schema": "string",  # its format, uri, is not one jsonschema checks without extra packages
    "$ref": "string",  # nor is uri-reference
    "$comment": "string",
    "pattern": "pattern",
    "description": "string",
    "title": "string",
    "format": "string",
    "minimum": "number",
    "maximum": "number",
    "exclusiveMinimum": "number",
    "exclusiveMaximum": "number",
    "minLength": "count",
    "maxLength": "count",
    "minItems": "count",
    "maxItems": "count",
    "uniqueItems": "boolean",
    "enum": "array",
    "examples": "array",
    "default": "anything",
    "const": "anything",
    "type": "type",
    "required": "names",
    "properties": "schemas by name",
    "items": "schema",
    "additionalProperties": "schema",
    "not": "schema",
    "propertyNames": "schema",
    "$defs": "schemas by name",  # draft-07 does not know it: checking its schemas anyway only asks more
    "definitions": "schemas by name",
    "prefixItems": "schemas",  # draft-07 does not know it either (tuples as pydantic writes them): as $defs
    "anyOf": "schemas",
    "oneOf": "schemas",
    "allOf": "schemas",
}
"""Keywords whose rule in the 2020-12 and draft-07 meta-schemas :func:`plainly_valid` checks itself, and the kind
of value each must be (a test compares them with the meta-schemas' own documents)."""
PLAIN_DIALECTS = ("2020-12", "draft-07")


def plainly_valid(schema: Any, dialect: str) -> bool:
    """Whether a schema of a :data:`PLAIN_DIALECTS` dialect is valid by a cheap walk: True only when every schema
    in it uses nothing but :data:`PLAIN_KEYWORDS` and meets the meta-schema's rule for each. Anything else is
    False, meaning "ask ``jsonschema``", never "invalid". Most tool schemas are this plain, and skip a validation
    costing up to a millisecond each on a first night; a test checks it never says True where ``jsonschema``
    finds an error.
    """
    if dialect not in PLAIN_DIALECTS:
        return False
    checker = meta_validator(dialect).format_checker
    stack = [schema]
    while stack:
        node = stack.pop()
        if node is True or node is False:
            continue
        if type(node) is not dict:
            return False
        for key, value in node.items():
            kind = PLAIN_KEYWORDS.get(key)
            if kind is None or not _plain_value(kind, value):
                return False
            if kind == "pattern" and not (checker is not None and checker.conforms(value, "regex")):
                return False
            if kind == "schema":
                stack.append(value)
            elif kind == "schemas":
                stack.extend(value)
            elif kind == "schemas by name":
                stack.extend(value.values())
    return True


def _plain_value(kind: str, value: Any) -> bool:
    """Whether ``value`` is of the kind (schemas are only checked to be a list or a map of something)."""
    if kind in ("string", "pattern"):
        return type(value) is str
    if kind == "number":
        return type(value) is int or type(value) is float
    if kind == "count":
        return type(value) is int and value >= 0
    if kind == "boolean":
        return value is True or value is False
    if kind == "array":
        return type(value) is list
    if kind == "type":
        return _plain_type(value)
    if kind == "names":
        return type(value) is list and _distinct_strings(value)
    if kind == "schemas":
        return type(value) is list and bool(value)
    if kind == "schemas by name":
        return type(value) is dict
    return kind in ("anything", "schema")


def _plain_type(value: Any) -> bool:
    if type(value) is str:
        return value in _SIMPLE_TYPES
    return type(value) is list and bool(value) and _distinct_strings(value) and _SIMPLE_TYPES.issuperset(value)


def _distinct_strings(values: list[Any]) -> bool:
    return all(type(value) is str for value in values) and len(set(values)) == len(values)


def official_validator(name: str) -> Validator:
    """The validator ``check_schema`` itself would use (for tests comparing it with the flattened one)."""
    cls = _CLASSES[name]
    return cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER)


DIALECTS: tuple[str, ...] = tuple(_CLASSES)
ValidatorFactory = Callable[[str], Validator]
