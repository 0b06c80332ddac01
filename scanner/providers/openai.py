"""OpenAI Chat Completions: the ``tools`` it receives, and what the list costs per turn.

The request carries ``{"type": "function", "function": {"name", "description", "parameters"}}`` per tool.
``strict`` is left out (the API's default, false): strict mode needs ``additionalProperties: false`` and every
property required at every level, which almost no MCP schema satisfies, and the MCP clients we know do not
turn it on for server tools. The rules (MCP205, MCP208) say where a schema would not survive strict mode;
``check --openai-strict`` shows, per tool, whether it would (:mod:`scanner.providers.strict`).

The model does not read the JSON. Functions are rendered into the developer message as a TypeScript-like
``namespace functions { ... }`` block, the format openai/harmony ``docs/format.md`` documents, written here as
its published renderer (``openai-harmony`` 0.0.8, ``src/encoding.rs``) writes it, quirks included: description
lines become ``//`` comments, each function is ``type name = (_: { ... }) => any;``, properties get their title,
description and examples as comments above, ``?`` when optional, string enums as unions of literals,
``// default: x`` after the type, nested objects inline, arrays as ``T[]``, ``oneOf`` as one `` | variant`` line
each. What the renderer does not read, this does not render either: a ``$ref`` (shared ``$defs`` included),
``anyOf``, ``allOf``, ``const`` and untyped schemas are ``any`` (or the plain ``type`` beside them), an enum of
numbers is ``number``. Counting the raw JSON would overstate the cost about 2x. On every real list in
``tests/fixtures/real`` the text is the renderer's byte for byte, but for the one deliberate difference: a tool
that takes no properties is ``() => any`` (as the documentation writes it), not ``(_: {\\n}) => any``
(tests/providers/test_openai_harmony.py).

The count is o200k_base over the rendered ``# Tools`` section, plus :data:`OVERHEAD` tokens for the fixed text
a request with functions gains outside it (see :data:`OVERHEAD_PIECES`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from scanner.measure import tokenizer
from scanner.models import TokenCount
from scanner.providers.base import EMPTY_OBJECT_SCHEMA, Measurement, Provider, ToolParts, read_tool

HEADER = "# Tools\n\n## functions\n\nnamespace functions {\n\n"
FOOTER = "} // namespace functions"

OVERHEAD_PIECES = ("\n\n", "Calls to these tools must go to the commentary channel: 'functions'.")
"""Outside the tools section: the blank line joining it to the developer instructions, and the line harmony adds
to the system message's channel list whenever function tools exist (its leading newline merges into the
previous line's final pre-token, so it is not counted twice)."""

OVERHEAD = 15
"""o200k_base tokens of :data:`OVERHEAD_PIECES`, each counted alone (tests recount them)."""

METHOD = f"o200k_base(harmony namespace render, openai-harmony 0.0.8)+{OVERHEAD}"
"""Names the renderer whose output is counted; the version changes with what the render does, so stored counts
made by an earlier render (``o200k_base(harmony namespace render)+15``: unions for ``anyOf``) stay told apart."""
INDENT = "    "


class OpenAI(Provider):
    name = "openai"

    def declaration(self, parts: ToolParts) -> dict[str, Any]:
        function: dict[str, Any] = {"name": parts.name}
        if parts.description is not None:
            function["description"] = parts.description
        function["parameters"] = parts.schema if parts.schema is not None else dict(EMPTY_OBJECT_SCHEMA)
        return {"type": "function", "function": function}

    def counting(self, tools: Sequence[ToolParts | None]) -> tokenizer.Counting[Measurement]:
        blocks = [render_function(parts) for parts in tools if parts is not None]
        if not blocks:
            return Measurement(TokenCount(self.name, 0, METHOD), (0,) * len(tools))
        # A tool's own cost: its block plus the blank line that follows it in the namespace.
        units = yield [block + "\n" for block in blocks]
        counted = iter(units)
        per_tool = [0 if parts is None else next(counted) for parts in tools]
        total = section_tokens(blocks, units) + OVERHEAD
        return Measurement(TokenCount(self.name, total, METHOD), tuple(per_tool))

    def render(self, tools: Sequence[Any]) -> str:
        """The ``# Tools`` section the model reads for this list ("" for no tools)."""
        blocks = [render_function(parts) for parts in map(read_tool, tools) if parts is not None]
        return render_section(blocks) if blocks else ""


