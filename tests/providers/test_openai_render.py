"""The harmony ``namespace functions`` text OpenAI models read, compared to expected text.

The first expectation is the developer-message example in openai/harmony ``docs/format.md``, byte for byte. The
rich one follows the reference renderer's habits (openai/harmony ``src/encoding.rs``), quirks included: a
described nested object repeats its description before its brace, and closes at its properties' indent; an
object without properties is an empty brace pair; ``anyOf``, ``const``, a ``$ref`` and an enum of numbers are
not rendered (``any``, or the plain type). tests/providers/test_openai_harmony.py compares with the renderer itself.
"""

from __future__ import annotations

from typing import Any

from scanner.measure import tokenizer
from scanner.providers import PROVIDERS_BY_NAME, list_tokens
from scanner.providers.openai import OVERHEAD, OVERHEAD_PIECES, OpenAI

FORMAT = {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}

HARMONY_DOC_TOOLS = [
    {"name": "get_location", "description": "Gets the location of the user.", "inputSchema": {"type": "object"}},
    {
        "name": "get_current_weather",
        "description": "Gets the current weather in the provided location.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "format": FORMAT,
            },
            "required": ["location"],
        },
    },
    {
        "name": "get_multiple_weathers",
        "description": "Gets the current weather in the provided list of locations.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "locations": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": 'List of city and state, e.g. ["San Francisco, CA", "New York, NY"]',
                },
                "format": FORMAT,
            },
            "required": ["locations"],
        },
    },
]

HARMONY_DOC_TEXT = """# Tools

## functions

namespace functions {

// Gets the location of the user.
type get_location = () => any;

// Gets the current weather in the provided location.
type get_current_weather = (_: {
// The city and state, e.g. San Francisco, CA
location: string,
format?: "celsius" | "fahrenheit", // default: celsius
}) => any;

// Gets the current weather in the provided list of locations.
type get_multiple_weathers = (_: {
// List of city and state, e.g. ["San Francisco, CA", "New York, NY"]
locations: string[],
format?: "celsius" | "fahrenheit", // default: celsius
}) => any;

} // namespace functions"""


def _openai() -> OpenAI:
    provider = PROVIDERS_BY_NAME["openai"]
    assert isinstance(provider, OpenAI)
    return provider


def test_matches_the_harmony_documentation_example() -> None:
    assert _openai().render(HARMONY_DOC_TOOLS) == HARMONY_DOC_TEXT


def test_list_count_is_the_rendered_section_plus_overhead() -> None:
    assert sum(tokenizer.count(piece) for piece in OVERHEAD_PIECES) == OVERHEAD
    count = list_tokens("openai", HARMONY_DOC_TOOLS)
    assert count.tokens == tokenizer.count(HARMONY_DOC_TEXT) + OVERHEAD
    assert count.method == f"o200k_base(harmony namespace render, openai-harmony 0.0.8)+{OVERHEAD}"


RICH_TOOL: dict[str, Any] = {
    "name": "create_event",
    "description": "Create a calendar event.\nAttendees get an e-mail.",
    "inputSchema": {
        "type": "object",
        "description": "Event fields.",
        "properties": {
            "summary": {"type": "string", "title": "Summary", "description": "Event title"},
            "priority": {"type": "integer", "enum": [1, 2, 3], "default": 2},
            "start": {
                "type": "object",
                "description": "When it starts",
                "properties": {
                    "dateTime": {"type": "string", "description": "ISO 8601", "examples": ["2026-01-01T09:00:00Z"]},
                    "timeZone": {"type": ["string", "null"]},
                },
                "required": ["dateTime"],
            },
            "attendees": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"email": {"type": "string"}, "optional": {"type": "boolean", "default": False}},
                    "required": ["email"],
                },
            },
            "labels": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
            "reminder": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "Minutes before"},
            "color": {"type": "string", "default": "blue"},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "owner": {"$ref": "#/$defs/user"},
            "anything": {},
            "mode": {"const": "fast"},
            "ratio": {"type": "number", "nullable": True},
        },
        "required": ["summary", "start"],
    },
}

RICH_TEXT = """// Create a calendar event.
// Attendees get an e-mail.
type create_event = (_: // Event fields.
{
// Summary
//
// Event title
summary: string,
priority?: number, // default: 2
// When it starts
start:     // When it starts
{
    // ISO 8601
    // Examples:
    // - "2026-01-01T09:00:00Z"
    dateTime: string,
    timeZone?: string | null,
    },
attendees?: {
    email: string,
    optional?: boolean, // default: false
    }[],
labels?: any[],
// Minutes before
reminder?: any,
color?: string, // default: "blue"
meta?: {
    },
owner?: any,
anything?: any,
mode?: any,
ratio?: number | null,
}) => any;
"""


def test_rich_tool_render() -> None:
    from scanner.providers.base import read_tool
    from scanner.providers.openai import render_function

    parts = read_tool(RICH_TOOL)
    assert parts is not None
    assert render_function(parts) == RICH_TEXT


def test_tool_without_description_or_parameters() -> None:
    text = _openai().render([{"name": "ping", "inputSchema": {"type": "object", "properties": {}}}])
    assert "namespace functions {\n\ntype ping = () => any;\n\n} // namespace functions" in text


def test_tool_cost_is_its_block_and_blank_line() -> None:
    from scanner.providers import tool_tokens

    assert tool_tokens("openai", RICH_TOOL) == tokenizer.count(RICH_TEXT + "\n")
