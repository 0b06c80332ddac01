"""What each major MCP client really sends per turn for one server's tool list: one preset row per client.

Some clients put every tool definition into every request (the per-provider cost Fathom has always shown).
Others *defer*: they keep only a little of each tool in context (its name; or its name and description; or
nothing but the server's namespace), add a search tool, and load a tool's full definition when the model
searches for it. :data:`CLIENTS` is the one table of clients (a new client is one row); :func:`client_cost` is
the pure computation of one row's cost from a list's numbers; :func:`measure_clients` counts the few texts a
deferring client adds (name lines, the namespace text, its search tool where the definition is public) and
applies every row. The facts behind each row, with their sources and dates, are in ``docs/tokens.md`` ("Cost
per client"); the search tools' texts in :mod:`scanner.measure.client_search`.

Every number is in the tokens of the row's provider key (``anthropic``: Claude's current tokenizer; ``openai``:
o200k_base over the harmony render), and every result carries a ``method`` saying how it was made and naming
its public source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scanner.measure import client_search as search

if TYPE_CHECKING:
    from scanner.models import CheckReport

TYPICAL_LOADED: tuple[int, int] = (3, 5)
"""How many tools a deferring client typically loads for one request: Anthropic's tool search documentation
("loading only the 3–5 tools Claude needs"), the Agent SDK's ("The 3-5 most relevant tools are loaded") and VS
Code's ("returns the three to five most relevant matches")."""

CLAUDE_CODE_NAME_PREFIX = "mcp__server__"
"""Claude Code names an MCP tool ``mcp__<server>__<tool>``; the server part is the name the user gave the server
in their configuration, unknown here, so a neutral ``server`` stands in (a longer name costs a little more)."""

CLIENTS_VERSION = 2
"""The client table's version: bump it when a row is added or its arithmetic changes. Client costs are never
stored (they are computed from the stored per-tool costs when a page or an answer is made), so nothing is
rescored; the version is in ``check --format json`` (``clients_version``) so that a saved answer says which
table made it. 1: Claude Code (two modes), Anthropic API, Cursor, Gemini CLI. 2: Codex, VS Code, the OpenAI API
with tool search (with and without a namespace), Windsurf; search tools counted where published."""


@dataclass(frozen=True)
class SearchTool:
    """A client's search tool: how its size is known. ``kind``: ``measured`` (counted here from its public
    definition: ``texts`` names the function of :mod:`scanner.measure.client_render` that renders it),
    ``vendor`` (the vendor's own figure, ``figure`` tokens), ``unpublished`` (neither exists: ``source`` says so
    in words a reader understands)."""

    kind: str
    source: str
    figure: int | None = None
    texts: str = ""


UNPUBLISHED_CLAUDE_CODE = SearchTool(
    "unpublished",
    "not published: Claude Code's own ToolSearch tool (Claude Code is closed source, and Anthropic's ~500-token "
    "figure is for the API's tool search tool, a different tool), so it is not counted",
)
UNPUBLISHED_CURSOR = SearchTool(
    "unpublished",
    "not published: Cursor gives neither its lookup mechanism's prompt nor its size, so it is not counted",
)
UNPUBLISHED_OPENAI = SearchTool(
    "unpublished",
    "not published: OpenAI does not say how the hosted tool_search tool is shown to the model, nor its size, so it "
    "is not counted",
)


@dataclass(frozen=True)
class Client:
    """One client's preset: which provider's tokens it is counted in, and whether, when and how it defers.

    ``defers``: the client keeps definitions out of context and loads them by search. ``threshold``: the share
    of ``context_window`` the tools' own definitions must exceed before it defers (None: it always defers).
    ``rest``: what stays in context per list while deferred: ``names`` (a name line per tool, written
    ``name_prefix<tool>``), ``nothing``, ``sources`` (Codex: the server is one line of the search tool's
    description, its instructions beside its name), ``namespace`` (the server's namespace name and description
    shown) or ``descriptions`` (each tool's name and description, its parameters deferred).
    ``search``: the search tool's size and where it comes from; ``search_limit``: tools one search returns
    (None: the typical 3-5). ``max_tools``: the most tools the client enables at once (None: no cap known).
    ``source``: the public source of the row, named in every method.
    """

    key: str
    label: str
    provider: str
    defers: bool
    threshold: float | None = None
    context_window: int = 200_000
    name_prefix: str | None = None
    rest: str = ""
    search: SearchTool | None = None
    search_limit: int | None = None
    max_tools: int | None = None
    source: str = ""
    note: str = ""

    @property
    def threshold_tokens(self) -> int | None:
        """The tools' own tokens past which the client defers (Claude Code: ``floor(window * share)``)."""
        return None if self.threshold is None else int(self.context_window * self.threshold)

    @property
    def rest_kind(self) -> str:
        """``rest``, or (rows written before it) ``names`` with a name prefix and ``nothing`` without."""
        return self.rest or ("names" if self.name_prefix is not None else "nothing")


