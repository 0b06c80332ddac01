"""The report's fast paths give exactly what the plain code gives: hidden-character escaping, provider views and
the flat-stretch thinning of chart lines.

``clean_text`` checks ASCII text with a small character class and skips printable text; ``view_text``
(:mod:`scanner.report.views`)
reads each tool once for all providers instead of calling ``provider_view`` per provider. Both are compared
here with the reference (the whole-Unicode pattern; ``provider_view``) on hostile input.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from scanner.models import SCHEMA_DEPTH_LIMIT
from scanner.providers import PROVIDER_NAMES, provider_view
from scanner.providers.base import read_tool
from scanner.report.svg import _segments
from scanner.report.text import clean_text
from scanner.report.views import page_views, pretty_json, view_text
from scanner.textsafe import _escape_match, _hidden_pattern

SPECIAL = [0x00, 0x07, 0x09, 0x0A, 0x0D, 0x1B, 0x7F, 0x85, 0xA0, 0xAD, 0x200B, 0x200E, 0x2028, 0x2029, 0x202E]
SPECIAL += [0x2066, 0xFEFF, 0xD800, 0xE000, 0xE0001, 0xE007F, 0x10FFFF, sys.maxunicode]


@pytest.mark.parametrize("keep_newlines", [False, True])
def test_clean_text_equals_the_whole_unicode_pattern(keep_newlines: bool) -> None:
    reference = _hidden_pattern(keep_newlines)
    for code in [*range(0x3000), *SPECIAL]:
        char = chr(code)
        for sample in (char, f"tool {char}\nname\t", f"é{char}", f'{{"a": "{char}"}}'):
            expected = reference.sub(_escape_match, sample)
            assert clean_text(sample, limit=None, keep_newlines=keep_newlines) == expected, (hex(code), sample)


def test_clean_text_shows_ascii_controls_and_keeps_newlines_only_when_asked() -> None:
    assert clean_text("a\x1b[31mred\x7f\nb\tc") == "a\\u001b[31mred\\u007f\\u000ab\\u0009c"
    assert clean_text("a\x1b[31m\nb\tc", keep_newlines=True) == "a\\u001b[31m\nb\tc"
    assert clean_text("plain ascii text", keep_newlines=True) == "plain ascii text"
    assert clean_text("x" * 10, limit=4) == "xxxx…"


def deep(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


HOSTILE: list[Any] = [
    {"name": "ok_tool", "description": "Does one thing.", "inputSchema": {"type": "object", "properties": {}}},
    7,
    "not a tool",
    None,
    {"name": ["a", "list"], "description": {"text": "an object"}, "inputSchema": "not a schema"},
    {"name": "deep", "inputSchema": deep(SCHEMA_DEPTH_LIMIT + 5)},
    {"name": "<script>alert(1)</script>\u202e", "description": "bidi \u202e and \x00 nul", "inputSchema": None},
    {"name": "gemini_types", "inputSchema": {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}},
]


@pytest.mark.parametrize("tools", [HOSTILE, [], [1, "x"], HOSTILE[:1]])
def test_provider_views_equal_provider_view(tools: list[Any]) -> None:
    parts = [part for part in (read_tool(tool) for tool in tools) if part is not None]
    views = {provider: view_text(provider, parts) for provider in PROVIDER_NAMES}
    assert views == {provider: pretty_json(provider_view(provider, tools)) for provider in PROVIDER_NAMES}


def reference_segments(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """The point-by-point definition: split at gaps, drop a point equal to both its neighbours."""
    segments: list[list[tuple[int, float]]] = []
    current: list[tuple[int, float]] = []
    previous: float | None = None
    for position, value in enumerate(values):
        if value is None or not math.isfinite(value):
            if current:
                segments.append(current)
            current, previous = [], None
            continue
        following = values[position + 1] if position + 1 < len(values) else None
        if not (current and value == previous and value == following):
            current.append((position, value))
        previous = value
    if current:
        segments.append(current)
    return segments


def test_chart_segments_equal_the_point_by_point_definition() -> None:
    rng = random.Random(5)
    pool: list[float | None] = [None, 0.0, -0.0, 1.0, 1, 2.5, math.nan, math.inf, -math.inf, 3.0]
    for _ in range(20_000):
        values = tuple(rng.choice(pool[: rng.randint(1, len(pool))]) for _ in range(rng.randint(0, 12)))
        assert repr(_segments(values)) == repr(reference_segments(values)), values
    flat = (7.0,) * 365
    assert _segments(flat) == [[(0, 7.0), (364, 7.0)]]


SAME_SHAPE: list[Any] = [
    {"name": "a", "description": "First.", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
    {"name": "b", "description": "", "inputSchema": {"type": "object", "properties": {}}},
    # The name's own string object as its description too: not told apart, so every view is shown in full.
    {"name": "function", "description": "function", "inputSchema": {"type": "object"}},
]


@pytest.mark.parametrize("tools", [HOSTILE, [], [1, "x"], HOSTILE[:1], SAME_SHAPE, SAME_SHAPE[:1]])
def test_page_views_are_each_view_in_full_or_its_exact_shape(tools: list[Any]) -> None:
    """A provider shown as a shape sends exactly the first view's tools in that shape; any other in full."""
    views, shapes, _ = page_views(tools, PROVIDER_NAMES)
    first = PROVIDER_NAMES[0]
    assert first in views and first not in shapes
    assert set(views) | set(shapes) == set(PROVIDER_NAMES) and not set(views) & set(shapes)
    for provider, text in views.items():
        assert text == pretty_json(provider_view(provider, tools))
    first_view = provider_view(first, tools)
    for provider, shape in shapes.items():
        # Rebuilt from the shape, its holes filled with each tool's parts as the first view shows them: the
        # provider's own view, value for value.
        rebuilt = []
        for declaration in first_view:
            values = {
                "NAME": declaration["name"],
                "DESCRIPTION": declaration.get("description"),
                "SCHEMA": declaration["input_schema"],
            }
            filled = re.sub(
                r"\b(NAME|DESCRIPTION|SCHEMA)\b", lambda hole, values=values: json.dumps(values[hole[1]]), shape
            )
            rebuilt.append(json.loads(filled))
        assert _merge(rebuilt) == provider_view(provider, tools)


