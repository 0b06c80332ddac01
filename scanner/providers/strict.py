"""OpenAI's strict mode: would the API take a tool's parameters with ``"strict": true``, as sent and once converted?

Strict mode (Structured Outputs for function calling) is a client's choice: with ``"strict": true`` on a function
tool, OpenAI constrains the model's arguments to the schema, but accepts only a subset of JSON Schema, listed in
its guide's "Supported schemas" (:data:`SOURCE`). Fathom's checks never count this (no MCP client we know turns it
on for server tools by default); ``fathom check --openai-strict`` shows it as a view, per tool: refused or
accepted as sent, and after the conversion the OpenAI Agents SDK applies when an agent sets
``convert_schemas_to_strict`` on an MCP server (``agents.strict_schema.ensure_strict_json_schema``; the SDK sends
the tool non-strict when its conversion fails).

Each :class:`StrictReason` names a JSON Pointer into the tool, OpenAI's words, and whether that conversion fixes
it. The conversion closes objects that declare properties (``additionalProperties: false``), lists every
property in ``required`` (so the model must then send each one: the SDK does not add ``null``), turns ``oneOf``
into ``anyOf``, merges a single ``allOf`` entry, types an untyped schema that has ``properties`` as an object and
inlines a ``$ref`` whose siblings only annotate. It cannot close a free-form object (no declared properties, or
``additionalProperties`` allowing more) without changing what the tool accepts, so the SDK refuses that, as it
refuses a root ``anyOf`` or a nullable root; and it leaves alone what OpenAI refuses beyond those (unsupported
keywords, untyped schemas, arrays without ``items``, the size limits), which the API then still refuses.

Limits are counted leniently over the schema as written (definitions once, ``$ref`` not followed): nesting counts
objects below the root. Pure and bounded: an explicit stack, at most :data:`MAX_NODES` nodes a tool, at most
:data:`MAX_REASONS` reasons kept a tool (all counted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from scanner.providers.base import read_tool

SOURCE = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas"
"""OpenAI's guide, "Structured model outputs", section "Supported schemas" (function calling's strict mode points
to it: https://platform.openai.com/docs/guides/function-calling#strict-mode)."""

MAX_DEPTH = 10  # "up to 10 levels of nesting"
MAX_PROPERTIES = 5000  # "up to 5000 object properties total"
MAX_STRING_LENGTH = 120_000  # property names, definition names, enum values and const values together
MAX_ENUM_VALUES = 1000  # "up to 1000 enum values across all enum properties"
LONG_ENUM = 250  # a string enum with more values than this ...
LONG_ENUM_LENGTH = 15_000  # ... may have at most this many characters in its values
MAX_NODES = 50_000
MAX_REASONS = 50

UNSUPPORTED = ("not", "dependentRequired", "dependentSchemas", "if", "then", "else")
"""Composition keywords OpenAI lists as not supported (``allOf`` too; it is checked apart, as the SDK merges a
single entry)."""

TEXTS = {
    "root-not-object": "Root objects must not be anyOf and must be an object",
    "additional-properties": "additionalProperties: false must always be set in objects",
    "open-object": "additionalProperties: false must always be set in objects (this one declares no properties: "
    "closing it changes what it accepts)",
    "not-required": "All fields must be required",
    "one-of": "'oneOf' is not permitted (anyOf is supported)",
    "all-of": "not supported: allOf",
    "unsupported": "not supported",
    "untyped": "schema must have a 'type' key",
    "items-missing": "array schema missing items",
    "ref-siblings": "a $ref cannot have other keywords beside it",
    "ref-unconverted": 'the Agents SDK sends the tool without strict: "JSON schema contains a reference whose '
    'target was not validated for strict mode."',
    "depth": f"A schema may have up to {MAX_DEPTH} levels of nesting",
    "properties": f"A schema may have up to {MAX_PROPERTIES} object properties total",
    "string-length": f"total string length of all property names, definition names, enum values, and const values "
    f"cannot exceed {MAX_STRING_LENGTH:,} characters",
    "enum-values": f"A schema may have up to {MAX_ENUM_VALUES} enum values across all enum properties",
    "enum-length": f"for a single enum property with string values, the total string length of all enum values "
    f"cannot exceed {LONG_ENUM_LENGTH:,} characters when there are more than {LONG_ENUM} enum values",
}
"""Each reason's words: OpenAI's guide (:data:`SOURCE`), or the API's own error where the guide is silent
(``untyped``, ``items-missing``, ``one-of``: reported verbatim in public issues), or the SDKs (``ref-siblings``:
openai-python and the Agents SDK inline a ``$ref`` that has siblings before sending); docs/rules.md cites each."""

