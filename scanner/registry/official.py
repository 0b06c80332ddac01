"""The official MCP registry: its list API over HTTP, and saved responses of it.

``GET {base}/v0.1/servers?limit=100&version=latest[&updated_since=...][&cursor=...]`` answers
``{"servers": [{"server": {...server.json...}, "_meta": {"io.modelcontextprotocol.registry/official":
{"status", "isLatest", "publishedAt", "updatedAt", ...}}}], "metadata": {"nextCursor", "count"}}``. Rows are
*versions*; with ``updated_since`` the registry also returns deleted ones. For each server name we keep the
latest version; one that is deleted or deprecated is kept as such (outcome ``delisted`` / ``deprecated``, with the
registry's ``statusMessage``, never connected to), not replaced by an older version. Before 2025-09-16 the same
fields were snake_case (``is_latest``, ``next_cursor``, ``published_at``) and rows could be flat server.json objects
carrying their own ``_meta`` and ``status``; both shapes are read.

Reading is bounded: at most ``Options.max_pages`` pages, ``Options.max_page_bytes`` per page and
``Options.max_input_bytes`` for all pages together (so memory is bounded for the whole read, not per page), a
cursor seen twice is an error. Pages are decoded through :mod:`scanner.wire`. A registry that cannot be read,
or is larger than the budget, is a run-fatal :class:`~scanner.errors.InputError` (nothing is scanned).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from scanner import textsafe, wire
from scanner.errors import InputError
from scanner.mcp.body import ACCEPT_ENCODING, BodyError, decode_all
from scanner.models import ServerEntry, Transport
from scanner.registry import _json
from scanner.registry.interface import Options, size_text
from scanner.registry.serverjson import resolve_server, server_name, server_version

OFFICIAL = "io.modelcontextprotocol.registry/official"
PAGE_LIMIT = 100


def _official_meta(row: dict[str, Any], server: dict[str, Any]) -> dict[str, Any]:
    for holder in (row, server):
        meta = _json.obj(_json.obj(holder.get("_meta")).get(OFFICIAL))
        if meta:
            return meta
    return {}


def _split_row(row: Any) -> tuple[Any, dict[str, Any]]:
    """(server.json, official metadata) of one row, wrapped (2025-09-29 on) or flat (before)."""
    if not isinstance(row, dict):
        return row, {}
    server = row["server"] if isinstance(row.get("server"), dict) else row
    meta = dict(_official_meta(row, server))
    if "status" not in meta and isinstance(server.get("status"), str):
        meta["status"] = server["status"]
    return server, meta


def latest_active(rows: list[Any]) -> list[Any]:
    """One server.json per name: the latest version, if it is active; order of first appearance.

    A row without registry metadata counts as latest and active (a plain list of server.json objects); if a
    slice holds several "latest" rows for one name, the most recently updated wins.
    """
    return [server for server, status, _ in latest_rows(rows) if status == "active"]


INACTIVE = ("deleted", "deprecated")


def status_message(meta: dict[str, Any], server: Any) -> str | None:
    """The registry's reason for a deprecation or deletion (``statusMessage``): one line, hidden characters shown
    as escapes, capped; None if it gave none."""
    holder = server if isinstance(server, dict) else {}
    text = _json.text(_json.field(meta, "statusMessage", "status_message")) or _json.text(
        _json.field(holder, "statusMessage", "status_message")
    )
    return textsafe.clean_text(" ".join(wire.clean_str(text).split()), limit=300) if text else None


def latest_rows(rows: list[Any]) -> list[tuple[Any, str, str | None]]:
    """(server.json, status, status message) of the latest version of every name, in order of first appearance;
    then every row without a usable name (status ``active``, to be skipped by the resolver with its reason).

    ``status`` is ``active``, ``deleted`` or ``deprecated``; a name whose latest row has any other status is left
    out, as before.
    """
    best: dict[str, tuple[tuple[str, int], Any, dict[str, Any]]] = {}
    order: list[str] = []
    invalid: list[Any] = []
    for index, row in enumerate(rows):
        server, meta = _split_row(row)
        name = server_name(server) if isinstance(server, dict) else None
        if name is None:
            invalid.append(server)
            continue
        latest = _json.field(meta, "isLatest", "is_latest")
        if latest is False:
            continue
        stamp = _json.text(_json.field(meta, "updatedAt", "updated_at")) or _json.text(
            _json.field(meta, "publishedAt", "published_at")
        )
        key = (stamp or "", index)
        if name not in best:
            order.append(name)
        if name not in best or key >= best[name][0]:
            best[name] = (key, server, meta)
    kept: list[tuple[Any, str, str | None]] = []
    for name in order:
        _, server, meta = best[name]
        status = meta.get("status", "active")
        if status in INACTIVE:
            kept.append((server, status, status_message(meta, server)))
        elif status == "active":
            kept.append((server, "active", None))
    return kept + [(server, "active", None) for server in invalid]


def _parse_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def updated_since_filter(rows: list[Any], since: str) -> list[Any]:
    """The rows updated at or after ``since`` (what the API's ``updated_since`` does), for saved responses.

    A row without a readable timestamp is kept: dropping it would hide a server for lack of metadata.
    """
    cutoff = _parse_time(since)
    if cutoff is None:
        return rows
    kept = []
    for row in rows:
        _, meta = _split_row(row)
        stamp = _parse_time(
            _json.text(_json.field(meta, "updatedAt", "updated_at"))
            or _json.text(_json.field(meta, "publishedAt", "published_at"))
        )
        if stamp is None or stamp >= cutoff:
            kept.append(row)
    return kept


def parse_response(document: Any, where: str) -> tuple[list[Any], str | None]:
    """The rows and the next cursor of one API page; InputError if it is not that shape."""
    if not isinstance(document, dict) or not isinstance(document.get("servers"), list):
        raise InputError(f"{where}: not a registry response (no 'servers' array)")
    metadata = _json.obj(document.get("metadata"))
    cursor = _json.field(metadata, "nextCursor", "next_cursor")
    return document["servers"], _json.text(cursor, limit=4096)


def api_url(base: str) -> str:
    """The list endpoint for a base URL; a URL already ending in ``/servers`` is used as given."""
    trimmed = base.rstrip("/")
    if urlsplit(trimmed).path.endswith("/servers"):
        return trimmed
    return f"{trimmed}/v0.1/servers"


def _get_page(client: httpx.Client, url: str, params: dict[str, str], limit: int) -> tuple[Any, int]:
    """One page, parsed, and its size in bytes after content-decoding (:mod:`scanner.mcp.body`); _OverLimit past
    ``limit`` decoded bytes (read no further)."""
    try:
        # Only the codings decode_all undoes are offered (httpx would add br or zstd when their modules exist).
        headers = {"Accept-Encoding": ACCEPT_ENCODING}
        with client.stream("GET", url, params=params, headers=headers) as response:
            if response.status_code != 200:
                raise InputError(f"registry {url} answered HTTP {response.status_code}")
            coding = response.headers.get("content-encoding", "")
            body = decode_all(response.iter_raw(), coding, limit, "a page")
    except BodyError as exc:
        if exc.kind == "too_large":
            raise _OverLimit from exc
        raise InputError(f"registry {url}: {exc.message}") from exc
    except httpx.HTTPError as exc:
        raise InputError(f"registry {url} cannot be read: {type(exc).__name__}: {exc}") from exc
    try:
        return wire.loads(wire.decode_bytes(body)), len(body)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"registry {url}: a page is not JSON ({exc})") from exc


class _ForeignRedirect(httpx.HTTPError):
    """The registry redirected to another origin: not followed (it could point at this machine or a metadata
    address, and the address policy checks the registry's own URL only)."""


def _same_origin_only(url: str) -> Any:
    first = httpx.URL(url)
    origin = (first.scheme, first.host, first.port)

    def check(request: httpx.Request) -> None:
        if (request.url.scheme, request.url.host, request.url.port) != origin:
            where = f"{request.url.scheme}://{request.url.host}:{request.url.port or ''}"
            raise _ForeignRedirect(f"redirected to another origin, not followed ({where})")

    return check


class _OverLimit(Exception):
    """A page went past the bytes it may have; the caller says which limit."""


def fetch_rows(base: str, options: Options, *, client: httpx.Client | None = None) -> list[Any]:
    """Every row of the registry list (all pages), bounded; raises InputError when it cannot be read."""
    url = api_url(base)
    own = client is None
    # Redirects are followed on the registry's own origin only (scheme, host and port).
    http = client or httpx.Client(
        timeout=options.timeout_s,
        follow_redirects=True,
        max_redirects=5,
        event_hooks={"request": [_same_origin_only(url)]},
    )
    rows: list[Any] = []
    seen: set[str] = set()
    cursor: str | None = None
    left = options.max_input_bytes
    try:
        for page in range(1, options.max_pages + 1):
            params = {"limit": str(PAGE_LIMIT), "version": "latest"}
            if options.updated_since:
                params["updated_since"] = options.updated_since
            if cursor:
                params["cursor"] = cursor
            try:
                document, size = _get_page(http, url, params, min(options.max_page_bytes, left))
            except _OverLimit:
                if left < options.max_page_bytes:
                    raise InputError(
                        f"registry {url}: over the input limit of {size_text(options.max_input_bytes)} for all"
                        f" pages together at page {page} (--max-input-mb raises it, --updated-since narrows the"
                        " read; nothing was scanned)"
                    ) from None
                raise InputError(
                    f"registry {url}: page {page} is larger than {size_text(options.max_page_bytes)}"
                ) from None
            left -= size
            page_rows, cursor = parse_response(document, f"registry {url} page {page}")
            rows.extend(page_rows)
            if not cursor:
                return rows
            if cursor in seen:
                raise InputError(f"registry {url}: cursor {cursor[:60]!r} repeats at page {page} (a paging loop)")
            seen.add(cursor)
        raise InputError(f"registry {url}: more than {options.max_pages} pages; narrow it with --updated-since")
    finally:
        if own:
            http.close()


def entries_from_rows(rows: list[Any], *, source: str, options: Options) -> list[ServerEntry]:
    """Resolve the latest active version of every server in ``rows``, each with its registry-data findings
    (MCP701-MCP705, :mod:`scanner.rules.registrydata`)."""
    from scanner.rules.registrydata import registry_findings

    latest = latest_rows(rows)
    servers = [server for server, status, _ in latest if status == "active"]
    found = iter(registry_findings(servers))
    entries = []
    for index, (server, status, message) in enumerate(latest):
        if status != "active":
            entries.append(_inactive_entry(server, status, message, source))
            continue
        findings = next(found)
        entry = resolve_server(server, source=source, options=options, index=index)
        entries.append(replace(entry, findings=findings) if findings else entry)
    return entries


def _inactive_entry(server: dict[str, Any], status: str, message: str | None, source: str) -> ServerEntry:
    """A server the registry reports deleted or deprecated: recorded as ``delisted`` / ``deprecated`` (never
    connected to, never a failure), its status message kept in the detail."""
    said = "deleted from the registry" if status == "deleted" else "deprecated in the registry"
    return ServerEntry(
        name=server_name(server) or "",
        transport=Transport.HTTP,
        version=server_version(server),
        source=source,
        skip=f"{said}: {message}" if message else said,
        registry_status=status,
        status_message=message,
    )


def load_api(base: str, options: Options) -> list[ServerEntry]:
    """Entries from a live registry at ``base`` (e.g. ``https://registry.modelcontextprotocol.io``)."""
    return entries_from_rows(fetch_rows(base, options), source=f"registry:{base}", options=options)
