"""One tool as the rules see it: its raw fields read defensively, and its schema walked once, iteratively.

Nothing a server sends is trusted. A tool may be a number, a name may be a list, a schema may nest ten thousand
levels or hold ``$ref`` cycles. :class:`ToolInfo` reads each field without assuming its type, and
:func:`walk_schema` visits schema nodes with an explicit stack, following at most
:data:`~scanner.models.SCHEMA_DEPTH_LIMIT` subschema levels (deeper parts are marked ``truncated``; MCP212 reports
them). Every rule reads the same walk, so a schema is traversed once per tool.

Vocabulary (see rules.md): a *parameter* is a schema a model meets when it fills the arguments: inside any
``properties`` map at any depth, or an array's ``items`` (also ``prefixItems`` and the old array form of
``items``), following a local ``$ref`` (``#/$defs/...``, ``#/definitions/...``, any ``#/`` pointer) to the schema
it names, once per path: a reference already followed on the way down is not followed again (a cycle stops).
Its *level* counts properties and items hops from the root (a root parameter is level 1). Parameters are named
by the path where the model meets them: ``filter.status``, ``tags[]`` for items, ``address.city`` for a property
of ``#/$defs/Address`` reached through ``address``. The node's ``tokens`` (its JSON Pointer) still point at
where the schema is written, and ``via`` names the definition it came from.

Definitions under ``$defs``/``definitions`` are not walked for their own sake: one that no parameter reaches is
not a parameter (MCP215 reports it). Everything else is walked at its parent's level and is not a parameter
itself, though the properties inside it are: branches of ``anyOf``/``oneOf``/``allOf``, the target of a
``$ref`` (kind ``ref``, the same parameter as the schema that refers to it), the applicators
``additionalProperties``, ``patternProperties``, ``items``-like keywords and so on. *Conditions* (``not``,
``if``/``then``/``else``, ``dependentSchemas``, schema-valued ``dependencies``) are special: their properties
constrain keys the parent defines (``if: {"properties": {"kind": {"const": "a"}}}``), so the rules that ask
"is this parameter typed, described, shaped?" skip what is inside a condition.

A schema with more than :data:`MAX_NODES` nodes is walked only that far (``Walk.crowded``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload
from urllib.parse import unquote

from scanner.models import SCHEMA_DEPTH_LIMIT
from scanner.rules.text import label

if TYPE_CHECKING:
    from scanner.rules.vocabulary import ListFacts

# A tool schema with more nodes than this is not walked further (the byte cap upstream makes it rare).
MAX_NODES = 50_000
# A finding's ``tool`` is cut to this many characters (as scanner.measure.history cuts its labels).
MAX_TOOL_LABEL = 200

V = TypeVar("V")
_COMBINATORS = ("anyOf", "oneOf", "allOf")
# Keywords whose value is one subschema, walked at the parent's level and not counted as parameters.
_SINGLE = (
    "additionalProperties",
    "propertyNames",
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
)
# Keywords whose subschema constrains the parent's own keys (``then: {"required": [...]}``) rather than defining any.
_CONDITIONS = ("not", "if", "then", "else")
# Keywords whose value maps names to subschemas (walked at the parent's level; the last two are conditions).
_KEYED = ("patternProperties", "dependentSchemas", "dependencies")
# Every keyword the walk descends into: a node with none of them has no children (most nodes: the leaves).
_WALKED = frozenset(("properties", "items", "prefixItems", "$ref", *_COMBINATORS, *_CONDITIONS, *_SINGLE, *_KEYED))


class computed_once(Generic[V]):
    """``functools.cached_property`` without its lock: computed on the first read, then a plain attribute.

    Python 3.11's takes a lock on every first read, a third of what reading a small tool's walk and texts costs;
    the objects using this (a :class:`ToolInfo`, a :class:`Walk`) live inside one call of the engine, in one
    thread.
    """

    def __init__(self, compute: Callable[[Any], V]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> computed_once[V]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> V: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> V | computed_once[V]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


def escape_token(token: str) -> str:
    """One JSON Pointer reference token (RFC 6901): ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")


def pointer(tokens: tuple[str, ...] | list[str]) -> str:
    """A JSON Pointer from unescaped reference tokens; the empty tuple is the whole document (``""``)."""
    return "".join("/" + escape_token(token) for token in tokens)


