"""Rules on what a provider's conversion of the schema loses (MCP208-MCP209): ``$ref`` and the keywords Gemini drops."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scanner.models import Severity
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.schema.common import MAX_LISTED, _listing, _paths
from scanner.rules.text import label
from scanner.rules.tools import Node, ToolInfo, pointer

GEMINI_DROPPED = frozenset(
    (
        "oneOf",
        "allOf",
        "not",
        "const",
        "pattern",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "unevaluatedItems",
        "prefixItems",
    )
)


@register(
    "MCP208",
    "uses-ref",
    Severity.WARNING,
    hint="Gemini drops it, so the parameter accepts anything there; OpenAI strict mode needs it inlined.",
    doc="""Warns when a parameter uses `$ref` (a reference inside a definition that no parameter reaches does not
    count; MCP215 reports such definitions). Clients that convert the schema to Gemini's `parameters` field (an
    OpenAPI subset, e.g. google-genai's Python MCP support) have no references, so the referenced part is dropped
    and the parameter accepts anything there; clients that send `parametersJsonSchema` (Gemini CLI, the
    @google/genai MCP adapter) keep it. OpenAI strict mode and several clients need it inlined. Bad: `"address":
    {"$ref": "#/$defs/Address"}`. Good: the address object written out in place.""",
)
def uses_ref(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found = [node for node in tool.walk.nodes if isinstance(node.schema, dict) and "$ref" in node.schema]
    if found:
        paths = _paths(found)
        refs = list(dict.fromkeys(label(node.get("$ref"), 100) for node in found))[:MAX_LISTED]
        yield Hit(
            f"{tool.subject} uses $ref at {_listing(paths)}: lost where a client sends Gemini's `parameters` "
            "(OpenAPI subset), kept with `parametersJsonSchema`.",
            pointer((*found[0].tokens, "$ref")),
            {"parameters": paths[:MAX_LISTED], "refs": refs},
        )


@register(
    "MCP209",
    "gemini-drops-keywords",
    Severity.NOTE,
    hint="Where the constraint matters, say it in the parameter's description too: Gemini loses the keyword.",
    status="removed",
    doc="""Retired in catalogue 6 (it never runs; the code is never reused): right 4 of 20 on hand-labelled real
    lists. The keywords Gemini drops were mostly formats the description already states, id patterns a model copies
    from an earlier answer, and `propertyNames` on JSON Schema objects; the Gemini provider view (docs/tokens.md)
    still shows what Gemini receives. What it checked: Notes constraint keywords that the Gemini conversion drops:
    oneOf, allOf, not, const, pattern,
    additionalProperties, patternProperties, propertyNames, exclusiveMinimum, exclusiveMaximum, multipleOf,
    uniqueItems, contains, minContains, maxContains, if, then, else, dependentRequired, dependentSchemas,
    unevaluatedProperties, unevaluatedItems, prefixItems. `additionalProperties` counts only when its value is a
    schema with a `type` or constraints (a typed map): `false`, `true` and `{}` constrain nothing a model fills
    in (zod and pydantic emit `false` on every object) and never fire. Where a client converts the schema to Gemini's
    `parameters` field (an OpenAPI subset) the model never sees them, so it may send values the server then
    rejects; clients that send `parametersJsonSchema` keep them. Bad: `"code": {"type": "string", "pattern":
    "^[A-Z]{3}$"}` alone. Good: also say it in the description ("three capital letters, e.g. EUR"), or use an
    `enum`.""",
)
def gemini_drops_keywords(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    keywords: list[str] = []
    places: list[Node] = []
    first: str | None = None
    for node in tool.walk.nodes:
        if not isinstance(node.schema, dict):
            continue
        hits = [key for key in node.schema if key in GEMINI_DROPPED and _constrains(key, node.schema[key])]
        if hits:
            places.append(node)
            if first is None:
                first = pointer((*node.tokens, hits[0]))
            keywords.extend(key for key in hits if key not in keywords)
    if keywords:
        paths = _paths(places)
        yield Hit(
            f"{tool.subject} uses {', '.join(sorted(keywords))}: dropped where a client converts the schema to "
            "Gemini's `parameters` (OpenAPI subset), kept with `parametersJsonSchema`.",
            first,
            {"keywords": sorted(keywords), "parameters": paths[:MAX_LISTED]},
        )


_ANNOTATION_KEYS = frozenset(("description", "title", "examples", "default", "$comment", "deprecated"))


def _constrains(keyword: str, value: Any) -> bool:
    """Whether a dropped keyword constrains what a model fills in: ``additionalProperties`` only as a schema with a
    type or a constraint (a typed map); ``false``, ``true`` and ``{}`` constrain nothing a model sends."""
    if keyword != "additionalProperties":
        return True
    return isinstance(value, dict) and any(key not in _ANNOTATION_KEYS for key in value)
