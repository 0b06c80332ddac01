"""References, not parameters: local ``$ref``s are followed once per path, findings name the path where a model
meets the parameter (the definition goes in details), unused definitions are MCP215 with their cost, and
doctrine repeated across descriptions is MCP307 and left out of MCP303."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from scanner import providers
from scanner.models import Finding
from scanner.rules import RuleContext, run_rules

# The shape notion-mcp-server sends: one $defs block copied into every tool, used by some.
DEFS = {
    "richText": {
        "type": "object",
        "properties": {
            "text": {"description": "The text.", "properties": {"content": {"description": "What it says."}}},
            "annotations": {"type": "object", "description": "Bold, italic and so on."},
        },
    },
    "parentRequest": {
        "type": "object",
        "description": "Where the page goes.",
        "properties": {"page_id": {"type": "string", "description": "The parent page."}},
    },
    "sort": {"type": "object", "description": "How to order results, e.g. by last edit time, newest first."},
}


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "$defs": DEFS},
    }


TOOLS = [
    _tool("get_user", "Fetch one workspace member by id.", {"member_ref": {"description": "The member."}}),
    _tool(
        "post_page",
        "Create a page under a parent page, with a title.",
        {
            "parent": {"$ref": "#/$defs/parentRequest"},
            "title": {"type": "array", "description": "The title.", "items": {"$ref": "#/$defs/richText"}},
        },
    ),
]


def _of(findings: list[Finding], code: str, tool: str) -> list[Finding]:
    return [finding for finding in findings if finding.code == code and finding.tool == tool]


def test_definitions_are_not_parameters(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    findings = run_rules(TOOLS, context_for(TOOLS))
    (untyped,) = _of(findings, "MCP205", "get_user")
    assert untyped.details["parameters"] == ["member_ref"]  # no $defs.* paths before the real parameter
    assert not _of(findings, "MCP208", "get_user")


def test_findings_name_the_path_a_model_meets(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    findings = run_rules(TOOLS, context_for(TOOLS))
    (untyped,) = _of(findings, "MCP205", "post_page")
    # title[] -> richText: its property `text` has no type, met at title[].text.
    assert untyped.details["parameters"] == ["title[].text", "title[].text.content"]
    assert untyped.details["definitions"] == {
        "title[].text": "#/$defs/richText",
        "title[].text.content": "#/$defs/richText",
    }
    assert untyped.pointer == "/inputSchema/$defs/richText/properties/text"  # where to fix it
    # `parent` is only a $ref; the definition it names is typed, so parent counts as typed.
    assert "parent" not in untyped.details["parameters"]
    (ref,) = _of(findings, "MCP208", "post_page")
    assert ref.details["parameters"] == ["parent", "title[]"]
    assert ref.details["refs"] == ["#/$defs/parentRequest", "#/$defs/richText"]
    assert "parametersJsonSchema" in ref.message


def test_unused_definitions_are_reported_with_their_cost(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    context = context_for(TOOLS)
    findings = run_rules(TOOLS, context)
    (get_user,) = _of(findings, "MCP215", "get_user")
    assert get_user.details["definitions"] == ["richText", "parentRequest", "sort"]
    (post_page,) = _of(findings, "MCP215", "post_page")
    assert post_page.details["definitions"] == ["sort"]
    expected = providers.text_cost('"sort": ' + json.dumps(DEFS["sort"], sort_keys=True))
    assert post_page.details["tokens"] == expected > 0
    assert post_page.details["tokens_by_definition"] == {"sort": expected}
    assert post_page.details["method"].startswith("anthropic (Claude Opus 4.7+ tokenizer")
    assert get_user.details["tokens"] > post_page.details["tokens"]
    assert f"{get_user.details['tokens']:,} tokens per turn" in get_user.message


def test_definition_reached_only_from_an_unused_one_is_unused(cheap_context: RuleContext) -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "Words."}},
        "definitions": {"A": {"$ref": "#/definitions/B"}, "B": {"type": "string"}, "C": {"$anchor": "c"}},
    }
    findings = run_rules([{"name": "s", "description": "Search the archive.", "inputSchema": schema}], cheap_context)
    (unused,) = [finding for finding in findings if finding.code == "MCP215"]
    assert unused.details["definitions"] == ["A", "B"]  # C may be reached through its anchor: not reported
    assert unused.details["method"] == "o200k_base"  # no provider-aware cost given: says so


def test_hidden_characters_in_an_unused_definition_still_found(cheap_context: RuleContext) -> None:
    schema = {"type": "object", "properties": {}, "$defs": {"X": {"description": "read \u200bthis"}}}
    findings = run_rules([{"name": "t", "description": "Do one thing well.", "inputSchema": schema}], cheap_context)
    (hidden,) = [finding for finding in findings if finding.code == "MCP401"]
    assert hidden.pointer == "/inputSchema/$defs/X/description"


DOCTRINE = (
    "IMPORTANT: Always use absolute paths for reliability, because relative paths depend on the working "
    "directory of the server."
)


def test_doctrine_is_reported_once_and_left_out_of_similarity(
    context_for: Callable[[Sequence[Any]], RuleContext],
) -> None:
    tools = [
        {"name": name, "description": f"{head}. {DOCTRINE}", "inputSchema": {"type": "object", "properties": {}}}
        for name, head in (
            ("read_multiple_files", "Read several files at once and return their contents"),
            ("create_directory", "Create a folder"),
            ("move_file", "Rename or move a file"),
            ("get_file_info", "Size and times of a file"),
        )
    ]
    context = context_for(tools)
    findings = run_rules(tools, context)
    assert not [finding for finding in findings if finding.code == "MCP303"]
    (doctrine,) = [finding for finding in findings if finding.code == "MCP307"]
    assert doctrine.tool == "read_multiple_files"
    assert doctrine.details["tools"] == [tool["name"] for tool in tools] and doctrine.details["count"] == 4
    sentence = DOCTRINE.rstrip(".")
    assert doctrine.details["sentence"] == sentence
    assert doctrine.details["tokens"] == 4 * providers.text_cost(sentence)
    # Without the shared sentence the same heads are not alike; with only three copies it is still doctrine.
    assert len([f for f in run_rules(tools[:3], context_for(tools[:3])) if f.code == "MCP307"]) == 1
    assert not [f for f in run_rules(tools[:2], context_for(tools[:2])) if f.code == "MCP307"]
