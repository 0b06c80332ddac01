"""Simple server lists and MCP client config files (Claude Desktop, VS Code) as entries.

A command written in one of these files runs only with ``--run-commands`` (the trust rule,
:mod:`scanner.registry.trust`), without a memory cap (a user's server may legitimately need more); ``package``
stays None. ``entry.env`` holds exactly the file's ``env``; the child gets that plus the short pass-through of
:func:`scanner.mcp.transports.passthrough_env`, never the rest of Fathom's environment. A URL that cannot be
parsed is the entry's skip reason.

``${env:NAME}``, ``${NAME}`` and ``${NAME:-default}`` in ``env`` values and header values are filled from the
environment (VS Code and Claude Code write secrets that way). A header that still holds an unfilled
``${...}`` (``${input:token}`` asks VS Code to prompt) is left out and the entry marked anonymous; an env value
likewise is left out. Commands and URLs are taken literally, so a dry run never prints a filled-in secret.

Formats:

* simple list: ``{"servers": [{"name", "url", "headers"?, "transport"?} | {"name", "command": [...], "env"?}]}``
* Claude Desktop (and Cursor, Claude Code): ``{"mcpServers": {name: {command, args, env} | {url, headers, type?}}}``
* VS Code ``mcp.json``: ``{"servers": {name: {type: stdio|http|sse, command, args, env, url, headers}}}``,
  and ``settings.json``: ``{"mcp": {"servers": {...}}}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scanner.models import ServerEntry, Transport
from scanner.registry import _json
from scanner.registry.address import url_problem

_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_UNFILLED = re.compile(r"\$\{[^}]*\}")
_TRANSPORTS = {
    "stdio": Transport.STDIO,
    "http": Transport.HTTP,
    "streamable-http": Transport.STREAMABLE_HTTP,
    "streamablehttp": Transport.STREAMABLE_HTTP,
    "sse": Transport.SSE,
}


def expand(value: str, environ: Mapping[str, str]) -> str | None:
    """Fill ``${env:X}`` / ``${X}`` / ``${X:-default}``; None if a reference stays unfilled."""

    def one(match: re.Match[str]) -> str:
        found = environ.get(match.group(1))
        if found:
            return found
        return match.group(2) if match.group(2) is not None else match.group(0)

    filled = _REFERENCE.sub(one, value)
    return None if _UNFILLED.search(filled) else filled


def _headers(raw: Any, environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    headers: dict[str, str] = {}
    missing: list[str] = []
    for name, value in list(_json.obj(raw).items())[:100]:
        text = _json.text(value)
        if not isinstance(name, str) or _json.HEADER_NAME.match(name) is None or text is None:
            continue
        filled = expand(text, environ)
        if filled is None or not _json.header_usable(name, filled):
            missing.append(name)
        else:
            headers[name] = filled
    return headers, missing


def _env(raw: Any, environ: Mapping[str, str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for name, value in list(_json.obj(raw).items())[:200]:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        text = value if isinstance(value, str) and len(value) <= _json.MAX_TEXT else None
        if isinstance(name, str) and name and text is not None:
            filled = expand(text, environ)
            if filled is not None and "\0" not in filled:
                env[name] = filled
    return env


def _entry(name: str, spec: Any, *, source: str, environ: Mapping[str, str], command: Any = None) -> ServerEntry:
    """One configured server; ``command`` is the argv (list form) or None to read command + args."""
    if not isinstance(spec, dict):
        return ServerEntry(name=name, transport=Transport.HTTP, source=source, skip="server entry is not an object")
    kind = (_json.text(spec.get("type")) or _json.text(spec.get("transport")) or "").lower()
    url = _json.text(spec.get("url"), limit=2048) or _json.text(spec.get("serverUrl"), limit=2048)
    if url is not None and kind != "stdio":
        transport = _TRANSPORTS.get(kind, Transport.HTTP)
        if transport is Transport.STDIO:
            transport = Transport.HTTP
        problem = url_problem(url)
        if problem is not None:
            return ServerEntry(name=name, transport=transport, source=source, skip=problem)
        headers, missing = _headers(spec.get("headers"), environ)
        return ServerEntry(
            name=name,
            transport=transport,
            url=url,
            headers=headers,
            source=source,
            anonymous=bool(missing),
            secret_header_names=tuple(missing),
        )
    if command is None:
        head = _json.text(spec.get("command"), limit=4096)
        args = spec.get("args", [])
        argv: list[Any] = [head, *args] if head is not None and isinstance(args, list) else []
    else:
        argv = command if isinstance(command, list) else []
    if not argv or not all(isinstance(word, str) and word and len(word) <= _json.MAX_TEXT for word in argv):
        return ServerEntry(
            name=name, transport=Transport.STDIO, source=source, skip="no usable url or command (a list of strings)"
        )
    return ServerEntry(
        name=name, transport=Transport.STDIO, command=tuple(argv), env=_env(spec.get("env"), environ), source=source
    )


def _named(servers: dict[str, Any], *, source: str, environ: Mapping[str, str]) -> list[ServerEntry]:
    entries = []
    for index, (name, spec) in enumerate(servers.items()):
        label = name if isinstance(name, str) and name else f"server-{index}"
        entries.append(_entry(label[:200], spec, source=source, environ=environ))
    return entries


def load_simple(document: Any, source: str, environ: Mapping[str, str]) -> list[ServerEntry]:
    """``{"servers": [{"name", "url" | "command"}, ...]}``."""
    entries = []
    servers = _json.obj(document).get("servers")
    for index, item in enumerate(servers if isinstance(servers, list) else []):
        name = (_json.text(_json.obj(item).get("name"), limit=200)) or f"server-{index}"
        command = _json.obj(item).get("command")
        argv = command if isinstance(command, list) else None  # a string command reads "args" like the others
        entries.append(_entry(name, item, source=source, environ=environ, command=argv))
    return entries


def load_claude(document: Any, source: str, environ: Mapping[str, str]) -> list[ServerEntry]:
    """Claude Desktop / Cursor / Claude Code: ``{"mcpServers": {name: {...}}}``."""
    return _named(_json.obj(_json.obj(document).get("mcpServers")), source=source, environ=environ)


def load_vscode(document: Any, source: str, environ: Mapping[str, str]) -> list[ServerEntry]:
    """VS Code ``mcp.json`` (``{"servers": {...}}``) or ``settings.json`` (``{"mcp": {"servers": {...}}}``)."""
    data = _json.obj(document)
    servers = data.get("servers")
    if not isinstance(servers, dict):
        servers = _json.obj(_json.obj(data.get("mcp")).get("servers"))
    return _named(servers, source=source, environ=environ)