# Keywords that may sit beside a $ref without constraining it (the Agents SDK's list): it inlines those.
_ANNOTATIONS = frozenset(
    {
        "$anchor",
        "$comment",
        "$defs",
        "$schema",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "default",
        "definitions",
        "deprecated",
        "description",
        "examples",
        "readOnly",
        "title",
        "writeOnly",
    }
)
_TYPED = ("type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const")


@dataclass(frozen=True)
class StrictReason:
    """One reason strict mode refuses a tool: ``code`` (a key of :data:`TEXTS`), a JSON Pointer into the tool,
    OpenAI's words (with the keys involved), and whether the Agents SDK's conversion fixes it. ``sent`` is false
    for the one reason OpenAI does not refuse but the SDK's conversion does (``ref-unconverted``)."""

    code: str
    pointer: str
    text: str
    fixable: bool
    sent: bool = True

    def line(self) -> str:
        return f"{self.pointer or '/'}: {self.text}"

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "pointer": self.pointer,
            "text": self.text,
            "refused_as_sent": self.sent,
            "conversion_fixes": self.fixable,
        }


@dataclass(frozen=True)
class StrictVerdict:
    """One tool in strict mode: its reasons (the first :data:`MAX_REASONS`), how many there are in all, how many
    OpenAI refuses as sent and how many the conversion cannot fix."""

    tool: str
    reasons: tuple[StrictReason, ...] = ()
    count: int = 0
    unfixable: int = 0
    refused: int = 0

    @property
    def as_sent(self) -> bool:
        """OpenAI would take the parameters with ``strict: true`` exactly as the server lists them."""
        return self.refused == 0

    @property
    def converted(self) -> bool:
        """OpenAI would take them once the Agents SDK has converted them (nothing left that it cannot fix)."""
        return self.unfixable == 0

    def state(self) -> str:
        if self.as_sent:
            return "accepted as sent"
        if self.converted:
            return "refused as sent, accepted after the Agents SDK's conversion"
        if self.as_sent:
            return "accepted as sent; the Agents SDK's conversion gives up on it"
        return "refused, also after the Agents SDK's conversion"

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "as_sent": "accepted" if self.as_sent else "refused",
            "after_conversion": "accepted" if self.converted else "refused",
            "reasons_total": self.count,
            "reasons": [reason.to_json() for reason in self.reasons],
        }


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind):
        return True
    return kind is None and isinstance(node.get("properties"), dict)


def schema_reasons(schema: Any, base: str = "/inputSchema") -> Iterator[StrictReason]:
    """Every reason OpenAI's strict mode refuses ``schema`` (a tool's ``inputSchema``), pointers under ``base``."""
    if schema is None or schema == {}:
        # The SDK sends an empty closed object for an empty schema; the API refuses one that is not an object.
        yield StrictReason("root-not-object", base, TEXTS["root-not-object"], True)
        return
    if not isinstance(schema, dict):
        yield StrictReason("root-not-object", base, TEXTS["root-not-object"], False)
        return
    yield from _root(schema, base)
    totals = {"properties": 0, "strings": 0, "enums": 0}
    stack: list[tuple[Any, str, int]] = [(schema, base, 0)]
    seen = 0
    while stack and seen < MAX_NODES:
        node, where, depth = stack.pop()
        seen += 1
        yield from _node(node, where, depth, totals, root=node is schema)
        if isinstance(node, dict):
            stack.extend(reversed(list(_children(node, where, depth))))
    yield from _limits(totals, base)


