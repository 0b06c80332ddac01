"""``load_entries``: the one place that decides which source reads an input.

``source`` is a URL (the official registry API), a path to a file or directory, or ``-`` for stdin. A file's
kind is detected from its JSON shape unless ``kind`` says it:

=================  ===========================================================================
kind               shape
=================  ===========================================================================
``api``            a URL: ``GET {url}/v0.1/servers`` paged
``registry``       a saved API response ``{"servers": [{"server": {...}, "_meta": {...}}], "metadata"}``
``server-json``    one server.json object, or a JSON array of them (or of API rows)
``list``           ``{"servers": [{"name", "url" | "command"}]}``
``claude``         ``{"mcpServers": {...}}`` (Claude Desktop, Cursor, Claude Code)
``vscode``         ``{"servers": {...}}`` or ``{"mcp": {"servers": {...}}}`` (comments allowed)
=================  ===========================================================================

A directory is read file by file (``*.json``, sorted, not recursive), each detected on its own. Anything that
cannot be read or recognised is a run-fatal :class:`~scanner.errors.InputError` with one line saying why.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from scanner.errors import InputError
from scanner.models import ServerEntry
from scanner.registry import configs, official
from scanner.registry.interface import Options
from scanner.registry.memlimit import DEFAULT_MEMORY_LIMIT_MB

KINDS = ("api", "registry", "server-json", "list", "claude", "vscode")
MAX_DIRECTORY_FILES = 10_000
_FileReader = Callable[[Any, str, Options], list[ServerEntry]]


def _read_registry(document: Any, where: str, options: Options) -> list[ServerEntry]:
    rows, _ = official.parse_response(document, where)
    if options.updated_since:
        rows = official.updated_since_filter(rows, options.updated_since)
    return official.entries_from_rows(rows, source=where, options=options)


def _read_server_json(document: Any, where: str, options: Options) -> list[ServerEntry]:
    rows = document if isinstance(document, list) else [document]
    return official.entries_from_rows(rows, source=where, options=options)


# The table: every file kind and the one function that reads it.
_READERS: dict[str, _FileReader] = {
    "registry": _read_registry,
    "server-json": _read_server_json,
    "list": lambda doc, where, opts: configs.load_simple(doc, where, opts.environ),
    "claude": lambda doc, where, opts: configs.load_claude(doc, where, opts.environ),
    "vscode": lambda doc, where, opts: configs.load_vscode(doc, where, opts.environ),
}


def detect(document: Any) -> str | None:
    """The kind of a parsed input file, or None when it is none of the known shapes."""
    if isinstance(document, list):
        return "server-json" if all(isinstance(item, dict) for item in document) else None
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("mcpServers"), dict):
        return "claude"
    servers = document.get("servers")
    if isinstance(servers, dict) or (isinstance(document.get("mcp"), dict) and "servers" in document["mcp"]):
        return "vscode"
    if isinstance(servers, list):
        first = next((item for item in servers if isinstance(item, dict)), None)
        if first is None or "server" in first or "_meta" in first or "metadata" in document:
            return "registry"
        if ("url" in first or "command" in first) and not ("remotes" in first or "packages" in first):
            return "list"
        return "registry"
    markers = ("remotes", "packages", "$schema", "version_detail")
    if isinstance(document.get("name"), str) and (
        any(key in document for key in markers) or ("version" in document and "description" in document)
    ):
        return "server-json"
    return None


_LINE_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (VS Code's files) → JSON; strings are left alone."""
    no_comments = _LINE_COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return _TRAILING_COMMA.sub(r"\1", no_comments)


def _parse(data: bytes, where: str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise InputError(f"{where}: JSON nested too deeply") from exc
    except ValueError as first:
        try:
            return json.loads(_strip_jsonc(text))
        except (ValueError, RecursionError):
            raise InputError(f"{where}: not JSON ({first})") from first


def _read_bytes(path: Path, limit: int) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if len(data) > limit:
        raise InputError(f"{path}: larger than {limit} bytes")
    return data


def _load_document(document: Any, where: str, kind: str | None, options: Options) -> list[ServerEntry]:
    chosen = kind or detect(document)
    if chosen is None:
        raise InputError(
            f"{where}: not a registry response, server.json, server list, Claude Desktop or VS Code config"
            " (use --kind to say which)"
        )
    return _READERS[chosen](document, where, options)


def _load_path(path: Path, kind: str | None, options: Options) -> list[ServerEntry]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        if not files:
            raise InputError(f"{path}: a directory with no .json files")
        entries: list[ServerEntry] = []
        for file in files[:MAX_DIRECTORY_FILES]:
            entries.extend(_load_path(file, kind, options))
        return entries
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    return _load_document(_parse(_read_bytes(path, options.max_file_bytes), str(path)), str(path), kind, options)


def _check_updated_since(value: str | None) -> None:
    if value is None:
        return
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InputError(f"--updated-since {value!r} is not an RFC 3339 time (e.g. 2025-09-01T00:00:00Z)") from exc


def load_entries(
    source: str,
    *,
    kind: str | None = None,
    updated_since: str | None = None,
    run_packages: bool = False,
    environ: Mapping[str, str] = os.environ,
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
    max_pages: int = 1000,
    timeout_s: float = 30.0,
) -> list[ServerEntry]:
    """Read ``source`` (registry URL, file, directory or ``-``) into the entries to connect to.

    Entries that will not be connected to carry ``skip`` (the reason). ``updated_since`` is passed to the
    registry API (RFC 3339). ``run_packages`` lets registry packages run (wrapped in a ``memory_limit_mb`` cap);
    ``environ`` supplies secrets under the naming rule of :mod:`scanner.registry.secrets`.
    Raises :class:`InputError` for anything unreadable or unrecognised.
    """
    if kind is not None and kind not in KINDS:
        raise InputError(f"unknown --kind {kind!r}; choose one of {', '.join(KINDS)}")
    _check_updated_since(updated_since)
    options = Options(
        run_packages=run_packages,
        environ=environ,
        memory_limit_mb=memory_limit_mb,
        updated_since=updated_since,
        max_pages=max_pages,
        timeout_s=timeout_s,
    )
    is_url = source.startswith(("http://", "https://"))
    if kind == "api" or is_url:
        if not is_url:
            raise InputError(f"--kind api needs an http(s) URL, not {source!r}")
        return official.load_api(source, options)
    if source == "-":
        data = sys.stdin.buffer.read(options.max_file_bytes + 1)
        if len(data) > options.max_file_bytes:
            raise InputError(f"stdin: larger than {options.max_file_bytes} bytes")
        return _load_document(_parse(data, "stdin"), "stdin", kind, options)
    return _load_path(Path(source), kind, options)
