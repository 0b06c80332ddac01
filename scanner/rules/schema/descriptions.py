"""The rule on parameters' descriptions (MCP207): every parameter a model fills says what it is, unless its name,
its type or its parent's description already does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from scanner.models import Severity
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.schema.common import _is_object_type, _is_refinement, _own_keys, _parameters_hit, _where
from scanner.rules.text import split_name, words
from scanner.rules.tools import Node, ToolInfo, resolve_ref


def _described(description: Any) -> bool:
    return isinstance(description, str) and bool(description.strip())


def _branches_described(schema: Any) -> bool:
    """Every ``anyOf``/``oneOf`` branch of a schema has a description (the model reads them)."""
    if not isinstance(schema, dict):
        return False
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if (
            isinstance(branches, list)
            and branches
            and all(isinstance(branch, dict) and _described(branch.get("description")) for branch in branches)
        ):
            return True
    return False


def _wrapper(schema: Any, root: Any) -> bool:
    """An object (or array of objects) whose own properties are all described: the fields say what it holds. An
    object with no properties counts as one (MCP206 is the rule for a free-form object)."""
    if not isinstance(schema, dict):
        return False
    if "$ref" in schema:
        target = resolve_ref(root, schema["$ref"])
        schema = target[1] if target is not None else schema
    items = schema.get("items") if isinstance(schema, dict) else None
    if isinstance(items, dict) and not isinstance(schema.get("properties"), dict):
        if "$ref" in items:
            target = resolve_ref(root, items["$ref"])
            items = target[1] if target is not None else items
        schema = items
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return isinstance(schema, dict) and _is_object_type(schema)
    return all(isinstance(sub, dict) and _described(sub.get("description")) for sub in properties.values())


# The last name word of a *self-describing identifier* (rules.md, MCP207).
IDENTIFIER_WORDS = frozenset(
    [
        "id",
        "ids",
        "key",
        "name",
        "slug",
        "uuid",
        "url",
        "uri",
        "path",
        "email",
        "title",
        "query",
        "limit",
        "offset",
        "cursor",
        "page",
    ]
)


def _self_describing(name: str, tool: ToolInfo) -> bool:
    """A parameter whose last name word is an identifier word and whose other name words all appear (folded) in
    the tool's name or description: `memory_name` on `delete_memory`, `project_id` on a tool saying "project"."""
    from scanner.rules.vocabulary import fold_all, name_words, text_words

    parts = [part.lower() for part in split_name(name)]
    if not parts or parts[-1] not in IDENTIFIER_WORDS:
        return False
    rest = fold_all(parts[:-1])
    if not rest:
        return True
    known = set(name_words(tool.name)) | set(text_words(tool.description_text or ""))
    return all(word in known for word in rest)


_EXAMPLE = re.compile(r"\{[^{}]{0,2000}\}?")


def _shown_by_parent(name: str, texts: list[str]) -> bool:
    """Whether a parent's description names the parameter in quotes or backticks, or shows it in an example
    containing ``{`` (``{"query": "tent"}``, ``{query: ...}``)."""
    quoted = (f"`{name}`", f"'{name}'", f'"{name}"', f"‘{name}’", f"“{name}”")
    bounded = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    for text in texts:
        if any(mark in text for mark in quoted):
            return True
        if "{" in text and any(bounded.search(example.group(0)) for example in _EXAMPLE.finditer(text[:100_000])):
            return True
    return False


def _parent_texts(node: Node, tool: ToolInfo) -> list[str]:
    """The descriptions of a parameter's parent: the tool's (and the root schema's) for a root parameter, else
    the object's that holds it, and the array's when that object is the array's items."""
    holder = node.parent.owner() if node.parent is not None else None
    out: list[str] = []
    if holder is None or holder.kind == "root":
        out.append(tool.description_text or "")
    while holder is not None:
        text = holder.get("description")
        if isinstance(text, str):
            out.append(text)
        if holder.kind != "items" or holder.parent is None:
            break
        holder = holder.parent.owner()
    return out


def _named_in(name: str, text: str | None) -> bool:
    """Whether ``text`` names a parameter: the name itself, or its ``_``/camelCase parts as consecutive words."""
    if not text:
        return False
    if name.lower() in text.lower():
        return True
    parts = split_name(name)
    if not parts:
        return False
    found = words(text)
    return any(found[start : start + len(parts)] == parts for start in range(len(found) - len(parts) + 1))


@register(
    "MCP207",
    "param-undescribed",
    Severity.WARNING,
    hint="One line each: what it is, and an example value.",
    status="preview",
    doc="""Warns about parameters without a non-blank `description`: the root parameters and the properties of
    nested objects (array `items` are exempt, their array is described). Not reported for a parameter whose
    every `anyOf`/`oneOf` branch has a description (the model reads those); for an object parameter (or array
    of objects) whose own properties all have descriptions (a wrapper; an object with no properties counts as
    one); for the only root parameter of a tool whose description names it (the name itself, or its parts as
    consecutive words: `order_id` as "order id"); for a parameter that its parent's description (the tool's,
    for a root parameter) names in quotes or backticks or shows in an example containing `{`; and for a
    *self-describing identifier*: a name whose last word is id, ids, key, name, slug, uuid, url, uri, path,
    email, title, query, limit, offset, cursor or page and whose other words all appear in the tool's name or
    description (`memory_name` on `delete_memory`, `project_id` on a tool that says "project"). A property that
    is only a `$ref` is described by the definition it names, when that has a description.
    The model fills an argument from its name alone and guesses the format. Bad: `"q": {"type": "string"}` on
    a tool with `q` and `limit`. Good: `"q": {"type": "string", "description": "Search words, e.g. 'two-person
    tent'"}`.""",
)
def param_undescribed(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found: list[Node] = []
    root_keys = _own_keys(tool.schema)
    for node in tool.params:
        if node.kind != "property" or node.conditional or _is_refinement(node):
            continue
        if _described(node.get("description")) or _branches_described(node.schema):
            continue
        target = resolve_ref(tool.schema, node.get("$ref"))
        if target is not None and _described(target[1].get("description") if isinstance(target[1], dict) else None):
            continue
        if _wrapper(node.schema, tool.schema):
            continue
        if node.level == 1 and len(root_keys) == 1 and _named_in(node.name, tool.description_text):
            continue
        if _shown_by_parent(node.name, _parent_texts(node, tool)) or _self_describing(node.name, tool):
            continue
        found.append(node)
    if found:
        yield _parameters_hit(
            tool, "has parameters without a description", found, fix=f'Add "description" to {_where(found)}.'
        )
