"""What each major client really sends per turn for a tool list: one preset per client, so a new client is a row.

Two kinds of client (facts and sources in ``docs/tokens.md``, "Cost per client"):

- *load everything*: every tool definition is sent on every turn (the per-provider cost Fathom already counts).
- *deferring*: past a threshold the client keeps only a stub per tool in context (Claude Code: the tool's name on
  one line of its deferred-tools list) plus its own search tool, and loads a tool's full definition when the model
  searches for it; a typical turn then carries a few loaded tools (Anthropic's tool search page: "3–5").

:func:`client_costs` counts them with the same tokenizer as the provider the client talks to. The search tool's
own definition is not published as text, so its cost is not counted (``search_tool_tokens`` is None) and the
method says so: a number is never guessed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONTEXT_WINDOW = 200_000


@dataclass(frozen=True)
class ClientPreset:
    """One client: whether (and from which share of the context window) it defers tool definitions."""

    key: str
    name: str
    provider: str  # the stored provider key whose tokenizer counts it
    defers: bool
    threshold_share: float | None = None  # defers only when the list exceeds this share of the window (None: always)
    typical_loaded: int = 4  # tools loaded in a typical turn when deferring (3-5)
    source: str = ""


CLIENTS: tuple[ClientPreset, ...] = (
    ClientPreset(
        "claude-code",
        "Claude Code (tool search, ENABLE_TOOL_SEARCH=auto)",
        "anthropic",
        defers=True,
        threshold_share=0.10,
        source="code.claude.com/docs/en/mcp (Scale with MCP tool search); auto:N sets N %",
    ),
    ClientPreset(
        "anthropic-api-defer",
        "Anthropic API with defer_loading + tool search tool",
        "anthropic",
        defers=True,
        source="platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool",
    ),
    ClientPreset("cursor", "Cursor", "anthropic", defers=False, source="loads every enabled MCP tool"),
    ClientPreset("windsurf", "Windsurf", "anthropic", defers=False, source="loads every enabled MCP tool"),
    ClientPreset("gemini-cli", "Gemini CLI", "gemini", defers=False, source="sends every tool as a declaration"),
)


@dataclass(frozen=True)
class ClientCost:
    """What one client sends per turn: everything, or stubs + a typical few loaded tools."""

    key: str
    name: str
    defers: bool
    tokens: int  # per turn in the typical case
    all_tools_tokens: int  # the full list with this client's provider
    stubs_tokens: int | None = None
    loaded_tokens: int | None = None
    search_tool_tokens: int | None = None
    method: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def client_costs(
    tools: Sequence[Any],
    list_tokens: Mapping[str, int],
    tool_tokens: Mapping[str, Sequence[int]],
    count: Callable[[str], int],
    *,
    context_window: int = CONTEXT_WINDOW,
    clients: Sequence[ClientPreset] = CLIENTS,
) -> list[ClientCost]:
    """Per-turn cost for each client preset.

    ``list_tokens``: the list's cost per provider key; ``tool_tokens``: each tool's own cost per provider key (list
    order); ``count``: the tokenizer for stubs (the deferring client's provider).
    """
    names = [str(tool.get("name")) for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)]
    out: list[ClientCost] = []
    for client in clients:
        everything = int(list_tokens.get(client.provider, max(list_tokens.values(), default=0)))
        defers = client.defers and (
            client.threshold_share is None or everything > client.threshold_share * context_window
        )
        if not defers:
            why = "loads every tool" if not client.defers else f"list under {client.threshold_share:.0%} of window"
            out.append(ClientCost(client.key, client.name, False, everything, everything, method=why))
            continue
        stubs = count("\n".join(names)) if names else 0
        per_tool = list(tool_tokens.get(client.provider, ()))
        loaded = round(statistics.mean(per_tool) * min(client.typical_loaded, len(per_tool))) if per_tool else 0
        out.append(
            ClientCost(
                client.key,
                client.name,
                True,
                stubs + loaded,
                everything,
                stubs_tokens=stubs,
                loaded_tokens=loaded,
                method=(
                    f"names of all {len(names)} tools + {client.typical_loaded} average tools loaded; "
                    "the search tool's own definition not counted (not published as text)"
                ),
            )
        )
    return out


def report_client_costs(report: Any) -> list[ClientCost]:
    """:func:`client_costs` of a :class:`~scanner.models.CheckReport` (its per-provider and per-tool counts), the
    tool names counted with the client's provider: Claude's tokenizer for Anthropic clients, o200k_base otherwise."""
    from scanner import providers, tokenizer

    tools = [{"name": cost.name} for cost in sorted(report.tool_costs, key=lambda cost: cost.index)]
    listed = {provider: count.tokens for provider, count in report.tokens.items()}
    per_tool: dict[str, Sequence[int]] = {
        provider: [int(cost.tokens.get(provider, 0)) for cost in report.tool_costs] for provider in listed
    }
    out: list[ClientCost] = []
    for client in CLIENTS:
        count = providers.text_cost if client.provider == "anthropic" else tokenizer.count
        out += client_costs(tools, listed, per_tool, count, clients=(client,))
    return out
