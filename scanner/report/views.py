"""A server page's "Its list as each provider receives it": each provider's view as pretty JSON, and every tool's
cost per provider.

The first provider's view is shown in full; another provider that sends the same names, descriptions and schemas
only wrapped otherwise is shown as its *shape* (one tool's wrapping, the tool's own parts written NAME,
DESCRIPTION and SCHEMA), so a page does not repeat its list once per provider; a provider that changes a tool
(a converted schema) is shown in full too. Each view is cut at :data:`PROVIDER_VIEW_LIMIT` characters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from scanner.models import SCHEMA_DEPTH_LIMIT, ToolCost
from scanner.report.data import ToolCostRow

if TYPE_CHECKING:
    from scanner.providers.base import ToolParts

PROVIDER_VIEW_LIMIT = 400_000  # characters of pretty JSON shown per provider; a huge list is cut, not rendered


def pretty_json(value: object, depth: int = 0) -> str:
    """JSON with one tool per line: lists are broken over lines (and a one-key object holding a list, like
    Gemini's ``{"functionDeclarations": [...]}``); everything else, a tool with its schema, stays on one line.

    ``json.dumps(indent=2)`` falls back to the pure-Python encoder and spreads a schema over hundreds of lines;
    this keeps the C encoder for the bulk, several times faster on a site of thousands of lists, and the page
    reads as one tool per block (``<pre>`` wraps long lines).
    """
    pad, inner = "  " * depth, "  " * (depth + 1)
    if depth < SCHEMA_DEPTH_LIMIT and isinstance(value, list) and value:
        return "[\n" + ",\n".join(inner + pretty_json(item, depth + 1) for item in value) + "\n" + pad + "]"
    if depth < SCHEMA_DEPTH_LIMIT and isinstance(value, dict) and len(value) == 1:
        ((key, item),) = value.items()
        if isinstance(item, list):
            return "{" + json.dumps(str(key), ensure_ascii=False) + ": " + pretty_json(item, depth) + "}"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def view_text(provider: str, parts: Sequence[ToolParts]) -> str:
    """What ``Provider.view`` gives over tools read once, as pretty JSON cut at the limit."""
    from scanner.providers import get

    implementation = get(provider)
    declarations = [implementation.declaration(part) for part in parts]
    text = pretty_json(implementation.wrap(declarations) if declarations else [])
    return text if len(text) <= PROVIDER_VIEW_LIMIT else text[:PROVIDER_VIEW_LIMIT] + "\n… (cut)"


def _tool_costs(
    tools: Sequence[object],
    read: Sequence[ToolParts | None],
    providers: Sequence[str],
    stored: Sequence[ToolCost] | None,
) -> tuple[ToolCostRow, ...]:
    """Every tool's tokens per provider, dearest first. The scan stored each tool's cost per provider
    (``tool_tokens``) from the same measurement (``scanner.measure.toollist.measure``): those are used when there is one
    per tool, in order, with every provider shown; otherwise the list is measured again."""
    from scanner.measure.toollist import tool_label
    from scanner.models import MEASURED_PROVIDERS

    shown = [name for name in MEASURED_PROVIDERS if name in providers]
    per_tool: list[dict[str, int]] | None = None
    if stored is not None and len(stored) == len(tools):
        kept = [
            {name: cost.tokens[name] for name in shown}
            for index, cost in enumerate(stored)
            if cost.index == index and all(isinstance(cost.tokens.get(name), int) for name in shown)
        ]
        per_tool = kept if len(kept) == len(tools) else None
    if per_tool is None:
        from scanner.providers import measure_all

        measured = {name: value for name, value in measure_all(read).items() if name in providers}
        per_tool = [
            {name: value.per_tool[index] for name, value in measured.items() if index < len(value.per_tool)}
            for index in range(len(tools))
        ]
    costs = [
        ToolCostRow(name=tool_label(tool, index), index=index, tokens=tokens)
        for index, (tool, tokens) in enumerate(zip(tools, per_tool, strict=True))
    ]
    key = providers[0] if providers else ""
    costs.sort(key=lambda row: (-row.tokens.get(key, 0), row.index))
    return tuple(costs)


_HOLES = ("NAME", "DESCRIPTION", "SCHEMA")
_HOLE_MARK = "\x00fathom-hole-"


def _hollow(value: object, part: ToolParts, holes: list[str], depth: int = 0) -> object:
    """One provider's declaration of a tool with the tool's own name, description and schema (the very objects
    read from the tool; an empty schema put in for a missing one) replaced by marks, each mark noted in
    ``holes``: what is left is the provider's wrapping."""
    from scanner.providers.base import EMPTY_OBJECT_SCHEMA

    hole = ""
    if value is part.name:
        hole = "NAME"
    elif part.description is not None and value is part.description:
        hole = "DESCRIPTION"
    elif (part.schema is not None and value is part.schema) or (part.schema is None and value == EMPTY_OBJECT_SCHEMA):
        hole = "SCHEMA"
    if hole:
        holes.append(hole)
        return _HOLE_MARK + hole
    if depth < 4 and isinstance(value, dict):
        return {key: _hollow(item, part, holes, depth + 1) for key, item in value.items()}
    if depth < 4 and isinstance(value, list):
        return [_hollow(item, part, holes, depth + 1) for item in value]
    return value


def shape_of(provider: str, parts: Sequence[ToolParts]) -> str | None:
    """How ``provider`` wraps each tool, when it wraps every tool the same way around the tool's own name,
    description and schema (so its view is the first provider's values in this shape): its ``tools`` value with
    one declaration, the tool's parts written NAME, DESCRIPTION and SCHEMA. None when a tool is sent otherwise
    (its parts changed, one tool lacks a part the others have, or a part is not told apart from the wrapping):
    that provider's view is shown in full."""
    from scanner.providers import get

    implementation = get(provider)
    shape = ""
    for part in parts:
        holes: list[str] = []
        text = json.dumps(_hollow(implementation.declaration(part), part, holes))
        # Each part once: a name that is the very string the wrapping uses too (a one-letter name, say) would
        # make a mark where the provider's own text is.
        if sorted(holes) not in (["NAME", "SCHEMA"], ["DESCRIPTION", "NAME", "SCHEMA"]):
            return None
        if shape and text != shape:
            return None
        shape = text
    text = pretty_json(implementation.wrap([json.loads(shape)]))
    for hole in _HOLES:
        text = text.replace(json.dumps(_HOLE_MARK + hole), hole)
    return text


def page_views(
    tools: Sequence[object], providers: Sequence[str], stored: Sequence[ToolCost] | None = None
) -> tuple[dict[str, str], dict[str, str], tuple[ToolCostRow, ...]]:
    """A server page's provider views: the first provider's in full, each other provider's as its shape
    (:func:`shape_of`) when its view is the same values wrapped otherwise, else in full too; and every tool's
    costs (:func:`_tool_costs`). Every provider is in full when the first one's own view is not a shape over
    the tools' parts (then no view can point to it)."""
    from scanner.providers.base import read_tool

    read = [read_tool(tool) for tool in tools]
    parts = [part for part in read if part is not None]
    shapes: dict[str, str] = {}
    if parts and providers and shape_of(providers[0], parts) is not None:
        for provider in providers[1:]:
            shape = shape_of(provider, parts)
            if shape is not None:
                shapes[provider] = shape
    views = {provider: view_text(provider, parts) for provider in providers if provider not in shapes}
    return views, shapes, _tool_costs(tools, read, providers, stored)