def _root(schema: dict[str, Any], base: str) -> Iterator[StrictReason]:
    kind = schema.get("type")
    if "anyOf" in schema or "oneOf" in schema:
        keyword = "anyOf" if "anyOf" in schema else "oneOf"
        yield StrictReason("root-not-object", f"{base}/{keyword}", f"{TEXTS['root-not-object']} ({keyword})", False)
    elif kind != "object":
        # No type with properties: the SDK types it as an object; a nullable or other root it refuses.
        fixable = (kind is None and isinstance(schema.get("properties"), dict)) or kind == ["object"]
        yield StrictReason("root-not-object", f"{base}/type", TEXTS["root-not-object"], fixable)


def _node(node: Any, where: str, depth: int, totals: dict[str, int], *, root: bool) -> Iterator[StrictReason]:
    if not isinstance(node, dict):
        yield StrictReason("untyped", where, TEXTS["untyped"], False)  # a boolean schema: the SDK cannot read it
        return
    properties = node.get("properties")
    if not root and not any(key in node for key in _TYPED):  # at the root, root-not-object says it
        yield StrictReason("untyped", where, TEXTS["untyped"], isinstance(properties, dict))
    if _is_object(node):
        declared = isinstance(properties, dict) and bool(properties)
        closed = node.get("additionalProperties")
        if closed is not False:
            if not declared:
                yield StrictReason("open-object", where, TEXTS["open-object"], False)
            else:
                fixable = "additionalProperties" not in node
                said = "" if fixable else f" (it is {_short(closed)})"
                yield StrictReason("additional-properties", where, TEXTS["additional-properties"] + said, fixable)
        if declared and isinstance(properties, dict):
            required = node.get("required")
            listed = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
            missing = [key for key in properties if key not in listed]
            if missing:
                names = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
                yield StrictReason("not-required", f"{where}/required", f"{TEXTS['not-required']}: {names}", True)
        if depth > MAX_DEPTH:
            yield StrictReason("depth", where, f"{TEXTS['depth']} (this object is at level {depth})", False)
    if isinstance(properties, dict):
        totals["properties"] += len(properties)
        totals["strings"] += sum(len(key) for key in properties)
    for defs in ("$defs", "definitions"):
        if isinstance(node.get(defs), dict):
            totals["strings"] += sum(len(key) for key in node[defs])
    yield from _keywords(node, where, root=root)
    yield from _enum(node, where, totals)


def _keywords(node: dict[str, Any], where: str, *, root: bool) -> Iterator[StrictReason]:
    kind = node.get("type")
    if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and "items" not in node:
        yield StrictReason("items-missing", where, TEXTS["items-missing"], False)
    if "oneOf" in node and not root:  # at the root, root-not-object says it
        yield StrictReason("one-of", f"{where}/oneOf", TEXTS["one-of"], True)
    entries = node.get("allOf")
    if "allOf" in node:
        single = isinstance(entries, list) and len(entries) == 1
        yield StrictReason("all-of", f"{where}/allOf", TEXTS["all-of"], single)
    for keyword in UNSUPPORTED:
        if keyword in node:
            yield StrictReason("unsupported", f"{where}/{keyword}", f"{TEXTS['unsupported']}: {keyword}", False)
    if "$ref" in node:
        siblings = set(node) - {"$ref"}
        if not siblings:  # OpenAI takes it; the SDK (MCP path) leaves it in place and gives up
            yield StrictReason("ref-unconverted", where, TEXTS["ref-unconverted"], False, sent=False)
        else:
            fixable = not siblings - _ANNOTATIONS
            said = ", ".join(sorted(siblings)[:5])
            yield StrictReason("ref-siblings", where, f"{TEXTS['ref-siblings']}: {said}", fixable)


