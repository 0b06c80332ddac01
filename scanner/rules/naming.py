"""Rules on a tool's name, description and annotations (MCP101-MCP112): what a model reads first when it picks a
tool, and what a client reads to decide whether to ask the user. The words they share (folded words, verbs,
relatives, usage clauses) are in :mod:`scanner.rules.vocabulary`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from scanner.models import Severity
from scanner.rules.clients_reject import name_clients, sdk_list_clients
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.schema.size import compact_json, schema_text
from scanner.rules.text import Prefiltered, label, words
from scanner.rules.tools import ToolInfo, type_label
from scanner.rules.tools import hidden_from_model as _hidden_from_model
from scanner.rules.vocabulary import (
    READ_VERBS,
    WRITE_VERBS,
    NameReading,
    has_usage_clause,
    name_words,
    quote,
    read_name,
    text_words,
)

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
    the server does not know. It feeds the verdicts (catalogue 6), each client with its verbatim error: a character
    outside the set makes the OpenAI API refuse the whole request, "Invalid 'tools[21].function.name': string does
    not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'." (Vortiago/mcp-azure-devops#30,
    2025-06); Codex did too, "Invalid 'tools[48].name': ..." (openai/codex#8174, 0.73.0, 2025-12), until PR #8694
    (merged 2026-01-03) replaced the characters with `_`: a dated note in its verdict, not a refusal; the
    Anthropic API, "tools.295.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
    (nicobailon/pi-mcp-adapter#190, 2026-07; the limit was 64 in 2025, anthropics/claude-code#467); Claude Desktop,
    "tools.36.FrontendRemoteMcpToolDefinition.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"
    (barryw/ImmichMCP#4, 2026-03; API-200/api200#14, 2026-01). A name over 64 characters: the OpenAI API ("string
    too long. Expected a string with maximum length 64", thedotmack/claude-mem#360, 2025-12) and Claude Desktop
    ("String should have at most 64 characters", mims-harvard/ToolUniverse#3, 2025-06) refuse; the Anthropic API
    only past 128. Claude Code rewrites the characters into its `mcp__<server>__<tool>` name (MCP809 judges its
    length). A tool with no name, or a name that is not a string, makes the list invalid MCP: clients that validate
    `tools/list` with the TypeScript SDK (Claude Code, Claude Desktop, Cursor) load no tool of it (see MCP201).
    Bad: `"name": "files.read"` or `"name": "read file"`. Good: `"name": "read_file"`.""",
)
def name_invalid(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    name = tool.name
    refused = {"clients": sdk_list_clients(tool.raw, tool.index)}  # a list that is not valid MCP
    if not tool.is_object:
        yield Hit(f"{_not_object(tool)}, so it has no name.", details={"problem": "not-object", **refused})
    elif not tool.has_name:
        yield Hit(f"{tool.subject} has no name.", details={"problem": "missing", **refused})
    elif not isinstance(name, str):
        yield Hit(
            f"The name of {tool.display} is {type_label(name)}, not a string.", "/name", {"problem": "type", **refused}
        )
    elif not NAME_PATTERN.fullmatch(name):
        bad = sorted({char for char in name if not NAME_PATTERN.fullmatch(char)})
        details: dict[str, object] = {"problem": "pattern", "length": len(name)}
        details["clients"] = name_clients(name, tool.index)
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


def _name_words(tool: ToolInfo) -> list[str]:
    found = tool.cache.get("name_words")
    if found is None:
        found = tool.cache["name_words"] = name_words(tool.name)
    return list(found)


def _reading(tool: ToolInfo) -> NameReading:
    """The tool's name read for verbs (prefix words left out), once per tool."""
    found = tool.cache.get("reading")
    if found is None:
        found = tool.cache["reading"] = read_name(tool.name, _prefixes(tool), _name_words(tool))
    assert isinstance(found, NameReading)
    return found


def _relatives(tool: ToolInfo) -> list[int]:
    return tool.facts.relatives_of(tool.index) if tool.facts is not None else []


def _prefixes(tool: ToolInfo) -> frozenset[str]:
    return tool.facts.prefixes if tool.facts is not None else frozenset()


def _root_params_described(tool: ToolInfo) -> bool:
    """Every root parameter has a non-blank description (true when there are none)."""
    schema = tool.schema
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return True
    return all(
        isinstance(sub, dict) and isinstance(sub.get("description"), str) and sub["description"].strip()
        for sub in properties.values()
    )


@register(
    "MCP103",
    "description-echoes-name",
    Severity.WARNING,
    hint="Say what the tool needs and returns, and when to use it instead of a similar one.",
    status="removed",
    doc="""Retired in catalogue 6 (it never runs; the code is never reused): right 4 of 8 on hand-labelled real
    lists, and 12 of its 18 labels over two catalogues wrong. A short description that repeats the name is often
    complete when the schema says the rest (`git_checkout` "Switches branches", `browser_navigate` "Navigate to a
    URL"); the right ones were relatives the echo fails to tell apart, and no condition on one tool's text separates
    them. What it checked: Checks that the description adds at least three words that are not already in the name
    (the name is
    split on `_`, `-`, `.`, `/` and camelCase; words are compared folded, so "deletes" matches `delete` and
    "entities" matches `entity`; the stop words a, an, the, of, for, to, and, or, in, on, by, with, this, that,
    is, it, from do not count). A description that only repeats the name tells the model nothing about when to
    call the tool or what comes back. Not reported when the tool has no relative in the list (MCP105) and every
    root parameter is described (or there are none): then the name and the schema already say what the tool
    does and takes (`get_current_time` "Get the current time." with a described `timezone`). The message
    quotes the description. Bad: `get_user` described as "Gets the user." beside `get_user_roles`. Good: "Look
    up one user by id or e-mail; returns name, role and last login.\"""",
)
def description_echoes_name(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    text = tool.description_text
    if text is None:
        return
    relatives = _relatives(tool)
    if not relatives and _root_params_described(tool):
        return  # the name and the schema already say what the tool does and takes (checked first: it is cheaper)
    in_name = set(_name_words(tool))
    added: list[str] = []
    for word in text_words(text):
        if word not in STOP_WORDS and word not in in_name and word not in added:
            added.append(word)
            if len(added) == 3:
                return
    extra = f" ({', '.join(added)})" if added else ""
    yield Hit(
        f"The description of {tool.display}, {quote(text)}, adds only {len(added)} word"
        f"{'s' if len(added) != 1 else ''} not in its name{extra}.",
        "/description",
        {"added_words": added, "relatives": len(relatives)},
    )


@register(
    "MCP104",
    "description-long",
    Severity.NOTE,
    hint=(
        "Keep what a model needs to choose and call the tool; move background to the server's instructions or "
        "docs. It is read again on every turn."
    ),
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


def _names(tool: ToolInfo, indexes: list[int]) -> list[str]:
    names = tool.facts.names if tool.facts is not None else {}
    return [names.get(index, f"#{index}") for index in indexes]


@register(
    "MCP105",
    "usage-unstated",
    Severity.NOTE,
    hint="Say when to use this tool rather than its relatives, and when not to.",
    status="removed",
    doc="""Retired in catalogue 6 (it never runs; the code is never reused): right 8 of 30 on hand-labelled real
    lists. Most relatives are told apart by their verbs or objects without a usage clause
    (`add_observations`/`delete_observations`, `maps_geocode`/`maps_reverse_geocode`); the right ones (reviews vs
    review comments, retrieve vs query a data source) share no pattern a name or word test finds. What it checked:
    Notes a tool that has a *relative* in the list while its description has no usage clause. A relative is
    another tool whose name shares a word of 4 or more letters that is neither a read/write verb nor a prefix
    word most tools carry (`create_event` and `delete_event`), **and** whose description is similar: the two
    share at least 60 % of the distinct words of the longer description (MCP303's measure); tools whose texts
    already differ are told apart by them. A usage clause is "use this when/to/for/instead", "when you",
    "instead of", "rather than", "do not use", "not for", "for example", "e.g.", "such as", "useful for/when",
    "call this when/before/after", "only when/if/for", "prefer", or the exact name of another tool of the list.
    Among related tools a model picks by the description; one that never says when it fits leaves the choice
    to chance. The message quotes the start of the description. Bad: `search_issues` "Search the issues of a
    repository." beside `list_issues` "List the issues of a repository.". Good: "Full-text search over issues;
    use list_issues to page through one repository's issues in order.\"""",
)
def usage_unstated(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    text = tool.description_text
    relatives = _relatives(tool)
    if text is None or not relatives:
        return
    names = tool.facts.tool_names if tool.facts is not None else frozenset()
    if has_usage_clause(text, tool.name, names):
        return
    named = _names(tool, relatives)
    shown = ", ".join(label(name, 60) for name in named[:3]) + (" and others" if len(named) > 3 else "")
    yield Hit(
        f"The description of {tool.display}, {quote(text, 80)}, never says when to use it rather than {shown}.",
        "/description",
        {"relatives": named},
    )


LOSS_WORDS = frozenset(
    [
        "permanent",
        "permanently",
        "irreversible",
        "irreversibly",
        "undone",
        "undo",
        "recover",
        "recoverable",
        "restore",
        "trash",
        "soft",
        "confirm",
        "confirmation",
        "destructive",
        "lost",
        "cannot",
    ]
)


@register(
    "MCP106",
    "destructive-undisclosed",
    Severity.WARNING,
    hint=(
        "Say what is destroyed and whether it can be undone, and set `destructiveHint: true`, so a client can ask "
        "the user first."
    ),
    status="stable",
    doc="""Warns when the tool's name has a destructive verb (delete, remove, drop, clear, purge, destroy, erase,
    wipe, truncate, overwrite, reset, revoke, cancel, kill, terminate, uninstall, unlink), its
    `annotations.destructiveHint` is not `true`, and its description says nothing of what is lost: none of
    permanent(ly), irreversible(ly), undone, undo, recover(able), restore, trash, soft, confirm(ation),
    destructive, lost, cannot. A model (and the client that asks the user) cannot tell a reversible archive
    from a permanent deletion. The message quotes the description. Bad: `delete_repository` "Deletes a
    repository." with no annotations. Good: "Permanently deletes the repository and its issues; this cannot
    be undone." with `destructiveHint: true`.""",
)
def destructive_undisclosed(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    reading = _reading(tool)
    verb = reading.destructive_verb
    if verb is None or (tool.annotations is not None and tool.annotations.get("destructiveHint") is True):
        return
    text = tool.description_text or ""
    if not LOSS_WORDS.isdisjoint(words(text)):
        return
    said = f"its description, {quote(text, 80)}," if text else "it has no description and"
    yield Hit(
        f"{tool.subject} {verb}s, but {said} says nothing of what is lost or whether it can be undone, "
        "and destructiveHint is not true.",
        "/description" if text else None,
        {"verb": verb, "destructiveHint": _hint_value(tool, "destructiveHint")},
    )


def _hint_value(tool: ToolInfo, key: str) -> object:
    value = tool.annotations.get(key) if tool.annotations is not None else None
    return value if isinstance(value, bool) else None


TOOL_TOKEN_LIMIT = 1500


@register(
    "MCP107",
    "tool-heavy",
    Severity.WARNING,
    hint=(
        "Shorten the description, move rarely used options out of the schema, or split the tool: this one tool "
        "is read on every turn."
    ),
    status="stable",
    doc="""Warns when one tool's whole definition (name, description and input schema, as the most expensive
    provider receives it) costs more than 1,500 tokens per turn; details carry its cost and its share of the
    list's cost. One heavy tool is paid for on every turn of every conversation, whether or not it is called.
    Bad: a `query` tool whose description pastes the whole query language. Good: the syntax summarised in three
    lines, the reference in a resource.""",
)
def tool_heavy(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if not tool.is_object:
        return
    given = ctx.tool_cost(tool.index)
    if given is None:
        # Without the caller's per-tool counts: name, description and schema as JSON at the dearest text cost.
        # A text that short stays under the limit, so it is not counted: at most one o200k token per byte
        # (times Claude's factor of about 1.4 when the caller's cost is Claude's).
        parts = [compact_json(tool.name), compact_json(tool.description)]
        parts = [part.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for part in parts]
        if isinstance(tool.schema, dict):
            parts.append(schema_text(tool))
        text = '{"description":' + parts[1] + ',"inputSchema":' + (parts[2] if len(parts) > 2 else "null")
        text += ',"name":' + parts[0] + "}"
        if len(text.encode("utf-8")) <= (1000 if ctx.cost_text is not None else TOOL_TOKEN_LIMIT):
            return
        given = ctx.cost(text)
    tokens, method = given
    if tokens <= TOOL_TOKEN_LIMIT:
        return
    share = tokens / ctx.list_tokens_max if ctx.list_tokens_max else None
    shown = f", {round(share * 100)} % of the list" if share is not None else ""
    yield Hit(
        f"{tool.subject} costs {tokens} tokens per turn (more than {TOOL_TOKEN_LIMIT}{shown}).",
        None,
        {"tokens": tokens, "share": round(share, 3) if share is not None else None, "method": method},
    )


HINT_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _write_unannotated(tool: ToolInfo) -> tuple[bool, str | None]:
    """Whether MCP112 fires on the tool, and the verb that makes it a write (or destructive) name."""
    reading = _reading(tool)
    if not (reading.write_name or reading.destructive_verb is not None):
        return False, None
    marked = tool.annotations is not None and any(
        isinstance(tool.annotations.get(key), bool) for key in ("readOnlyHint", "destructiveHint")
    )
    verb = reading.destructive_verb or next((word for word in reading.words if word in WRITE_VERBS), None)
    return not marked, verb


@register(
    "MCP110",
    "annotations-missing",
    Severity.NOTE,
    hint=(
        "Say whether it only reads (`readOnlyHint`) or changes or destroys things (`destructiveHint`); clients "
        "decide from them what needs the user's confirmation."
    ),
    status="stable",
    doc="""Notes a tool with no `annotations` object, or one in which none of `readOnlyHint`, `destructiveHint`,
    `idempotentHint`, `openWorldHint` is a boolean (not reported when MCP112 fires on the tool: that is the
    sharper finding). Clients read the hints to decide which calls run without asking; registries grade them.
    Bad: no `annotations`. Good: `"annotations": {"readOnlyHint": true}` on a search tool.""",
)
def annotations_missing(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if not tool.is_object:
        return
    if tool.annotations is not None and any(isinstance(tool.annotations.get(key), bool) for key in HINT_KEYS):
        return
    if _write_unannotated(tool)[0]:
        return
    where = "has no annotations" if tool.annotations is None else "has annotations with no boolean hint"
    yield Hit(
        f"{tool.subject} {where} (readOnlyHint, destructiveHint, idempotentHint, openWorldHint).",
        "/annotations" if tool.annotations is not None else None,
        {"annotations": tool.annotations is not None},
    )


# Verbs that begin a name which neither only reads nor plainly writes (rules.md, MCP111).
NEITHER_VERBS = frozenset(
    ["manage", "execute", "run", "start", "stop", "simulate", "trigger", "schedule", "export", "download"]
)
# Words in a description that state a side effect of a tool named as a read (MCP111), besides the write verbs.
SIDE_EFFECT_WORDS = frozenset(["download", "save", "cache", "store", "advance"])


# A description that states what each call costs (a paid call spends the user's money, a side effect a client
# should ask about): "Price: $0.25", "Price: consult the current quote", "$0.05 per call", "costs 2 credits per
# request" (MCP111).
_STATED_PRICE = re.compile(
    r"\bprice\s*:\s*(?:[$\u20ac\u00a3]\s?\d|\d[\d.,]*\s*(?:usd|eur|usdc|credits?)\b)"
    r"|\b(?:price|pricing|cost)\s*:[^\n]{0,60}\b(?:quote|paid|charged?|credits?)\b"
    r"|[$\u20ac\u00a3]\s?\d[\d.,]*\s*(?:per|/|each|a)\s*(?:call|request|query|lookup|use)\b"
    r"|\bcosts?\s+[$\u20ac\u00a3]?\d[\d.,]*\s*(?:usd|usdc|credits?|cents?)?\s*(?:per|/|each|a)\s*"
    r"(?:call|request|query|lookup|use)\b",
    re.IGNORECASE,
)


# A description that says the call itself is a dry run or changes nothing (MCP111: `readOnlyHint: true` on a write
# name is then right): "Computes the deploy plan (dry-run, makes no changes)".
_STATES_NO_CHANGE = re.compile(
    r"(?<![\w`])dry[ -]run(?![\w`])|\bchanges nothing\b|\bmakes? no changes\b|\bwithout (?:making )?any changes\b",
    re.IGNORECASE,
)


def _is_dry_run(tool: ToolInfo) -> bool:
    """Whether a tool's description says the call is a dry run or changes nothing, and the tool has no dry-run
    switch (a ``dry_run`` parameter: then the description speaks of the option, not of every call)."""
    text = tool.description_text
    if not text or not _STATES_NO_CHANGE.search(text[:100_000]):
        return False
    return not any(name_words(node.path.rsplit(".", 1)[-1]) == ["dry", "run"] for node in tool.params)


def _states_side_effect(text: str | None) -> bool:
    """Whether a description states a side effect: a write verb, or download, save, cache, store, advance, in
    any simple form ("creates", "saved", "caching"), or a price per call ("Price: $0.25")."""
    if not text:
        return False
    if _STATED_PRICE.search(text[:100_000]):
        return True
    effects = WRITE_VERBS | SIDE_EFFECT_WORDS
    for word in text_words(text):
        if word in effects:
            return True
        if word.endswith("d") and (word[:-1] in effects or word[:-2] in effects):
            return True
        if word.endswith("ing") and (word[:-3] in effects or word[:-3] + "e" in effects):
            return True
    return False


@register(
    "MCP111",
    "annotations-contradict-name",
    Severity.WARNING,
    hint="Make the annotations say what the tool does: a client trusts them to skip or ask for confirmation.",
    status="stable",
    doc="""Warns when a *read name* carries annotations saying it is not read-only (`readOnlyHint: false` or
    `destructiveHint: true`), or a *write name* (create, update, put, delete, send and so on, and no read verb)
    says `readOnlyHint: true`. Here a read name has a read verb (get, list, search ...), no write verb, and
    starts with its read verb (prefix words aside): `list_and_sync_repos` is not one. A name that starts with a
    verb of neither list (manage, execute, run, start, stop, simulate, trigger, schedule, export, download) is
    neither. `readOnlyHint: false` on a read name is not reported when its description states a side effect (a
    write verb, or download, save, cache, store, advance: "Fetches the page and caches it"), or a price per call
    ("Price: $0.25", "$0.05 per request", "costs 2 credits per call"): a paid read spends the user's money, and a
    client that asks first is right to (catalogue 6 labels: a paid-data server marked all 41 of its reads so).
    `readOnlyHint: true` on a write name is not reported when its description says the call is a dry run or
    changes nothing ("dry-run", "makes no changes") and the tool has no dry-run parameter: `deployPlan`, a
    deploy's plan, reads (catalogue 6 labels). A
    client that trusts `readOnlyHint: true` runs the call without asking; one that sees a destructive read asks
    for nothing. Details carry the verb and the annotation. Bad: `delete_file` with `readOnlyHint: true`;
    `get_weather` "Current weather for a city." with `readOnlyHint: false`. Good: `readOnlyHint: false,
    destructiveHint: true` on `delete_file`.""",
)
def annotations_contradict_name(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if tool.annotations is None:
        return
    reading = _reading(tool)
    first = reading.words[0] if reading.words else None
    if first in NEITHER_VERBS:
        return
    read_name = reading.read_name and first in READ_VERBS
    read_only = tool.annotations.get("readOnlyHint")
    destructive = tool.annotations.get("destructiveHint")
    found: tuple[str, object] | None = None
    if read_name and read_only is False and not _states_side_effect(tool.description_text):
        found = ("readOnlyHint", False)
    elif read_name and destructive is True:
        found = ("destructiveHint", True)
    elif reading.write_name and read_only is True and not _is_dry_run(tool):
        found = ("readOnlyHint", True)
    if found is None:
        return
    key, value = found
    verb = reading.destructive_verb or reading.verb
    kind = "reads" if read_name else "changes things"
    yield Hit(
        f"{tool.subject} is named as a tool that {kind} ({verb}), but its annotations say {key}: {str(value).lower()}.",
        f"/annotations/{key}",
        {"verb": verb, "annotation": key, "value": value},
    )


@register(
    "MCP112",
    "write-unannotated",
    Severity.WARNING,
    hint="Set `readOnlyHint: false` and `destructiveHint`, so a client knows to ask the user before it runs the tool.",
    status="stable",
    doc="""Warns when a *write name* (a write verb such as create, update, put, send, delete, and no read verb)
    or a name with a destructive verb carries neither `readOnlyHint` nor `destructiveHint` as a boolean. A
    calculator's *arithmetic add* (`add`, `add_numbers`, `add_two_integers`: `add` with only number words) is
    not a write, and `list` after insert, add, create or delete is the thing written, not a read verb
    (`insert_list_item`, `add_to_list`, `create_list` are write names). A client that cannot tell a write from a
    read either asks about everything or about nothing.
    Bad: `send_email` or `put_object` with no annotations. Good: `"annotations": {"readOnlyHint": false,
    "destructiveHint": false}`.""",
)
def write_unannotated(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    fires, verb = _write_unannotated(tool)
    if not fires:
        return
    yield Hit(
        f"{tool.subject} changes things ({verb}) but its annotations carry neither readOnlyHint nor destructiveHint.",
        "/annotations" if tool.annotations is not None else None,
        {"verb": verb},
    )


_NOT_FOR_THE_MODEL = Prefiltered(
    re.compile(
        r"\b(?:the\s+)?model\s+(?:should|must)\s+not\s+(?:call|use)\b"
        r"|\bdo\s+not\s+call\s+this\s+tool\s+directly\b"
        r"|\bapp-only\b"
        r"|\bfor\s+the\s+(?:ui|app|viewer)\s+only\b"
        r"|\binternal\s+use\s+only\b",
        re.IGNORECASE,
    ),
    ("model", "call", "only"),  # one of them in every match
)


@register(
    "MCP113",
    "not-for-the-model",
    Severity.WARNING,
    hint=(
        'Hide it from the model (MCP Apps visibility `["app"]`) instead of asking the model not to call it: every '
        "turn pays for a tool it must never use."
    ),
    status="preview",
    doc="""Warns when the description says the model must not call the tool ("the model should not call",
    "model must not use", "do not call this tool directly", "app-only", "for the UI/app/viewer only", "internal
    use only", case-insensitive), yet the tool is in the list the model receives: no `_meta` visibility hides
    it (MCP Apps' `_meta.ui.visibility` without `"model"`, or `"openai/visibility": "private"`). The model
    reads, and pays for, a tool on every turn that it is told never to use, and may call it anyway. Details
    carry the phrase. Bad: `refresh_chart` "Re-renders the chart. App-only: the model should not call this
    tool." with no `_meta`. Good: the same tool with `"_meta": {"ui": {"visibility": ["app"]}}`, or without the
    sentence when the model may call it.""",
)
def not_for_the_model(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    text = tool.description_text
    if not text:
        return
    match = _NOT_FOR_THE_MODEL.search(text[:100_000])
    if match is None or _hidden_from_model(tool):
        return
    phrase = " ".join(match.group(0).split())
    yield Hit(
        f"The description of {tool.display} says the model must not call it ({quote(phrase, 80)}), yet the tool "
        "is in the list the model receives.",
        "/description",
        {"phrase": label(phrase, 120)},
    )
