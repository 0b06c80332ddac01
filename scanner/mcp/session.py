"""One server's scan: pick a transport, detect the era, hand-shake, list every page of tools.

Era detection follows the 2026-07-28 versioning page: send ``server/discover`` first. A DiscoverResult or a
recognised modern error (-32022, -32021, -32020, or -32601 with ``data.supported``) means a modern
("stateless") server; anything else (another error, a 4xx without a modern body, no answer within
``probe_timeout``) means legacy: ``initialize`` then ``notifications/initialized``. The deprecated HTTP+SSE
transport is legacy only and is not probed.

Paging: ``tools/list`` until ``nextCursor`` is absent (or null). In 2026-07-28 an empty-string cursor is a
real cursor; in the legacy revisions it is taken as the end (those revisions never defined ``""`` and servers
that send it mean "no more"; following it would only re-read page one). A cursor seen before is a loop
(protocol_error); more than ``max_pages`` pages or ``max_tools`` tools end the scan too.

Nothing here ever calls a tool or sends a batch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from scanner.mcp import jsonrpc
from scanner.mcp.failures import HttpStatusFailure, ScanFailure, SessionExpired
from scanner.mcp.limits import ClientLimits
from scanner.mcp.profiles import CLIENT_INFO, PROFILES, capabilities
from scanner.mcp.transports import ClientTransport, candidates
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.scrub import Scrubber

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
# A fall back from Streamable HTTP to HTTP+SSE happens on these statuses to the handshake POST (spec).
FALLBACK_STATUSES = frozenset({400, 404, 405})
MAX_INSTRUCTIONS_CHARS = 64 * 1024


@dataclass
class _Progress:
    """What is known so far; a failure's outcome still reports the era, version and timings reached."""

    transport: str
    profile: str
    started: float = field(default_factory=time.perf_counter)
    era: str | None = None
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    pages: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    mark: float = field(default_factory=time.perf_counter)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round((now - self.mark) * 1000, 1)
        self.mark = now

    def outcome(
        self,
        outcome: Outcome,
        detail: str,
        tools: tuple[Any, ...] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> ScanOutcome:
        self.timings["total"] = round((time.perf_counter() - self.started) * 1000, 1)
        return ScanOutcome(
            outcome=outcome,
            transport=self.transport,
            detail=detail,
            tools=tools,
            server_name=self.server_name,
            server_version=self.server_version,
            protocol_version=self.protocol_version,
            era=self.era,
            capability_profile=self.profile,
            timings_ms=dict(self.timings),
            pages=self.pages,
            extra={**self.extra, **(extra or {})},
        )


class _Session:
    """The JSON-RPC conversation over one open transport."""

    def __init__(self, transport: ClientTransport, profile: str, limits: ClientLimits, progress: _Progress) -> None:
        self.transport = transport
        self.profile = profile
        self.limits = limits
        self.progress = progress
        self._next_id = 0
        self.modern = False
        self.declares_tools = True

    def _request(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        self._next_id += 1
        return jsonrpc.request(self._next_id, method, params)

    def _meta(self) -> dict[str, Any]:
        return {
            PROTOCOL_VERSION_META: MODERN_VERSION,
            CLIENT_CAPABILITIES_META: capabilities(self.profile),
            CLIENT_INFO_META: dict(CLIENT_INFO),
        }

    # --- handshake -----------------------------------------------------------------------------------------

    async def handshake(self, probe: bool) -> None:
        if probe and await self._discover(self.limits.probe_timeout):
            return
        if await self._initialize() or not probe:
            return
        # initialize drew a modern error: the server is modern after all (on stdio, typically one that started
        # slower than the probe waited, then locked its connection to the 2026 era on our discover). Re-probe
        # without the short wait, as the spec allows when a cached era assumption fails.
        self.progress.extra["discover"] = "late: initialize answered with a modern error"
        if not await self._discover(None):
            raise ScanFailure(Outcome.PROTOCOL_ERROR, "server rejects initialize but does not answer server/discover")

    async def _discover(self, wait: float | None) -> bool:
        """Probe with ``server/discover`` (waiting at most ``wait`` s): True if the server is modern (and now
        set up as such)."""
        self.transport.modern = True
        self.transport.protocol_version = MODERN_VERSION
        message = self._request("server/discover", {"_meta": self._meta()})
        response: dict[str, Any] | None = None
        try:
            with anyio.move_on_after(wait if wait is not None else math.inf):
                response = await self.transport.request(message)
        except HttpStatusFailure as failure:
            response = _modern_error_body(failure)
            if response is None:
                self.progress.extra["discover"] = f"HTTP {failure.status}"
        except ScanFailure as failure:
            if failure.outcome not in (Outcome.INVALID_RESPONSE, Outcome.PROTOCOL_ERROR, Outcome.NOT_MCP):
                raise
            self.progress.extra["discover"] = failure.detail[:200]
        self.transport.modern = False
        self.transport.protocol_version = None
        if response is None:
            self.progress.extra.setdefault("discover", "no answer")
            return False
        error = jsonrpc.error_of(response)
        if error is not None:
            if not jsonrpc.is_modern_error(error):
                self.progress.extra["discover"] = f"JSON-RPC error {error['code']!r}"
                return False
            return self._modern_error(error)
        result = response.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("supportedVersions"), list):
            self.progress.extra["discover"] = "answer is not a DiscoverResult"
            return False
        supported = [v for v in result["supportedVersions"] if isinstance(v, str)]
        if MODERN_VERSION not in supported:
            if any(v in LEGACY_VERSIONS for v in supported):
                self.progress.extra["discover"] = f"supports only {supported[:8]}"
                return False
            raise ScanFailure(
                Outcome.PROTOCOL_ERROR,
                "no protocol version in common",
                {"supported": supported[:20]},
            )
        self._go_modern()
        info = result.get("serverInfo")
        meta = result.get("_meta")
        if not isinstance(info, dict) and isinstance(meta, dict):
            info = meta.get(SERVER_INFO_META)
        self._server_info(info)
        self._server_facts(result)
        return True

    def _modern_error(self, error: Mapping[str, Any]) -> bool:
        """A modern error to the probe: the server is modern; it may still only take legacy versions."""
        self.progress.era = "stateless"
        data = error.get("data")
        supported = data.get("supported") if isinstance(data, dict) else None
        supported = [v for v in supported if isinstance(v, str)] if isinstance(supported, list) else []
        if error.get("code") == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION and any(v in LEGACY_VERSIONS for v in supported):
            self.progress.era = None
            self.progress.extra["discover"] = f"supports only {supported[:8]}"
            return False
        message = error.get("message")
        raise ScanFailure(
            Outcome.PROTOCOL_ERROR,
            f"server/discover refused: JSON-RPC error {error.get('code')!r}: {str(message)[:200]}",
            {"error": {"code": error.get("code"), "message": str(message)[:500]}, "supported": supported[:20]},
        )

    def _go_modern(self) -> None:
        self.modern = True
        self.transport.modern = True
        self.transport.protocol_version = MODERN_VERSION
        self.progress.era = "stateless"
        self.progress.protocol_version = MODERN_VERSION

    def _server_info(self, info: Any) -> None:
        if isinstance(info, dict):
            name, version = info.get("name"), info.get("version")
            self.progress.server_name = name[:500] if isinstance(name, str) else None
            self.progress.server_version = version[:200] if isinstance(version, str) else None

    def _server_facts(self, result: Mapping[str, Any]) -> None:
        """Keep the server's ``instructions`` (a model may see them too) and whether it declared tools."""
        instructions = result.get("instructions")
        if isinstance(instructions, str) and instructions:
            self.progress.extra["instructions"] = instructions[:MAX_INSTRUCTIONS_CHARS]
        caps = result.get("capabilities")
        self.declares_tools = isinstance(caps, dict) and "tools" in caps

    async def _initialize(self) -> bool:
        """The legacy handshake: True once done; False if the server answered with a modern error."""
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": capabilities(self.profile),
            "clientInfo": dict(CLIENT_INFO),
        }
        response = await self.transport.request(self._request("initialize", params))
        if jsonrpc.is_modern_error(jsonrpc.error_of(response)):
            return False
        result = jsonrpc.result_of(response, "initialize")
        self.progress.era = "legacy"
        version = result.get("protocolVersion")
        if not isinstance(version, str):
            raise ScanFailure(Outcome.INVALID_RESPONSE, "initialize result has no protocolVersion string")
        self.progress.protocol_version = version[:100]
        self._server_info(result.get("serverInfo"))
        self._server_facts(result)
        # The header must carry the negotiated version; 2025-06-18 and later require it on every request.
        self.transport.protocol_version = version[:100]
        await self.transport.notify(jsonrpc.notification("notifications/initialized"))
        return True

    def _cache_hints(self, result: Mapping[str, Any]) -> None:
        """2026-07-28 ``tools/list`` caching hints (``ttlMs``, ``cacheScope``), kept as sent if well-typed."""
        ttl, scope = result.get("ttlMs"), result.get("cacheScope")
        if type(ttl) is int:
            self.progress.extra["ttl_ms"] = ttl
        if isinstance(scope, str):
            self.progress.extra["cache_scope"] = scope[:20]

    # --- tools/list ----------------------------------------------------------------------------------------

    async def list_tools_once_more_if_expired(self) -> list[Any]:
        """:meth:`list_tools`; if the server ends the legacy session meanwhile, initialize once more and
        list again from the first page (a 404 on the new session too is the outcome)."""
        try:
            return await self.list_tools()
        except SessionExpired:
            if self.modern:
                raise
        self.progress.extra["session_restarted"] = True
        self.progress.pages = 0
        self.transport.protocol_version = None
        if not await self._initialize():
            raise ScanFailure(Outcome.PROTOCOL_ERROR, "initialize refused after the session ended")
        return await self.list_tools()

    async def list_tools(self) -> list[Any]:
        tools: list[Any] = []
        seen: set[str] = set()
        cursor: str | None = None
        limits = self.limits
        while True:
            if self.progress.pages >= limits.max_pages:
                raise ScanFailure(
                    Outcome.PROTOCOL_ERROR,
                    f"tools/list still paging after {limits.max_pages} pages",
                    {"max_pages": limits.max_pages},
                )
            params: dict[str, Any] = {}
            if cursor is not None:
                params["cursor"] = cursor
            if self.modern:
                params["_meta"] = self._meta()
            response = await self.transport.request(self._request("tools/list", params or None))
            if self.progress.pages == 0 and not self.declares_tools and jsonrpc.error_of(response) is not None:
                # It never said it had tools, and it has none to list: an empty list, not a fault.
                self.progress.extra["tools_capability"] = False
                return tools
            result = jsonrpc.result_of(response, "tools/list")
            result_type = result.get("resultType", "complete")
            if self.modern and result_type != "complete":
                raise ScanFailure(
                    Outcome.PROTOCOL_ERROR, f"tools/list resultType {str(result_type)[:40]!r} is not 'complete'"
                )
            page = result.get("tools")
            if not isinstance(page, list):
                raise ScanFailure(
                    Outcome.INVALID_RESPONSE, f"tools/list 'tools' is {type(page).__name__}, not an array"
                )
            self.progress.pages += 1
            tools.extend(page)
            if len(tools) > limits.max_tools:
                raise ScanFailure(
                    Outcome.TOO_LARGE, f"more than {limits.max_tools} tools", {"max_tools": limits.max_tools}
                )
            if self.modern:
                self._cache_hints(result)
            next_cursor = result.get("nextCursor")
            if next_cursor is None:
                return tools
            if not isinstance(next_cursor, str):
                raise ScanFailure(Outcome.INVALID_RESPONSE, f"nextCursor is {type(next_cursor).__name__}, not a string")
            if next_cursor == "" and not self.modern:
                self.progress.extra["empty_cursor_taken_as_end"] = True
                return tools
            if next_cursor in seen:
                raise ScanFailure(
                    Outcome.PROTOCOL_ERROR,
                    f"tools/list repeated a cursor after {self.progress.pages} pages",
                    {"cursor": next_cursor[:100]},
                )
            seen.add(next_cursor)
            cursor = next_cursor


