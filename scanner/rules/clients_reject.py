"""What clients reject (MCP801-MCP807): shapes of a valid MCP tool list that a client or provider API refuses.

Each rule restates one client's own published refusal (the sources, with the verbatim errors, are in each rule's
doc and so in ``docs/rules.md``). A finding's details name every client the shape breaks, with the effect and the
error text the user would see: ``details["clients"]`` is a list of ``{"client", "effect", "error"}``, effect
``refuses`` (the whole request fails: every turn that carries the list) or ``drops`` (the tool is silently left
out). :mod:`scanner.measure.verdicts` turns these into one verdict per client. Client keys are those of
:data:`REJECT_CLIENTS` (here, so that the rules never import the verdicts).

MCP801-MCP803 are ``stable`` from the start (rules.md, catalogue 5); MCP804 is retired into MCP810 (catalogue
6). MCP808-MCP810 are in :mod:`scanner.rules.clients_limits`. Findings of other families also name clients
(MCP101 through :func:`name_clients`; MCP101, MCP201, MCP205, MCP214 and MCP216 through :func:`sdk_list_clients`, a list
that is not valid MCP).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from scanner.models import Severity
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.text import label
from scanner.rules.tools import Node, ToolInfo, pointer

MAX_LISTED = 20


@dataclass(frozen=True)
class RejectClient:
    """A client a verdict is given for: its key (``--fail-on-reject`` takes it), its public name, and what the
    public sources behind the MCP8xx rules cover of it."""

    key: str
    label: str
    covers: str


REJECT_CLIENTS: tuple[RejectClient, ...] = (
    RejectClient(
        "claude-code",
        "Claude Code",
        "reports from v0.2.56 (2025-03) to 2026-09: v2.1.233 and the CLI reports of 2026-08-22/29 (outputSchema "
        "dialect), root combinators left out since 2026-08 (#95504), tools/list validation (#17742, #88049), "
        "tool search's 64-character names (2026-01)",
    ),
    RejectClient(
        "claude-desktop",
        "Claude Desktop",
        "Claude Desktop, claude.ai connectors and Cowork (tools validated on the Claude side): app 1.28929 "
        "(2026-08-12) to 2.2553.1 (2026-09-21) in the reports",
    ),
    RejectClient(
        "anthropic-api",
        "Anthropic API",
        "the Messages API (Claude-backed clients, Bedrock Converse): reports 2025-03 to 2026-09",
    ),
    RejectClient(
        "codex",
        "Codex",
        "Codex CLI and app on the OpenAI Responses API: 0.73.0 (2025-12, openai/codex#8174) to the name "
        "sanitizing of PR #8694 (merged 2026-01-03) and #14833",
    ),
    RejectClient(
        "cursor",
        "Cursor",
        "Cursor 1.6 (2025-09) and the reports to 2026-02 (60-character names); tools/list validation 2025-10",
    ),
    RejectClient(
        "gemini-cli",
        "Gemini CLI",
        "v0.38 (2026-04, 512 function declarations); its August-September 2025 skipping of untyped schemas "
        "(v0.1.18-v0.1.19) is a dated note, v0.42.0 loads them",
    ),
    RejectClient(
        "gemini-api",
        "Gemini API (parameters)",
        "generateContent when a client sends the schema as `parameters` (OpenAPI subset), not "
        "`parametersJsonSchema`: reports 2025-01 to 2026-09",
    ),
    RejectClient(
        "openai-api",
        "OpenAI API",
        "Chat Completions and Responses (OpenAI-backed clients): reports 2024-05 to 2026-04",
    ),
    RejectClient(
        "vscode",
        "VS Code (Copilot)",
        "VS Code 1.99 (2025-04) to 1.111 (2026-03) in the reports",
    ),
    RejectClient(
        "windsurf",
        "Windsurf",
        "Windsurf's MCP settings (100 enabled tools): reports 2025-04 (limit 50) and 2026-02 (limit 100)",
    ),
)
CLIENT_KEYS: dict[str, RejectClient] = {client.key: client for client in REJECT_CLIENTS}


def client_label(key: str) -> str:
    found = CLIENT_KEYS.get(key)
    return found.label if found is not None else key


_ROOT_COMBINATOR_ERROR = "input_schema does not support oneOf, allOf, or anyOf at the top level"
_KEY_PATTERN = "^[a-zA-Z0-9_.-]{1,64}$"
_KEY = re.compile(r"[a-zA-Z0-9_.-]{1,64}")
_KEY_ERROR = f"input_schema.properties: Property keys should match pattern '{_KEY_PATTERN}'"
_VSCODE_ITEMS = "tool parameters array type must have items"
OPENAI_TOOLS_LIMIT = 128

EFFECTS: dict[str, tuple[tuple[str, str], ...]] = {
    "MCP801": (("anthropic-api", "refuses"), ("claude-code", "drops")),
    "MCP802": (("anthropic-api", "refuses"), ("claude-code", "drops")),
    "MCP803": (("openai-api", "refuses"), ("vscode", "drops")),
    "MCP805": (("gemini-api", "refuses"),),
    "MCP806": (("gemini-api", "refuses"),),
    "MCP807": (("gemini-cli", "drops"),),
    "MCP808": (("claude-desktop", "drops"), ("claude-code", "drops")),
}
"""Each rule's clients and effects, as its findings' details name them (tests hold the two together): what a
verdict falls back on for a finding stored without details (the finding events of history keep none). MCP809 and
MCP810 depend on the server key and the count, so a finding stored without details decides nothing; nor do the
findings of other families that name clients (MCP101, MCP201, MCP205, MCP214, MCP216: see :func:`name_clients` and
:func:`sdk_list_clients`), whose effect depends on the exact shape."""

DATED_NOTES: dict[str, dict[str, str]] = {
    "MCP101": {
        "codex": "Codex refused the whole request for such a name in 0.73.0 (2025-12, openai/codex#8174, "
        "\"Invalid 'tools[48].name': string does not match pattern\"); since PR #8694 (merged 2026-01-03) it "
        "replaces the characters with _, so this decides no current verdict",
    },
    "MCP807": {
        "gemini-cli": "Gemini CLI skipped such tools in August-September 2025 (v0.1.18-v0.1.19: "
        "cyanheads/obsidian-mcp-server#21, dataforseo/mcp-server-typescript#25); v0.42.0 loads them "
        "(cyanheads/obsidian-mcp-server#54), so this decides no current verdict",
    },
}
"""Refusals a client has since stopped: a finding of these rules adds the dated note to that client's verdict and
decides nothing (rules.md, catalogue 6: "a behaviour the client has since fixed becomes a dated note")."""

EARLIER: dict[str, dict[str, str]] = {
    "MCP801": {
        "claude-code": "Claude Code refused the whole request for this shape, every turn failing, from v0.2.56 "
        "(2025-03, anthropics/claude-code#657) to 2026-05 (#45106, 2026-04; #64113 headless, 2026-05); reports "
        "from 2026-08 on (#95504, moira-mcp/moira#177, opentokenz/mcpx#28) show it leaving the tool out instead",
    },
}
"""What a client did before its current behaviour, for a shape it still does not load: the dated note goes with
the verdict, which the current effect decides."""

# --- names and lists that clients refuse outside this family (MCP101; lists that are not valid MCP) ---------

_NAME_CHARS = re.compile(r"[A-Za-z0-9_-]+")


def name_clients(name: str, index: int) -> list[dict[str, str]]:
    """Each client that refuses a tool ``name`` (MCP101's shapes), with its verbatim error: the OpenAI API
    ``^[a-zA-Z0-9_-]{1,64}$`` (so Codex, on the Responses API, for the characters), the Anthropic API
    ``^[a-zA-Z0-9_-]{1,128}$``, Claude Desktop's ``FrontendRemoteMcpToolDefinition`` ``{1,64}``. Claude Code
    rewrites a name into ``mcp__<server>__<tool>`` with the characters replaced, so it is not named here (its
    limit on the built name is MCP809's)."""
    length = len(name)
    chars_ok = bool(_NAME_CHARS.fullmatch(name))
    out: list[tuple[str, str, str]] = []
    if not chars_ok:
        out += [
            (
                "anthropic-api",
                "refuses",
                f"tools.{index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'",
            ),
            (
                "claude-desktop",
                "refuses",
                f"tools.{index}.FrontendRemoteMcpToolDefinition.name: String should match pattern "
                "'^[a-zA-Z0-9_-]{1,64}$'",
            ),
            (
                "codex",
                "refuses",
                f"Invalid 'tools[{index}].name': string does not match pattern. Expected a string that matches the "
                "pattern '^[a-zA-Z0-9_-]+$'.",
            ),
            (
                "openai-api",
                "refuses",
                f"Invalid 'tools[{index}].function.name': string does not match pattern. Expected a string that "
                "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            ),
        ]
    elif length > 64:
        if length > 128:
            out.append(
                ("anthropic-api", "refuses", f"tools.{index}.custom.name: String should have at most 128 characters")
            )
        out += [
            (
                "claude-desktop",
                "refuses",
                f"tools.{index}.FrontendRemoteMcpToolDefinition.name: String should have at most 64 characters",
            ),
            (
                "openai-api",
                "refuses",
                f"Invalid 'tools[{index}].function.name': string too long. Expected a string with maximum length 64, "
                f"but got a string with length {length} instead.",
            ),
        ]
    return _clients(*out)


SDK_CLIENTS = ("claude-code", "claude-desktop", "cursor")
"""Clients that validate ``tools/list`` with the MCP TypeScript SDK's ``ListToolsResultSchema`` and so load no
tool at all from a list it refuses: Claude Code ("Failed to fetch tools", anthropics/claude-code#17742,
Mearman/mcp-wayback-machine#29 "tools fetch failed"), Claude Desktop and Cursor ("Error listing tools ... Found 0
tools", anthropics/claude-code#10031 and #10825)."""


def _sdk_schema_problem(schema: Any, where: str) -> tuple[str, str] | None:
    """Where and why the SDK's tool schema (``inputSchema``/``outputSchema``: an object whose ``type`` is the literal
    ``object``, ``properties`` a record of objects, ``required`` a list of strings) refuses ``schema``."""
    if not isinstance(schema, dict):
        return where, f"Invalid input: expected object, received {_js_type(schema)}"
    if schema.get("type") != "object":
        return f"{where}.type", 'Invalid input: expected "object"'
    properties = schema.get("properties")
    if "properties" in schema and not isinstance(properties, dict):
        return f"{where}.properties", f"Invalid input: expected record, received {_js_type(properties)}"
    for key, value in (properties or {}).items():
        if not isinstance(value, dict):
            return f"{where}.properties.{key}", f"Invalid input: expected object, received {_js_type(value)}"
    required = schema.get("required")
    if "required" in schema and not (isinstance(required, list) and all(isinstance(item, str) for item in required)):
        return f"{where}.required", "Invalid input: expected array of strings"
    return None


def _js_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def sdk_list_problem(raw: Any, index: int) -> tuple[str, str] | None:
    """Why the MCP TypeScript SDK's ``ListToolsResultSchema`` refuses the list because of tool ``raw`` (the path,
    as ``tools[3].inputSchema.properties``, and Zod's message), or None when this tool passes."""
    at = f"tools[{index}]"
    if not isinstance(raw, dict):
        return at, f"Invalid input: expected object, received {_js_type(raw)}"
    if not isinstance(raw.get("name"), str):
        return (
            f"{at}.name",
            f"Invalid input: expected string, received {_js_type(raw.get('name')) if 'name' in raw else 'undefined'}",
        )
    if "inputSchema" not in raw:
        return f"{at}.inputSchema", "Invalid input: expected object, received undefined"
    found = _sdk_schema_problem(raw["inputSchema"], f"{at}.inputSchema")
    if found is None and "outputSchema" in raw:
        found = _sdk_schema_problem(raw["outputSchema"], f"{at}.outputSchema")
    return found


def sdk_list_clients(raw: Any, index: int) -> list[dict[str, str]]:
    """The clients that refuse the whole list because of this tool (:data:`SDK_CLIENTS`), with the error each
    shows; empty when the SDK's schema accepts the tool. ``"properties": []`` also makes the OpenAI API refuse the
    request ("invalid_function_parameters: [] is not of type 'object'", shopware/shopware#18713)."""
    found = sdk_list_problem(raw, index)
    if found is None:
        return []
    where, message = found
    error = f"Failed to fetch tools: {where}: {message}"
    entries = [(client, "refuses", error) for client in SDK_CLIENTS]
    schema = raw.get("inputSchema") if isinstance(raw, dict) else None
    if where.endswith(".inputSchema.properties") and isinstance(schema, dict) and schema.get("properties") == []:
        # PHP's empty array: OpenAI validates the parameters as JSON Schema (shopware/shopware#18713, 2026-07)
        entries.append(("openai-api", "refuses", "invalid_function_parameters: [] is not of type 'object'"))
    return _clients(*entries)


def _clients(*entries: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"client": client, "effect": effect, "error": error} for client, effect, error in entries]


def _effects(entries: Sequence[dict[str, str]]) -> str:
    """``Anthropic API: whole request refused, "…"; VS Code (Copilot): tool dropped, "…"``."""
    said = []
    for entry in entries:
        what = "whole request refused" if entry["effect"] == "refuses" else "tool dropped"
        said.append(f'{client_label(entry["client"])}: {what}, "{entry["error"]}"')
    return "; ".join(said)


def _sentence(head: str, entries: Sequence[dict[str, str]]) -> str:
    text = f"{head}: {_effects(entries)}"
    return text if text.endswith(".") else text + "."


# --- MCP801 -----------------------------------------------------------------------------------------------------


@register(
    "MCP801",
    "root-combinator",
    Severity.PROBLEM,
    hint="Express the alternatives inside one object schema (optional properties and a description; "
    "`if`/`then` when validation needs it).",
    doc=f"""The root of `inputSchema` has `oneOf`, `anyOf` or `allOf` (with or without `"type": "object"` beside
    it). The Anthropic API answers 400 for the whole request, "{_ROOT_COMBINATOR_ERROR}", so every turn of every
    conversation that carries the list fails until the server is removed (any client that sends the schema
    unchanged). Sources: anthropics/claude-code issues #657 (v0.2.56), #5319 (v1.0.70), #5878, #5973 (v1.0.83),
    "tools.106.custom.input_schema: {_ROOT_COMBINATOR_ERROR}"; mobile-next/mobile-mcp#344 and
    zereight/gitlab-mcp#551 (2026), williamkapke/kapture#20 (2026-06). Claude Code refused the whole request the
    same way until 2026-05 (#45106, #64113: a dated note in its verdict); the reports since 2026-08 show it
    leaving the tool out silently instead (#95504, 2026-09, "MCP tools silently dropped when inputSchema uses
    root-level allOf"; moira-mcp/moira#177, 2026-09-09, "Claude Code omits an MCP tool when its published input
    schema contains anyOf at the schema root"; opentokenz/mcpx#28, 2026-09-21), so its verdict drops the tool.
    Without `"type": "object"` at the root the list is also not valid MCP (MCP201): Claude Code then loads no tool
    of the server (#88049, 2026-08-19). A combinator inside a property is fine.
    Bad: `{{"type": "object", "properties": {{...}}, "anyOf": [{{"required": ["id"]}}, {{"required":
    ["path"]}}]}}`. Good: both properties optional, the description saying one of them is needed.""",
)
def root_combinator(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    schema = tool.schema
    if not isinstance(schema, dict):
        return
    found = [key for key in schema if key in ("oneOf", "anyOf", "allOf")]
    if not found:
        return
    entries = _clients(
        ("anthropic-api", "refuses", _ROOT_COMBINATOR_ERROR),
        ("claude-code", "drops", "no error: the tool is left out of the session (anthropics/claude-code#95504)"),
    )
    keys = " and ".join(f"`{key}`" for key in found)
    yield Hit(
        _sentence(f"{tool.subject} has {keys} at the root of its input schema", entries),
        pointer(("inputSchema", found[0])),
        {"keywords": found, "clients": entries},
    )


# --- MCP802 -----------------------------------------------------------------------------------------------------


def key_problem(key: str) -> str | None:
    """Why a root property key breaks Anthropic's pattern (None when it matches)."""
    if _KEY.fullmatch(key):
        return None
    if not key:
        return "empty"
    bad = sorted({char for char in key if not _KEY.fullmatch(char)})
    if not bad:
        return f"{len(key)} characters, over 64"
    if any(not char.isascii() for char in bad):
        return "non-ASCII characters"
    return "the character" + ("s " if len(bad) > 1 else " ") + " ".join(repr(char) for char in bad[:5])


@register(
    "MCP802",
    "property-key-rejected",
    Severity.PROBLEM,
    hint="Rename the property (keep the wire name in the server, map it back on the call).",
    doc=f"""A key of the root `properties` does not match `{_KEY_PATTERN}`: brackets (`ids[]`), spaces, `$`
    (`$.xgafv`), `@`, non-ASCII letters, or more than 64 characters. The Anthropic API answers 400 for the whole
    request, "tools.N.custom.{_KEY_ERROR}" (also Bedrock Converse); recent Claude Code versions drop the tool
    instead (rules.md). Only root keys are checked, as the API does: a nested key is fine. Sources:
    microsoft/azure-devops-mcp#332, anthropics/claude-code#34771 (`$.xgafv` from Google APIs), #79418
    (v2.1.215), erikmaday/unusual-whales-mcp#57 (`rule_name[]`),
    aws-solutions-library-samples/accelerated-intelligent-document-processing-on-aws#709 ("names containing
    spaces are rejected, as are keys longer than 64 chars"; "the check is top-level only"). Bad: `"ids[]"`,
    `"Account Number"`. Good: `"ids"`, `"account_number"`.""",
)
def property_key_rejected(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    schema = tool.schema
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return
    bad = [(str(key), why) for key in properties if (why := key_problem(str(key))) is not None]
    if not bad:
        return
    entries = _clients(
        ("anthropic-api", "refuses", _KEY_ERROR),
        ("claude-code", "drops", _KEY_ERROR),
    )
    shown = ", ".join(f"'{label(key, 70)}' ({why})" for key, why in bad[:3])
    more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
    yield Hit(
        _sentence(f"{tool.subject} has root property keys Anthropic rejects: {shown}{more}", entries),
        pointer(("inputSchema", "properties", bad[0][0])),
        {"keys": [key for key, _ in bad[:MAX_LISTED]], "count": len(bad), "clients": entries},
    )


# --- MCP803 -----------------------------------------------------------------------------------------------------


def _is_array_type(value: Any) -> bool:
    return value == "array" or (isinstance(value, list) and "array" in value)


def arrays_without_items(tool: ToolInfo) -> list[Node]:
    """Every schema the walk reaches (properties, items, branches, reached definitions, conditions) typed
    ``array`` (or a type list holding it) with no ``items``, each location once."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for node in tool.walk.nodes:
        schema = node.schema
        if not isinstance(schema, dict) or "items" in schema or not _is_array_type(schema.get("type")):
            continue
        if node.tokens not in seen:
            seen.add(node.tokens)
            out.append(node)
    return out


def openai_context(tokens: Sequence[str]) -> str:
    """The ``context=(...)`` OpenAI's error names: the path inside the parameters, as a Python tuple."""
    return repr(tuple(tokens[1:]))


@register(
    "MCP803",
    "array-items-missing",
    Severity.PROBLEM,
    hint="Give every array an `items` schema.",
    doc=f"""A schema anywhere in `inputSchema` (nested properties, `items`, `anyOf`/`oneOf` branches, reached
    definitions) has `type` `array`, or a type list containing it such as `["string", "array", "null"]`, and no
    `items`. The OpenAI API (Chat Completions and Responses, so Codex and OpenAI-backed clients) answers 400
    `invalid_function_parameters` for the whole request: "Invalid schema for function 'NAME': In
    context=('properties', 'paths'), array schema missing items." VS Code's Copilot chat drops the tool: "Failed
    to validate tool NAME: Error: {_VSCODE_ITEMS}". Sources: sigoden/aichat#1049, mark3labs/mcphost#35,
    razorpay/razorpay-mcp-server#44 (OpenAI and Azure), microsoft/vscode#246119 (VS Code 1.99), #284536
    (1.107.1), confluentinc/mcp-confluent#581, lerd-env/lerd#1267 ("VSCode strict-validates this and rejects
    every tool"). Bad: `{{"type": "array"}}`. Good: `{{"type": "array", "items": {{"type": "string"}}}}` (an empty
    `"items": {{}}` satisfies OpenAI and VS Code, but Gemini CLI skips it: MCP807).""",
)
def array_items_missing(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found = arrays_without_items(tool)
    if not found:
        return
    first = found[0]
    name = tool.name if isinstance(tool.name, str) else f"#{tool.index}"
    openai = f"Invalid schema for function '{label(name)}': In context={openai_context(first.tokens)}, array schema "
    openai += "missing items."
    entries = _clients(
        ("openai-api", "refuses", openai),
        ("vscode", "drops", f"Failed to validate tool {label(name)}: Error: {_VSCODE_ITEMS}"),
    )
    where = first.path or "the root"
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    yield Hit(
        _sentence(f"{tool.subject} has an array without `items` at {where}{more}", entries),
        first.pointer,
        {
            "arrays": [node.pointer for node in found[:MAX_LISTED]],
            "parameters": list(dict.fromkeys(node.path for node in found if node.path))[:MAX_LISTED],
            "count": len(found),
            "clients": entries,
        },
    )


# --- preview: more of the family ----------------------------------------------------------------------------


@register(
    "MCP804",
    "tools-over-openai-limit",
    Severity.PROBLEM,
    hint="Serve fewer tools (split the server, or let the user choose toolsets).",
    doc="""Retired in catalogue 6 into MCP810 tools-over-client-limit, which counts the list against every
    client's limit (the OpenAI API's 128 among them, with Windsurf's 100, VS Code's 128 and Gemini's 512). The
    code is never reused, and the rule never runs. Bad (as it was): 129 tools. Good: 128 or fewer.""",
    scope="list",
    status="removed",
)
def tools_over_openai_limit(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    count = len(tools)
    if count <= OPENAI_TOOLS_LIMIT:
        return
    error = (
        f"Invalid 'tools': array too long. Expected an array with maximum length {OPENAI_TOOLS_LIMIT}, but got an "
        f"array with length {count} instead."
    )
    entries = _clients(("openai-api", "refuses", error))
    yield Hit(
        _sentence(f"The list has {count} tools, more than the {OPENAI_TOOLS_LIMIT} OpenAI accepts", entries),
        None,
        {"tools": count, "limit": OPENAI_TOOLS_LIMIT, "clients": entries},
    )


def _gemini_nodes(tool: ToolInfo) -> Iterator[Node]:
    seen: set[tuple[str, ...]] = set()
    for node in tool.walk.nodes:
        if isinstance(node.schema, dict) and node.tokens not in seen:
            seen.add(node.tokens)
            yield node


def gemini_path(tokens: Sequence[str]) -> str:
    """A location as Gemini's errors name it: ``parameters.properties[q].items``."""
    out = "parameters"
    parts = list(tokens[1:])
    position = 0
    while position < len(parts):
        part = parts[position]
        if part == "properties" and position + 1 < len(parts):
            out += f".properties[{parts[position + 1]}]"
            position += 2
            continue
        out += f".{part}"
        position += 1
    return out


def gemini_keeps(tokens: Sequence[str]) -> bool:
    """Whether a schema at ``tokens`` (``("inputSchema", "properties", "q", "items")``) sits where Gemini's
    ``parameters`` keeps it: reached from the root through ``properties``, ``items`` and ``anyOf`` branches only
    (not inside ``additionalProperties``, ``$defs``, ``oneOf``/``allOf``, ``not`` and the like)."""
    parts = list(tokens[1:])
    position = 0
    while position < len(parts):
        part = parts[position]
        if part in ("properties", "anyOf") and position + 1 < len(parts):
            position += 2
        elif part == "items":
            position += 1
        else:
            return False
    return True


@register(
    "MCP805",
    "gemini-type-list",
    Severity.PROBLEM,
    hint='Give `type` one value; for an optional value use `"nullable": true` or an `anyOf` of typed branches.',
    doc="""A schema in `inputSchema` gives `type` as a list (`["string", "null"]`). Gemini's `parameters` field
    is an OpenAPI subset whose `type` is a single enum value, so a client that sends the MCP schema there
    unconverted gets a 400 for the whole request: "Invalid JSON payload received. Unknown name "type" at
    'tools[0].function_declarations[0].parameters.properties[1].value': Proto field is not repeating, cannot
    start list." Clients that send `parametersJsonSchema` (Gemini CLI, the @google/genai MCP adapter) or convert
    the schema are not affected. Sources: WordPress/ai-provider-for-google#33 ("Gemini rejects the entire
    request"), voocel/litellm#9, symfony/ai#1330, zed-industries/zed#53919, taylorwilsdon/google_workspace_mcp#1099.
    google-genai's `types.Schema` refuses the same shape offline (tests/rules/test_clients_reject.py). Fires only
    where the type list sits on a path Gemini's `parameters` keeps: reached from the root through `properties`,
    `items` and `anyOf` branches (not inside `additionalProperties`, `$defs`/`definitions`, `oneOf`/`allOf` or
    `not`, which the conversion drops before Gemini sees them). Bad: `{"type": ["string", "null"]}`. Good:
    `{"type": "string", "nullable": true}`.""",
)
def gemini_type_list(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found = [
        node for node in _gemini_nodes(tool) if isinstance(node.schema.get("type"), list) and gemini_keeps(node.tokens)
    ]
    if not found:
        return
    first = found[0]
    error = (
        f"Invalid JSON payload received. Unknown name \"type\" at '{gemini_path(first.tokens)}': Proto field is not "
        "repeating, cannot start list"
    )
    entries = _clients(("gemini-api", "refuses", error))
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    yield Hit(
        _sentence(f"{tool.subject} gives `type` as a list at {first.path or 'the root'}{more}", entries),
        pointer((*first.tokens, "type")),
        {"schemas": [node.pointer for node in found[:MAX_LISTED]], "count": len(found), "clients": entries},
    )


@register(
    "MCP806",
    "gemini-enum-not-string",
    Severity.PROBLEM,
    hint='Use `enum` only on strings (`{"type": "string", "enum": ["1", "2"]}`), or give the allowed '
    "numbers in the description.",
    doc="""A schema in `inputSchema` has an `enum` while its `type` is given and is not `string` (an integer or
    boolean enum), or an `enum` with values that are not strings. Gemini's `parameters` schema allows `enum` only on
    strings: "GenerateContentRequest.tools[0].function_declarations[9].parameters.properties[truncateMode].enum:
    only allowed for STRING type" (400, the whole request). Source: JetBrains/mcp-jetbrains#71 (OpenCode with
    Gemini), and google-genai's `types.Schema`, whose `enum` is a list of strings, refuses such values offline.
    Clients that send `parametersJsonSchema` are not affected. Preview: not yet measured on real lists. Bad:
    `{"type": "integer", "enum": [1, 2, 3]}`. Good: `{"type": "string", "enum": ["1", "2", "3"]}`.""",
    status="preview",
)
def gemini_enum_not_string(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    found = []
    for node in _gemini_nodes(tool):
        values = node.schema.get("enum")
        if not isinstance(values, list):
            continue
        kind = node.schema.get("type")
        if (kind is not None and kind != "string") or any(not isinstance(value, str) for value in values):
            found.append(node)
    if not found:
        return
    first = found[0]
    error = f"{gemini_path(first.tokens)}.enum: only allowed for STRING type"
    entries = _clients(("gemini-api", "refuses", error))
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    yield Hit(
        _sentence(f"{tool.subject} has a non-string `enum` at {first.path or 'the root'}{more}", entries),
        pointer((*first.tokens, "enum")),
        {"schemas": [node.pointer for node in found[:MAX_LISTED]], "count": len(found), "clients": entries},
    )


def _js_truthy(value: Any) -> bool:
    """JavaScript's truthiness of a JSON value (an empty list or object is true there)."""
    if isinstance(value, (list, dict)):
        return True
    return bool(value)


def gemini_cli_untyped(schema: Any, tokens: tuple[str, ...] = ("inputSchema",)) -> tuple[str, ...] | None:
    """Gemini CLI's ``hasValidTypes`` (packages/core/src/tools/mcp-client.ts, 2025-08), iteratively: the pointer
    tokens of the first schema it finds untyped, or None when it accepts the schema.

    A non-object is fine. A schema without a truthy ``type`` needs ``anyOf``/``allOf``/``oneOf`` whose every
    branch passes; ``type: object`` checks each of its ``properties``, ``type: array`` its ``items`` (when
    truthy). ``$ref`` is not followed, so a property that is only a ``$ref`` fails, as the reports say.
    """
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, tokens)]
    budget = 50_000
    while stack and budget > 0:
        budget -= 1
        value, where = stack.pop()
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        pending: list[tuple[Any, tuple[str, ...]]] = []
        if not _js_truthy(kind):
            branches = False
            for keyword in ("anyOf", "allOf", "oneOf"):
                subs = value.get(keyword)
                if isinstance(subs, list):
                    branches = True
                    pending += [(sub, (*where, keyword, str(index))) for index, sub in enumerate(subs)]
            if not branches:
                return where
        properties = value.get("properties")
        if kind == "object" and isinstance(properties, dict):
            pending += [(sub, (*where, "properties", str(name))) for name, sub in properties.items()]
        items = value.get("items")
        if kind == "array" and _js_truthy(items):
            pending.append((items, (*where, "items")))
        stack.extend(reversed(pending))
    return None


# The Gemini CLI versions that skipped a tool with an untyped schema, as the reports name them (MCP807).
GEMINI_CLI_SKIPPED = "v0.1.18-v0.1.19"
GEMINI_CLI_SKIPPED_WHEN = "August-September 2025"


@register(
    "MCP807",
    "gemini-cli-untyped",
    Severity.PROBLEM,
    hint="Give every property (and array `items`) a `type`, or typed `anyOf` branches; inline a `$ref`.",
    doc="""Retired in catalogue 6 (it never runs; the code is never reused): right 0 of 6 on hand-labelled real
    lists. Gemini CLI skipped such tools in v0.1.18-v0.1.19 (August-September 2025) and v0.42.0 is reported to load
    them, so no current client refuses the shape (rules.md: a client rule stays only where a current client still
    refuses; the versions stay here as a dated note). What it checked: Gemini CLI skips the tool when a schema in
    its parameters has no `type` and no `anyOf`/`allOf`/`oneOf`
    whose every branch is typed, looking through object `properties` and array `items` from the root (its
    `hasValidTypes`, which does not follow `$ref`): "Skipping tool 'NAME' from MCP server 'SERVER' because it has
    missing types in its parameter schema. Please file an issue with the owner of the MCP server." The rest of
    the server loads. Sources: google-gemini/gemini-cli packages/core/src/tools/mcp-client.ts (2025-08),
    reports in cyanheads/obsidian-mcp-server#21, dataforseo/mcp-server-typescript#25,
    taylorwilsdon/google_workspace_mcp#197, JetBrains/mcp-jetbrains#71 (August-September 2025, Gemini CLI
    v0.1.18-v0.1.19). A maintainer reports Gemini CLI v0.42.0 loading such a tool
    (cyanheads/obsidian-mcp-server#54): the finding is a dated note that names the versions it speaks of, and it
    decides no current verdict (details `current: false`). Preview. Bad: `{"value": {"description": "any JSON
    value"}}`. Good: `{"value": {"type": "string", "description": "JSON text"}}`.""",
    status="removed",
)
def gemini_cli_untyped_rule(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if not isinstance(tool.schema, dict):
        return
    where = gemini_cli_untyped(tool.schema)
    if where is None:
        return
    name = tool.name if isinstance(tool.name, str) else f"#{tool.index}"
    error = (
        f"Skipping tool '{label(name)}' from MCP server 'SERVER' because it has missing types in its parameter "
        "schema. Please file an issue with the owner of the MCP server."
    )
    entries = _clients(("gemini-cli", "drops", error))
    at = pointer(where)
    yield Hit(
        f"{tool.subject} has a schema without a type at {at or 'the root'}: Gemini CLI {GEMINI_CLI_SKIPPED} "
        f'({GEMINI_CLI_SKIPPED_WHEN}) skipped such a tool, "{error}"; Gemini CLI v0.42.0 is reported to load it.',
        at,
        {
            "clients": entries,
            "versions": GEMINI_CLI_SKIPPED,
            "when": GEMINI_CLI_SKIPPED_WHEN,
            "current": False,
        },
    )
