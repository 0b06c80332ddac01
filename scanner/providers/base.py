"""The one interface every provider implements, and the defensive reading of a raw MCP tool they share.

A provider turns an MCP tool list into two things: the ``tools`` JSON its API receives (a *view*), and the text
its model reads on every turn, whose tokens are the list's cost. Each provider module subclasses
:class:`Provider`; :mod:`scanner.providers` picks one from a single table.

Nothing a server sends is trusted. :func:`read_tool` copies a tool into plain JSON with a depth limit
(``SCHEMA_DEPTH_LIMIT`` containers) and a node budget, so a schema nested thousands deep, a ``$ref`` cycle
built in memory, or a structure sharing sub-objects exponentially cannot hang or crash a view. Names and
descriptions of the wrong type are coerced to text rather than rejected: views are best effort, and the
rules report what is wrong.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scanner.measure import tokenizer
from scanner.models import SCHEMA_DEPTH_LIMIT, TokenCount

NODE_BUDGET = 100_000
"""Most JSON values copied out of one tool; the rest is cut (a real tool list is far below this)."""

EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
"""What a client must send for a tool whose ``inputSchema`` is missing or not an object."""


@dataclass(frozen=True)
class ToolParts:
    """The parts of one raw tool a provider uses, already copied and bounded.

    ``schema`` is None when ``inputSchema`` is missing or not a JSON object; ``description`` is None when
    absent or null.
    """

    name: str
    description: str | None
    schema: dict[str, Any] | None


@dataclass(frozen=True)
class Measurement:
    """One provider's cost for a list: the per-turn total and each input tool's own cost (0 if skipped)."""

    total: TokenCount
    per_tool: tuple[int, ...]


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def clip_json(value: Any, limit: int = SCHEMA_DEPTH_LIMIT, budget: int = NODE_BUDGET) -> Any:
    """A plain-JSON copy of ``value``, cut at ``limit`` nested containers and ``budget`` values.

    A container at the limit is emptied (``{}`` or ``[]``); once the budget is spent, remaining values
    become None. Keys that are not strings become their text; values of non-JSON types become their ``str``.
    The copy is always a tree, so a cyclic or shared input yields a finite output.
    """
    return _clip(value, 0, limit, _Budget(budget))


_ATOMS = (str, int, float)  # bool is an int


def _clip(value: Any, depth: int, limit: int, budget: _Budget) -> Any:
    budget.left -= 1
    if budget.left < 0:
        return None
    if value is None or isinstance(value, _ATOMS):
        return value
    return _clip_container(value, depth, limit, budget)


def _clip_container(value: Any, depth: int, limit: int, budget: _Budget) -> Any:
    """:func:`_clip` of a value already charged to the budget that is not None, a string or a number; the
    children that are (most of them) are copied here rather than in a call each."""
    if isinstance(value, dict):
        if depth >= limit - 1:
            return {}
        copied: dict[str, Any] = {}
        for key, item in value.items():
            name = key if isinstance(key, str) else str(key)
            budget.left -= 1
            if budget.left < 0:
                copied[name] = None
            elif item is None or isinstance(item, _ATOMS):
                copied[name] = item
            else:
                copied[name] = _clip_container(item, depth + 1, limit, budget)
        return copied
    if isinstance(value, list | tuple):
        if depth >= limit - 1:
            return []
        items: list[Any] = []
        for item in value:
            budget.left -= 1
            if budget.left < 0:
                items.append(None)
            elif item is None or isinstance(item, _ATOMS):
                items.append(item)
            else:
                items.append(_clip_container(item, depth + 1, limit, budget))
        return items
    return str(value)


_PLAIN = json.JSONEncoder(ensure_ascii=False)


def plain_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` (ordinary separators, UTF-8 kept), its encoder built once."""
    return _PLAIN.encode(value)


def as_text(value: Any) -> str:
    """``value`` as text: a string as is, anything else as compact JSON (a name may arrive as a list)."""
    if isinstance(value, str):
        return value
    return json.dumps(clip_json(value), ensure_ascii=False, separators=(",", ":"))


def read_tool(tool: Any) -> ToolParts | None:
    """The bounded parts of one raw tool, or None if the tool is not a JSON object (it cannot be sent)."""
    if not isinstance(tool, dict):
        return None
    raw_name = tool.get("name")
    name = "" if raw_name is None else as_text(raw_name)
    raw_description = tool.get("description")
    description = None if raw_description is None else as_text(raw_description)
    raw_schema = tool.get("inputSchema")
    schema = clip_json(raw_schema) if isinstance(raw_schema, dict) else None
    return ToolParts(name=name, description=description, schema=schema)


def scaled(tokens: int, factor: float) -> int:
    """``tokens`` times a calibration factor, rounded half up."""
    return int(tokens * factor + 0.5)


class Provider(ABC):
    """One provider's request format and token estimate.

    Subclasses set :attr:`name` and implement :meth:`declaration` (one tool's entry in the request),
    :meth:`wrap` (the request's ``tools`` value from those entries) and :meth:`counting` (the texts to count,
    then the measurement from their counts).
    """

    name: str

    @abstractmethod
    def declaration(self, parts: ToolParts) -> dict[str, Any]:
        """One tool as this provider's API receives it."""

    def wrap(self, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The request's ``tools`` value; most providers send the declarations as a plain list."""
        return declarations

    def view(self, tools: Sequence[Any]) -> list[dict[str, Any]]:
        """The ``tools`` JSON this provider receives; tools that are not objects are left out."""
        declarations = [self.declaration(parts) for parts in map(read_tool, tools) if parts is not None]
        return self.wrap(declarations) if declarations else []

    def measure(self, tools: Sequence[Any]) -> Measurement:
        """Tokens per turn for the whole list, and each tool's own cost, from one rendering."""
        return self.measure_parts([read_tool(tool) for tool in tools])

    def measure_parts(self, parts: Sequence[ToolParts | None]) -> Measurement:
        """:meth:`measure` of tools already read with :func:`read_tool` (None for a tool that is not an object).

        Lets a caller measuring one list for every provider copy each tool once, not once per provider.
        """
        return tokenizer.counted(self.counting(parts))

    @abstractmethod
    def counting(self, parts: Sequence[ToolParts | None]) -> tokenizer.Counting[Measurement]:
        """:meth:`measure_parts` as a counting job: it yields the texts it needs counted and returns the
        measurement (:func:`scanner.measure.tokenizer.count_together` counts several providers' in one encoding).
        The parts are shared between providers, so an implementation must not modify them."""

    def tool_tokens(self, tool: Any) -> int:
        """One tool's own cost in this provider's format, without per-list overhead."""
        return self.measure([tool]).per_tool[0]