def type_label(value: Any) -> str:
    """The JSON type name of a value, for messages ("a number", "a list")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def json_too_costly(value: Any, depth_limit: int, containers_limit: int) -> bool:
    """Whether a JSON value nests deeper than ``depth_limit``, or holds an array of more than ``containers_limit``
    objects or arrays (jsonschema's ``uniqueItems`` compares those pairwise: quadratic time). Iterative."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        current, depth = pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > depth_limit:
            return True
        depth += 1
        nested = 0
        for child in children:
            if isinstance(child, (dict, list)):
                push((child, depth))
                nested += 1
        if nested > containers_limit and isinstance(current, list):
            return True
    return False


@dataclass(frozen=True)
class Node:
    """One schema node met by the walk.

    ``tokens`` locate it inside the tool (``("inputSchema", "properties", "q")``); ``path`` names the parameter
    it is or belongs to (``"filter.tags[]"``, ``""`` at the root); ``level`` is the parameter level; ``kind`` says
    how it was reached: ``root``, ``property``, ``items``, ``branch`` (anyOf/oneOf/allOf), ``condition``
    (not/if/then/else/dependentSchemas), ``ref`` (the schema a local ``$ref`` names) or ``sub`` (other
    applicators). ``conditional`` marks nodes at or under a condition: their properties constrain, they define
    nothing. ``via`` is the last ``$ref`` followed to reach the node (``#/$defs/Address``), ``refs`` every one
    followed on the way down (a reference already there is not followed again: that is how a cycle stops).
    """

    schema: Any
    tokens: tuple[str, ...]
    path: str
    level: int
    depth: int
    kind: str = "root"
    parent: Node | None = None
    conditional: bool = False
    via: str | None = None
    refs: tuple[str, ...] = ()

    @property
    def pointer(self) -> str:
        return pointer(self.tokens)

    @property
    def is_param(self) -> bool:
        """A parameter: a property, array items, or the definition a parameter's ``$ref`` names (same path)."""
        return self.kind in ("property", "items") or (self.kind == "ref" and self.level > 0)

    @property
    def name(self) -> str:
        """The property name of a ``property`` node (its last pointer token)."""
        return self.tokens[-1] if self.tokens else ""

    def get(self, key: str) -> Any:
        return self.schema.get(key) if isinstance(self.schema, dict) else None

    def owner(self) -> Node:
        """The node whose level this one shares: climbs out of combinator branches and conditions."""
        node = self
        while node.kind in ("branch", "condition", "ref") and node.parent is not None:
            node = node.parent
        return node


@dataclass(frozen=True)
class Walk:
    """The nodes of one schema. ``truncated``: some part nests deeper than SCHEMA_DEPTH_LIMIT and was not
    followed. ``crowded``: the schema has more than MAX_NODES nodes and the walk stopped there."""

    nodes: tuple[Node, ...]
    truncated: bool
    crowded: bool = False

    @computed_once
    def ref_targets(self) -> frozenset[tuple[str, ...]]:
        """The pointer tokens (inside the tool) of every schema a followed ``$ref`` reached."""
        return frozenset(node.tokens for node in self.nodes if node.kind == "ref")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def resolve_ref(root: Any, ref: Any) -> tuple[tuple[str, ...], Any] | None:
    """The pointer tokens and schema a local ``$ref`` (``#`` or ``#/a/b``, RFC 6901, URI-escaped) names in
    ``root``, or None when it is not local, not a pointer (``#anchor``) or names nothing that is a schema."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        return None
    tokens = tuple(part.replace("~1", "/").replace("~0", "~") for part in fragment.split("/")[1:])
    value = root
    for token in tokens:
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return None
    if not isinstance(value, dict | bool):
        return None
    return tokens, value


def walk_schema(
    schema: Any,
    base: tuple[str, ...] = ("inputSchema",),
    root: Any = None,
    *,
    follow_refs: bool = True,
    max_nodes: int = MAX_NODES,
) -> Walk:
    """Every schema node under ``schema`` in document order, iteratively, at most SCHEMA_DEPTH_LIMIT levels deep.

    A local ``$ref`` is followed to the schema it names once per path (unless ``follow_refs`` is false),
    resolved against ``root`` (whose pointer in the tool is ``("inputSchema",)``); ``root`` defaults to
    ``schema`` itself, walked from ``base``. At most ``max_nodes`` nodes are visited (then ``crowded``).
    """
    if root is None or not follow_refs:
        root = schema
        root_base = base
    else:
        root_base = ("inputSchema",)
    nodes: list[Node] = []
    resolved: dict[str, tuple[tuple[str, ...], Any] | None] = {}  # each reference resolved once per walk
    truncated = crowded = False
    stack: list[Node] = [_node(schema, base, "", 0, 0, "root", None, False, None, ())]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if len(nodes) >= max_nodes:
            crowded = True
            break
        value = node.schema
        if not isinstance(value, dict) or _WALKED.isdisjoint(value):
            continue
        children = _children(node, value, root if follow_refs else None, root_base, resolved)
        if children and node.depth >= SCHEMA_DEPTH_LIMIT:
            truncated = True
            continue
        stack.extend(reversed(children))
    return Walk(nodes=tuple(nodes), truncated=truncated, crowded=crowded)


_new = object.__new__


def _node(
    schema: Any,
    tokens: tuple[str, ...],
    path: str,
    level: int,
    depth: int,
    kind: str,
    parent: Node | None,
    conditional: bool,
    via: str | None,
    refs: tuple[str, ...],
) -> Node:
    """A :class:`Node` as its constructor makes it, at a third of the cost: a walk makes one per schema node, and a
    frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``."""
    node: Node = _new(Node)
    node.__dict__.update(
        schema=schema,
        tokens=tokens,
        path=path,
        level=level,
        depth=depth,
        kind=kind,
        parent=parent,
        conditional=conditional,
        via=via,
        refs=refs,
    )
    return node


def _children(
    node: Node,
    value: dict[str, Any],
    root: Any,
    base: tuple[str, ...],
    resolved: dict[str, tuple[tuple[str, ...], Any] | None],
) -> list[Node]:
    depth = node.depth + 1
    level = node.level
    cond = node.conditional
    via = node.via
    refs = node.refs
    path = node.path
    out: list[Node] = []
    for key, child in value.items():
        if key not in _WALKED:  # the keys of a schema's own (a type, a description), or not a string at all
            continue
        if key == "properties":
            if isinstance(child, dict):
                tokens = (*node.tokens, key)
                for name, sub in child.items():
                    name = str(name)
                    out.append(
                        _node(
                            sub, (*tokens, name), _join(path, name), level + 1, depth, "property", node, cond, via, refs
                        )
                    )
        elif key == "items" or key == "prefixItems":
            tokens = (*node.tokens, key)
            inner = path + "[]"
            if isinstance(child, list):
                for position, sub in enumerate(child):
                    out.append(
                        _node(sub, (*tokens, str(position)), inner, level + 1, depth, "items", node, cond, via, refs)
                    )
            elif key == "items" and isinstance(child, (dict, bool)):
                out.append(_node(child, tokens, inner, level + 1, depth, "items", node, cond, via, refs))
        elif key in _COMBINATORS:
            if isinstance(child, list):
                tokens = (*node.tokens, key)
                for position, sub in enumerate(child):
                    out.append(
                        _node(sub, (*tokens, str(position)), path, level, depth, "branch", node, cond, via, refs)
                    )
        elif key in _CONDITIONS:
            if isinstance(child, dict):
                out.append(_node(child, (*node.tokens, key), path, level, depth, "condition", node, True, via, refs))
        elif key in _SINGLE:
            if isinstance(child, dict):
                out.append(_node(child, (*node.tokens, key), path, level, depth, "sub", node, cond, via, refs))
        elif key == "$ref":
            if root is not None and isinstance(child, str) and child not in refs:
                if child not in resolved:
                    resolved[child] = resolve_ref(root, child)
                found = resolved[child]
                if found is not None:
                    target_tokens, target = found
                    out.append(
                        _node(
                            target,
                            (*base, *target_tokens),
                            path,
                            level,
                            depth,
                            "ref",
                            node,
                            cond,
                            child,
                            (*refs, child),
                        )
                    )
        elif key in _KEYED and isinstance(child, dict):
            kind = "sub" if key == "patternProperties" else "condition"
            tokens = (*node.tokens, key)
            for name, sub in child.items():
                if isinstance(sub, dict):
                    out.append(
                        _node(
                            sub,
                            (*tokens, str(name)),
                            path,
                            level,
                            depth,
                            kind,
                            node,
                            cond or kind == "condition",
                            via,
                            refs,
                        )
                    )
    return out


def hidden_from_model(tool: ToolInfo) -> bool:
    """Whether the tool's ``_meta`` hides it from the model: MCP Apps' ``ui.visibility`` without ``"model"`` (also
    written ``ui/visibility``), or the OpenAI Apps SDK's ``"openai/visibility": "private"``. Such a tool is called
    by an app, never chosen by a model: the engine runs no model-facing rule on it
    (:func:`scanner.rules.engine.model_facing`)."""
    meta = tool.raw.get("_meta") if tool.is_object else None
    if not isinstance(meta, dict):
        return False
    ui = meta.get("ui")
    visibility = ui.get("visibility") if isinstance(ui, dict) else meta.get("ui/visibility")
    if isinstance(visibility, list) and "model" not in visibility:
        return True
    return meta.get("openai/visibility") == "private"


class ToolInfo:
    """One raw tool read defensively, with its schema walk computed once and shared by every rule."""

    def __init__(self, raw: Any, index: int) -> None:
        self.raw = raw
        self.index = index
        self.is_object = isinstance(raw, dict)
        fields: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.has_name = "name" in fields
        self.name: Any = fields.get("name")
        self.has_description = "description" in fields
        self.description: Any = fields.get("description")
        self.has_schema = "inputSchema" in fields
        self.schema: Any = fields.get("inputSchema")
        self.title: Any = fields.get("title")
        self.has_output_schema = "outputSchema" in fields
        self.output_schema: Any = fields.get("outputSchema")
        annotations = fields.get("annotations")
        self.annotations: dict[str, Any] | None = annotations if isinstance(annotations, dict) else None
        self.annotation_title: Any = annotations.get("title") if isinstance(annotations, dict) else None
        # List-wide facts (prefix words, relatives): the engine sets how to compute them before any rule runs;
        # they are computed by the first rule that reads them (a run of MCP809 alone never does).
        self.list_facts: Callable[[], ListFacts] | None = None
        # Results several rules share (the schema's compact JSON), computed by the first that needs them.
        self.cache: dict[str, Any] = {}

    @property
    def facts(self) -> ListFacts | None:
        """The list's facts (:class:`ListFacts`), computed once for the whole list on first use; None outside the
        engine."""
        return self.list_facts() if self.list_facts is not None else None

    @property
    def tool_name(self) -> str:
        """What a finding's ``tool`` says: the name, or ``#<index>`` when it has no usable one (the same label
        ``scanner.measure.toollist.tool_label`` gives). A name over 200 characters (already MCP101) is cut there with
        ``…``,
        so a hostile name is not copied into every finding stored."""
        if not (isinstance(self.name, str) and self.name):
            return f"#{self.index}"
        return self.name if len(self.name) <= MAX_TOOL_LABEL else self.name[: MAX_TOOL_LABEL - 1] + "…"

    @property
    def display(self) -> str:
        """How messages name the tool: ``'search'``, or ``tool #3`` when the name is unusable."""
        if isinstance(self.name, str) and self.name:
            return f"'{label(self.name)}'"
        return f"tool #{self.index}"

    @property
    def subject(self) -> str:
        """:attr:`display` at the start of a sentence."""
        text = self.display
        return text[0].upper() + text[1:]

    @computed_once  # every description rule asks, several times per tool
    def description_text(self) -> str | None:
        """The description when it is a non-blank string, else None."""
        if isinstance(self.description, str) and self.description.strip():
            return self.description
        return None

    @computed_once
    def walk(self) -> Walk:
        if not isinstance(self.schema, dict):
            return Walk(nodes=(), truncated=False)
        return walk_schema(self.schema)

    @property
    def params(self) -> Iterator[Node]:
        return (node for node in self.walk.nodes if node.is_param)

    @computed_once
    def definitions(self) -> tuple[tuple[tuple[str, ...], str, Any], ...]:
        """The root's definitions: (pointer tokens, name, schema) for each entry of ``$defs`` and ``definitions``."""
        schema = self.schema
        if not isinstance(schema, dict):
            return ()
        found: list[tuple[tuple[str, ...], str, Any]] = []
        for key in ("$defs", "definitions"):
            entries = schema.get(key)
            if isinstance(entries, dict):
                found.extend((("inputSchema", key, str(name)), str(name), sub) for name, sub in entries.items())
        return tuple(found)

    @computed_once
    def unreached_definitions(self) -> tuple[tuple[tuple[str, ...], str, Any], ...]:
        """Root definitions no parameter reaches through a ``$ref`` (nor any part of them)."""
        if not self.definitions:  # most schemas define none: no need to collect the references
            return ()
        reached: set[tuple[str, ...]] = set()
        whole = False
        for target in self.walk.ref_targets:
            if len(target) >= 3:
                reached.add(target[:3])
            elif len(target) == 2:  # "#/$defs" itself: every definition is referenced
                whole = True
        if whole:
            return ()
        return tuple(entry for entry in self.definitions if entry[0] not in reached)

    def _all_nodes(self) -> Iterator[Node]:
        """Every schema node once: the walk, then definitions no parameter reaches (still sent to the model),
        walked without following references, all within one :data:`MAX_NODES` budget."""
        seen: set[tuple[str, ...]] = set()
        for node in self.walk.nodes:
            if node.tokens not in seen:
                seen.add(node.tokens)
                yield node
        budget = MAX_NODES - len(self.walk.nodes)
        for tokens, _name, sub in self.unreached_definitions:
            if budget <= 0:
                return
            walk = walk_schema(sub, tokens, follow_refs=False, max_nodes=budget)
            budget -= len(walk.nodes)
            for node in walk.nodes:
                if node.tokens not in seen:
                    seen.add(node.tokens)
                    yield node

    def texts(self, *, schema_titles: bool = True, values: bool = False) -> Iterator[tuple[tuple[str, ...], str]]:
        """Every text a model reads from this tool, with its pointer tokens: name, titles, descriptions.

        With ``values``, also every property name (pointer to the property) and every string in ``default``,
        ``enum``, ``const`` and ``examples`` at any depth (pointer to the string). Collected once per tool and
        choice of options (MCP401 and MCP402 read the same).
        """
        key = f"texts:{schema_titles}:{values}"
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = tuple(self._texts(schema_titles, values))
        return iter(found)

    def _texts(self, schema_titles: bool, values: bool) -> list[tuple[tuple[str, ...], str]]:
        out: list[tuple[tuple[str, ...], str]] = []
        append = out.append
        for key, value in (("name", self.name), ("title", self.title), ("description", self.description)):
            if isinstance(value, str):
                append(((key,), value))
        if isinstance(self.annotation_title, str):
            append((("annotations", "title"), self.annotation_title))
        keys = ("description", "title") if schema_titles else ("description",)
        for node in self._all_nodes():
            schema = node.schema
            if not isinstance(schema, dict):
                continue
            tokens = node.tokens
            for key in keys:
                value = schema.get(key)
                if isinstance(value, str):
                    append(((*tokens, key), value))
            if values:
                _value_texts(tokens, schema, out)
        return out


_VALUE_KEYS = ("default", "enum", "const", "examples")
_VALUE_KEY_SET = frozenset(_VALUE_KEYS)


def _value_texts(at: tuple[str, ...], schema: dict[str, Any], out: list[tuple[tuple[str, ...], str]]) -> None:
    """A schema node's property names and the strings in its default/enum/const/examples (at any depth), added to
    ``out`` (``at``: the node's pointer tokens)."""
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name in properties:
            if isinstance(name, str):
                out.append(((*at, "properties", name), name))
    if _VALUE_KEY_SET.isdisjoint(schema):  # most schema nodes: none of the four
        return
    for key in _VALUE_KEYS:
        if key not in schema:
            continue
        stack: list[tuple[tuple[str, ...], Any]] = [((*at, key), schema[key])]
        budget = 10_000
        while stack and budget > 0:
            budget -= 1
            tokens, value = stack.pop()
            if isinstance(value, str):
                out.append((tokens, value))
            elif isinstance(value, list):
                stack.extend(((*tokens, str(position)), item) for position, item in reversed(list(enumerate(value))))
            elif isinstance(value, dict):
                stack.extend(((*tokens, str(name)), item) for name, item in reversed(list(value.items())))
