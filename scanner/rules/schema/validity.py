"""Rules on the schema's validity (MCP214-MCP217): ``inputSchema`` and ``outputSchema`` valid under their dialect's
meta-schema (memoised by hash), no unused ``$defs``, no JSON hidden in a string parameter.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import ValidationError, relevance

from scanner.models import SCHEMA_DEPTH_LIMIT, Severity, canonical_json
from scanner.rules.metaschema import dialect_of, meta_validator, plainly_valid
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.schema.common import MAX_LISTED, _listing, _parameters_hit
from scanner.rules.schema.size import compact_json
from scanner.rules.text import label
from scanner.rules.tools import Node, ToolInfo, json_too_costly, pointer, type_label

# Beyond this JSON nesting the meta-schema check is skipped (jsonschema recurses); MCP212 reports such schemas.
VALIDATION_DEPTH_LIMIT = 4 * SCHEMA_DEPTH_LIMIT
# An array of more objects or arrays than this is not checked either: jsonschema's uniqueness test is quadratic.
VALIDATION_CONTAINERS_LIMIT = 256


_cache_lock = threading.Lock()
_validation_cache: OrderedDict[tuple[str, str], tuple[tuple[str, str], ...]] = OrderedDict()
_CACHE_SIZE = 4096


def _schema_errors(schema: dict[str, Any], dialect: str) -> tuple[tuple[str, str], ...]:
    """Up to five (pointer inside the schema, message) errors against the dialect's meta-schema, cached."""
    if plainly_valid(schema, dialect):
        return ()
    try:
        key = (dialect, canonical_json(schema))
    except (TypeError, ValueError, RecursionError):
        key = None
    if key is not None:
        with _cache_lock:
            cached = _validation_cache.get(key)
            if cached is not None:
                _validation_cache.move_to_end(key)
                return cached
    errors = sorted(meta_validator(dialect).iter_errors(schema), key=relevance)
    result = tuple(
        (pointer([str(part) for part in error.absolute_path]), label(_explain(error), 200)) for error in errors[:5]
    )
    if key is not None:
        with _cache_lock:
            _validation_cache[key] = result
            if len(_validation_cache) > _CACHE_SIZE:
                _validation_cache.popitem(last=False)
    return result


_TYPES = "array, boolean, integer, null, number, object, string"


def _explain(error: ValidationError) -> str:
    """jsonschema's message, made specific where it only says "not valid under any of the given schemas"."""
    path = list(error.absolute_path)
    if error.validator == "anyOf" and path and path[-1] == "type":
        if isinstance(error.instance, list):
            return f"type {label(error.instance, 60)} must list distinct JSON Schema types ({_TYPES})"
        return f"{label(error.instance, 60)!r} is not a JSON Schema type ({_TYPES})"
    return error.message


