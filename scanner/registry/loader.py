"""``load_entries``: the one place that decides which reader reads an input.

``source`` is a URL (the official registry API), a path to a file or directory, or ``-`` for stdin.
:data:`FORMATS` is the table of every input kind: how it is detected, the one function that reads it, and the
help text the CLI and ``docs/registry.md`` show (``python -m scanner.registry.formats`` renders that section).
A file's kind is detected from its JSON shape (the first format in the table whose test matches) unless
``kind`` names it. A directory is read as ONE kind: ``kind`` if given, else the kind every one of its
``*.json`` files is detected as (files of different kinds are an error naming them). Every entry then passes
the trust rule (:mod:`scanner.registry.trust`): a command runs only if the user opted in.

Bounded: a file, the files of a directory together, stdin, or the pages of a registry API together are at most
``Options.max_input_bytes``; a file is refused from its size before it is read, and anything but a regular
file (a FIFO, a device) is refused without being opened for reading. Everything is decoded through
:mod:`scanner.wire`. Anything that cannot be read or recognised is a run-fatal
:class:`~scanner.errors.InputError` with one line saying why.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from scanner import wire
from scanner.confine import DEFAULT_MEMORY_LIMIT_MB
from scanner.errors import InputError
from scanner.models import ServerEntry
from scanner.registry import trust
from scanner.registry.interface import MIB, FileReader, Options, size_text

MAX_INPUT_FLAG = "--max-input-mb"


# The readers import their modules when called: the table itself (the CLI's --kind help) must load fast.


def _read_registry(document: Any, where: str, options: Options) -> list[ServerEntry]:
    from scanner.registry import official

    rows, _ = official.parse_response(document, where)
    if options.updated_since:
        rows = official.updated_since_filter(rows, options.updated_since)
    return official.entries_from_rows(rows, source=where, options=options)


def _read_server_json(document: Any, where: str, options: Options) -> list[ServerEntry]:
    from scanner.registry import official

    rows = document if isinstance(document, list) else [document]
    return official.entries_from_rows(rows, source=where, options=options)


def _read_list(document: Any, where: str, options: Options) -> list[ServerEntry]:
    from scanner.registry import configs

    return configs.load_simple(document, where, options.environ)


def _read_claude(document: Any, where: str, options: Options) -> list[ServerEntry]:
    from scanner.registry import configs

    return configs.load_claude(document, where, options.environ)


def _read_vscode(document: Any, where: str, options: Options) -> list[ServerEntry]:
    from scanner.registry import configs

    return configs.load_vscode(document, where, options.environ)


# Keys only a registry row (or a server.json) has; a row with one is never a simple-list row.
_REGISTRY_MARKS = ("server", "_meta", "remotes", "packages", "version_detail", "$schema")


def _is_claude(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("mcpServers"), dict)


def _is_vscode(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    mcp = document.get("mcp")
    return isinstance(document.get("servers"), dict) or (isinstance(mcp, dict) and "servers" in mcp)


def _is_list(document: Any) -> bool:
    """A row with ``url`` or ``command``, no row with a registry mark, and no ``metadata``."""
    if not isinstance(document, dict) or "metadata" in document or not isinstance(document.get("servers"), list):
        return False
    rows = [row for row in document["servers"] if isinstance(row, dict)]
    return any("url" in row or "command" in row for row in rows) and not any(
        mark in row for row in rows for mark in _REGISTRY_MARKS
    )


def _is_registry(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("servers"), list)


def _is_server_json(document: Any) -> bool:
    if isinstance(document, list):
        return all(isinstance(item, dict) for item in document)
    if not isinstance(document, dict) or not isinstance(document.get("name"), str):
        return False
    return any(key in document for key in ("remotes", "packages", "$schema", "version_detail")) or (
        "version" in document and "description" in document
    )


@dataclass(frozen=True)
class Format:
    """One input kind: its name, the shape it is detected by (``shape`` in words, ``matches`` as a test; None
    for a kind never detected from a file), the reader, and the help shown by ``--kind`` and the docs."""

    kind: str
    shape: str
    matches: Callable[[Any], bool] | None
    read: FileReader | None
    help: str


# The table: every input kind, in detection order (the first whose test matches a file wins).
FORMATS: tuple[Format, ...] = (
    Format(
        "api",
        "an `http(s)://` source",
        None,
        None,
        "the official registry (or a compatible one) by URL: `GET {url}/v0.1/servers`, every page",
    ),
    Format(
        "claude",
        '`{"mcpServers": {...}}`',
        _is_claude,
        _read_claude,
        "a Claude Desktop, Cursor or Claude Code config; its commands run only with `--run-commands`",
    ),
    Format(
        "vscode",
        '`{"servers": {...}}` or `{"mcp": {"servers": {...}}}`',
        _is_vscode,
        _read_vscode,
        "a VS Code `mcp.json` or `settings.json` (comments allowed); its commands run only with `--run-commands`",
    ),
    Format(
        "list",
        '`{"servers": [{"name", "url" | "command"}]}`, no row with `server`/`_meta`/`remotes`/`packages`'
        " and no `metadata`",
        _is_list,
        _read_list,
        "a simple list of servers; its commands run only with `--run-commands`",
    ),
    Format(
        "registry",
        '`{"servers": [...]}` otherwise (`[{"server": ..., "_meta": ...}]`, `"metadata"`)',
        _is_registry,
        _read_registry,
        "a saved response of `GET /v0.1/servers`; its packages run only with `--run-packages`",
    ),
    Format(
        "server-json",
        "an object with `name` and `remotes`/`packages`/`$schema`, or an array of objects",
        _is_server_json,
        _read_server_json,
        "one `server.json`, or a JSON array of them (or of API rows); packages run only with `--run-packages`",
    ),
)
FORMATS_BY_KIND: Mapping[str, Format] = {fmt.kind: fmt for fmt in FORMATS}
KINDS = tuple(FORMATS_BY_KIND)


def kind_help() -> str:
    """The ``--kind`` help text: every kind with its one-line help, from :data:`FORMATS`."""
    listed = "; ".join(f"{fmt.kind}: {fmt.help.replace('`', '')}" for fmt in FORMATS)
    return f"Read the input as this kind instead of detecting it ({listed}). See docs/registry.md."


def detect(document: Any) -> str | None:
    """The kind of a parsed input file, or None when it is none of the known shapes."""
    for fmt in FORMATS:
        if fmt.matches is not None and fmt.matches(document):
            return fmt.kind
    return None


# One pass over JSONC. Group 1 is text kept as it is, consumed in long runs: characters that start nothing,
# whole string literals, commas not before } or ], slashes not starting a comment. What is left matches the
# other alternatives and is dropped: a comment (an unterminated one runs to the end), a trailing comma, an
# unterminated string (not JSON either way). Possessive quantifiers: nothing is scanned twice, so the time is
# linear in the length, however the text is built.
_JSONC = re.compile(
    r'((?:[^"/,]++|"(?:[^"\\]|\\.)*+"|,(?!(?:\s|//[^\n]*+|/\*(?:.*?\*/))*+[}\]])|/(?![/*]))++)'
    r"|//[^\n]*+|/\*(?:.*?\*/|.*)|,|\".*",
    re.S,
)


def _kept(match: re.Match[str]) -> str:
    return match.group(1) or ""


def _strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (VS Code's files) → JSON; strings are left alone.

    Linear in the length (measured: 600 KB of ``/*`` in 0.02 s; the worst shapes, such as 600 KB of ``,}``,
    about half a second on one core).
    """
    return _JSONC.sub(_kept, text)


