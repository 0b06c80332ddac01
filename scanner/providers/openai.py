"""OpenAI Chat Completions: the ``tools`` it receives, and what the list costs per turn.

The request carries ``{"type": "function", "function": {"name", "description", "parameters"}}`` per tool.
``strict`` is left out (the API's default, false): strict mode needs ``additionalProperties: false`` and every
property required at every level, which almost no MCP schema satisfies, and the MCP clients we know do not
turn it on for server tools. The rules (MCP205, MCP208) say where a schema would not survive strict mode.

The model does not read the JSON. Functions are rendered into the developer message as a TypeScript-like
``namespace functions { ... }`` block, the format openai/harmony ``docs/format.md`` documents (and its renderer,
``src/encoding.rs``, implements): description lines become ``//`` comments, each function is
``type name = (_: { ... }) => any;`` (``() => any`` without parameters), properties get their description as
a comment above, ``?`` when optional, enums as unions of literals, ``// default: x`` after the type, nested
objects inline, arrays as ``T[]``. Counting the raw JSON would overstate the cost about 2x. Against the
``openai-harmony`` renderer itself the count agrees within 2 % (docs/tokens.md); the two deliberate differences
are ``() => any`` for a tool without properties (as the documentation says) and unions for ``anyOf``.

The count is o200k_base over the rendered ``# Tools`` section, plus :data:`OVERHEAD` tokens for the fixed text
a request with functions gains outside it (see :data:`OVERHEAD_PIECES`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from scanner import tokenizer
from scanner.models import TokenCount
from scanner.providers.base import EMPTY_OBJECT_SCHEMA, Measurement, Provider, ToolParts, plain_json, read_tool

HEADER = "# Tools\n\n## functions\n\nnamespace functions {\n\n"
FOOTER = "} // namespace functions"

OVERHEAD_PIECES = ("\n\n", "Calls to these tools must go to the commentary channel: 'functions'.")
"""Outside the tools section: the blank line joining it to the developer instructions, and the line harmony adds
to the system message's channel list whenever function tools exist (its leading newline merges into the
previous line's final pre-token, so it is not counted twice)."""

OVERHEAD = 15
"""o200k_base tokens of :data:`OVERHEAD_PIECES`, each counted alone (tests recount them)."""

METHOD = f"o200k_base(harmony namespace render)+{OVERHEAD}"
INDENT = "    "


class OpenAI(Provider):
    name = "openai"

    def declaration(self, parts: ToolParts) -> dict[str, Any]:
        function: dict[str, Any] = {"name": parts.name}
        if parts.description is not None:
            function["description"] = parts.description
        function["parameters"] = parts.schema if parts.schema is not None else dict(EMPTY_OBJECT_SCHEMA)
        return {"type": "function", "function": function}

    def measure_parts(self, tools: Sequence[ToolParts | None]) -> Measurement:
        blocks: list[str] = []
        per_tool: list[int] = []
        for parts in tools:
            if parts is None:
                per_tool.append(0)
                continue
            block = render_function(parts)
            blocks.append(block)
            # A tool's own cost: its block plus the blank line that follows it in the namespace.
            per_tool.append(tokenizer.count(block + "\n"))
        if not blocks:
            return Measurement(TokenCount(self.name, 0, METHOD), tuple(per_tool))
        units = [count for parts, count in zip(tools, per_tool, strict=True) if parts is not None]
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
    """One function as harmony renders it: description comments, then its type line (newline included)."""
    lines = _comment(parts.description or "", "")
    schema = parts.schema
    if schema is not None and _has_properties(schema):
        lines.append(f"type {parts.name} = (_: {_braced(schema, 0)}) => any;")
    else:
        lines.append(f"type {parts.name} = () => any;")
    return "\n".join(lines) + "\n"


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}// {line}" for line in text.splitlines()]


def _has_properties(schema: dict[str, Any]) -> bool:
    properties = schema.get("properties")
    return isinstance(properties, dict) and bool(properties)


