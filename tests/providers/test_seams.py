"""The OpenAI and Gemini totals summed from per-tool counts equal the count of the whole rendered text.

``section_tokens`` and ``array_tokens`` avoid encoding a list twice by adding seam corrections to the per-tool
counts; these tests count the whole text as well, on lists built to put awkward characters at every seam
(punctuation runs, spaces, apostrophes, digits, newlines, non-ASCII letters and spaces, special-token text).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scanner.measure import tokenizer
from scanner.providers.base import read_tool
from scanner.providers.gemini import Gemini, _json, array_tokens
from scanner.providers.openai import render_function, render_section, section_tokens

FRAGMENTS = [
    "read",
    "the",
    "it's",
    "don'",
    "x'",
    "42",
    "1234567",
    " ",
    "  ",
    ".",
    "...",
    "!)",
    "\n",
    "\n\n",
    "\r\n",
    "//",
    "/",
    ";",
    "}",
    "{",
    "]",
    '"',
    "'",
    "`",
    "<|endoftext|>",
    "\u2028",
    "\u00a0",
    "\t",
    "émoji 🚀",
    "日本語",
    "٣",
    "Ⅻ",
    "a/b",
    "key:",
    "-",
]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 6)))


def _schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for _ in range(rng.randint(0, 3)):
        prop: dict[str, Any] = {"type": rng.choice(["string", "integer", "boolean", "array", "object"])}
        if rng.random() < 0.6:
            prop["description"] = _text(rng)
        if rng.random() < 0.3:
            prop["default"] = rng.choice([_text(rng), 7, 2.5, None, [], {}, True])
        if rng.random() < 0.2:
            prop["enum"] = [_text(rng), 3]
        if prop["type"] == "object" and depth < 2 and rng.random() < 0.5:
            prop.update(_schema(rng, depth + 1))
        properties[_text(rng) or "p"] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties and rng.random() < 0.5:
        schema["required"] = list(properties)[:1]
    return schema


def _tools(rng: random.Random) -> list[Any]:
    tools: list[Any] = []
    for _ in range(rng.randint(1, 5)):
        tool: dict[str, Any] = {"name": _text(rng) or "t"}
        if rng.random() < 0.8:
            tool["description"] = _text(rng)
        if rng.random() < 0.8:
            tool["inputSchema"] = _schema(rng)
        tools.append(tool)
    return tools


@pytest.mark.parametrize("seed", range(4))
def test_openai_section_is_the_sum_of_its_functions_plus_seams(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        parts = [p for p in map(read_tool, _tools(rng)) if p is not None]
        blocks = [render_function(p) for p in parts]
        units = [tokenizer.count(block + "\n") for block in blocks]
        assert section_tokens(blocks, units) == tokenizer.count(render_section(blocks)), blocks


@pytest.mark.parametrize("seed", range(4))
def test_gemini_array_is_the_sum_of_its_declarations_plus_seams(seed: int) -> None:
    rng = random.Random(100 + seed)
    gemini = Gemini()
    for _ in range(100):
        texts = [_json(gemini.declaration(p)) for p in map(read_tool, _tools(rng)) if p is not None]
        counts = [tokenizer.count(text) for text in texts]
        assert array_tokens(texts, counts) == tokenizer.count("[" + ", ".join(texts) + "]"), texts


def test_seams_after_every_kind_of_ending() -> None:
    """One tool per fragment as the last thing in its description and in a string default."""
    gemini = Gemini()
    for fragment in FRAGMENTS:
        for before in ("word", "7", " ", ".", ""):
            tools = [
                {"name": "a", "description": f"x {before}{fragment}"},
                {
                    "name": "b",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"q": {"type": "string", "default": before + fragment}},
                    },
                },
                {"name": "c", "description": fragment},
            ]
            parts = [p for p in map(read_tool, tools) if p is not None]
            blocks = [render_function(p) for p in parts]
            units = [tokenizer.count(block + "\n") for block in blocks]
            assert section_tokens(blocks, units) == tokenizer.count(render_section(blocks))
            texts = [_json(gemini.declaration(p)) for p in parts]
            counts = [tokenizer.count(text) for text in texts]
            assert array_tokens(texts, counts) == tokenizer.count("[" + ", ".join(texts) + "]")


def test_tools_without_parameters_are_summed_not_counted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A declaration ending ``"properties": {}}}`` (a tool that takes nothing) or with a punctuation run after a
    space and punctuation has a last piece Gemini's total can be summed across: the array is not encoded again."""
    gemini = Gemini()
    tools: list[Any] = [
        {"name": "ping", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "q", "inputSchema": {"type": "object", "properties": {"a": {"default": "x: {}"}}}},
        {"name": "r", "inputSchema": {"type": "object", "properties": {"a": {"default": ". ]"}}}},
        {"name": "now", "description": "The time.", "inputSchema": {"type": "object", "properties": {}}},
    ]
    texts = [_json(gemini.declaration(p)) for p in map(read_tool, tools) if p is not None]
    counts = [tokenizer.count(text) for text in texts]
    whole = tokenizer.count("[" + ", ".join(texts) + "]")
    array_tokens(texts, counts)  # the seams' corrections are remembered
    calls: list[str] = []
    real = tokenizer.count
    monkeypatch.setattr(tokenizer, "count", lambda text: calls.append(text) or real(text))
    assert array_tokens(texts, counts) == whole
    assert calls == []