def _parse(data: bytes, where: str) -> Any:
    if data[:2] == b"\x1f\x8b":  # gzip's magic number: "not JSON (Expecting value)" would not say what it is
        raise InputError(f"{where}: gzip-compressed, not JSON: decompress it first (gunzip -k {shlex.quote(where)})")
    text = wire.decode_bytes(data)
    try:
        return wire.loads(text)
    except RecursionError as exc:
        raise InputError(f"{where}: JSON nested too deeply") from exc
    except ValueError as first:
        try:
            return wire.loads(_strip_jsonc(text))
        except (ValueError, RecursionError):
            raise InputError(f"{where}: not JSON ({first})") from first


def _too_large(where: str, limit: int, what: str = "") -> InputError:
    return InputError(
        f"{where}: {what or 'larger than'} the input limit of {size_text(limit)}"
        f" ({MAX_INPUT_FLAG} raises it; nothing was scanned)"
    )


class _Budget:
    """The bytes one source may still read, across all its files."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def check(self, size: int, where: str) -> None:
        """InputError if ``size`` more bytes would go over the budget."""
        if size > self.left:
            what = "larger than" if self.left == self.limit else "with what was read before, over"
            raise _too_large(where, self.limit, what)

    def take(self, size: int, where: str) -> None:
        self.check(size, where)
        self.left -= size


def _read_file(path: Path, budget: _Budget) -> bytes:
    """A regular file's bytes, refused from its ``stat`` size (before reading) when over the budget."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would wait for a writer; this returns at once and fstat says.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except ValueError as exc:  # a NUL in the path
        raise InputError(f"{path!s:.200}: not a usable path ({exc})") from exc
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"{path}: not a regular file (a FIFO, socket or device is not read)")
        size = os.fstat(fd).st_size
        budget.check(size, str(path))
        data = _read_bounded(handle, size, budget)
    budget.take(len(data), str(path))
    return data


