"""Rules on the shape of a tool's ``inputSchema`` (MCP201-MCP206): an object at the root, with properties, that
does not accept anything, whose required names are defined, whose parameters are typed, whose objects say what
goes in them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from scanner.models import Severity
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.schema.common import (
    MAX_LISTED,
    _is_object_type,
    _is_refinement,
    _level_keys,
    _listing,
    _own_keys,
    _parameters_hit,
    _root_object,
    _typed,
    _where,
)
from scanner.rules.text import label
from scanner.rules.tools import Node, ToolInfo, pointer, type_label


@register(
    "MCP201",
    "schema-not-object",
    Severity.PROBLEM,
    hint=(
        'Every provider wants `{"type": "object", "properties": …}`; a tool without parameters says `"properties": {}`.'
    ),
    doc="""Checks that `inputSchema` is present, is a JSON object and has `"type": "object"`. Providers take a
    tool's parameters as one object schema; anything else is rejected or replaced, and the model cannot know what
    arguments to send. Such a list is not valid MCP either: clients that validate `tools/list` with the MCP
    TypeScript SDK's `ListToolsResultSchema` load no tool of the server, and the verdicts say they refuse it:
    Claude Code ("Failed to fetch tools: [{"code": "invalid_value", "values": ["object"], "path": ["tools", 0,
    "inputSchema", "type"], ...}]", "tools fetch failed":
    Mearman/mcp-wayback-machine#29, 2026-05; anthropics/claude-code#17742, 2026-01), Claude Desktop and Cursor
    ("Error listing tools ... Found 0 tools", anthropics/claude-code#10031 and #10825, 2025-10/11, for an
    `outputSchema` without `"type": "object"`, MCP216). The same holds for a tool without a name (MCP101) and for
    `"properties": []`, a property that is not an object (a boolean schema: MCP205) or a `required` that is not a
    list of strings (MCP214; PHP's `json_encode` writes an empty
    array as `[]`: use-novamira/novamira#82 "expected record, received array", craigk5n/webcalendar#725; the OpenAI
    API refuses that request too, "400 invalid_function_parameters: "[] is not of type 'object'"",
    shopware/shopware#18713, 2026-07). The oracle: the SDK's own `ListToolsResultSchema` (npm
    `@modelcontextprotocol/sdk`) run in tests/rules/test_oracles.py on the fixtures and the real lists.
    Bad: no `inputSchema`, `"inputSchema": {"type": "string"}` or `{"properties": {...}}` without a type.
    Good: `{"type": "object", "properties": {"query": {"type": "string"}}}`.""",
)
def schema_not_object(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    schema = tool.schema
    if not tool.is_object:
        yield Hit(
            f"Tool #{tool.index} is {type_label(tool.raw)}, not an object, so it has no inputSchema.",
            details={"problem": "not-object", **_refused(tool)},
        )
    elif not tool.has_schema:
        yield Hit(f"{tool.subject} has no inputSchema.", details={"problem": "missing", **_refused(tool)})
    elif not isinstance(schema, dict):
        yield Hit(
            f"The inputSchema of {tool.display} is {type_label(schema)}, not an object.",
            "/inputSchema",
            {"problem": "type", **_refused(tool)},
        )
    elif schema.get("type") != "object":
        found = schema.get("type")
        what = "has no type" if "type" not in schema else f"has type {label(found)}"
        yield Hit(
            f'The inputSchema of {tool.display} {what}; it must be "object".',
            "/inputSchema/type" if "type" in schema else "/inputSchema",
            {
                "problem": "not-object-type",
                "type": found if isinstance(found, (str, list)) else None,
                **_refused(tool),
            },
        )


def _refused(tool: ToolInfo) -> dict[str, object]:
    """The clients that refuse the whole list over this tool (a list that is not valid MCP), for the details."""
    from scanner.rules.clients_reject import sdk_list_clients

    found = sdk_list_clients(tool.raw, tool.index)
    return {"clients": found} if found else {}


@register(
    "MCP202",
    "schema-no-properties",
    Severity.NOTE,
    hint='Write `"properties": {}` if there are no parameters, or describe the ones there are.',
    doc="""Notes a root object schema without a `properties` key. Some clients and providers require the key, and
    a reader cannot tell "takes no arguments" from "arguments not described". Bad: `{"type": "object"}`.
    Good: `{"type": "object", "properties": {}}`.""",
)
def schema_no_properties(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    schema = _root_object(tool)
    if schema is not None and "properties" not in schema:
        yield Hit(f"The inputSchema of {tool.display} has no properties key.", "/inputSchema")


@register(
    "MCP203",
    "schema-accepts-anything",
    Severity.WARNING,
    hint="Describe the properties the tool reads, so the model does not invent arguments.",
    doc="""Warns when the root schema defines no parameters but explicitly allows any key, through
    `additionalProperties` set to `true` or a schema, or through `patternProperties`. The model then invents
    argument names and the server has to guess. Bad: `{"type": "object", "additionalProperties": true}`.
    Good: `{"type": "object", "properties": {"path": {"type": "string", "description": "File to read"}}}`.""",
)
def schema_accepts_anything(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    schema = _root_object(tool)
    if schema is None or _own_keys(schema):
        return
    extra = schema.get("additionalProperties", False)
    if extra is True or isinstance(extra, dict):
        yield Hit(
            f"The inputSchema of {tool.display} defines no properties but accepts any key (additionalProperties).",
            "/inputSchema/additionalProperties",
            {"keyword": "additionalProperties"},
        )
    elif "patternProperties" in schema:
        yield Hit(
            f"The inputSchema of {tool.display} defines no properties but accepts keys by pattern.",
            "/inputSchema/patternProperties",
            {"keyword": "patternProperties"},
        )


@register(
    "MCP204",
    "required-undefined",
    Severity.PROBLEM,
    hint="Define the property, or remove it from `required`.",
    doc="""Checks that every name in a `required` list (at any object level) is defined by that level's
    `properties` (including the properties of its `anyOf`/`oneOf`/`allOf` branches). A model must send a required
    argument but has no description or type for it, so it guesses the name and the value; strict validators
    reject the schema. Local `$ref`s are followed; a level whose `$ref` cannot be resolved (remote, an anchor) is
    not judged. Bad:
    `{"properties": {"q": {...}}, "required": ["query"]}`. Good: `"required": ["q"]`.""",
)
def required_undefined(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    missing: list[str] = []
    listed: set[str] = set()
    first: str | None = None
    cache: dict[int, tuple[set[str], bool]] = {}
    for node in tool.walk.nodes:
        required = node.get("required")
        if not isinstance(required, list) or (node.conditional and node.kind != "condition"):
            continue
        keys, opaque = _level_keys(tool, node, cache)
        if opaque:
            continue
        names = [name for name in required if isinstance(name, str) and name not in keys]
        for name in names:
            path = f"{node.path}.{name}" if node.path else name
            if path not in listed:
                listed.add(path)
                missing.append(path)
        if names and first is None:
            first = pointer((*node.tokens, "required"))
    if missing:
        yield Hit(
            f"{tool.subject} requires {_listing(missing)}, not defined in properties.",
            first,
            {"parameters": missing[:MAX_LISTED]},
        )


@register(
    "MCP205",
    "param-untyped",
    Severity.PROBLEM,
    hint="Give each a `type` (or an `enum`); otherwise a model guesses and OpenAI strict mode rejects it.",
    doc="""Checks that every parameter (any schema in a `properties` map, and array `items`) has a `type`,
    `enum`, `const` or `$ref`, or an `anyOf`/`oneOf`/`allOf` whose every branch is typed. An untyped parameter
    accepts anything, so a model sends a string where the server wanted a number; OpenAI strict mode refuses
    the tool. Properties that merely restate a parent's property inside a branch or condition are exempt; a
    local `$ref` is followed to the definition it names. Bad:
    `"limit": {"description": "How many"}`. Good: `"limit": {"type": "integer", "description": "How many, 1-100"}`.""",
)
def param_untyped(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found = [
        node for node in tool.params if not node.conditional and not _typed(node.schema) and not _is_refinement(node)
    ]
    if found:
        hit = _parameters_hit(tool, "has untyped parameters", found, fix=f'Add "type" to {_where(found)}.')
        refused = _refused(tool)  # a property given as `true`/`false`: not valid MCP for the SDK's schema
        yield replace(hit, details={**hit.details, **refused}) if refused else hit


_QUOTED_KEY = re.compile(r"[\"'`]([A-Za-z_$][\w.$-]{0,63})[\"'`]")


def _typed_map(extra: Any) -> bool:
    """``additionalProperties`` that is a schema with a type, or whose anyOf/oneOf branches all have one."""
    if not isinstance(extra, dict):
        return False
    if "type" in extra:
        return True
    for key in ("anyOf", "oneOf"):
        branches = extra.get(key)
        if isinstance(branches, list) and branches and all(isinstance(b, dict) and "type" in b for b in branches):
            return True
    return False


def _says_what_goes_in(description: Any) -> bool:
    """A description that already says what keys go in: it holds ``{`` or names two keys in quotes/backticks."""
    if not isinstance(description, str):
        return False
    return "{" in description or len(set(_QUOTED_KEY.findall(description))) >= 2


# Objects free-form by nature (catalogue 6, the wrong MCP206 findings on real lists): a JSON Schema the caller
# writes, and metadata the server stores as given.
_FREE_NAMES = frozenset(("schema", "jsonschema", "metadata", "meta"))
_JSON_SCHEMA = re.compile(r"\bjson[\s-]?schema\b", re.IGNORECASE)


def _free_by_nature(name: object, description: Any) -> bool:
    """A parameter named `schema`, `jsonSchema`, `*_schema`, `metadata` or `meta`, or described as a JSON Schema."""
    if isinstance(name, str):
        folded = name.lower().replace("_", "").replace("-", "")
        if folded in _FREE_NAMES or folded.endswith("schema"):
            return True
    return isinstance(description, str) and _JSON_SCHEMA.search(description[:2000]) is not None


@register(
    "MCP206",
    "object-free-form",
    Severity.WARNING,
    hint="Describe the keys, or say in the description what is expected.",
    status="removed",
    doc="""Retired in catalogue 6 (it never runs; the code is never reused): right 5 of 13 on hand-labelled real
    lists as catalogue 5 wrote it; tightened to skip JSON Schema and metadata objects, it was right 6 of 22 on fresh
    labels of 19 more real lists. Most free-form objects are free by nature: a MongoDB filter or document, a
    record's fields keyed by the user's own table, a query's parameters. What it checked: Warns about a parameter of
    type `object` (not the root) with no non-empty `properties`. Not reported
    for a typed map (`additionalProperties` is a schema with a `type`, or whose `anyOf`/`oneOf` branches all
    have one: labels, headers), for an object that allows no keys (`additionalProperties: false` and no
    `patternProperties`: empty on purpose), or when the parameter's own description already says what goes in
    (it holds `{`, or names at least two keys in quotes or backticks), nor for an object free-form by nature: a
    JSON Schema the caller writes (named `schema`, `jsonSchema`, `*_schema`, or described as a JSON Schema) or
    metadata stored as given (`metadata`, `meta`). A model has no idea which keys to send
    and invents them. Bad: `"filter": {"type": "object"}`. Good: `"filter": {"type": "object", "properties":
    {"status": {"type": "string"}}}`, `"labels": {"type": "object", "additionalProperties": {"type":
    "string"}}`, or a description such as "Keys `status` and `owner`".""",
)
def object_free_form(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found: list[Node] = []
    cache: dict[int, tuple[set[str], bool]] = {}
    for node in tool.params:
        schema = node.schema
        if node.conditional or not isinstance(schema, dict) or not _is_object_type(schema):
            continue
        extra = schema.get("additionalProperties")
        if _typed_map(extra) or (extra is False and "patternProperties" not in schema):
            continue
        if _says_what_goes_in(schema.get("description")) or _says_what_goes_in(node.owner().get("description")):
            continue
        if _free_by_nature(node.name, schema.get("description")):
            continue
        keys, opaque = _level_keys(tool, node, cache)
        if not keys and not opaque:
            found.append(node)
    if found:
        yield _parameters_hit(
            tool, "has free-form object parameters", found, fix=f'Add "properties" to {_where(found)}.'
        )