def _enum(node: dict[str, Any], where: str, totals: dict[str, int]) -> Iterator[StrictReason]:
    values = node.get("enum")
    if isinstance(values, list):
        totals["enums"] += len(values)
        texts = [value for value in values if isinstance(value, str)]
        length = sum(len(text) for text in texts)
        totals["strings"] += length
        if len(texts) > LONG_ENUM and length > LONG_ENUM_LENGTH:
            said = f" ({len(texts)} values, {length:,} characters)"
            yield StrictReason("enum-length", f"{where}/enum", TEXTS["enum-length"] + said, False)
    const = node.get("const")
    if isinstance(const, str):
        totals["strings"] += len(const)


def _limits(totals: dict[str, int], base: str) -> Iterator[StrictReason]:
    if totals["properties"] > MAX_PROPERTIES:
        yield StrictReason("properties", base, f"{TEXTS['properties']} (it has {totals['properties']:,})", False)
    if totals["enums"] > MAX_ENUM_VALUES:
        yield StrictReason("enum-values", base, f"{TEXTS['enum-values']} (it has {totals['enums']:,})", False)
    if totals["strings"] > MAX_STRING_LENGTH:
        yield StrictReason("string-length", base, f"{TEXTS['string-length']} (it has {totals['strings']:,})", False)


def _children(node: dict[str, Any], where: str, depth: int) -> Iterator[tuple[Any, str, int]]:
    """The subschemas strict mode reads, with their pointers and object nesting level (``$ref`` not followed;
    the unsupported keywords' own subschemas are not read: their keyword is refused already)."""
    level = depth + 1 if _is_object(node) else depth
    properties = node.get("properties")
    if isinstance(properties, dict):
        for key, value in properties.items():
            yield value, f"{where}/properties/{_escape(str(key))}", level
    items = node.get("items")
    if isinstance(items, dict):
        yield items, f"{where}/items", depth
    elif isinstance(items, list):
        for index, value in enumerate(items):
            yield value, f"{where}/items/{index}", depth
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = node.get(keyword)
        if isinstance(branches, list):
            for index, value in enumerate(branches):
                yield value, f"{where}/{keyword}/{index}", depth
    for defs in ("$defs", "definitions"):
        table = node.get(defs)
        if isinstance(table, dict):
            for key, value in table.items():
                yield value, f"{where}/{defs}/{_escape(str(key))}", level


def _short(value: Any) -> str:
    if value is True:
        return "true"
    if isinstance(value, dict):
        return "a schema" if value else "{}"
    return type(value).__name__


def strict_verdict(tool: Any, index: int = 0) -> StrictVerdict:
    """One raw tool's verdict (a tool that is not an object is named by its index and refused)."""
    parts = read_tool(tool)
    if parts is None:
        reason = StrictReason("root-not-object", "", "the tool is not a JSON object", False)
        return StrictVerdict(f"#{index}", (reason,), 1, 1, 1)
    name = parts.name or f"#{index}"
    kept: list[StrictReason] = []
    count = unfixable = refused = 0
    for reason in schema_reasons(parts.schema):
        count += 1
        unfixable += not reason.fixable
        refused += reason.sent
        if len(kept) < MAX_REASONS:
            kept.append(reason)
    return StrictVerdict(name, tuple(kept), count, unfixable, refused)


def strict_verdicts(tools: Iterable[Any]) -> tuple[StrictVerdict, ...]:
    return tuple(strict_verdict(tool, index) for index, tool in enumerate(tools))


def summary(found: Sequence[StrictVerdict]) -> str:
    """``3 of 5 tools can be sent with strict: true; 4 of 5 after the Agents SDK's conversion``."""
    total = len(found)
    sent = sum(verdict.as_sent for verdict in found)
    converted = sum(verdict.converted for verdict in found)
    noun = "tool" if total == 1 else "tools"
    after = f"{converted} of {total} after the Agents SDK's conversion"
    return f"{sent} of {total} {noun} can be sent with strict: true; {after}"


# --- rendering (check's text, JSON and Markdown call these) -----------------------------------------------------


