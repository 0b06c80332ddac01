"""The rules on parameters' descriptions: every parameter a model fills says what it is, unless its name, its type
or its parent's description already does (MCP207); no description documents a parameter the schema lacks (MCP218).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from scanner.models import Severity
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.schema.common import _is_object_type, _is_refinement, _own_keys, _parameters_hit, _where
from scanner.rules.text import label, split_name, words
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


# Name words whose value a model cannot form from the name alone: the form or the vocabulary is the server's
# own (catalogue 6: the right MCP207 findings on real lists were these, and two- or three-letter names).
_OPEN_WORDS = frozenset(
    (
        "mode",
        "type",
        "kind",
        "filter",
        "filters",
        "sort",
        "order",
        "format",
        "pattern",
        "options",
        "params",
        "data",
        "parent",
        "scope",
        "target",
        "flags",
        "level",
        "style",
        "spec",
        "config",
        "expression",
        "expr",
        "skip",
        "sitemap",
    )
)


# Short names a model knows without a word (git's and the web's own terms, units, bounds).
_KNOWN_SHORT = frozenset(("sha", "url", "uri", "id", "ids", "to", "cc", "bcc", "key", "tag", "ref", "cwd", "dir"))
_KNOWN_SHORT |= frozenset(("max", "min", "lat", "lng", "lon", "top", "day", "ttl", "app", "env", "tz"))


def _open_ended(node: Node) -> bool:
    """Whether an undescribed parameter leaves its value's form to a guess: a name of at most three characters
    (`q`, `k`, `tbs`; not a known one such as `sha`, `url`, `max`) or whose last word is one of :data:`_OPEN_WORDS`
    (`mode`, `filter`, `sort`, `parent`), and
    not a boolean or an `enum` (their values say themselves)."""
    schema = node.schema if isinstance(node.schema, dict) else {}
    if schema.get("type") == "boolean" or isinstance(schema.get("enum"), list):
        return False
    parts = [part.lower() for part in split_name(node.name)]
    short = len(node.name) <= 3 and node.name.lower() not in _KNOWN_SHORT
    return bool(parts) and (short or parts[-1] in _OPEN_WORDS)


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
    status="removed",
    doc="""Retired in catalogue 6 (it never runs; the code is never reused): right 14 of 35 on hand-labelled real
    lists as catalogue 5 wrote it; tightened to names whose value's form is a guess, it was right 7 of 29 on fresh
    labels of 19 more real lists. Most undescribed parameters are documented in the tool's own description (an
    `Args:` list), are a known term (`pid`), a `const`, or a `$ref` to described fields. What it checked: Warns
    about parameters without a non-blank `description`: the root parameters and the properties of
    nested objects (array `items` are exempt, their array is described). Not reported for a parameter whose
    every `anyOf`/`oneOf` branch has a description (the model reads those); for an object parameter (or array
    of objects) whose own properties all have descriptions (a wrapper; an object with no properties counts as
    one); for the only root parameter of a tool whose description names it (the name itself, or its parts as
    consecutive words: `order_id` as "order id"); for a parameter that its parent's description (the tool's,
    for a root parameter) names in quotes or backticks or shows in an example containing `{`; and for a
    *self-describing identifier*: a name whose last word is id, ids, key, name, slug, uuid, url, uri, path,
    email, title, query, limit, offset, cursor or page and whose other words all appear in the tool's name or
    description (`memory_name` on `delete_memory`, `project_id` on a tool that says "project"). A property that
    is only a `$ref` is described by the definition it names, when that has a description. Since catalogue 6
    it reports only a parameter whose value's form a model cannot guess from its name: a name of at most three
    characters (`q`, `k`, `tbs`; not a known term such as `sha`, `url`, `id`, `max`) or whose last word is mode,
    type, kind, filter(s), sort, order, format, pattern, options, params, data, parent, scope, target, flags,
    level, style, spec, config, expression, expr, skip or sitemap; never a boolean or an `enum`. Plain names
    (`path`, `owner`, `repo_path`, `content`, `latitude`) were the wrong findings on hand-labelled real lists.
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
        if not _open_ended(node):
            continue
        found.append(node)
    if found:
        yield _parameters_hit(
            tool, "has parameters without a description", found, fix=f'Add "description" to {_where(found)}.'
        )


