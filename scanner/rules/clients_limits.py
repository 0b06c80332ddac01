"""What clients reject, catalogue 6 (MCP808-MCP810): an output schema's dialect, the name a client builds, and the
number of tools a client takes.

Like :mod:`scanner.rules.clients_reject`, each finding's details name every client the shape breaks
(``details["clients"]``: ``{"client", "effect", "error"}``, and for a list-wide drop the ``tools`` dropped) and the
verdicts (:mod:`scanner.measure.verdicts`) read them. The sources behind each client's effect, with the verbatim
errors and the versions and dates they cover, are in each rule's doc and so in ``docs/rules.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from scanner.models import Severity
from scanner.rules.clients_reject import MAX_LISTED, _clients, _sentence
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.text import label
from scanner.rules.tools import ToolInfo

DIALECT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_DIALECT_ERROR = (
    "Tool '{name}' has an invalid outputSchema: JSON Schema declares an unsupported dialect "
    '("$schema": "{dialect}"). The default validator supports JSON Schema 2020-12 only'
)


def unsupported_dialect(schema: Any) -> str | None:
    """The ``$schema`` of an output schema that a 2020-12-only validator refuses (Ajv's ``Ajv2020``, which the MCP
    TypeScript SDK's default validator and Claude's clients use): any ``$schema`` other than the 2020-12
    meta-schema's id (a trailing ``#`` allowed, as Ajv normalises ids). None when absent or 2020-12."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return None
    value = schema["$schema"]
    if isinstance(value, str) and value.rstrip("#") == DIALECT_2020_12:
        return None
    return value if isinstance(value, str) else label(value, 60)


@register(
    "MCP808",
    "output-schema-dialect",
    Severity.PROBLEM,
    hint="Omit `$schema` from `outputSchema` (MCP's default dialect is 2020-12) or declare 2020-12; check what your "
    "SDK's schema converter emits.",
    doc="""A tool's `outputSchema` has `$schema` naming a dialect other than JSON Schema 2020-12 (draft-07,
    draft-04, 2019-09, or anything else; `https://json-schema.org/draft/2020-12/schema`, with or without a trailing
    `#`, and an absent `$schema` are fine). The MCP TypeScript SDK's v1 servers write draft-07 by default
    (`zod-to-json-schema`), so whole servers break. Claude Desktop, claude.ai connectors and Cowork (app 1.28929,
    2026-08-12, to 2.2553.1, 2026-09-21, in the reports): the tool is listed but every call fails before it reaches
    the server, "Tool 'list_allowed_directories' has an invalid outputSchema: JSON Schema declares an unsupported
    dialect ("$schema": "http://json-schema.org/draft-07/schema#"). The default validator supports JSON Schema
    2020-12 only; pass a pre-configured Ajv instance to AjvJs…" (the verdict: drops the tool). Claude Code: a
    maintainer could not reproduce it on 2.1.233 (2026-08-17, anthropics/claude-code#86142), but later reports on
    the CLI (#88882, 2026-08-22, with the reference filesystem server; #90549, 2026-08-29, Windows;
    hoeloe15/imagine#52, 2026-08-31) still fail, so it drops the tool until a source shows otherwise. Sources:
    anthropics/claude-code #86142, #88882, #90549; anthropics/claude-ai-mcp#1016 (the built-in Filesystem
    connector, 2026-09-10); mongodb-js/mongodb-mcp-server#1427, perplexityai/modelcontextprotocol#132 (Cowork),
    DavidFuchs/mcp-uptime-kuma#83 (Claude Desktop), verygoodplugins/mcp-freescout#73, bloknayrb/tandem#1564,
    shashankswe2020-ux/whoop-mcp#251 (Claude Desktop 2.2553.1); the SDK's own fix for its v2 clients,
    modelcontextprotocol/typescript-sdk#2532 and #2534 (2026-07-22), does not reach these clients' reports. The
    oracle: Ajv's 2020-12 validator (`ajv/dist/2020`) refuses to compile exactly the schemas this rule flags
    (tests/rules/test_oracles.py, on the fixtures and the real lists). A `$schema` in `inputSchema` is accepted
    by the same clients and not flagged. Bad: `"outputSchema": {"$schema":
    "http://json-schema.org/draft-07/schema#", "type": "object", ...}`. Good: the same without `$schema`.""",
)
def output_schema_dialect(tool: ToolInfo, ctx: RuleContext) -> Iterator[Hit]:
    if not tool.has_output_schema:
        return
    dialect = unsupported_dialect(tool.output_schema)
    if dialect is None:
        return
    name = label(tool.name) if isinstance(tool.name, str) else f"#{tool.index}"
    error = _DIALECT_ERROR.format(name=name, dialect=label(dialect, 100))
    entries = _clients(("claude-desktop", "drops", error), ("claude-code", "drops", error))
    yield Hit(
        _sentence(f"The outputSchema of {tool.display} declares {label(dialect, 100)!r}", entries),
        "/outputSchema/$schema",
        {"dialect": label(dialect, 200), "clients": entries},
    )