def result_view(result: Any) -> tuple[StrictVerdict, ...] | None:
    """The view of a ``fathom check`` result, or None when it was not asked for (``--openai-strict``) or no list
    was measured."""
    if not getattr(result, "openai_strict", False) or getattr(result, "report", None) is None:
        return None
    tools = getattr(result, "tools", None)
    return strict_verdicts(tools) if tools is not None else None


HEADING = "OpenAI strict mode (a view: not a finding, never scored)"


def to_json(found: Sequence[StrictVerdict]) -> dict[str, Any]:
    return {
        "source": SOURCE,
        "summary": summary(found),
        "accepted_as_sent": sum(verdict.as_sent for verdict in found),
        "accepted_after_conversion": sum(verdict.converted for verdict in found),
        "tools": [verdict.to_json() for verdict in found],
    }


def render_text(found: Sequence[StrictVerdict], *, reasons: int = 2) -> list[str]:
    """The block of ``check --openai-strict``: the summary, then each tool that is refused as sent or by the
    conversion, with its first ``reasons`` reasons (the others are counted in the summary, not listed)."""
    lines = [HEADING, f"  {summary(found)}."]
    for verdict in found:
        if verdict.count == 0:
            continue
        lines.append(f"  {verdict.tool}: {verdict.state()}")
        lines += [f"      {reason.line()}" for reason in verdict.reasons[:reasons]]
        if verdict.count > reasons:
            lines.append(f"      and {verdict.count - reasons} more")
    lines.append(f"  Source: {SOURCE}")
    return lines


def render_markdown(found: Sequence[StrictVerdict], cell: Callable[[str], str]) -> list[str]:
    """The Markdown block: the summary and one row per tool; ``cell`` escapes a table cell's text."""
    lines = [f"### {HEADING}", "", f"{cell(summary(found))} ([supported schemas]({SOURCE})).", ""]
    if not found:
        return lines
    lines += ["| tool | as sent | after the SDK's conversion | first reasons |", "|---|---|---|---|"]
    for verdict in found:
        why = "; ".join(reason.line() for reason in verdict.reasons[:2])
        if verdict.count > 2:
            why += f"; and {verdict.count - 2} more"
        sent = "accepted" if verdict.as_sent else "refused"
        converted = "accepted" if verdict.converted else "refused"
        lines.append(f"| {cell(verdict.tool)} | {sent} | {converted} | {cell(why)} |")
    lines.append("")
    return lines


# --- docs/rules.md ------------------------------------------------------------------------------------------------

_FIXES = {
    "root-not-object": "only a root that lacks `type` beside `properties`, or `{}`; not a root `anyOf`/`oneOf` or "
    'a nullable root (the SDK: "The root of a strict JSON schema must not use `anyOf`")',
    "additional-properties": "yes when absent on an object that declares properties; not when `true` or a schema "
    '(the SDK: "additionalProperties should not be set for object types")',
    "open-object": "no: an object that declares no properties (a free-form map, or a tool without arguments, "
    '`{"type": "object"}`) cannot be closed without changing what it accepts; the SDK refuses ("JSON schema '
    'contains an object that permits undeclared properties"). Setting `"additionalProperties": false` yourself '
    "makes a tool without arguments acceptable",
    "not-required": "yes: the SDK lists every property in `required`, so the model must then send each one (OpenAI's "
    'advice for an optional value is a type union with `"null"`, which the SDK does not add)',
    "one-of": "yes (the SDK turns `oneOf` into `anyOf`), except at the root",
    "all-of": "a single entry is merged; several are sent as they are, and refused",
    "unsupported": "no: the SDK sends them, and the API refuses",
    "untyped": "only a schema with `properties` (typed as an object)",
    "items-missing": "no (MCP803: refused with or without strict)",
    "ref-siblings": "yes when the siblings only annotate (`description`, `title`, `default`, `examples`, ...): the "
    'definition is inlined; not otherwise (the SDK: "incompatible sibling keyword(s)")',
    "ref-unconverted": 'no: OpenAI takes a bare `$ref` ("Definitions are supported"), the SDK\'s MCP path gives up '
    "on it; the tool is accepted as sent",
    "depth": "no",
    "properties": "no",
    "string-length": "no",
    "enum-values": "no",
    "enum-length": "no",
}
_SOURCES = {
    "one-of": "the API's error, quoted in the OpenAI community thread \"Official documentation for supported schemas "
    'for response_format" (2024): "In context=(), \'oneOf\' is not permitted."',
    "untyped": "the API's error, quoted in can1357/oh-my-pi#210 (2026-02): \"Invalid schema for function 'NAME': In "
    "context=('properties', 'slide_instructions', 'items'), schema must have a 'type' key.\"",
    "items-missing": "the API's error; MCP803 cites the reports",
    "ref-siblings": "openai-python's `_ensure_strict_json_schema` and the Agents SDK inline such a `$ref` before "
    'sending: "we can\'t use `$ref`s if there are also other properties defined"',
    "ref-unconverted": "the Agents SDK (`agents/strict_schema.py`)",
}