@register(
    "MCP214",
    "schema-invalid",
    Severity.PROBLEM,
    hint="Fix the schema so a client's validator accepts it.",
    doc="""Checks `inputSchema` against the meta-schema of its dialect (`$schema`; JSON Schema 2020-12 when absent
    or not recognised) with the `jsonschema` library, formats included (a `pattern` must compile). Clients and
    providers validate tool schemas; an invalid one makes the tool unusable or the request fail. Schemas nested
    deeper than Fathom follows (MCP212 reports them), or holding an array of more than 256 objects or arrays, are
    not checked: validating them could take minutes. Bad: `"type": "text"`, `"required": "q"`.
    Good: `"type": "string"`, `"required": ["q"]`.""",
)
def schema_invalid(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    schema = tool.schema
    if not isinstance(schema, dict) or tool.walk.truncated or tool.walk.crowded:
        return
    if json_too_costly(schema, VALIDATION_DEPTH_LIMIT, VALIDATION_CONTAINERS_LIMIT):
        return
    dialect = dialect_of(schema)
    try:
        errors = _schema_errors(schema, dialect.name)
    except RecursionError:
        return
    if not errors:
        return
    where, first = errors[0]
    checked = f"JSON Schema {dialect.name}"
    if dialect.unknown is not None:
        checked += f" (its $schema {label(dialect.unknown, 60)!r} is not one Fathom knows)"
    yield Hit(
        f"The inputSchema of {tool.display} is not valid {checked}: {first}" + (f" at {where}" if where else "") + ".",
        "/inputSchema" + where,
        {
            "dialect": dialect.name,
            "errors": [{"pointer": "/inputSchema" + path, "message": message} for path, message in errors],
            **({"declared": label(dialect.unknown, 200)} if dialect.unknown is not None else {}),
            **_refused(tool),
        },
    )


def _refused(tool: ToolInfo) -> dict[str, object]:
    """The clients that refuse the whole list over this tool (not valid MCP: ``properties`` or ``required`` of the
    wrong type, an output schema not of type object), for the details."""
    from scanner.rules.clients_reject import sdk_list_clients

    found = sdk_list_clients(tool.raw, tool.index)
    return {"clients": found} if found else {}


def _definition_text(name: str, schema: Any) -> str:
    """A definition as the JSON-sending providers carry it: ``"Name": {...}`` (sorted keys, ordinary separators)."""
    try:
        body = json.dumps(schema, sort_keys=True, ensure_ascii=False)
    except (RecursionError, TypeError, ValueError):
        body = compact_json(schema)
    return f"{json.dumps(name, ensure_ascii=False)}: {body}"


@register(
    "MCP215",
    "defs-unused",
    Severity.NOTE,
    hint="Remove the definitions this tool does not use; every provider sends them on every turn.",
    status="stable",
    doc="""Notes definitions (`$defs` or `definitions` of `inputSchema`) that no parameter reaches through a
    `$ref`, with what they cost per turn (tokens with the most expensive provider). A model never needs them to
    fill the arguments, but the schema is sent whole, so they are paid for on every turn; servers that share one
    block of definitions across all their tools pay for it once per tool. Definitions that carry `$id`,
    `$anchor` or `$dynamicAnchor` may be reached by other means and are not reported. Bad: 24 tools each
    carrying the same 600-token `$defs` block that 18 of them never reference. Good: each tool carries only the
    definitions its parameters use.""",
)
def defs_unused(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if not isinstance(tool.schema, dict) or tool.walk.crowded or tool.walk.truncated:
        return
    unused = [
        (tokens, name, sub)
        for tokens, name, sub in tool.unreached_definitions
        if not (isinstance(sub, dict) and any(key in sub for key in ("$id", "$anchor", "$dynamicAnchor")))
    ]
    if not unused:
        return
    costs: dict[str, int] = {}
    method = ""
    for _tokens, name, sub in unused:
        tokens, method = ctx.cost(_definition_text(name, sub))
        costs[label(name, 100)] = costs.get(label(name, 100), 0) + tokens
    total = sum(costs.values())
    names = list(costs)
    yield Hit(
        f"{tool.subject} carries {len(unused)} definition{'' if len(unused) == 1 else 's'} no parameter uses "
        f"({_listing(names)}), costing {total} tokens per turn.",
        pointer(unused[0][0]),
        {
            "definitions": names[:MAX_LISTED],
            "count": len(unused),
            "tokens": total,
            "tokens_by_definition": dict(list(costs.items())[:MAX_LISTED]),
            "method": method,
        },
    )


@register(
    "MCP216",
    "output-schema-invalid",
    Severity.PROBLEM,
    hint=(
        "Since protocol 2025-06-18 an output schema must describe an object; clients validate `structuredContent` "
        "against it."
    ),
    status="preview",
    doc="""Checks a tool's `outputSchema`, when present: it must be a JSON object with `"type": "object"`, valid
    against the meta-schema of its dialect (`$schema`; 2020-12 when absent), checked with `jsonschema` as MCP214
    checks `inputSchema`. A client validates each result's `structuredContent` against it; an output schema
    that is not an object schema, or not valid, makes every call's result fail validation or be ignored. Bad:
    `"outputSchema": {"type": "array", "items": {...}}`. Good: `{"type": "object", "properties": {"items":
    {"type": "array", ...}}}`.""",
)
def output_schema_invalid(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if not tool.has_output_schema:
        return
    schema = tool.output_schema
    if not isinstance(schema, dict):
        yield Hit(
            f"The outputSchema of {tool.display} is {type_label(schema)}, not an object schema.",
            "/outputSchema",
            {"problem": "type", **_refused(tool)},
        )
        return
    if schema.get("type") != "object":
        found = schema.get("type")
        what = "has no type" if "type" not in schema else f"has type {label(found)}"
        yield Hit(
            f'The outputSchema of {tool.display} {what}; it must be "object".',
            "/outputSchema/type" if "type" in schema else "/outputSchema",
            {"problem": "not-object-type", **_refused(tool)},
            fix='Set "type": "object" in outputSchema.',
        )
        return
    if json_too_costly(schema, VALIDATION_DEPTH_LIMIT, VALIDATION_CONTAINERS_LIMIT):
        return
    dialect = dialect_of(schema)
    try:
        errors = _schema_errors(schema, dialect.name)
    except RecursionError:
        return
    if errors:
        where, first = errors[0]
        yield Hit(
            f"The outputSchema of {tool.display} is not valid JSON Schema {dialect.name}: {first}"
            + (f" at {where}" if where else "")
            + ".",
            "/outputSchema" + where,
            {
                "problem": "invalid",
                "dialect": dialect.name,
                "errors": [{"pointer": "/outputSchema" + path, "message": message} for path, message in errors],
                **_refused(tool),
            },
        )


_JSON_IN_STRING = re.compile(
    r"\bjson[\s-]+string\b|\bjson[\s-]encoded\b|\bserialized\s+json\b|\bstringified\s+json\b"
    r"|\bserialized\s+from\s+a\s+json\b|\bas\s+a\s+json\s+object\s+string\b",
    re.IGNORECASE,
)


@register(
    "MCP217",
    "json-in-string",
    Severity.WARNING,
    hint=(
        "Declare the structure as an object or array schema: a model fills a typed structure far more reliably "
        "than it escapes JSON inside a string."
    ),
    status="stable",
    doc="""Warns about a parameter of type `string` whose own description says it holds JSON ("JSON string",
    "JSON-encoded", "serialized JSON", "stringified JSON", "serialized from a JSON", "as a JSON object string",
    case-insensitive). The model must then write the structure and escape it inside a string, with no schema to
    follow: quotes and nesting go wrong, and the server gets text it cannot parse. One finding per tool, the
    parameters in details. Bad: `"filters": {"type": "string", "description": "Filters as a JSON string"}`.
    Good: `"filters": {"type": "object", "properties": {"status": {"type": "string"}}}`.""",
)
def json_in_string(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found: list[Node] = []
    for node in tool.params:
        if node.conditional or not _string_typed(node.get("type")):
            continue
        text = node.get("description")
        if isinstance(text, str) and "json" in text.lower() and _JSON_IN_STRING.search(text[:100_000]):
            found.append(node)
    if found:
        yield _parameters_hit(tool, "has string parameters that hold JSON", found)


def _string_typed(value: Any) -> bool:
    return value == "string" or (isinstance(value, list) and "string" in value)