# --- MCP809 -----------------------------------------------------------------------------------------------------

CLAUDE_CODE_NAME_LIMIT = 64
CURSOR_NAME_LIMIT = 60
_CLAUDE_KEY = re.compile(r"[^a-zA-Z0-9_-]")


def claude_code_name(server_key: str, tool: str) -> str:
    """The name Claude Code gives an MCP tool: ``mcp__<server>__<tool>``, each part with the characters outside
    ``[a-zA-Z0-9_-]`` replaced by ``_``."""
    return f"mcp__{_CLAUDE_KEY.sub('_', server_key)}__{_CLAUDE_KEY.sub('_', tool)}"


def built_names(server_key: str, tool: str) -> list[dict[str, Any]]:
    """Each client's built name for ``tool`` under ``server_key``, its length, the client's limit and the headroom
    (negative: over). Cursor counts the server key and the tool name together and filters a tool at 60."""
    claude = claude_code_name(server_key, tool)
    cursor = len(server_key) + len(tool)
    return [
        {
            "client": "claude-code",
            "name": claude,
            "length": len(claude),
            "limit": CLAUDE_CODE_NAME_LIMIT,
            "headroom": CLAUDE_CODE_NAME_LIMIT - len(claude),
        },
        {
            "client": "cursor",
            "name": f"{server_key}: {tool}",
            "length": cursor,
            "limit": CURSOR_NAME_LIMIT - 1,
            "headroom": CURSOR_NAME_LIMIT - 1 - cursor,
        },
    ]


