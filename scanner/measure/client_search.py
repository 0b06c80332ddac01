"""What a deferring client adds to context for its tool search, as its public source writes it.

A client that defers tools keeps a search tool (and sometimes a few lines of instructions) in context instead of
the definitions. Where that text is public, Fathom counts it like any other tool, in the row's provider format
(:mod:`scanner.measure.clients`); where only a vendor's own figure exists, the row carries that figure, labelled
as one; where neither exists, the row says so. This module holds the texts (quoted from each client's public
source, for counting only) and the functions that assemble what one server adds to them. Sources, with dates:
``docs/tokens.md`` ("Cost per client").
"""

from __future__ import annotations

from typing import Any

# --- Codex (openai/codex, Apache-2.0) -------------------------------------------------------------------------

CODEX_SOURCE = (
    "openai/codex PR #29486 (2026-06-22: every MCP tool deferred behind tool_search when the model supports it); "
    "create_tool_search_tool (codex-rs/core/src/tools/handlers/tool_search_spec.rs); codex-mcp rmcp_client.rs (the "
    "namespace is the server's name, its description the server's instructions); PR #27942 (4 KiB cut)"
)
CODEX_SEARCH_LIMIT = 8
"""``TOOL_SEARCH_DEFAULT_LIMIT`` in codex-rs/tools (``tool_discovery.rs``): tools one search returns by default."""
CODEX_NAMESPACE_DESCRIPTION_BYTES = 4 * 1024
"""PR #27942: "Bound model-visible MCP namespace descriptions to 4 KiB during MCP tool normalization"."""
CODEX_SERVER = "server"
"""Codex names a server's namespace after the key the user gave it in ``config.toml`` (unknown here): a neutral
``server`` stands in, as Claude Code's row does for its ``mcp__<server>__`` prefix."""

_CODEX_INTRO = (
    "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching tools for the next "
    "model call.\n\nYou have access to tools from the following sources:\n"
)
_CODEX_OUTRO = (
    "\nSome of the tools may not have been provided to you upfront, and you should use this tool (`tool_search`) "
    "to search for the required tools. For MCP tool discovery, always use `tool_search` instead of "
    "`list_mcp_resources` or `list_mcp_resource_templates`."
)
CODEX_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "limit": {
            "type": "number",
            "description": f"Maximum number of tools to return. Defaults to {CODEX_SEARCH_LIMIT}.",
        },
        "query": {"type": "string", "description": "Search query for deferred tools."},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def codex_cut(instructions: str | None) -> str | None:
    """The server's instructions as Codex shows them: cut at 4 KiB on a character boundary, None when empty."""
    if instructions is None or not instructions.strip():
        return None
    text = instructions.strip()
    raw = text.encode("utf-8")
    if len(raw) <= CODEX_NAMESPACE_DESCRIPTION_BYTES:
        return text
    return raw[:CODEX_NAMESPACE_DESCRIPTION_BYTES].decode("utf-8", errors="ignore")


def codex_source_line(instructions: str | None, server: str = CODEX_SERVER) -> str:
    """The server's line in the tool_search description: ``- server: <instructions>`` (``- server`` without)."""
    shown = codex_cut(instructions)
    return f"- {server}" if shown is None else f"- {server}: {shown}"


def codex_search_description(instructions: str | None, server: str = CODEX_SERVER) -> str:
    """Codex's tool_search description with this one server as its only source."""
    return _CODEX_INTRO + codex_source_line(instructions, server) + _CODEX_OUTRO


def codex_namespace_description(instructions: str | None, server: str = CODEX_SERVER) -> str:
    """The namespace description a search result carries: the instructions, else Codex's default sentence."""
    shown = codex_cut(instructions)
    return shown if shown is not None else f"Tools in the {server} namespace."


# --- VS Code (microsoft/vscode-copilot-chat and microsoft/vscode, MIT) ----------------------------------------

VSCODE_SOURCE = (
    "VS Code blog 'Solving MCP Tool Overload' (2026-04-24, microsoft/vscode-docs PR #9695: deferred tools name-only, "
    "a search returns 3 to 5); microsoft/vscode-copilot-chat toolSearchInstructions.tsx (the deferred-name list) "
    "and the tool_search tool it registers; microsoft/vscode McpPrefixGenerator (names mcp_<server>_<tool>)"
)
VSCODE_NAME_PREFIX = "mcp_server_"
"""VS Code names an MCP tool ``mcp_<server label>_<tool>`` (McpPrefixGenerator); ``server`` stands in for the label."""
VSCODE_SEARCH_LIMIT = 5
VSCODE_SEARCH_TOOL: dict[str, Any] = {
    "name": "tool_search",
    "description": (
        "Search for relevant tools by describing what you need. Returns tool references for tools matching your "
        "query. Use this when you need to find a tool but aren't sure of its exact name. Check the "
        "availableDeferredTools list in your instructions for the full set of deferred tools, and include relevant "
        "tool names from that list in your query for more accurate results. Use broad queries to find all related "
        "tools in a single call rather than making multiple narrow searches."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": (
                    "Natural language description of what tool capability you are looking for. Use broad queries "
                    'to cover related tools in one search (e.g., "github" instead of separate searches for issues '
                    "and PRs)."
                ),
            }
        },
        "required": ["query"],
    },
}
VSCODE_INSTRUCTIONS = (
    "<toolSearchInstructions>\nYou MUST use tool_search to load deferred tools BEFORE calling them. Calling a "
    "deferred tool without loading it first will fail.\n\nDescribe what capability you need in natural language. "
    "The search uses semantic similarity to find the most relevant tools.\n\nDo NOT call tool_search again for a "
    "tool already returned by a previous search. If a search returns no matching tools, the tool is not available. "
    "Do not retry with different patterns.\n</toolSearchInstructions>\n"
)
VSCODE_LIST_FRAME = (
    "<availableDeferredTools>\nAvailable deferred tools (must be loaded with tool_search before use):\n",
    "</availableDeferredTools>\n",
)
"""The tag around the deferred names (one a line); the names themselves are each tool's name line."""


def vscode_fixed_text() -> tuple[dict[str, Any], str]:
    """VS Code's fixed additions once anything is deferred: the tool_search declaration and the prompt text (its
    instructions and the frame of the name list)."""
    return VSCODE_SEARCH_TOOL, VSCODE_INSTRUCTIONS + "".join(VSCODE_LIST_FRAME)


# --- Anthropic API (a vendor figure, not a definition) ----------------------------------------------------------

ANTHROPIC_SEARCH_FIGURE = 500
ANTHROPIC_SEARCH_SOURCE = (
    "vendor figure: about 500 tokens ('Search tool: 0.5k'), Anthropic, 'Introducing advanced tool use on the "
    "Claude Developer Platform' (anthropic.com/engineering/advanced-tool-use, November 2025, with the "
    "advanced-tool-use-2025-11-20 beta); counted as published, in that model generation's tokens"
)
