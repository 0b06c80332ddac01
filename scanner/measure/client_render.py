"""The texts a deferring client puts in context, rendered the way its provider's model reads them.

OpenAI's models read tools as a harmony ``namespace`` (:mod:`scanner.providers.openai`); a deferred function
keeps its description and name, a namespace its name and description, Codex's ``tool_search`` is a function like
any other. Claude's read ``<function>{json}</function>`` lines (:mod:`scanner.providers.anthropic`). Each
function here returns text for :mod:`scanner.measure.clients` to count; nothing here counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scanner.measure import client_search as search
from scanner.providers.anthropic import Anthropic
from scanner.providers.base import ToolParts, read_tool
from scanner.providers.openai import render_function


def lean_function(name: str, description: str | None) -> str:
    """A function deferred alone in the OpenAI API: its description comments and its name, no parameters (the
    guide: "the model still sees the function name and description"), with the blank line that follows it."""
    return render_function(ToolParts(name, description, None)) + "\n"


def codex_search_tool(instructions: str | None) -> str:
    """Codex's ``tool_search`` with this server as its one source, as a harmony function (blank line included)."""
    description = search.codex_search_description(instructions)
    return render_function(ToolParts("tool_search", description, dict(search.CODEX_PARAMETERS))) + "\n"


def shown_namespace(name: str, description: str | None) -> str:
    """A namespace whose functions are all deferred, as openai-harmony renders a namespace with no functions:
    ``## name``, a blank line and the description as plain lines (tests compare it with the renderer)."""
    text = (description or "").strip()
    return f"## {name}\n\n{text}\n\n" if text else f"## {name}\n\n"


def namespace_frame(name: str, description: str | None) -> str:
    """The frame a search result's namespace puts around the functions it loads, as openai-harmony renders a
    namespace with functions: ``## name``, the description as ``//`` comments, the braces."""
    lines = [f"## {name}", ""]
    lines += [f"// {line}" for line in (description or "").splitlines()]
    lines += [f"namespace {name} {{", "", f"}} // namespace {name}", "", ""]
    return "\n".join(lines)


def codex_search_texts() -> tuple[str]:
    """Codex's tool_search with one server and no instructions (the server's own line is counted apart)."""
    return (codex_search_tool(None),)


def vscode_search_texts() -> tuple[str, str]:
    """VS Code's tool_search declaration as Claude reads it, and the prompt text around the deferred names."""
    tool, prompt = search.vscode_fixed_text()
    return Anthropic.function_line(dict(tool)), prompt


def tool_descriptions(tools: Sequence[Any], indexes: Sequence[int]) -> list[str | None]:
    """Each measured tool's description (by its index in the raw list), as the providers read it."""
    out: list[str | None] = []
    for index in indexes:
        parts = read_tool(tools[index]) if 0 <= index < len(tools) else None
        out.append(parts.description if parts is not None else None)
    return out