def catalogue_section() -> list[str]:
    """The section of ``docs/rules.md`` that documents this view (generated with the catalogue)."""
    out = [
        "## Beyond the rules: OpenAI's strict mode (a view)",
        "",
        "`fathom check --openai-strict` adds a block to the text, JSON (`openai_strict`) and Markdown outputs: for "
        'each tool, whether OpenAI\'s strict mode (`"strict": true` on a function tool, Structured Outputs) takes its '
        "parameters as sent, and after the conversion the OpenAI Agents SDK applies to an MCP server's tools when an "
        "agent sets `convert_schemas_to_strict` (`agents.strict_schema.ensure_strict_json_schema`, openai-agents "
        "0.24.0; when it fails, the SDK sends the tool without strict), with the first reasons (JSON Pointers), and "
        'one line: "N of M tools can be sent with strict: true". It is a view, not a rule: strict mode is the '
        "client's choice (no MCP client Fathom knows turns it on for server tools by default), so it is shown only "
        "when asked for and is never a finding, in the score or in a gate. A public census ran OpenAI's strict "
        "converter over 617 servers and found 27.6 % rejected.",
        "",
        f'Source: OpenAI, *Structured model outputs*, "Supported schemas" (<{SOURCE}>), which function calling\'s '
        "strict mode refers to (<https://platform.openai.com/docs/guides/function-calling#strict-mode>), quoted "
        "below; where the guide is silent, the API's own error or the SDKs, as named.",
        "",
        "| reason | OpenAI's words | fixed by the SDK's conversion? |",
        "|---|---|---|",
    ]
    composition = "Some type-specific keywords are not yet supported ... Composition: " + ", ".join(
        ("allOf", *UNSUPPORTED)
    )
    for code, text in TEXTS.items():
        said = composition if code in ("all-of", "unsupported") else text.replace("|", "\\|")
        source = _SOURCES.get(code)
        if source is not None:
            said += f"; {source}"
        out.append(f"| `{code}` | {said} | {_FIXES[code]} |")
    out += [
        "",
        "How the limits are counted is not published (an OpenAI community thread asks); Fathom counts leniently, over "
        "the schema as written: nesting counts objects below the root, definitions are counted once and `$ref` is "
        "not followed. Not checked: string `format` values outside OpenAI's list, and the keywords the guide refuses "
        "for fine-tuned models only.",
        "",
        "Measured on the 22 real lists kept here (228 tools): 22 tools are accepted as sent (in 5 lists; no list "
        "whole), 183 after the SDK's conversion (14 lists whole). The SDK agrees with Fathom's \"after the "
        'conversion" on every real tool and every fixture; the fixtures where the SDK converts a schema OpenAI '
        "still refuses are listed with why (`tests/providers/strict_cases.py`, "
        "`tests/providers/test_openai_strict_oracle.py`).",
        "",
    ]
    return out
