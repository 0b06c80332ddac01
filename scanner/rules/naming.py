"""Rules on a tool's name and description (MCP101-MCP104): what a model reads first when it picks a tool."""

from __future__ import annotations

import re
from collections.abc import Iterator

from scanner.models import Severity
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.tools import ToolInfo, label, split_name, type_label, words

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
STOP_WORDS = frozenset(
    ["a", "an", "the", "of", "for", "to", "and", "or", "in", "on", "by", "with", "this", "that", "is", "it", "from"]
)
DESCRIPTION_LIMIT = 1500


def _not_object(tool: ToolInfo) -> str:
    return f"Tool #{tool.index} is {type_label(tool.raw)}, not an object"


@register(
    "MCP101",
    "name-invalid",
    Severity.PROBLEM,
    hint="Use letters, digits, `_` and `-`, up to 64 characters.",
    doc="""Checks that the tool's `name` is a string of 1 to 64 letters, digits, `_` or `-`, which is what the
    Anthropic and OpenAI APIs accept (MCP itself also allows `.` and up to 128 characters). A tool with any other
    name makes the whole request fail with those providers, or is renamed by the client so the model calls a name
    the server does not know. Bad: `"name": "files.read"` or `"name": "read file"`. Good: `"name": "read_file"`.""",
)
def name_invalid(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    name = tool.name
    if not tool.is_object:
        yield Hit(f"{_not_object(tool)}, so it has no name.", details={"problem": "not-object"})
    elif not tool.has_name:
        yield Hit(f"{tool.subject} has no name.", details={"problem": "missing"})
    elif not isinstance(name, str):
        yield Hit(f"The name of {tool.display} is {type_label(name)}, not a string.", "/name", {"problem": "type"})
    elif not NAME_PATTERN.fullmatch(name):
        bad = sorted({char for char in name if not NAME_PATTERN.fullmatch(char)})
        details: dict[str, object] = {"problem": "pattern", "length": len(name)}
        if bad:
            details["characters"] = [label(char) for char in bad[:20]]
        if not name:
            why = "is empty"
        elif len(name) > 64 and not bad:
            why = f"is {len(name)} characters long (more than 64)"
        else:
            why = f"contains {', '.join(repr(label(char)) for char in bad[:5])}"
        yield Hit(
            f"The name of {tool.display} {why}; providers accept only letters, digits, _ and -.", "/name", details
        )


@register(
    "MCP102",
    "description-missing",
    Severity.PROBLEM,
    hint="Say what the tool does, what it needs and what it returns.",
    doc="""Checks that the tool has a `description` that is a non-blank string. A model chooses tools by their
    descriptions; without one it can only guess from the name when to call the tool and what it returns.
    Bad: no `description`, or `"description": ""`. Good: `"description": "Search the product catalogue by
    keyword; returns up to 20 products with price and stock."`""",
)
def description_missing(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    value = tool.description
    if not tool.is_object:
        yield Hit(f"{_not_object(tool)}, so it has no description.", details={"problem": "not-object"})
    elif not tool.has_description or value is None:
        yield Hit(f"{tool.subject} has no description.", details={"problem": "missing"})
    elif not isinstance(value, str):
        yield Hit(
            f"The description of {tool.display} is {type_label(value)}, not a string.",
            "/description",
            {"problem": "type"},
        )
    elif not value.strip():
        yield Hit(f"The description of {tool.display} is blank.", "/description", {"problem": "blank"})


@register(
    "MCP103",
    "description-echoes-name",
    Severity.WARNING,
    hint="Say what the tool needs and returns, and when to use it instead of a similar one.",
    doc="""Checks that the description adds at least three words that are not already in the name (the name is
    split on `_`, `-`, `.` and camelCase; the stop words a, an, the, of, for, to, and, or, in, on, by, with, this,
    that, is, it, from do not count). A description that only repeats the name tells the model nothing about
    when to call the tool or what comes back. Bad: `get_user` described as "Gets the user.". Good: "Look up one
    user by id or e-mail; returns name, role and last login.\"""",
)
def description_echoes_name(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    text = tool.description_text
    if text is None:
        return
    name_words = set(split_name(tool.name)) if isinstance(tool.name, str) else set()
    added: list[str] = []
    for word in words(text):
        if word not in STOP_WORDS and word not in name_words and word not in added:
            added.append(word)
            if len(added) == 3:
                return
    extra = f" ({', '.join(added)})" if added else ""
    yield Hit(
        f"The description of {tool.display} adds only {len(added)} word{'s' if len(added) != 1 else ''}"
        f" not in its name{extra}.",
        "/description",
        {"added_words": added},
    )


@register(
    "MCP104",
    "description-long",
    Severity.NOTE,
    hint="It is read again on every turn.",
    doc="""Notes a description longer than 1500 characters. The whole tool list is sent with every turn of a
    conversation, so a long description is paid for again and again, and the important sentence gets buried.
    Bad: a description that pastes a full manual. Good: two or three sentences on what the tool does, what it
    needs and returns, and when to use it; the manual belongs in a resource or a skill.""",
)
def description_long(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    text = tool.description_text
    if text is not None and len(text) > DESCRIPTION_LIMIT:
        yield Hit(
            f"The description of {tool.display} is {len(text)} characters long (more than {DESCRIPTION_LIMIT}).",
            "/description",
            {"length": len(text)},
        )