CLIENTS: tuple[Client, ...] = (
    Client(
        "claude-code",
        "Claude Code (tool search, the default)",
        "anthropic",
        defers=True,
        name_prefix=CLAUDE_CODE_NAME_PREFIX,
        search=UNPUBLISHED_CLAUDE_CODE,
        search_limit=TYPICAL_LOADED[1],
        source="code.claude.com MCP and Agent SDK tool search docs; anthropics/claude-code CHANGELOG",
        note="ENABLE_TOOL_SEARCH unset or true: MCP tools always deferred (not on Haiku, nor through a proxy "
        "ANTHROPIC_BASE_URL)",
    ),
    Client(
        "claude-code-auto",
        "Claude Code (ENABLE_TOOL_SEARCH=auto)",
        "anthropic",
        defers=True,
        threshold=0.10,
        name_prefix=CLAUDE_CODE_NAME_PREFIX,
        search=UNPUBLISHED_CLAUDE_CODE,
        search_limit=TYPICAL_LOADED[1],
        source="code.claude.com Agent SDK tool search docs; anthropics/claude-code CHANGELOG 2.1.7, 2.1.9",
        note="defers only when the MCP tools exceed 10 % of a 200k context window (auto:N sets N %)",
    ),
    Client(
        "anthropic-api-defer",
        "Anthropic API (defer_loading + tool search tool)",
        "anthropic",
        defers=True,
        rest="nothing",
        search=SearchTool("vendor", search.ANTHROPIC_SEARCH_SOURCE, search.ANTHROPIC_SEARCH_FIGURE),
        search_limit=TYPICAL_LOADED[1],
        source="platform.claude.com tool search tool docs",
        note="deferred tools are not in context until a search returns them",
    ),
    Client(
        "codex",
        "Codex (tool_search, MCP tools deferred)",
        "openai",
        defers=True,
        rest="sources",
        search=SearchTool(
            "measured",
            "Codex's tool_search definition (create_tool_search_tool), harmony render",
            texts="codex_search_texts",
        ),
        search_limit=search.CODEX_SEARCH_LIMIT,
        source=search.CODEX_SOURCE,
        note="when the model and provider support tool_search and namespaces (otherwise every tool is sent)",
    ),
    Client(
        "openai-api-defer",
        "OpenAI Responses API (tool_search, the server as one namespace)",
        "openai",
        defers=True,
        rest="namespace",
        search=UNPUBLISHED_OPENAI,
        source="developers.openai.com tool search guide ('the model sees only the namespace or server name and "
        "description'); gpt-5.4 and later",
    ),
    Client(
        "openai-api-defer-functions",
        "OpenAI Responses API (tool_search, functions deferred one by one)",
        "openai",
        defers=True,
        rest="descriptions",
        search=UNPUBLISHED_OPENAI,
        source="developers.openai.com tool search guide ('the model still sees the function name and description, "
        "so in practice what is deferred is mostly the parameter schema')",
    ),
    Client(
        "vscode",
        "VS Code (GitHub Copilot, tool_search, with a Claude model)",
        "anthropic",
        defers=True,
        name_prefix=search.VSCODE_NAME_PREFIX,
        rest="names",
        search=SearchTool(
            "measured",
            "VS Code's tool_search tool and its prompt text (vscode-copilot-chat)",
            texts="vscode_search_texts",
        ),
        search_limit=search.VSCODE_SEARCH_LIMIT,
        max_tools=128,
        source=search.VSCODE_SOURCE,
        note="Claude Sonnet/Opus 4.5+ and GPT-5.4+; Gemini models get grouped 'virtual tools' instead",
    ),
    Client(
        "cursor",
        "Cursor (dynamic context discovery, with a Claude model)",
        "anthropic",
        defers=True,
        name_prefix="",
        search=UNPUBLISHED_CURSOR,
        source="cursor.com/blog/dynamic-context-discovery (January 2026)",
        note="tool names in context, descriptions read from files on demand (format not published: a loaded "
        "tool is counted as its definition)",
    ),
    Client(
        "windsurf",
        "Windsurf (Cascade, with a Claude model)",
        "anthropic",
        defers=False,
        max_tools=100,
        source="docs.windsurf.com Cascade MCP ('a limit of 100 total tools')",
        note="every enabled MCP tool is sent; no deferral documented",
    ),
    Client(
        "gemini-cli",
        "Gemini CLI",
        "gemini",
        defers=False,
        source="google-gemini/gemini-cli packages/core/src/tools/mcp-tool.ts",
        note="every MCP tool is a function declaration",
    ),
)
"""Every client, in display order. Load-everything clients send the provider's full list (the per-provider
count); deferring ones are computed by :func:`client_cost`."""