@register(
    "MCP809",
    "name-over-client-limit",
    Severity.WARNING,
    hint="Shorten the tool name so that the longest client-built name fits (64 characters with Claude Code's prefix "
    "and a short server key).",
    doc="""The name a client builds for the tool is longer than that client accepts. The server key is what the
    user names the server in the client's configuration: `fathom check --server-key NAME` (or `server-key` in the
    config), else the registry entry's last name segment, else the server's `serverInfo.name`; without any, the
    rule does not run. Details: each client's built name, its length, its limit and the headroom. Sources, per
    client: Claude Code
    writes `mcp__<server>__<tool>` (characters outside `[a-zA-Z0-9_-]` as `_`) and, through tool search, cannot
    load a tool whose built name passes 64 characters: "messages.18.content.0.tool_result.content.0.tool_reference.
    tool_name: String should have at most 64 characters" (mims-harvard/ToolUniverse#65, 2026-01-26: "64
    characters for the tool name (with prefix) is fine, but 65" fails), earlier "tools.51.custom.name: String
    should have at most 64 characters" (anthropics/claude-code#2326, v1.0.30, 2025-06; #19882, 2026-01;
    ChromeDevTools/chrome-devtools-mcp#1169, 2026-03): the tool is dropped. Cursor filters out a tool whose server
    key and tool name together reach 60 characters: "Combined server and tool name length (60) exceeds 60
    characters" (ComposioHQ/composio#2788, 2026-02, a 1-character key and a 59-character name, so 59 together is
    the most that fits; awslabs/mcp#1283, Cursor 1.6.14, 2025-09; idosal/git-mcp#31, #163;
    aashari/mcp-server-atlassian-confluence#16). Gemini CLI cuts a qualified name (`mcp_<server>_<tool>`) over 63
    characters to its first and last 30 (PR #20987, merged 2026-03-03); two tools cut alike collide and the
    registry keeps the later one: 'Tool with name "mcp_atlassian-rovo-mcp-server-...eWithAttachmentsAndPermissions"
    is already registered. Overwriting.' (google-gemini/gemini-cli#28970, 2026-08-23, open; the fix #28971 was
    closed unmerged), so the earlier tool is dropped. The `mcp_` prefix and single `_` are read from that issue's
    example. Bad: a 52-character
    tool name under the key `github`. Good: the built names within 64 and 59 characters.""",
    scope="list",
)
def name_over_client_limit(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    key = ctx.server_key
    if not key:
        return
    lost = gemini_cli_overwritten(key, tools)
    for tool in tools:
        if not isinstance(tool.name, str) or not tool.name:
            continue
        names = built_names(key, tool.name)
        over = [entry for entry in names if entry["headroom"] < 0]
        said: list[tuple[str, str, str]] = []
        for entry in over:
            shown = label(entry["name"], 120)
            if entry["client"] == "claude-code":
                error = (
                    f"tool_reference.tool_name: String should have at most 64 characters ({shown}, {entry['length']})"
                )
            else:
                error = f"{shown} - Combined server and tool name length ({entry['length']}) exceeds 60 characters"
            said.append((entry["client"], "drops", error))
        if tool.index in lost:
            cut, by = lost[tool.index]
            said.append(
                (
                    "gemini-cli",
                    "drops",
                    f"Tool with name \"{label(cut, 80)}\" is already registered. Overwriting. (by '{label(by)}')",
                )
            )
            names.append({"client": "gemini-cli", "name": cut, "length": len(cut), "limit": 63, "headroom": 0})
        if not said:
            continue
        entries = _clients(*said)
        yield Hit(
            _sentence(f"{tool.subject} under the server key '{label(key, 60)}' builds names too long", entries),
            "/name",
            {"server_key": label(key, 200), "names": names, "clients": entries},
            tool_index=tool.index,
        )


_GEMINI_CHARS = re.compile(r"[^a-zA-Z0-9_.:-]")


def gemini_cli_name(server_key: str, tool: str) -> str:
    """Gemini CLI's registry name for an MCP tool: ``mcp_<server>_<tool>`` with the characters the Gemini API
    refuses replaced by ``_``, and a name over 63 characters cut to its first and last 30 around ``...``
    (``generateValidName``, google-gemini/gemini-cli PR #20987, as issue #28970 quotes it)."""
    name = _GEMINI_CHARS.sub("_", f"mcp_{server_key}_{tool}")
    return name if len(name) <= 63 else name[:30] + "..." + name[-30:]


def gemini_cli_overwritten(server_key: str, tools: Sequence[ToolInfo]) -> dict[int, tuple[str, str]]:
    """The tools Gemini CLI loses to a later tool cut to the same name (its registry overwrites the first), by
    index: the shared cut name and the tool that took it."""
    last: dict[str, ToolInfo] = {}
    for tool in tools:
        if isinstance(tool.name, str) and tool.name:
            last[gemini_cli_name(server_key, tool.name)] = tool
    out: dict[int, tuple[str, str]] = {}
    for tool in tools:
        if not isinstance(tool.name, str) or not tool.name:
            continue
        cut = gemini_cli_name(server_key, tool.name)
        winner = last[cut]
        if winner is not tool and winner.name != tool.name and len(cut) == 63 and "..." in cut:
            out[tool.index] = (cut, str(winner.name))
    return out


# --- MCP810 -----------------------------------------------------------------------------------------------------

TOOL_LIMITS: tuple[tuple[str, int, str, str], ...] = (
    (
        "openai-api",
        128,
        "refuses",
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length "
        "{count} instead.",
    ),
    ("vscode", 128, "refuses", "You may not include more than 128 tools in your request."),
    (
        "windsurf",
        100,
        "refuses",
        "adding this instance with {count} enabled tools would exceed max limit of 100.",
    ),
    (
        "gemini-api",
        512,
        "refuses",
        "The GenerateContentRequest proto is invalid: * tools[0].function_declarations: [FIELD_INVALID] At most 512 "
        "function declarations can be specified.",
    ),
    (
        "gemini-cli",
        512,
        "refuses",
        "The GenerateContentRequest proto is invalid: * tools[0].function_declarations: [FIELD_INVALID] At most 512 "
        "function declarations can be specified.",
    ),
)
"""(client, the most tools it takes, effect, its error with ``{count}``) for each client whose limit a source
states; MCP810's doc names the sources."""


@register(
    "MCP810",
    "tools-over-client-limit",
    Severity.WARNING,
    hint="Serve fewer tools (toolsets the user chooses, or split the server); clients count every server's tools "
    "together.",
    doc="""The list alone has more tools than a client takes (MCP804 tools-over-openai-limit is retired into this
    rule; its code is never reused). Details: each client over, its limit and the count. Sources, per client:
    OpenAI API, 128 (so
    OpenAI-backed clients): the whole request refused, "Invalid 'tools': array too long. Expected an array with
    maximum length 128, but got an array with length 150 instead." (`array_above_max_length`;
    vishalmysore/Tools4AI#16, zed-industries/zed#32946 and #42393, anomalyco/opencode#4909,
    musistudio/claude-code-router#686). VS Code (Copilot), 128 per request: the request fails, "Cannot have more
    than 128 tools per request." and "You may not include more than 128 tools in your request." (VS Code 1.100 to
    1.102, 2025-05 to 2025-07: microsoft/vscode-copilot-release#9375, #11653, #13065, microsoft/vscode#255585; the
    same in Copilot for JetBrains, microsoft/copilot-intellij-feedback#1842, 2026-06); rules.md expected VS Code to
    leave the tools past the limit out, but every report Fathom found quotes the failure, so the verdict says
    refuses. Windsurf, 100 enabled tools: the server cannot be enabled whole, "adding this instance with 157
    enabled tools would exceed max limit of 100." (DaxianLee/cocos-mcp-server#11, 2026-02; the limit was 50 in
    2025-04, Zhwt/go-mcp-mysql#3 quoting docs.windsurf.com). Gemini API and Gemini CLI, 512 function declarations:
    "The GenerateContentRequest proto is invalid: * tools[0].function_declarations: [FIELD_INVALID] At most 512
    function declarations can be specified." (google-gemini/gemini-cli#19083, 2026-02; #25440, v0.38.0, 2026-04;
    the client-side cap of PR #26869 was closed unmerged). Not encoded: Cursor (its old 40-tool limit is not in
    its docs today, and Fathom found no newer statement) and Codex (no public report). Clients count every
    server's tools together, so a smaller list can still tip a client over. Bad: 129 tools (OpenAI, VS Code and
    Windsurf refuse). Good: 100 or fewer.""",
    scope="list",
)
def tools_over_client_limit(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    count = len(tools)
    over = [(client, limit, effect, error) for client, limit, effect, error in TOOL_LIMITS if count > limit]
    if not over:
        return
    entries = _clients(*[(client, effect, error.format(count=count)) for client, limit, effect, error in over])
    limits = [{"client": client, "limit": limit, "count": count} for client, limit, _, _ in over][:MAX_LISTED]
    yield Hit(
        _sentence(
            f"The list has {count} tools, more than {min(item[1] for item in over)} that some clients take", entries
        ),
        None,
        {"tools": count, "limits": limits, "clients": entries},
    )
