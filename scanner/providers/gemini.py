"""Gemini API: the ``tools`` it receives, and what the list costs per turn, in both of its schema fields.

A ``FunctionDeclaration`` takes its parameters in one of two mutually exclusive fields:

* ``parametersJsonSchema``: JSON Schema, as the MCP tool's ``inputSchema`` already is. Current clients built on
  Google's SDKs pass the MCP schema through unchanged: Gemini CLI (``DiscoveredMCPTool``) and the @google/genai
  SDK's own MCP adapter (``mcpToTool``). :class:`Gemini` (``--as gemini``, key ``gemini``) is this shape, and the
  one counted.
* ``parameters``: Gemini's ``Schema``, a subset of OpenAPI 3.0, which google-genai's Python MCP adapter and many
  hand-written clients convert to. :class:`GeminiOpenAPI` (``--as gemini-openapi``) is this shape, and
  :func:`convert_schema` the conversion:

  * kept: ``type`` (as the API's ``Type`` enum name: ``STRING``, ``NUMBER``, ``INTEGER``, ``BOOLEAN``,
    ``ARRAY``, ``OBJECT``, ``NULL``), ``format``, ``title``, ``description``, ``nullable``, ``enum`` (as strings,
    the field's type), ``default``, ``items``, ``minItems``, ``maxItems``, ``minimum``, ``maximum``,
    ``properties``, ``required``, ``anyOf``, ``propertyOrdering``;
  * a type array such as ``["string", "null"]`` becomes ``type: STRING`` plus ``nullable: true``; several
    non-null types become an ``anyOf`` of one branch per type; an ``anyOf`` branch that is only ``null`` becomes
    ``nullable``, and a single remaining branch is folded into its parent;
  * an empty ``properties`` map is left out (the API rejects ``properties: {}`` on an OBJECT: "should be
    non-empty for OBJECT type"), and a tool without parameters gets no ``parameters`` at all;
  * ``$ref`` (never resolved), ``$defs`` and every other keyword are dropped: ``oneOf``, ``allOf``, ``const``,
    ``pattern``, ``additionalProperties`` ... (the list in rules.md, MCP209), and annotations like ``examples``.

Gemini's tokenizer (Gemma 3's SentencePiece) is not available offline. The count is o200k_base over the
declarations as JSON text (ordinary separators) times 1.04. Google does not document how declarations are
serialised for the model, so this is the least certain of the estimates, and the method string says which
shape was counted; see ``docs/tokens.md``.
"""

from __future__ import annotations

import functools
import json
import string
from collections.abc import Sequence
from typing import Any

from scanner.measure import tokenizer
from scanner.models import TokenCount
from scanner.providers.base import EMPTY_OBJECT_SCHEMA, Measurement, Provider, ToolParts, plain_json, scaled

FACTOR = 1.04
"""Gemini tokens per o200k_base token on declaration JSON."""

METHOD = (
    f"o200k_base(functionDeclarations JSON, parametersJsonSchema as Gemini CLI and @google/genai send it)"
    f"x{FACTOR:.2f}, serialisation undocumented by Google"
)
OPENAPI_METHOD = (
    f"o200k_base(functionDeclarations JSON, parameters converted to the OpenAPI subset)x{FACTOR:.2f}, "
    "serialisation undocumented by Google"
)

TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}


class Gemini(Provider):
    """``parametersJsonSchema``: the MCP schema as sent (what current Google-SDK-based clients do)."""

    name = "gemini"
    method = METHOD

    def declaration(self, parts: ToolParts) -> dict[str, Any]:
        out: dict[str, Any] = {"name": parts.name}
        if parts.description is not None:
            out["description"] = parts.description
        out["parametersJsonSchema"] = parts.schema if parts.schema is not None else dict(EMPTY_OBJECT_SCHEMA)
        return out

    def wrap(self, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"functionDeclarations": declarations}]

    def counting(self, tools: Sequence[ToolParts | None]) -> tokenizer.Counting[Measurement]:
        texts = [_json(self.declaration(parts)) for parts in tools if parts is not None]
        if not texts:
            return Measurement(TokenCount(self.name, 0, self.method), (0,) * len(tools))
        counts = yield texts
        counted = iter(counts)
        per_tool = [0 if parts is None else scaled(next(counted), FACTOR) for parts in tools]
        total = scaled(array_tokens(texts, counts), FACTOR)
        return Measurement(TokenCount(self.name, total, self.method), tuple(per_tool))


class GeminiOpenAPI(Gemini):
    """``parameters``: the schema converted to Gemini's OpenAPI subset (``--as gemini-openapi``)."""

    name = "gemini-openapi"
    method = OPENAPI_METHOD

    def declaration(self, parts: ToolParts) -> dict[str, Any]:
        out: dict[str, Any] = {"name": parts.name}
        if parts.description is not None:
            out["description"] = parts.description
        if parts.schema is not None:
            parameters = convert_schema(parts.schema)
            if parameters.get("properties"):
                out["parameters"] = parameters
        return out


_PUNCTUATION = frozenset(string.punctuation)  # ASCII: none is whitespace, a letter or a number
_MAX_TAIL = 64


