"""What each major MCP client really sends per turn for one server's tool list: one preset row per client.

Some clients put every tool definition into every request (the per-provider cost Fathom has always shown).
Others *defer*: they keep only each tool's name in context, add a search tool, and load a tool's full definition
when the model searches for it. :data:`CLIENTS` is the one table of clients (a new client is one row);
:func:`client_cost` is the pure computation of one row's cost from a list's numbers; :func:`measure_clients`
counts the few texts a deferring client adds (each tool's name line) and applies every row. The facts behind
each row, with their sources, are in ``docs/tokens.md`` ("Cost per client").

Every number is in the tokens of the row's provider key (``anthropic``: Claude's current tokenizer), and every
result carries a ``method`` saying how it was made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scanner.models import CheckReport

TYPICAL_LOADED: tuple[int, int] = (3, 5)
"""How many tools a deferring client typically loads for one request: Anthropic's tool search documentation
("loading only the 3–5 tools Claude needs") and the Agent SDK's ("The 3-5 most relevant tools are loaded")."""

CLAUDE_CODE_NAME_PREFIX = "mcp__server__"
"""Claude Code names an MCP tool ``mcp__<server>__<tool>``; the server part is the name the user gave the server
in their configuration, unknown here, so a neutral ``server`` stands in (a longer name costs a little more)."""


@dataclass(frozen=True)
class Client:
    """One client's preset: which provider's tokens it is counted in, and whether and when it defers.

    ``defers``: the client keeps definitions out of context and loads them by search. ``threshold``: the share
    of ``context_window`` the tools' own definitions must exceed before it defers (None: it always defers).
    ``name_prefix``: how a deferred tool's name is written in context (None: no name stays in context).
    ``search_o200k``: o200k tokens the client adds once for its search tool (None: not published).
    """

    key: str
    label: str
    provider: str
    defers: bool
    threshold: float | None = None
    context_window: int = 200_000
    name_prefix: str | None = None
    search_o200k: int | None = None
    note: str = ""

    @property
    def threshold_tokens(self) -> int | None:
        """The tools' own tokens past which the client defers (Claude Code: ``floor(window * share)``)."""
        return None if self.threshold is None else int(self.context_window * self.threshold)


CLIENTS: tuple[Client, ...] = (
    Client(
        "claude-code",
        "Claude Code (tool search, the default)",
        "anthropic",
        defers=True,
        name_prefix=CLAUDE_CODE_NAME_PREFIX,
        note="ENABLE_TOOL_SEARCH unset or true: MCP tools always deferred (not on Haiku, nor through a proxy "
        "ANTHROPIC_BASE_URL); the search tool's own size is not published",
    ),
    Client(
        "claude-code-auto",
        "Claude Code (ENABLE_TOOL_SEARCH=auto)",
        "anthropic",
        defers=True,
        threshold=0.10,
        name_prefix=CLAUDE_CODE_NAME_PREFIX,
        note="defers only when the MCP tools exceed 10 % of a 200k context window (auto:N sets N %)",
    ),
    Client(
        "anthropic-api-defer",
        "Anthropic API (defer_loading + tool search tool)",
        "anthropic",
        defers=True,
        note="deferred tools are not in context; the tool search tool's own size is not published",
    ),
    Client(
        "cursor",
        "Cursor (dynamic context discovery, with a Claude model)",
        "anthropic",
        defers=True,
        name_prefix="",
        note="tool names in context, descriptions read from files on demand (format not published: a loaded "
        "tool is counted as its definition)",
    ),
    Client("gemini-cli", "Gemini CLI", "gemini", defers=False, note="every MCP tool is a function declaration"),
)
"""Every client, in display order. Load-everything clients send the provider's full list (the per-provider
count); deferring ones are computed by :func:`client_cost`."""

CLIENTS_BY_KEY: dict[str, Client] = {client.key: client for client in CLIENTS}


@dataclass(frozen=True)
class ClientCost:
    """One client's cost per turn for a list: ``tokens`` at rest (no tool loaded yet), ``loaded_low`` and
    ``loaded_high`` once a typical 3 or 5 tools are loaded, ``deferred`` whether it defers this list, the
    search tool's share (None when not published), and how the numbers were made."""

    client: str
    label: str
    provider: str
    deferred: bool
    tokens: int
    loaded_low: int
    loaded_high: int
    search_tokens: int | None
    method: str

    def to_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "provider": self.provider,
            "deferred": self.deferred,
            "tokens": self.tokens,
            "loaded_3": self.loaded_low,
            "loaded_5": self.loaded_high,
            "search_tool": self.search_tokens,
            "method": self.method,
        }


