"""Each provider's view of a small representative list, compared whole to JSON written by hand from the docs.

Sources for the expected shapes: Anthropic Messages API ``tools`` (name, description, input_schema); OpenAI
Chat Completions ``tools`` (type function + function {name, description, parameters}, no ``strict``); Gemini
``tools[].functionDeclarations`` with the OpenAPI-subset ``Schema`` (upper-case ``Type`` names, no empty
``properties``, no ``parameters`` for a tool without any).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scanner.errors import InputError
from scanner.providers import PROVIDER_NAMES, provider_view

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "format": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
    },
    "required": ["location"],
}
NOTES_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 5},
        "limit": {"type": ["integer", "null"], "minimum": 1, "exclusiveMaximum": 100},
        "owner": {"$ref": "#/$defs/user"},
    },
    "$defs": {"user": {"type": "object", "properties": {"id": {"type": "string"}}}},
    "additionalProperties": False,
}
TOOLS: list[Any] = [
    {
        "name": "get_current_weather",
        "title": "Weather",
        "description": "Gets the current weather in the provided location.",
        "inputSchema": WEATHER_SCHEMA,
        "annotations": {"readOnlyHint": True},
    },
    {"name": "get_location", "description": "Gets the location of the user.", "inputSchema": {"type": "object"}},
    {"name": "find_notes", "description": "Find notes by tag.", "inputSchema": NOTES_SCHEMA},
]


def test_anthropic_view() -> None:
    assert provider_view("anthropic", TOOLS) == [
        {
            "name": "get_current_weather",
            "description": "Gets the current weather in the provided location.",
            "input_schema": WEATHER_SCHEMA,
        },
        {"name": "get_location", "description": "Gets the location of the user.", "input_schema": {"type": "object"}},
        {"name": "find_notes", "description": "Find notes by tag.", "input_schema": NOTES_SCHEMA},
    ]


def test_openai_view() -> None:
    assert provider_view("openai", TOOLS) == [
        {
            "type": "function",
            "function": {
                "name": "get_current_weather",
                "description": "Gets the current weather in the provided location.",
                "parameters": WEATHER_SCHEMA,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "get_location",
                "description": "Gets the location of the user.",
                "parameters": {"type": "object"},
            },
        },
        {
            "type": "function",
            "function": {"name": "find_notes", "description": "Find notes by tag.", "parameters": NOTES_SCHEMA},
        },
    ]


def test_gemini_view_is_parameters_json_schema_as_sent() -> None:
    """What Gemini CLI and @google/genai's MCP adapter send: the MCP inputSchema unchanged."""
    view = provider_view("gemini", TOOLS)
    declarations = view[0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == [tool["name"] for tool in TOOLS]
    for declaration, tool in zip(declarations, TOOLS, strict=True):
        assert set(declaration) == {"name", "description", "parametersJsonSchema"}
        assert declaration["parametersJsonSchema"] == tool.get("inputSchema", {"type": "object", "properties": {}})


def test_gemini_openapi_view() -> None:
    assert provider_view("gemini-openapi", TOOLS) == [
        {
            "functionDeclarations": [
                {
                    "name": "get_current_weather",
                    "description": "Gets the current weather in the provided location.",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {
                            "location": {
                                "type": "STRING",
                                "description": "The city and state, e.g. San Francisco, CA",
                            },
                            "format": {"type": "STRING", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                        },
                        "required": ["location"],
                    },
                },
                {"name": "get_location", "description": "Gets the location of the user."},
                {
                    "name": "find_notes",
                    "description": "Find notes by tag.",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {
                            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": 5},
                            "limit": {"type": "INTEGER", "minimum": 1, "nullable": True},
                            "owner": {},
                        },
                    },
                },
            ]
        }
    ]


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_views_are_plain_json_and_do_not_share_the_input(provider: str) -> None:
    tools = json.loads(json.dumps(TOOLS))
    before = json.dumps(tools, sort_keys=True)
    view = provider_view(provider, tools)
    assert json.loads(json.dumps(view)) == view
    _scribble(view)  # a caller may edit a view without corrupting the scanned list
    assert json.dumps(tools, sort_keys=True) == before


def _scribble(value: Any) -> None:
    """Empty every container inside ``value``, deepest first."""
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        _scribble(child)
    if isinstance(value, dict | list):
        value.clear()


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_empty_list_gives_empty_view(provider: str) -> None:
    assert provider_view(provider, []) == []


def test_unknown_provider_is_an_input_error() -> None:
    with pytest.raises(InputError, match="anthropic, anthropic-v3, openai, gemini, gemini-openapi"):
        provider_view("mistral", TOOLS)