def render_section(blocks: list[str]) -> str:
    """The developer message's tools section around already rendered function blocks."""
    return HEADER + "\n".join(blocks) + "\n" + FOOTER


def section_tokens(blocks: list[str], units: list[int]) -> int:
    """``tokenizer.count(render_section(blocks))``, from ``units[i] = tokenizer.count(blocks[i] + "\\n")``.

    The section is ``HEADER + unit_1 + ... + unit_n + FOOTER``, and o200k_base counts each pre-token (regex
    piece) on its own, so the section costs the sum of its parts except where a piece spans two of them. Every
    unit ends in ``" any;\\n\\n"`` (``;\\n\\n`` is one piece) and starts with ``"// "`` or ``"type "``; FOOTER
    starts with ``"}"``. The only piece that spans a seam is ``";\\n\\n//"`` (or ``" {\\n\\n//"`` after HEADER)
    before a unit opening with a comment: the piece's own punctuation run takes the ``//`` and stops at the space
    after it. So the total is the parts plus a constant correction per such unit (tests compare it with the
    whole section's count on hostile lists). Saves encoding the list a second time.
    """
    header, footer, after_header, after_unit = _seam_tokens()
    total = header + sum(units) + footer
    for index, block in enumerate(blocks):
        if block.startswith("//"):
            total += after_header if index == 0 else after_unit
    return total


@functools.cache
def _seam_tokens() -> tuple[int, int, int, int]:
    """HEADER's and FOOTER's tokens, and what a leading ``//`` adds when it joins the piece before it."""
    count = tokenizer.count
    slashes = count("//")
    return (
        count(HEADER),
        count(FOOTER),
        count(HEADER + "//") - count(HEADER) - slashes,
        count(";\n\n//") - count(";\n\n") - slashes,
    )


def render_function(parts: ToolParts) -> str:
    """One function as harmony renders it: description comments, then its type line (newline included).

    A schema that takes no properties (an object type without any, or no schema) is ``() => any``, as the harmony
    documentation writes a function without parameters; the renderer writes ``(_: {\\n}) => any`` for MCP's
    ``{"type": "object"}`` (the one deliberate difference, a couple of tokens a tool).
    """
    lines = [f"// {line}" for line in _lines(parts.description or "")]
    schema = parts.schema
    if schema is None or _takes_nothing(schema):
        lines.append(f"type {parts.name} = () => any;")
    else:
        lines.append(f"type {parts.name} = (_: {_type(schema, '')}) => any;")
    return "\n".join(lines) + "\n"


