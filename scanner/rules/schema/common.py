"""What the schema rules (MCP2xx) share: walking a level's keys through local ``$ref``s and combinators,
whether a schema is typed, and the one shape of a finding on parameters (their paths in ``details["parameters"]``,
a JSON Pointer to the first, the definitions they came from).

The helpers keep their leading underscore although the family modules import them: a check function's source is
part of the catalogue digest (:func:`scanner.rules.registry.catalogue_digest`), so the checks call them by the
names they always had.
"""

from __future__ import annotations

from typing import Any

from scanner.models import SCHEMA_DEPTH_LIMIT
from scanner.rules.registry import Hit
from scanner.rules.text import label
from scanner.rules.tools import Node, ToolInfo, resolve_ref

_COMBINATORS = ("anyOf", "oneOf", "allOf")


MAX_LISTED = 20


def _paths(nodes: list[Node]) -> list[str]:
    """The distinct parameter paths of some nodes, in walk order (``(root)`` for the root schema)."""
    return list(dict.fromkeys(node.path or "(root)" for node in nodes))


def _listing(paths: list[str]) -> str:
    shown = ", ".join(label(path, 60) for path in paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _root_object(tool: ToolInfo) -> dict[str, Any] | None:
    schema = tool.schema
    if isinstance(schema, dict) and schema.get("type") == "object":
        return schema
    return None


def _is_object_type(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _own_keys(schema: Any) -> set[str]:
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return {str(key) for key in schema["properties"]}
    return set()


def _level_keys(tool: ToolInfo, node: Node, cache: dict[int, tuple[set[str], bool]]) -> tuple[set[str], bool]:
    """The property names defined at a node's level (its owner and every combinator branch, condition or local
    ``$ref`` under it), and whether a ``$ref`` there that cannot be resolved could define more (then the answer
    is incomplete).

    ``cache`` (per tool and rule, keyed by the owner node) keeps a wide ``anyOf`` whose every branch has a
    ``required`` list from costing branches x branches.
    """
    owner = node.owner()
    found = cache.get(id(owner))
    if found is None:
        found = cache[id(owner)] = _collect_level_keys(owner.schema, tool.schema)
    return found


def _collect_level_keys(start: Any, root: Any) -> tuple[set[str], bool]:
    keys: set[str] = set()
    opaque = False
    stack: list[tuple[Any, int]] = [(start, 0)]
    while stack:
        schema, depth = stack.pop()
        if not isinstance(schema, dict):
            continue
        keys |= _own_keys(schema)
        if depth >= 8:
            opaque = opaque or "$ref" in schema
            continue
        if "$ref" in schema:
            target = resolve_ref(root, schema["$ref"])
            if target is None:
                opaque = True
            else:
                stack.append((target[1], depth + 1))
        for key in _COMBINATORS:
            branches = schema.get(key)
            if isinstance(branches, list):
                stack.extend((branch, depth + 1) for branch in branches)
        for key in ("if", "then", "else"):
            stack.append((schema.get(key), depth + 1))
    return keys, opaque


def _is_refinement(node: Node) -> bool:
    """A property inside a branch that re-states one its level's owner defines (adding a constraint to it)."""
    container = node.parent
    if node.kind != "property" or container is None or container.kind not in ("branch", "condition"):
        return False
    return node.name in _own_keys(container.owner().schema)


def _typed(schema: Any, depth: int = 0) -> bool:
    if schema is False:
        return True
    if not isinstance(schema, dict):
        return False
    if "type" in schema or "enum" in schema or "const" in schema or "$ref" in schema:
        return True
    if depth >= SCHEMA_DEPTH_LIMIT:
        return False
    for key in _COMBINATORS:
        branches = schema.get(key)
        if isinstance(branches, list) and branches and all(_typed(branch, depth + 1) for branch in branches):
            return True
    return False


def _definitions(nodes: list[Node]) -> dict[str, str]:
    """Parameter path -> the ``$ref`` its schema came through, for the parameters written in a definition."""
    out: dict[str, str] = {}
    for node in nodes:
        if node.via is not None and len(out) < MAX_LISTED:
            out.setdefault(node.path or "(root)", label(node.via, 100))
    return out


def _where(found: list[Node]) -> str:
    """Where a key is to be added: the schema locations of the first few parameters (``properties.q``)."""
    places = list(dict.fromkeys(_location(node) for node in found))
    shown = ", ".join(label(place, 80) for place in places[:3])
    return shown + (f" and {len(places) - 3} more" if len(places) > 3 else "")


def _location(node: Node) -> str:
    """A node's place in the schema as dotted keys below ``inputSchema`` (``properties.filter.properties.x``)."""
    tokens = node.tokens[1:] if node.tokens[:1] == ("inputSchema",) else node.tokens
    return ".".join(tokens) or "inputSchema"


def _parameters_hit(tool: ToolInfo, what: str, found: list[Node], fix: str | None = None) -> Hit:
    """One hit naming every parameter involved (a finding per rule and tool, never per parameter)."""
    paths = _paths(found)
    details: dict[str, Any] = {"parameters": paths[:MAX_LISTED], "count": len(paths)}
    definitions = _definitions(found)
    if definitions:
        details["definitions"] = definitions
    return Hit(f"{tool.subject} {what}: {_listing(paths)}.", found[0].pointer, details, fix=fix)