CLIENTS_BY_KEY: dict[str, Client] = {client.key: client for client in CLIENTS}


@dataclass(frozen=True)
class ClientCost:
    """One client's cost per turn for a list: ``tokens`` at rest (no tool loaded yet), ``loaded_low`` and
    ``loaded_high`` once a typical 3 or 5 tools are loaded, ``deferred`` whether it defers this list, the
    search tool's share (None when not published) and where that figure comes from, the text the server
    controls at rest (``namespace``: Codex's source line, OpenAI's namespace) and its cost, what one search
    pulls in at most (``search_returns``: the client's limit of the list's largest tools), and how the numbers
    were made."""

    client: str
    label: str
    provider: str
    deferred: bool
    tokens: int
    loaded_low: int
    loaded_high: int
    search_tokens: int | None
    method: str
    search_source: str = ""
    namespace: str | None = None
    namespace_tokens: int | None = None
    search_limit: int | None = None
    search_returns: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "provider": self.provider,
            "deferred": self.deferred,
            "tokens": self.tokens,
            "loaded_3": self.loaded_low,
            "loaded_5": self.loaded_high,
            "search_tool": self.search_tokens,
            "search_tool_source": self.search_source,
            "namespace": self.namespace,
            "namespace_tokens": self.namespace_tokens,
            "search_limit": self.search_limit,
            "search_returns": self.search_returns,
            "method": self.method,
        }


@dataclass(frozen=True)
class RestCosts:
    """The texts a deferring client keeps for one list, already counted in its provider's tokens (from
    :func:`measure_clients`): ``per_tool`` (name lines, or name-and-description entries), ``namespace`` (the
    server's text at rest, with ``namespace_text``), ``header`` (the namespace a search result carries, paid
    once per search) and ``search`` (the search tool, None when not published)."""

    per_tool: Sequence[int] = ()
    namespace: int = 0
    namespace_text: str | None = None
    header: int = 0
    search: int | None = None


