"""Rules on the schema's size (MCP210-MCP213): its tokens, its root parameters, its nesting, its enums; and the
compact JSON text a schema is measured by (:func:`compact_json`, :func:`schema_text`, shared with MCP1xx).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from scanner.models import SCHEMA_DEPTH_LIMIT, Severity, canonical_json
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.schema.common import MAX_LISTED, _is_object_type, _listing, _own_keys, _paths
from scanner.rules.tools import Node, ToolInfo, pointer

SCHEMA_TOKEN_LIMIT = 1000
ROOT_PARAM_LIMIT = 25
NESTING_LIMIT = 5
ENUM_LIMIT = 40


def compact_json(value: Any) -> str:
    """The compact JSON text of a value (no spaces, sorted keys, UTF-8 kept), even for very deep values.

    Keys are sorted as in :func:`scanner.models.canonical_json`, the form the store keeps toolsets in, so a
    stored toolset re-scored later counts exactly what the scan counted.
    """
    try:
        return canonical_json(value)
    except RecursionError:
        return _compact_iterative(value)


def _compact_iterative(value: Any) -> str:
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif isinstance(item, dict):
            out.append("{")
            parts: list[Any] = []
            for position, (key, child) in enumerate(sorted(item.items(), key=lambda pair: str(pair[0]))):
                if position:
                    parts.append(_Raw(","))
                parts.append(_Raw(json.dumps(str(key), ensure_ascii=False) + ":"))
                parts.append(child)
            parts.append(_Raw("}"))
            stack.extend(reversed(parts))
        elif isinstance(item, list):
            out.append("[")
            parts = []
            for position, child in enumerate(item):
                if position:
                    parts.append(_Raw(","))
                parts.append(child)
            parts.append(_Raw("]"))
            stack.extend(reversed(parts))
        else:
            out.append(json.dumps(item, ensure_ascii=False))
    return "".join(out)


def schema_text(tool: ToolInfo) -> str:
    """The tool's ``inputSchema`` as compact JSON, computed once per tool (MCP107 and MCP210 both read it). JSON
    may carry lone surrogates ("\\ud800"), which UTF-8 cannot encode: they become U+FFFD, as sent."""
    text = tool.cache.get("schema_json")
    if text is None:
        text = compact_json(tool.schema)
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate, which only the strict encoder refuses
                text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        tool.cache["schema_json"] = text
    return text


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


@register(
    "MCP210",
    "schema-large",
    Severity.WARNING,
    hint="Split the tool, or move rarely used options out of the schema.",
    doc="""Warns when `inputSchema` alone costs more than 1000 tokens (o200k_base, compact JSON with sorted keys).
    The schema is sent on every turn and a large one crowds out the conversation; it usually means one tool
    does the work of several. Bad: one `manage_everything` tool with sixty options. Good: a few focused tools,
    rare options grouped or moved to a resource.""",
)
def schema_large(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if not isinstance(tool.schema, dict):
        return
    text = schema_text(tool)
    encoded = text.encode("utf-8")
    # A byte-level BPE token covers at least one UTF-8 byte, so a text of at most 1000 bytes is within the limit.
    if len(encoded) <= SCHEMA_TOKEN_LIMIT:
        return
    tokens = ctx.count_tokens(text)
    if tokens > SCHEMA_TOKEN_LIMIT:
        yield Hit(
            f"The inputSchema of {tool.display} costs {tokens} tokens (more than {SCHEMA_TOKEN_LIMIT}).",
            "/inputSchema",
            {"tokens": tokens},
        )


@register(
    "MCP211",
    "params-too-many",
    Severity.WARNING,
    hint="Split the tool, or group the options.",
    doc="""Warns about more than 25 root parameters. With that many options a model fills the wrong ones or
    leaves out the one that matters. Bad: a `search` tool with 40 flat flags. Good: the five common filters at
    the root and the rest grouped in an `advanced` object, or a second tool.""",
)
def params_too_many(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    count = len(_own_keys(tool.schema))
    if count > ROOT_PARAM_LIMIT:
        yield Hit(
            f"{tool.subject} has {count} root parameters (more than {ROOT_PARAM_LIMIT}).",
            "/inputSchema/properties",
            {"count": count},
        )


def _object_like(schema: Any) -> bool:
    return isinstance(schema, dict) and (_is_object_type(schema) or isinstance(schema.get("properties"), dict))


def _nesting(node: Node, levels: dict[int, int]) -> int:
    """MCP212's level of a node: property hops from the root, plus items hops whose items are objects."""
    known = levels.get(id(node))
    if known is not None:
        return known
    chain: list[Node] = []
    current: Node | None = node
    while current is not None and id(current) not in levels:
        chain.append(current)
        current = current.parent
    level = levels[id(current)] if current is not None else 0
    for item in reversed(chain):
        if item.kind == "property" or (item.kind == "items" and _object_like(item.schema)):
            level += 1
        levels[id(item)] = level
    return level


@register(
    "MCP212",
    "nesting-deep",
    Severity.WARNING,
    hint="Flatten the arguments; models fill deep structures badly.",
    doc="""Warns when parameters nest more than 5 levels (a root parameter is level 1; each nested object
    property adds one; array `items` add one only when the items are objects, so a list of strings is no
    deeper than a string), or when the schema nests deeper than Fathom follows at all (64 schema
    levels). Models lose track of deep structures and put values at the wrong level. Bad:
    `order.customer.address.geo.point.lat`. Good: `lat` and `lon` as parameters of their own.""",
)
def nesting_deep(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    levels: dict[int, int] = {}
    deep = [node for node in tool.params if _nesting(node, levels) > NESTING_LIMIT]
    walk = tool.walk
    if not deep and not walk.truncated:
        return
    depth = max((_nesting(node, levels) for node in walk.nodes), default=0)
    details: dict[str, Any] = {"depth": depth}
    if deep:
        crossing = [node for node in deep if _nesting(node, levels) == NESTING_LIMIT + 1]
        details["parameters"] = _paths(crossing)[:MAX_LISTED]
    if walk.truncated:
        details["truncated"] = True
        message = (
            f"The inputSchema of {tool.display} nests deeper than {SCHEMA_DEPTH_LIMIT} schema levels "
            f"(parameters at least {depth} levels deep)."
        )
    else:
        message = f"{tool.subject} nests parameters {depth} levels deep (more than {NESTING_LIMIT})."
    yield Hit(message, deep[0].pointer if deep else "/inputSchema", details)


@register(
    "MCP213",
    "enum-large",
    Severity.NOTE,
    hint=(
        "Take a free string and name a few examples in the description, or split the values across parameters: "
        "every value is read on every turn."
    ),
    doc="""Notes an `enum` with more than 40 values. Every value is part of the tool list the model reads on each
    turn, and a long list of codes is costly and rarely read closely. Bad: every ISO country code as an enum.
    Good: `"type": "string"` with "ISO 3166 alpha-2 code, e.g. DE" in the description.""",
)
def enum_large(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found = [
        node for node in tool.walk.nodes if isinstance(node.get("enum"), list) and len(node.get("enum")) > ENUM_LIMIT
    ]
    if found:
        paths = _paths(found)
        largest = max(len(node.get("enum")) for node in found)
        yield Hit(
            f"{tool.subject} has an enum of {largest} values at {_listing(paths)} (more than {ENUM_LIMIT}).",
            pointer((*found[0].tokens, "enum")),
            {"parameters": paths[:MAX_LISTED], "values": largest},
        )