def _modern_error_body(failure: HttpStatusFailure) -> dict[str, Any] | None:
    """The JSON-RPC error in an HTTP error body, if it is a recognised modern error (HTTP era detection)."""
    if failure.status in (401, 403) or not failure.body:
        return None
    try:
        message = jsonrpc.decode(failure.body)
    except ScanFailure:
        return None
    if isinstance(message, dict) and jsonrpc.is_modern_error(jsonrpc.error_of(message)):
        return message
    return None


async def scan_server(
    entry: ServerEntry,
    limits: ClientLimits = ClientLimits(),  # noqa: B008 - frozen, so one shared default is safe
    profile: str = "rich",
    *,
    extra_headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> ScanOutcome:
    """Connect to ``entry``, list all its tools, and say how it went. Never raises for the server's fault.

    ``profile`` names the client capabilities declared (see :mod:`scanner.mcp.profiles`; an unknown name is
    a ``KeyError``, a caller's bug). ``extra_headers`` are added to ``entry.headers`` (later wins); neither's
    values ever appear in the outcome. ``env``, for stdio, is the child's environment (e.g. scrubbed, with
    its own temporary HOME); None means ``entry.env`` over ``transports.passthrough_env()``; either way
    ``PYTHONHASHSEED=0`` is added unless set (see ``transports.DETERMINISM_ENV``). The whole scan
    runs under ``limits.timeout``; shutting a stdio server down adds at most ~3 × ``limits.shutdown_grace``.

    ``timings_ms``: ``connect`` (spawn, or HTTP client ready / SSE stream open), ``handshake``, ``list``,
    ``shutdown`` (closing the transport: stdin, signals, the session DELETE), ``total`` (all of it). ``extra``
    keys, when they apply: ``discover`` (why the 2026 probe did not make the server modern), ``fallback``,
    ``session``, ``delete_status``, ``session_restarted``, ``instructions``, ``ttl_ms``, ``cache_scope``,
    ``tools_capability``, ``empty_cursor_taken_as_end``, ``skipped_stdout_lines`` and
    ``skipped_stdout_samples``; and per failure: ``status``, ``challenge``, ``resource_metadata_url``,
    ``resource_metadata``, ``resource_metadata_error``, ``exit_code``, ``stderr_tail``, ``error`` (a JSON-RPC
    error's code and message), ``supported``, ``limit_bytes``, ``max_pages``, ``max_tools``, ``redirects``,
    ``content_type``, ``snippet``, ``reason`` (an HTTP error body's one-line reason, also quoted in the detail),
    ``max_server_requests``, ``secrets_scrubbed``.

    Every secret the scan knows (header values, the stdio server's secret environment values, this server's
    ``FATHOM_SECRET_*`` values) is scrubbed, in any shape, from every text of the outcome by
    :class:`scanner.scrub.Scrubber`, here where the outcome leaves the client; every text is also cleaned by
    :mod:`scanner.wire` (no lone surrogate, no NUL).
    """
    if profile not in PROFILES:
        raise KeyError(f"unknown capability profile {profile!r}")
    scrubber = Scrubber.for_scan(entry, extra_headers, env)
    return scrubber.outcome(await _scan(entry, limits, profile, extra_headers, env))


async def _scan(
    entry: ServerEntry,
    limits: ClientLimits,
    profile: str,
    extra_headers: Mapping[str, str] | None,
    env: Mapping[str, str] | None,
) -> ScanOutcome:
    progress = _Progress(transport=entry.transport.value, profile=profile)
    if entry.skip:
        return progress.outcome(Outcome.SKIPPED, entry.skip)
    headers = {**entry.headers, **(extra_headers or {})}
    try:
        with anyio.fail_after(limits.timeout):
            factories = candidates(entry, limits, headers, env)
            for index, factory in enumerate(factories):
                try:
                    return await _scan_with(factory(), profile, limits, progress)
                except Exception as exc:
                    failure = _unwrap(exc)
                    last = index + 1 == len(factories)
                    # Only a refused handshake moves on; a 4xx after a good handshake is no reason to.
                    if last or not isinstance(failure, HttpStatusFailure) or not _handshake_refused(failure, progress):
                        raise failure from None
                    progress.extra["fallback"] = f"{progress.transport} answered HTTP {failure.status}"
                    progress.mark = time.perf_counter()
    except TimeoutError:
        return progress.outcome(Outcome.TIMEOUT, _timeout_detail(limits, progress))
    except Exception as exc:
        failure = _unwrap(exc)
        if isinstance(failure, ScanFailure):
            return progress.outcome(failure.outcome, failure.detail, extra=failure.extra)
        if isinstance(failure, TimeoutError):
            return progress.outcome(Outcome.TIMEOUT, _timeout_detail(limits, progress))
        # A bug in the client, not the server: still one outcome, flagged so it is not blamed on the server. The
        # exception's text is left out: it could quote a header value.
        return progress.outcome(
            Outcome.INVALID_RESPONSE,
            f"client error: {type(failure).__name__}",
            extra={"client_error": True},
        )
    raise AssertionError("unreachable: every transport either returns or raises")


def _timeout_detail(limits: ClientLimits, progress: _Progress) -> str:
    """The deadline, plus the last thing a stdio server said on stderr: a server stuck at start-up (fetching a
    model, waiting for a login) usually says so there, and the detail is all a person sees first."""
    detail = f"no complete answer within {limits.timeout:g} s"
    tail = progress.extra.get("stderr_tail")
    last = next((line.strip() for line in reversed(tail) if line.strip()), "") if isinstance(tail, list) else ""
    return f"{detail}; last stderr line: {last[:200]}" if last else detail


def _handshake_refused(failure: HttpStatusFailure, progress: _Progress) -> bool:
    return failure.status in FALLBACK_STATUSES and progress.era is None


async def _scan_with(
    transport: ClientTransport, profile: str, limits: ClientLimits, progress: _Progress
) -> ScanOutcome:
    progress.transport = transport.name
    failed = True
    try:
        async with transport:
            progress.lap("connect")
            session = _Session(transport, profile, limits, progress)
            await session.handshake(probe=transport.name != "sse")
            progress.lap("handshake")
            tools = await session.list_tools_once_more_if_expired()
            progress.lap("list")
        failed = False
        # Closing is timed apart: a stdio server that ignores the end of its input costs the shutdown grace.
        progress.lap("shutdown")
    finally:
        # After closing, so the facts include the shutdown (the session DELETE's status, say).
        progress.extra.update(transport.details(failed=failed))
    return progress.outcome(Outcome.OK, f"{len(tools)} tool" + ("" if len(tools) == 1 else "s"), tools=tuple(tools))


def _unwrap(exc: BaseException) -> BaseException:
    """The most telling exception inside (nested) exception groups: a ScanFailure first, else the first one."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves: list[BaseException] = []
    stack: list[BaseException] = [exc]
    while stack:
        item = stack.pop(0)
        if isinstance(item, BaseExceptionGroup):
            stack.extend(item.exceptions)
        else:
            leaves.append(item)
    for leaf in leaves:
        if isinstance(leaf, ScanFailure):
            return leaf
    return leaves[0] if leaves else exc