def _lines(text: str) -> list[str]:
    """Rust's ``str::lines``: split at ``\\n`` (a ``\\r`` before it dropped), no empty line after a final one."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _takes_nothing(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" and not isinstance(schema.get("oneOf"), list) and not _has_properties(schema)


def _has_properties(schema: dict[str, Any]) -> bool:
    properties = schema.get("properties")
    return isinstance(properties, dict) and bool(properties)


# What the renderer writes for a scalar ``type``; any other name (``"null"`` included) is ``any``.
_SCALARS = {"number": "number", "integer": "number", "boolean": "boolean"}


def _type(schema: Any, indent: str) -> str:
    """The TypeScript-like type of a schema as the reference renderer writes it; ``indent`` is the indent of an
    inline object's properties (and of its closing brace).

    It reads only ``oneOf``, ``type``, ``enum`` (of a string), ``items`` and an object's ``properties``: a
    ``$ref`` is never resolved, and ``anyOf``, ``allOf``, ``const``, an enum of another type or an untyped schema
    are not rendered (``any``, or the plain ``type`` beside them), so ``anyOf: [A, null]`` is ``any`` and a
    shared ``$defs`` item is ``any[]``.
    """
    if not isinstance(schema, dict):
        return "any"
    variants = schema.get("oneOf")
    if isinstance(variants, list):
        return "".join(
            f"\n{indent} | {_variant(v, indent, repeated=None, drop_description=False, quote_enum=True)}"
            for v in variants
        )
    declared = schema.get("type")
    if isinstance(declared, list):
        names = ["number" if name == "integer" else name for name in declared if isinstance(name, str)]
        if names:
            return " | ".join(names)
        return "any"
    if not isinstance(declared, str):
        return "any"
    scalar = _SCALARS.get(declared)
    if scalar is not None:
        return scalar
    if declared == "string":
        enum = schema.get("enum")
        literals = [f'"{value}"' for value in enum if isinstance(value, str)] if isinstance(enum, list) else []
        return " | ".join(literals) if literals else "string"
    if declared == "array":
        return f"{_type(schema['items'], indent)}[]" if "items" in schema else "Array<any>"
    if declared == "object":
        return _object(schema, indent)
    return "any"


def _variant(variant: Any, indent: str, *, repeated: str | None, drop_description: bool, quote_enum: bool) -> str:
    """One ``oneOf`` member after its `` | ``: its type, then its description (unless dropped or equal to
    ``repeated``, the property's own) and its default as one trailing comment."""
    rendered = _with_null(variant, _type(variant, indent + "   "))
    if not isinstance(variant, dict):
        return rendered
    trailing = []
    description = variant.get("description")
    if isinstance(description, str) and not drop_description and description != repeated:
        trailing.append(description)
    if "default" in variant:
        trailing.append(f"default: {_default(variant, quote_enum=quote_enum)}")
    return f"{rendered} // {' '.join(trailing)}" if trailing else rendered


def _object(schema: dict[str, Any], indent: str) -> str:
    """``{ ... }``, one property per line at ``indent``, closed at ``indent`` (the renderer's habit); the object's
    own description just before the brace, so a described property object shows it twice."""
    out = []
    description = schema.get("description")
    if isinstance(description, str):
        out.append(f"{indent}// {description}\n")
    out.append("{\n")
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = schema.get("required")
        required_names = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
        for key, prop in properties.items():
            out.append(_property(key, prop, key in required_names, indent))
    out.append(indent + "}")
    return "".join(out)


def _property(key: str, prop: Any, required: bool, indent: str) -> str:
    """One property's comments (title, description, examples, each ``// `` once: a multi-line text keeps its
    later lines bare, as the renderer writes them) and its line."""
    schema = prop if isinstance(prop, dict) else {}
    out = []
    title = schema.get("title")
    if isinstance(title, str):
        out.append(f"{indent}// {title}\n{indent}//\n")
    description = schema.get("description")
    description = description if isinstance(description, str) else None
    has_one_of = "oneOf" in schema
    if description is not None and not has_one_of:
        out.append(f"{indent}// {description}\n")
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        out.append(f"{indent}// Examples:\n")
        out.extend(f'{indent}// - "{example}"\n' for example in examples if isinstance(example, str))
    optional = "" if required else "?"
    variants = schema.get("oneOf")
    if isinstance(variants, list):
        return "".join(out) + _one_of_property(key + optional, schema, variants, description, indent)
    line = f"{indent}{key}{optional}: {_with_null(schema, _type(schema, indent + INDENT))},"
    if "default" in schema and not has_one_of:
        line += f" // default: {_default(schema, quote_enum=False)}"
    out.append(line + "\n")
    return "".join(out)


def _one_of_property(
    label: str, schema: dict[str, Any], variants: list[Any], description: str | None, indent: str
) -> str:
    """A ``oneOf`` property: its description above (unless the first variant says the same), its default, then
    ``name:`` and one `` | variant`` line each, closed by a line holding only the comma."""
    out = []
    first = variants[0] if variants else None
    first_description = first.get("description") if isinstance(first, dict) else None
    above = description is not None and description != first_description
    if above:
        out.append(f"{indent}// {description}\n")
    if "default" in schema:
        out.append(f"{indent}// default: {_default(schema, quote_enum=False)}\n")
    out.append(f"{indent}{label}:\n")
    for index, variant in enumerate(variants):
        drop = index == 0 and above
        rendered = _variant(variant, indent, repeated=description, drop_description=drop, quote_enum=False)
        out.append(f"{indent} | {rendered}\n")
    out.append(f"{indent},\n")
    return "".join(out)


def _with_null(schema: Any, rendered: str) -> str:
    """``| null`` after a ``nullable: true`` schema's type, unless the text already says null anywhere."""
    if isinstance(schema, dict) and schema.get("nullable") is True and "null" not in rendered:
        return f"{rendered} | null"
    return rendered


def _default(schema: dict[str, Any], *, quote_enum: bool) -> str:
    """A default as the renderer writes it: a string quoted unless the schema has a non-empty ``enum`` (a top-level
    ``oneOf`` variant quotes even then: ``quote_enum``), anything else as compact JSON."""
    value = schema["default"]
    if isinstance(value, str):
        enum = schema.get("enum")
        if isinstance(enum, list) and enum and not quote_enum:
            return value
        if isinstance(enum, list) and enum:
            return _json(value)
        return f'"{value}"'
    return _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