def _object(schema: dict[str, Any], depth: int) -> str:
    """``{ ... }`` with one line per property; ``depth`` is the nesting level of the properties inside."""
    indent = INDENT * depth
    properties = schema.get("properties")
    assert isinstance(properties, dict)
    required = schema.get("required")
    required_names = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    out = ["{"]
    for key, prop in properties.items():
        prop_schema = prop if isinstance(prop, dict) else {}
        title = prop_schema.get("title")
        if isinstance(title, str) and title:
            out.extend(_comment(title, indent))
            out.append(f"{indent}//")
        description = prop_schema.get("description")
        if isinstance(description, str):
            out.extend(_comment(description, indent))
        examples = prop_schema.get("examples")
        if isinstance(examples, list) and any(isinstance(example, str) for example in examples):
            out.append(f"{indent}// Examples:")
            out.extend(f'{indent}// - "{example}"' for example in examples if isinstance(example, str))
        optional = "" if key in required_names else "?"
        line = f"{indent}{key}{optional}: {_type(prop_schema, depth + 1)},"
        if "default" in prop_schema:
            line += f" // default: {_default(prop_schema)}"
        out.append(line)
    out.append(indent + "}")  # harmony closes a nested object at its properties' indent
    return "\n".join(out)


_SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}
# Keywords that make a scalar-typed schema render as more than its type's name.
_PLAIN_SCALAR = frozenset(("enum", "const", "anyOf", "oneOf", "allOf", "nullable"))


def _type(schema: Any, depth: int) -> str:
    """The TypeScript-like type of a schema; ``depth`` is where an inline object's properties would sit."""
    if not isinstance(schema, dict) or "$ref" in schema:
        return "any"  # references are never resolved
    declared = schema.get("type")
    if type(declared) is str and declared in _SCALARS and _PLAIN_SCALAR.isdisjoint(schema):
        return _SCALARS[declared]  # most parameters: what the general path below gives them, sooner
    enum = schema.get("enum")
    if isinstance(enum, list):
        literals = [_literal(value) for value in enum if _is_scalar(value)]
        if literals:
            return _nullable(schema, " | ".join(dict.fromkeys(literals)))
    if "const" in schema and _is_scalar(schema["const"]):
        return _nullable(schema, _literal(schema["const"]))
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            return _nullable(schema, " | ".join(dict.fromkeys(_type(branch, depth) for branch in branches)))
    branches = schema.get("allOf")
    if isinstance(branches, list) and branches:
        return _nullable(schema, " & ".join(dict.fromkeys(_type(branch, depth) for branch in branches)))
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    names = [name for name in names if isinstance(name, str)]
    if not names:
        if _has_properties(schema):
            names = ["object"]
        elif "items" in schema:
            names = ["array"]
    rendered = [_named_type(schema, name, depth) for name in names]
    return _nullable(schema, " | ".join(dict.fromkeys(rendered)) if rendered else "any")


def _named_type(schema: dict[str, Any], name: str, depth: int) -> str:
    if name in _SCALARS:
        return _SCALARS[name]
    if name == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return "any[]"
        inner = _type(items, depth)
        return f"({inner})[]" if " | " in inner or " & " in inner else f"{inner}[]"
    if name == "object":
        return _braced(schema, depth) if _has_properties(schema) else "object"
    return "any"


def _braced(schema: dict[str, Any], depth: int) -> str:
    """An object with properties; like harmony, its own description is also written just before the brace
    (so a described property object shows its description twice: above the property and here)."""
    description = schema.get("description")
    if not isinstance(description, str):
        return _object(schema, depth)
    return "".join(f"{line}\n" for line in _comment(description, INDENT * depth)) + _object(schema, depth)


def _nullable(schema: dict[str, Any], rendered: str) -> str:
    if schema.get("nullable") is True and "null" not in rendered.split(" | "):
        return f"{rendered} | null"
    return rendered


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | bool | int | float)


def _literal(value: Any) -> str:
    return plain_json(value)


def _default(schema: dict[str, Any]) -> str:
    value = schema["default"]
    if isinstance(value, str):
        # harmony quotes a string default unless the property is an enum (whose members are already shown).
        return value if isinstance(schema.get("enum"), list) else f'"{value}"'
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