# MCP218: the parameters a description documents. A block of arguments starts at a header line (`Args:`,
# `Arguments:`, `Parameters:`, `Params:`, `Keyword Args:`, as a Markdown heading or in bold too) and runs until a
# blank line followed by text that is not an item, or the next section (`Returns:`, `Raises:`, `Example:`...).
_ARGS_HEADER = re.compile(
    r"^\s*(?:#+\s*|\*\*)?(?:args|arguments|parameters|params|keyword args|kwargs|input parameters)\s*:?\s*(?:\*\*)?"
    r"\s*:?\s*$",
    re.IGNORECASE,
)
_SECTION = re.compile(
    r"^\s*(?:#+\s*|\*\*)?(?:returns?|raises|yields|examples?|notes?|usage|see also|output|response|errors?)\b"
    r"[^\n]{0,40}:?\s*(?:\*\*)?\s*$",
    re.IGNORECASE,
)
# An item of an argument list: an optional bullet, the name (backticked, or followed by a type in brackets and a
# colon or a dash), as Google, NumPy and Markdown docstrings write it.
_ITEM = re.compile(
    r"^\s*(?:[-*•]\s+)?(?:`(?P<quoted>[A-Za-z_][\w.-]{0,63})`|(?P<plain>[A-Za-z_][\w-]{0,63}))"
    r"(?:\s*[(\[][^)\]\n]{0,60}[)\]])?\s*(?P<mark>:|\s-\s|\s—\s|$)"
)
_PARAM_FIELD = re.compile(r":param\s+(?:[\w\[\], .|]+\s+)?(?P<name>[A-Za-z_]\w{0,63})\s*:")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")


def documented_parameters(text: str) -> list[str]:
    """The parameter names a description documents, in order, each once: the items of its argument blocks and its
    ``:param NAME:`` fields."""
    found: list[str] = [match.group("name") for match in _PARAM_FIELD.finditer(text[:100_000])]
    inside = False
    indent: int | None = None  # the items' indentation, from the block's first item
    blank = False
    for line in text[:100_000].splitlines():
        if _ARGS_HEADER.match(line):
            inside, indent, blank = True, None, False
        elif not inside or _NUMPY_RULE.match(line):
            continue
        elif not line.strip():
            blank = True
        elif _SECTION.match(line):
            inside = False
        else:
            own = len(line) - len(line.lstrip())
            item = _ITEM.match(line)
            if item is not None and (item.group("quoted") or item.group("mark")) and (indent is None or own <= indent):
                indent = own if indent is None else indent
                found.append(item.group("quoted") or item.group("plain"))
                blank = False
            elif indent is None or blank or own <= indent:
                inside = False  # prose after the block (a wrapped item line is indented deeper, with no gap)
    once: dict[str, str] = {}
    for name in found:
        once.setdefault(_folded_name(name), name)
    return list(once.values())


def _folded_name(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


@register(
    "MCP218",
    "description-names-absent-parameter",
    Severity.WARNING,
    hint=(
        "Describe only the parameters the schema has; drop framework arguments from docstrings that become "
        "descriptions."
    ),
    status="preview",
    doc="""Warns when a tool's description documents a parameter its schema does not have: an item of an argument
    block (`Args:`, `Arguments:`, `Parameters:`, `Params:`, `Keyword Args:`, also as a Markdown heading or in
    bold; items written `name:`, `name (type):`, `` `name` ``, `- name - ...`, up to the next section such as
    `Returns:`) or a `:param NAME:` field, whose name is no property of the schema at any depth (compared
    ignoring case, `_` and `-`). `ctx`, `context` and `self` count too: they are a framework's own arguments
    (FastMCP's `Context`) that the schema rightly leaves out but the docstring, copied into the description,
    still documents. A model that reads of a parameter the schema lacks sends it (the call fails validation) or
    wonders where to put it. Details carry the names. Bad: "Search the index.\\n\\nArgs:\\n    ctx: MCP
    context\\n    query: words to find" with only `query` in the schema. Good: the same without the `ctx` line.""",
)
def description_names_absent_parameter(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    text = tool.description_text
    schema = tool.schema
    if text is None or not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return
    if ":" not in text and "`" not in text:
        return
    documented = documented_parameters(text)
    if not documented:
        return
    present = {_folded_name(str(node.name)) for node in tool.params if node.kind == "property"}
    absent = [name for name in documented if _folded_name(name) not in present]
    if absent:
        shown = ", ".join(label(name, 60) for name in absent[:5]) + (
            f" and {len(absent) - 5} more" if len(absent) > 5 else ""
        )
        yield Hit(
            f"The description of {tool.display} documents parameters its schema does not have: {shown}.",
            "/description",
            {"names": [label(name, 100) for name in absent[:40]]},
        )