def client_cost(
    client: Client,
    total: int,
    tool_costs: Sequence[int],
    name_costs: Sequence[int],
    search_tokens: int | None,
    rest: RestCosts | None = None,
) -> ClientCost:
    """One client's cost per turn for one list, from numbers already in the client's provider tokens (pure).

    ``total`` is the provider's full-list count (what a load-everything client sends), ``tool_costs`` each
    tool's own definition, ``name_costs`` what each tool costs at rest while deferred (its name line, or its name
    and description), ``search_tokens`` the client's search tool (None: not published, left out and said so);
    ``rest`` the other texts (namespace, search header). A deferring client below its threshold loads
    everything, like a load-everything one. Deferred, the list costs what stays at rest plus the search tool;
    the tool-use system prompt is not counted, because the client's own tools already pay it. Loaded tools are
    counted at the list's mean tool cost (3 and 5 of them, or every tool when there are fewer), plus the
    namespace a search result carries; one search at the client's limit pulls in its largest tools.
    """
    rest = rest or RestCosts(per_tool=name_costs, search=search_tokens)
    own = sum(tool_costs)
    limit = client.threshold_tokens
    source = f"; source: {client.source}" if client.source else ""
    if not client.defers or not tool_costs or (limit is not None and own <= limit):
        why = "loads every tool"
        if client.defers and limit is not None:
            why = f"below its threshold ({own:,} <= {limit:,} tokens of tool definitions): loads every tool"
        if client.max_tools is not None and len(tool_costs) > client.max_tools:
            why += f" (but enables at most {client.max_tools}: this list has {len(tool_costs)})"
        method = f"{why}: the {client.provider} count of the full list{source}"
        return ClientCost(client.key, client.label, client.provider, False, total, total, total, None, method)
    kind = client.rest_kind
    per_tool = sum(name_costs) if kind in ("names", "descriptions") else 0
    namespace = rest.namespace if kind in ("sources", "namespace") else 0
    at_rest = per_tool + namespace + (search_tokens or 0)
    mean = own / len(tool_costs)
    low, high = (at_rest + rest.header + round(mean * min(k, len(tool_costs))) for k in TYPICAL_LOADED)
    returns = client.search_limit or TYPICAL_LOADED[1]
    search_returns = rest.header + sum(sorted(tool_costs, reverse=True)[:returns])
    parts = [_rest_words(client, len(name_costs), rest, namespace)]
    search_tool = client.search
    if search_tokens is not None:
        parts.append(f"search tool {search_tokens} ({search_tool.source if search_tool else 'given'})")
    elif search_tool is not None:
        parts.append(f"search tool: {search_tool.source}")
    else:
        parts.append("+ its search tool (size not published, not counted)")
    if limit is not None:
        parts.append(f"deferred past {limit:,} tokens of tool definitions ({own:,})")
    loaded = f"{TYPICAL_LOADED[0]}-{TYPICAL_LOADED[1]} loaded tools at the mean tool cost {round(mean):,}"
    if rest.header:
        loaded += f" + the namespace a search returns ({rest.header})"
    limit_words = f"{client.search_limit} per search" if client.search_limit else f"{returns} assumed per search"
    parts.append(f"{loaded}; one search pulls in at most {search_returns:,} ({limit_words}, the largest tools)")
    if client.max_tools is not None and len(tool_costs) > client.max_tools:
        parts.append(f"a request holds at most {client.max_tools} tools")
    method = f"{client.provider}: " + "; ".join(parts) + source
    return ClientCost(
        client.key,
        client.label,
        client.provider,
        True,
        at_rest,
        low,
        high,
        search_tokens,
        method,
        search_source=search_tool.source if search_tool else "",
        namespace=rest.namespace_text if kind in ("sources", "namespace") else None,
        namespace_tokens=namespace if kind in ("sources", "namespace") else None,
        search_limit=client.search_limit,
        search_returns=search_returns,
    )


def _rest_words(client: Client, count: int, rest: RestCosts, namespace: int) -> str:
    kind = client.rest_kind
    if kind == "names":
        return f"{count} name lines ('{client.name_prefix}<tool>')"
    if kind == "descriptions":
        return f"{count} functions with name and description only (parameters deferred)"
    if kind == "sources":
        told = rest.namespace_text is not None and ":" in rest.namespace_text
        what = f"its instructions, {namespace:,} tokens" if told else "no instructions: its name alone"
        return f"deferred tools not in context; the server is one source line of tool_search ({what})"
    if kind == "namespace":
        return f"deferred tools not in context; the namespace name and description shown ({namespace:,} tokens)"
    return "deferred tools not in context"


@dataclass(frozen=True)
class Counters:
    """How texts are priced per provider: ``anthropic`` (default: Claude's current tokenizer, ctok or o200k times
    its factor) and ``openai`` (default: o200k_base)."""

    anthropic: Callable[[str], int] | None = None
    openai: Callable[[str], int] | None = None

    def resolved(self) -> tuple[Callable[[str], int], Callable[[str], int]]:
        anthropic, openai = self.anthropic, self.openai
        if anthropic is None:
            from scanner.providers import text_cost

            anthropic = text_cost
        if openai is None:
            from scanner.measure import tokenizer

            openai = tokenizer.count
        return anthropic, openai