def client_cost(
    client: Client,
    total: int,
    tool_costs: Sequence[int],
    name_costs: Sequence[int],
    search_tokens: int | None,
) -> ClientCost:
    """One client's cost per turn for one list, from numbers already in the client's provider tokens (pure).

    ``total`` is the provider's full-list count (what a load-everything client sends), ``tool_costs`` each
    tool's own definition, ``name_costs`` what each tool's name line costs when deferred, ``search_tokens`` the
    client's search tool (None: unknown, left out and said so). A deferring client below its threshold loads
    everything, like a load-everything one. Deferred, the list costs its name lines plus the search tool; the
    tool-use system prompt is not counted, because the client's own tools already pay it. Loaded tools are
    counted at the list's mean tool cost (3 and 5 of them, or every tool when there are fewer).
    """
    own = sum(tool_costs)
    limit = client.threshold_tokens
    if not client.defers or not tool_costs or (limit is not None and own <= limit):
        why = "loads every tool"
        if client.defers and limit is not None:
            why = f"below its threshold ({own:,} <= {limit:,} tokens of tool definitions): loads every tool"
        method = f"{why}: the {client.provider} count of the full list"
        return ClientCost(client.key, client.label, client.provider, False, total, total, total, None, method)
    names = sum(name_costs) if client.name_prefix is not None else 0
    at_rest = names + (search_tokens or 0)
    mean = own / len(tool_costs)
    low, high = (at_rest + round(mean * min(k, len(tool_costs))) for k in TYPICAL_LOADED)
    parts = []
    if client.name_prefix is not None:
        parts.append(f"{len(name_costs)} name lines ('{client.name_prefix}<tool>')")
    else:
        parts.append("deferred tools not in context")
    if search_tokens is not None:
        parts.append(f"search tool {search_tokens}")
    else:
        parts.append("+ its search tool (size not published, not counted)")
    if limit is not None:
        parts.append(f"deferred past {limit:,} tokens of tool definitions ({own:,})")
    loaded = f"{TYPICAL_LOADED[0]}-{TYPICAL_LOADED[1]} loaded tools at the mean tool cost {round(mean):,}"
    method = f"{client.provider}: " + "; ".join(parts) + f"; {loaded}"
    return ClientCost(client.key, client.label, client.provider, True, at_rest, low, high, search_tokens, method)


def measure_clients(
    totals: Mapping[str, int],
    tool_costs: Sequence[Mapping[str, int]],
    names: Sequence[str],
    count_text: Callable[[str], int] | None = None,
    scale: Callable[[int], int] | None = None,
    clients: Sequence[Client] = CLIENTS,
) -> tuple[ClientCost, ...]:
    """Every client's cost for one list: provider totals, each tool's own costs by provider and its name.

    ``count_text`` prices a text in the deferring clients' provider (default: Claude's current tokenizer,
    :func:`scanner.providers.text_cost`), ``scale`` turns a measured o200k count into it (default: the current
    generation's factor). Clients whose provider was not measured are left out.
    """
    if count_text is None or scale is None:
        from scanner.providers import text_cost
        from scanner.providers.anthropic import CURRENT
        from scanner.providers.base import scaled

        count_text = count_text or text_cost
        scale = scale or (lambda tokens: scaled(tokens, CURRENT.factor))
    out = []
    lines: dict[str, list[int]] = {}  # name-line costs by prefix, counted once
    for client in clients:
        if client.provider not in totals:
            continue
        own = [costs.get(client.provider, 0) for costs in tool_costs]
        name_costs: list[int] = []
        if client.defers and client.name_prefix is not None:
            prefix = client.name_prefix
            if prefix not in lines:
                lines[prefix] = [count_text(f"{prefix}{name}\n") for name in names]
            name_costs = lines[prefix]
        search = None if client.search_o200k is None else scale(client.search_o200k)
        out.append(client_cost(client, totals[client.provider], own, name_costs, search))
    return tuple(out)


def report_clients(report: CheckReport) -> tuple[ClientCost, ...]:
    """Every client's cost for a measured list (``fathom check``'s report)."""
    ordered = sorted(report.tool_costs, key=lambda cost: cost.index)
    return measure_clients(
        {provider: count.tokens for provider, count in report.tokens.items()},
        [cost.tokens for cost in ordered],
        [cost.name for cost in ordered],
    )