def _read_bounded(handle: BinaryIO, expected: int, budget: _Budget) -> bytes:
    """At most one byte past the budget, without asking for a budget-sized buffer up front (``read(n)``
    allocates ``n``): ``expected`` bytes and one more, then on in 1 MiB pieces if there is more (a pipe, or a
    file that grew since its size was taken)."""
    data = handle.read(min(expected, budget.left) + 1)
    while len(data) <= budget.left:
        more = handle.read(min(MIB, budget.left + 1 - len(data)))
        if not more:
            break
        data += more
    return data


def _read_document(document: Any, where: str, kind: str, options: Options) -> list[ServerEntry]:
    reader = FORMATS_BY_KIND[kind].read
    if reader is None:
        raise InputError(f"{where}: --kind {kind} needs an http(s) URL, not a file")
    return [writable(entry) for entry in trust.gate(reader(document, where, options), kind, options)]


def writable(entry: ServerEntry) -> ServerEntry:
    """``entry`` with every field that is stored or printed safe to write anywhere (:mod:`scanner.wire`).

    The document was decoded through the wire already; what can still hold a lone surrogate is a value taken
    from the environment (a ``FATHOM_SECRET_*`` URL variable or package argument that was not UTF-8). ``env``
    and ``headers`` are neither stored nor printed and are left as they are.
    """
    texts = [entry.name, entry.url or "", entry.version or "", entry.source or "", entry.skip or "", *entry.command]
    for value in (entry.package or {}).values():
        texts.extend(value if isinstance(value, list) else [value] if isinstance(value, str) else [])
    joined = "".join(text for text in texts if isinstance(text, str))
    if wire.clean_str(joined) is joined:  # one scan for the common case: nothing to replace
        return entry
    return replace(
        entry,
        name=wire.clean_str(entry.name),
        url=None if entry.url is None else wire.clean_str(entry.url),
        version=None if entry.version is None else wire.clean_str(entry.version),
        source=None if entry.source is None else wire.clean_str(entry.source),
        skip=None if entry.skip is None else wire.clean_str(entry.skip),
        command=tuple(wire.clean_str(word) for word in entry.command),
        package=None if entry.package is None else wire.sanitize(dict(entry.package)),
    )


def _unknown(where: str) -> InputError:
    return InputError(
        f"{where}: not a registry response, server.json, server list, Claude Desktop or VS Code config"
        " (use --kind to say which)"
    )


def _load_file(path: Path, kind: str | None, options: Options, budget: _Budget) -> list[ServerEntry]:
    document = _parse(_read_file(path, budget), str(path))
    chosen = kind or detect(document)
    if chosen is None:
        raise _unknown(str(path))
    return _read_document(document, str(path), chosen, options)