def measure_clients(
    totals: Mapping[str, int],
    tool_costs: Sequence[Mapping[str, int]],
    names: Sequence[str],
    count_text: Callable[[str], int] | None = None,
    clients: Sequence[Client] = CLIENTS,
    *,
    descriptions: Sequence[str | None] | None = None,
    instructions: str | None = None,
    count_openai: Callable[[str], int] | None = None,
    instructions_tokens: int | None = None,
) -> tuple[ClientCost, ...]:
    """Every client's cost for one list: provider totals, each tool's own costs by provider and its name.

    ``count_text`` prices a text in Claude's tokens (default: Claude's current tokenizer,
    :func:`scanner.providers.text_cost`), ``count_openai`` in OpenAI's (default: o200k_base). ``descriptions``
    (each tool's, in list order) are needed for the row that keeps them at rest (when None, that row is left
    out and :func:`missing_rows` says so); ``instructions`` are the server's, which Codex and the OpenAI
    namespace show (a stored list read by counts gives ``instructions_tokens`` instead, their o200k count: the
    namespace is then that count plus its separator, within a few tokens of the text's own render). Clients
    whose provider was not measured are left out.
    """
    anthropic_count, openai_count = Counters(count_text, count_openai).resolved()
    out = []
    lines: dict[str, list[int]] = {}  # name-line costs by prefix, counted once
    for client in clients:
        if client.provider not in totals:
            continue
        own = [costs.get(client.provider, 0) for costs in tool_costs]
        kind = client.rest_kind
        if not client.defers:
            out.append(client_cost(client, totals[client.provider], own, [], None))
            continue
        if kind == "descriptions" and descriptions is None:
            continue
        told = (instructions, instructions_tokens)
        rest = _rest_costs(client, names, descriptions, told, anthropic_count, openai_count, lines)
        out.append(client_cost(client, totals[client.provider], own, rest.per_tool, rest.search, rest))
    return tuple(out)


def missing_rows(clients: Sequence[Client] = CLIENTS) -> tuple[str, ...]:
    """The rows :func:`measure_clients` leaves out without the tools' descriptions (a stored list read by counts)."""
    return tuple(client.key for client in clients if client.rest_kind == "descriptions")


def _rest_costs(
    client: Client,
    names: Sequence[str],
    descriptions: Sequence[str | None] | None,
    told: tuple[str | None, int | None],
    anthropic_count: Callable[[str], int],
    openai_count: Callable[[str], int],
    lines: dict[str, list[int]],
) -> RestCosts:
    """What a deferring client keeps for this list, counted in its provider's format."""
    from scanner.measure import client_render as render

    kind = client.rest_kind
    count = anthropic_count if client.provider != "openai" else openai_count
    search_tool = _search_tokens(client, count)
    if kind == "names":
        prefix = client.name_prefix or ""
        if prefix not in lines:
            lines[prefix] = [count(f"{prefix}{name}\n") for name in names]
        return RestCosts(per_tool=lines[prefix], search=search_tool)
    if kind == "descriptions":
        assert descriptions is not None
        entries = [render.lean_function(name, text) for name, text in zip(names, descriptions, strict=True)]
        return RestCosts(per_tool=[openai_count(entry) for entry in entries], search=search_tool)
    instructions, counted = told
    if instructions is None and counted:  # only the stored count: the texts around it, plus it
        if kind == "sources":
            header = openai_count(render.namespace_frame(search.CODEX_SERVER, None)) + counted + 1
            line = f"- {search.CODEX_SERVER}: (instructions, {counted:,} tokens)"
            return RestCosts(namespace=counted + 1, namespace_text=line, header=header, search=search_tool)
        if kind == "namespace":
            shown = f"## {search.CODEX_SERVER}\n\n(instructions, {counted:,} tokens)\n\n"
            base = openai_count(render.shown_namespace(search.CODEX_SERVER, None))
            return RestCosts(namespace=base + counted + 1, namespace_text=shown, search=search_tool)
    if kind == "sources":
        line = search.codex_source_line(instructions)
        with_line = openai_count(render.codex_search_tool(instructions))
        frame = render.namespace_frame(search.CODEX_SERVER, search.codex_namespace_description(instructions))
        header = openai_count(frame)
        return RestCosts(
            namespace=with_line - (search_tool or 0), namespace_text=line, header=header, search=search_tool
        )
    if kind == "namespace":
        text = instructions.strip() if instructions and instructions.strip() else None
        shown = render.shown_namespace(search.CODEX_SERVER, text)
        return RestCosts(namespace=openai_count(shown), namespace_text=shown, search=search_tool)
    return RestCosts(search=search_tool)


