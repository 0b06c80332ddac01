"""Rules on a tool's ``inputSchema`` and ``outputSchema`` (MCP201-MCP217): what a model needs to fill the
arguments right, and what a client validates results against.

Every rule reads the one iterative walk of :class:`~scanner.rules.tools.ToolInfo` and reports one finding per
tool, the parameters involved in ``details["parameters"]`` (the paths where a model meets them: dotted, ``[]``
for array items) and a JSON Pointer to the first place it applies (where the schema is written, inside
``$defs`` when it came from a definition; ``details["definitions"]`` then maps the path to the ``$ref``). Local
``$ref``s are followed once per path; where a level's keys may come from a reference that cannot be resolved
(remote, an anchor, missing), MCP204 and MCP206 stay silent rather than guess.
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
from scanner.rules.tools import (
    Node,
    ToolInfo,
    json_too_costly,
    label,
    pointer,
    resolve_ref,
    split_name,
    type_label,
    words,
)

_COMBINATORS = ("anyOf", "oneOf", "allOf")
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
SCHEMA_TOKEN_LIMIT = 1000
ROOT_PARAM_LIMIT = 25
NESTING_LIMIT = 5
ENUM_LIMIT = 40
# Beyond this JSON nesting the meta-schema check is skipped (jsonschema recurses); MCP212 reports such schemas.
VALIDATION_DEPTH_LIMIT = 4 * SCHEMA_DEPTH_LIMIT
# An array of more objects or arrays than this is not checked either: jsonschema's uniqueness test is quadratic.
VALIDATION_CONTAINERS_LIMIT = 256
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
    if any(key in schema for key in ("type", "enum", "const", "$ref")):
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


@register(
    "MCP201",
    "schema-not-object",
    Severity.PROBLEM,
    hint=(
        'Every provider wants `{"type": "object", "properties": …}`; a tool without parameters says `"properties": {}`.'
    ),
    doc="""Checks that `inputSchema` is present, is a JSON object and has `"type": "object"`. Providers take a
    tool's parameters as one object schema; anything else is rejected or replaced, and the model cannot know what
    arguments to send. Bad: no `inputSchema`, `"inputSchema": {"type": "string"}` or `{"properties": {...}}`
    without a type. Good: `{"type": "object", "properties": {"query": {"type": "string"}}}`.""",
)
def schema_not_object(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    schema = tool.schema
    if not tool.is_object:
        yield Hit(
            f"Tool #{tool.index} is {type_label(tool.raw)}, not an object, so it has no inputSchema.",
            details={"problem": "not-object"},
        )
    elif not tool.has_schema:
        yield Hit(f"{tool.subject} has no inputSchema.", details={"problem": "missing"})
    elif not isinstance(schema, dict):
        yield Hit(
            f"The inputSchema of {tool.display} is {type_label(schema)}, not an object.",
            "/inputSchema",
            {"problem": "type"},
        )
    elif schema.get("type") != "object":
        found = schema.get("type")
        what = "has no type" if "type" not in schema else f"has type {label(found)}"
        yield Hit(
            f'The inputSchema of {tool.display} {what}; it must be "object".',
            "/inputSchema/type" if "type" in schema else "/inputSchema",
            {"problem": "not-object-type", "type": found if isinstance(found, (str, list)) else None},
        )


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
        yield _parameters_hit(tool, "has untyped parameters", found, fix=f'Add "type" to {_where(found)}.')


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


@register(
    "MCP206",
    "object-free-form",
    Severity.WARNING,
    hint="Describe the keys, or say in the description what is expected.",
    status="preview",
    doc="""Warns about a parameter of type `object` (not the root) with no non-empty `properties`. Not reported
    for a typed map (`additionalProperties` is a schema with a `type`, or whose `anyOf`/`oneOf` branches all
    have one: labels, headers), for an object that allows no keys (`additionalProperties: false` and no
    `patternProperties`: empty on purpose), or when the parameter's own description already says what goes in
    (it holds `{`, or names at least two keys in quotes or backticks). A model has no idea which keys to send
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
        keys, opaque = _level_keys(tool, node, cache)
        if not keys and not opaque:
            found.append(node)
    if found:
        yield _parameters_hit(
            tool, "has free-form object parameters", found, fix=f'Add "properties" to {_where(found)}.'
        )


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
    status="preview",
    doc="""Notes constraint keywords that the Gemini conversion drops: oneOf, allOf, not, const, pattern,
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
        },
    )


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
            {"problem": "type"},
        )
        return
    if schema.get("type") != "object":
        found = schema.get("type")
        what = "has no type" if "type" not in schema else f"has type {label(found)}"
        yield Hit(
            f'The outputSchema of {tool.display} {what}; it must be "object".',
            "/outputSchema/type" if "type" in schema else "/outputSchema",
            {"problem": "not-object-type"},
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
    status="preview",
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