def _load_directory(path: Path, kind: str | None, options: Options, budget: _Budget) -> list[ServerEntry]:
    """Every ``*.json`` file of ``path`` (sorted, not recursive), all read as one kind."""
    try:
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and not p.is_dir())
    except OSError as exc:
        raise InputError(f"{path}: cannot be listed ({exc.strerror or exc})") from exc
    if not files:
        raise InputError(f"{path}: a directory with no .json files")
    documents = [(file, _parse(_read_file(file, budget), str(file))) for file in files]
    chosen = kind
    if chosen is None:
        kinds: dict[str, list[str]] = {}
        for file, document in documents:
            detected = detect(document)
            if detected is None:
                raise _unknown(str(file))
            kinds.setdefault(detected, []).append(file.name)
        if len(kinds) > 1:
            named = "; ".join(
                f"{found}: {', '.join(names[:3])}{' …' if len(names) > 3 else ''}" for found, names in kinds.items()
            )
            raise InputError(
                f"{path}: files of different kinds ({named}); a directory is read as one kind:"
                " split it, or name the kind with --kind"
            )
        chosen = next(iter(kinds))
    entries: list[ServerEntry] = []
    for file, document in documents:
        entries.extend(_read_document(document, str(file), chosen, options))
    return entries


def _check_updated_since(value: str | None) -> None:
    if value is None:
        return
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InputError(f"--updated-since {value!r} is not an RFC 3339 time (e.g. 2025-09-01T00:00:00Z)") from exc


def _check_url(source: str) -> None:
    """Refuse a registry URL that cannot be parsed (``http://[::1``: an unclosed IPv6 bracket, a port that is not
    a number) or names no host, in one line, before anything is fetched."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(source)
        parts.port  # noqa: B018 - parsing the port is the check ("http://h:x" raises here)
    except ValueError as exc:
        raise InputError(f"{source[:200]!r} is not a usable URL ({exc})") from None
    if not parts.hostname:
        raise InputError(f"{source[:200]!r} is not a usable URL (no host)")


def load_entries(
    source: str,
    *,
    kind: str | None = None,
    updated_since: str | None = None,
    run_packages: bool = False,
    run_commands: bool = False,
    environ: Mapping[str, str] = os.environ,
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
    max_pages: int = 1000,
    max_input_bytes: int = Options.max_input_bytes,
    timeout_s: float = 30.0,
) -> list[ServerEntry]:
    """Read ``source`` (registry URL, file, directory or ``-``) into the entries to connect to.

    Entries that will not be connected to carry ``skip`` (the reason). ``updated_since`` is passed to the
    registry API (RFC 3339). ``run_packages`` lets registry packages run (wrapped in a ``memory_limit_mb`` cap),
    ``run_commands`` lets commands written in lists and client configs run (the trust rule,
    :mod:`scanner.registry.trust`); ``environ`` supplies secrets under the naming rule of
    :mod:`scanner.registry.secrets`. Raises :class:`InputError` for anything unreadable, unrecognised or over
    ``max_input_bytes``.
    """
    if kind is not None and kind not in FORMATS_BY_KIND:
        raise InputError(f"unknown --kind {kind!r}; choose one of {', '.join(KINDS)}")
    if not source.strip():
        raise InputError("no input given: name a registry URL, a file, a directory or - for stdin")
    _check_updated_since(updated_since)
    options = Options(
        run_packages=run_packages,
        run_commands=run_commands,
        environ=environ,
        memory_limit_mb=memory_limit_mb,
        updated_since=updated_since,
        max_pages=max_pages,
        max_input_bytes=max_input_bytes,
        timeout_s=timeout_s,
    )
    is_url = source.startswith(("http://", "https://"))
    if kind == "api" or is_url:
        if not is_url:
            raise InputError(f"--kind api needs an http(s) URL, not {source!r}")
        _check_url(source)
        from scanner.registry import official

        return [writable(entry) for entry in trust.gate(official.load_api(source, options), "api", options)]
    budget = _Budget(options.max_input_bytes)
    if source == "-":
        data = _read_bounded(sys.stdin.buffer, 0, budget)
        budget.take(len(data), "stdin")
        document = _parse(data, "stdin")
        chosen = kind or detect(document)
        if chosen is None:
            raise _unknown("stdin")
        return _read_document(document, "stdin", chosen, options)
    path = Path(source)
    try:
        is_dir = path.is_dir()
        exists = is_dir or os.path.lexists(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"{source[:200]!r}: not a usable path ({exc})") from exc
    if is_dir:
        return _load_directory(path, kind, options, budget)
    if not exists:
        raise InputError(f"{path}: no such file or directory")
    return _load_file(path, kind, options, budget)