def _search_tokens(client: Client, count: Callable[[str], int]) -> int | None:
    """The search tool's own tokens in the row's provider: counted from its public definition, the vendor's
    figure, or None (not published)."""
    from scanner.measure import client_render as render

    tool = client.search
    if tool is None or tool.kind == "unpublished":
        return None
    if tool.kind == "vendor":
        return tool.figure
    key = (tool.texts, count)
    if key not in _SEARCH_TOKENS:  # the same texts every list: counted once per counter
        texts: Callable[[], tuple[str, ...]] = getattr(render, tool.texts)
        _SEARCH_TOKENS[key] = sum(count(text) for text in texts())
    return _SEARCH_TOKENS[key]


_SEARCH_TOKENS: dict[tuple[str, Callable[[str], int]], int] = {}
"""A search tool's tokens by (its texts' renderer, the counter), for :func:`_search_tokens`."""


def report_clients(
    report: CheckReport, tools: Sequence[Any] | None = None, instructions: str | None = None
) -> tuple[ClientCost, ...]:
    """Every client's cost for a measured list (``fathom check``'s report); with the raw ``tools`` the row that
    keeps descriptions is counted too, with the server's ``instructions`` Codex's and OpenAI's namespace text."""
    ordered = sorted(report.tool_costs, key=lambda cost: cost.index)
    descriptions = None
    if tools is not None:
        from scanner.measure.client_render import tool_descriptions

        descriptions = tool_descriptions(tools, [cost.index for cost in ordered])
    if instructions is None and report.instructions is not None:
        instructions = report.instructions.text
    return measure_clients(
        {provider: count.tokens for provider, count in report.tokens.items()},
        [cost.tokens for cost in ordered],
        [cost.name for cost in ordered],
        descriptions=descriptions,
        instructions=instructions,
    )


def deferral_summary(costs: Sequence[ClientCost]) -> list[str]:
    """What the server controls under deferral, in a sentence or two (``check``'s text and Markdown): its
    instructions as the namespace text Codex and OpenAI show, and what one search pulls in (the largest tools'
    full definitions, at each client's limit). Empty when no row defers."""
    rows = {cost.client: cost for cost in costs if cost.deferred}
    if not rows:
        return []
    out = []
    codex, namespace = rows.get("codex"), rows.get("openai-api-defer")
    if codex is not None or namespace is not None:
        told = codex is not None and codex.namespace is not None and ":" in codex.namespace
        told = told or (namespace is not None and bool(namespace.namespace and namespace.namespace.count("\n") > 2))
        if told:
            parts = []
            if codex is not None:
                parts.append(f"Codex's namespace text ({codex.namespace_tokens:,} tokens)")
            if namespace is not None:
                parts.append(f"the OpenAI API's namespace description ({namespace.namespace_tokens:,} tokens)")
            out.append("Under deferral the server's instructions are " + " and ".join(parts))
        else:
            out.append("Under deferral Codex and the OpenAI API show the server by its name alone (no instructions)")
    pulls = [
        f"{cost.search_returns:,} ({cost.label.split(' (')[0]}, {cost.search_limit or TYPICAL_LOADED[1]} tools)"
        for cost in rows.values()
        if cost.search_returns is not None and cost.client in ("codex", "vscode", "anthropic-api-defer")
    ]
    if pulls:
        out.append(
            "One search loads the matched tools in full; the largest tools at a client's limit: " + ", ".join(pulls)
        )
    return out