def array_tokens(texts: list[str], counts: list[int]) -> int:
    """``tokenizer.count("[" + ", ".join(texts) + "]")`` from ``counts[i] = tokenizer.count(texts[i])``.

    o200k_base counts each pre-token (regex piece) on its own, so the array costs the sum of its declarations
    except at the seams. Each declaration starts with ``{"name"`` (first piece ``{"``, which becomes ``[{"`` or
    `` {"`` in the array) and ends with a run of punctuation such as ``"]}}``, optionally after one space; that
    last piece absorbs the ``,`` or ``]`` that follows. When the piece before that run is plainly a word or a
    number (an ASCII letter or digit), the seam's correction is read from short strings; otherwise (any other
    text before the run) the whole array is counted, so the result is always the whole array's count (tests
    compare the two on hostile lists).
    """
    total = sum(counts) + _seam("", "[")
    last = len(texts) - 1
    for index, text in enumerate(texts):
        tail = _last_piece(text)
        if tail is None or not text.startswith('{"name"'):
            return tokenizer.count("[" + ", ".join(texts) + "]")
        total += _seam(tail, ", " if index < last else "]")
    return total


def _last_piece(text: str) -> str | None:
    """The final pre-token of a declaration when it is provably its trailing ASCII punctuation run."""
    start = len(text)
    while start > 0 and text[start - 1] in _PUNCTUATION and len(text) - start <= _MAX_TAIL:
        start -= 1
    if start == len(text) or len(text) - start > _MAX_TAIL:
        return None
    before = text[start - 1] if start > 0 else ""
    if before.isascii() and before.isalnum():
        return text[start:]
    # After one space: the space starts the run's piece when a word, a number or a punctuation run stands before it
    # (``"properties": {}}}`` ends with `` {}}}``, a tool without parameters); white space before it might not.
    ahead = text[start - 2] if start > 1 else ""
    if before == " " and ahead.isascii() and (ahead.isalnum() or ahead in _PUNCTUATION):
        return text[start - 1 :]
    return None


@functools.lru_cache(maxsize=1024)
def _seam(tail: str, joint: str) -> int:
    """Tokens a seam adds: ``tail`` (a declaration's last piece, "" for the array's start) meeting ``joint``."""
    count = tokenizer.count
    if joint == "[":
        return count('[{"') - count('{"')
    if joint == "]":
        return count(tail + "]") - count(tail)
    return count(tail + ', {"') - count(tail) - count('{"')


def _json(value: Any) -> str:
    return plain_json(value)


def convert_schema(schema: Any) -> dict[str, Any]:
    """An MCP tool's JSON Schema as Gemini's OpenAPI-3.0 ``Schema`` (best effort, never raises).

    The input must already be bounded (see :func:`scanner.providers.base.clip_json`): recursion follows it.
    """
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    nullable = False
    type_branches: list[dict[str, Any]] = []
    for key, value in schema.items():
        if key == "type":
            names = _type_names(value)
            non_null = [name for name in names if name != "null"]
            if not non_null:
                if names:  # "null" alone
                    out["type"] = "NULL"
                continue
            nullable = nullable or "null" in names
            if len(non_null) == 1:
                out["type"] = non_null[0].upper()
            else:
                type_branches = [{"type": name.upper()} for name in non_null]
        elif key in ("format", "title", "description"):
            if isinstance(value, str):
                out[key] = value
        elif key == "nullable":
            if value is True:
                nullable = True
        elif key == "enum":
            if isinstance(value, list):
                if any(item is None for item in value):
                    nullable = True
                members = [_enum_member(item) for item in value if item is not None]
                members = list(dict.fromkeys(member for member in members if member is not None))
                if members:
                    out["enum"] = members
        elif key == "default":
            out["default"] = value
        elif key in ("minItems", "maxItems"):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                out[key] = value
        elif key in ("minimum", "maximum"):
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = value
        elif key == "properties":
            if isinstance(value, dict) and value:
                out["properties"] = {name: convert_schema(prop) for name, prop in value.items()}
        elif key in ("required", "propertyOrdering"):
            if isinstance(value, list):
                names = list(dict.fromkeys(item for item in value if isinstance(item, str)))
                if names:
                    out[key] = names
        elif key == "items":
            if isinstance(value, dict):
                out["items"] = convert_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            branches: list[dict[str, Any]] = []
            for branch in value:
                converted = convert_schema(branch)
                if converted == {"type": "NULL"}:
                    nullable = True
                elif converted not in branches:
                    branches.append(converted)
            if len(branches) == 1:
                for branch_key, branch_value in branches[0].items():
                    if branch_key == "nullable":
                        nullable = nullable or branch_value is True
                    else:
                        out.setdefault(branch_key, branch_value)
            elif branches:
                out["anyOf"] = branches
        # everything else ($ref, $defs, oneOf, allOf, const, pattern, additionalProperties, ...) is dropped
    if type_branches and "anyOf" not in out:
        out["anyOf"] = type_branches
    if nullable:
        out["nullable"] = True
    return out


def _type_names(value: Any) -> list[str]:
    """The known JSON Schema type names in a ``type`` value (a string or a list), lowercased, de-duplicated."""
    raw = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    names = [item.lower() for item in raw if isinstance(item, str)]
    return list(dict.fromkeys(name for name in names if name in TYPES))


def _enum_member(value: Any) -> str | None:
    """Gemini's ``enum`` holds strings: numbers and booleans become their JSON text; objects are left out."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return None
