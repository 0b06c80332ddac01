"""Hostile tool lists: nothing a server sends may crash a view or a count, or make it hang."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest

from scanner.models import SCHEMA_DEPTH_LIMIT
from scanner.providers import PROVIDER_NAMES, list_tokens, measure, provider_view, tool_tokens
from scanner.providers.base import NODE_BUDGET, clip_json, read_tool


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    return schema


def _cyclic() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema  # a $ref cycle someone resolved in memory
    schema["properties"]["ref"] = {"$ref": "#"}
    return schema


def _shared(levels: int) -> dict[str, Any]:
    # Each level points at the same child twice: 2**levels paths through a small object graph.
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"a": node, "b": node}}
    return node


HOSTILE: list[Any] = [
    42,
    "a tool",
    None,
    [1, 2],
    True,
    {},
    {"name": ["a", "b"], "description": 5, "inputSchema": "object"},
    {"name": None, "description": None, "inputSchema": None},
    {"name": {"nested": [1, {"x": None}]}, "description": {"text": "hi"}, "inputSchema": []},
    {"name": "deep", "description": "d", "inputSchema": _deep(5000)},
    {"name": "cyclic", "description": "d", "inputSchema": _cyclic()},
    {"name": "shared", "description": "d", "inputSchema": _shared(60)},
    {"name": "special", "description": "<|endoftext|><|endofprompt|> ignore", "inputSchema": {"type": "object"}},
    {"name": "nan", "description": "d", "inputSchema": {"type": "object", "properties": {"n": {"default": math.nan}}}},
    {"name": "keys", "description": "d", "inputSchema": {"type": "object", "properties": {1: {"type": "string"}}}},
    {
        "name": "wrong-shapes",
        "description": "d",
        "inputSchema": {
            "type": {"object": True},
            "properties": [{"type": "string"}],
            "required": {"a": 1},
            "items": True,
            "enum": "abc",
            "anyOf": {"type": "string"},
            "nullable": 1,
            "default": {"deep": _deep(200)},
        },
    },
    {
        "name": "wrong-shapes-inside",
        "description": "d",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": None,
                "b": [],
                "c": {"type": ["string", 3, None]},
                "d": {"type": "array", "items": [{"type": "string"}]},
                "e": {"anyOf": [None, 1, {"type": "null"}]},
                "f": {"enum": [[], {}, None]},
                "g": {"type": "object", "properties": {"h": {"$ref": "#/properties/g"}}},
                "i": {"title": ["t"], "description": 7, "examples": "x"},
            },
            "required": [None, "a", 1],
        },
    },
    {
        "name": "big-enum",
        "description": "d",
        "inputSchema": {"type": "object", "properties": {"e": {"enum": list(range(5000))}}},
    },
    {"name": "x" * 10_000, "description": "y\n" * 5_000, "inputSchema": {"type": "object"}},
]


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_hostile_list_does_not_crash(provider: str) -> None:
    start = time.process_time()
    view = provider_view(provider, HOSTILE)
    text = json.dumps(view)  # always serialisable
    assert json.loads(text.replace("NaN", "null"))
    assert _depth(view) <= SCHEMA_DEPTH_LIMIT + 6  # the wrapper levels above the schema
    result = measure(provider, HOSTILE)
    assert result.total.tokens > 0
    assert len(result.per_tool) == len(HOSTILE)
    assert result.per_tool[:5] == (0, 0, 0, 0, 0)  # not objects: cannot be sent
    assert all(isinstance(cost, int) and cost > 0 for cost in result.per_tool[5:])
    assert time.process_time() - start < 20  # generous: a loaded machine is slow, not wrong


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_non_object_tools_are_left_out_and_cost_nothing(provider: str) -> None:
    junk = [42, "a tool", None, [1, 2], True]
    assert provider_view(provider, junk) == []
    assert list_tokens(provider, junk).tokens == 0
    assert [tool_tokens(provider, tool) for tool in junk] == [0, 0, 0, 0, 0]


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_wrongly_typed_name_and_description_become_text(provider: str) -> None:
    view = provider_view(provider, [{"name": ["a", "b"], "description": 5, "inputSchema": "object"}])
    flat = json.dumps(view)
    assert '"name": "[\\"a\\",\\"b\\"]"' in flat
    assert '"description": "5"' in flat


def test_non_object_schema_becomes_an_empty_object_for_anthropic_and_openai() -> None:
    tool = {"name": "t", "description": "d", "inputSchema": "object"}
    assert provider_view("anthropic", [tool])[0]["input_schema"] == {"type": "object", "properties": {}}
    assert provider_view("openai", [tool])[0]["function"]["parameters"] == {"type": "object", "properties": {}}


def test_clip_json_bounds_depth_and_size() -> None:
    deep = clip_json(_deep(5000))
    assert _depth(deep) == SCHEMA_DEPTH_LIMIT
    shared = clip_json(_shared(60))
    assert len(json.dumps(shared)) < 40 * NODE_BUDGET
    cyclic = clip_json(_cyclic())
    assert _depth(cyclic) == SCHEMA_DEPTH_LIMIT


def test_read_tool_reads_a_normal_tool() -> None:
    parts = read_tool({"name": "n", "description": "d", "inputSchema": {"type": "object"}, "extra": 1})
    assert parts is not None
    assert (parts.name, parts.description, parts.schema) == ("n", "d", {"type": "object"})
