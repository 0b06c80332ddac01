"""The report's fast paths give exactly what the plain code gives: hidden-character escaping, provider views and
the flat-stretch thinning of chart lines.

``clean_text`` checks ASCII text with a small character class and skips printable text; ``_provider_views``
reads each tool once for all providers instead of calling ``provider_view`` per provider. Both are compared
here with the reference (the whole-Unicode pattern; ``provider_view``) on hostile input.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from scanner.models import SCHEMA_DEPTH_LIMIT
from scanner.providers import PROVIDER_NAMES, provider_view
from scanner.report.build import _provider_views, pretty_json
from scanner.report.svg import _segments
from scanner.report.text import clean_text
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
    views, _ = _provider_views(tools, PROVIDER_NAMES)
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