def _merge(wrapped: list[Any]) -> Any:
    """Single-tool ``tools`` values merged back into one (Gemini's one ``functionDeclarations`` object)."""
    if wrapped and isinstance(wrapped[0], list) and wrapped[0] and isinstance(wrapped[0][0], dict):
        first = wrapped[0][0]
        if set(first) == {"functionDeclarations"}:
            return [{"functionDeclarations": [item[0]["functionDeclarations"][0] for item in wrapped]}]
    return [item[0] for item in wrapped]


def test_same_shaped_lists_are_shown_once() -> None:
    """The providers that only wrap each tool otherwise are shapes; one that changes a schema (Gemini's OpenAPI
    subset) is in full; a list whose parts cannot be told apart is in full everywhere."""
    views, shapes, _ = page_views(SAME_SHAPE[:2], PROVIDER_NAMES)
    assert (list(views), list(shapes)) == (["anthropic", "gemini-openapi"], ["anthropic-v3", "openai", "gemini"])
    views, shapes, _ = page_views(SAME_SHAPE, PROVIDER_NAMES)
    assert (list(views), shapes) == (list(PROVIDER_NAMES), {})


def test_streamed_json_is_the_rendered_text(story_store: Any) -> None:
    """``leaderboard.json`` written piece by piece (small batches, so escapes fall on every boundary) is the text
    :func:`render_json` gives whole."""
    import io

    from scanner.report.build import site_data
    from scanner.report.jsonout import render_json, write_json

    board = site_data(story_store).leaderboard
    for batch in (1, 3, 8192):
        stream = io.StringIO()
        write_json(board, stream, batch=batch)
        assert stream.getvalue() == render_json(board)
