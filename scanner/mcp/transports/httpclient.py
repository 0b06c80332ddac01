"""The scan's HTTP client: httpx's semantics without httpx's per-request layers, on connections of its own.

A scan sends five small requests per server and nothing else, so httpx's request and response models, its
auth, redirect and event-hook machinery and its logging cost more CPU than the bytes on the wire (about a fifth
of a whole unchanged rescan, ``docs/benchmarks.md``), and httpcore's HTTP/1.1 connection over h11 another third.
This client keeps what a scan relies on and does it once:

- the URL is parsed by ``httpx.URL`` (the same validation, IDNA and percent-encoding), once per distinct URL;
- the request carries exactly the headers httpx would send, in its order (``Host`` first, the client's defaults
  with its ``User-Agent``, the caller's headers, ``Content-Length``), checked against ``httpx`` by a test;
- cookies a server sets are kept for the rest of that server's scan and sent back as httpx would (sticky load
  balancers rely on it), through ``httpx.Cookies`` and only when a server sets one;
- httpcore's errors become the httpx errors of the same names and messages, so the transports' error mapping
  (:mod:`scanner.mcp.transports.http`) reads them as before;
- the connections have httpx's defaults (kept alive for 5 s, HTTP/1.1, no retries, no proxy: the scan ignores the
  environment's proxies anyway), kept by :class:`_Connections` instead of httpcore's pool, and each speaks
  HTTP/1.1 through :mod:`scanner.mcp.transports.http11` (h11's rules and messages, one exchange at a time);
- its network streams are httpcore's anyio streams with each read's and write's timeout on asyncio's own timer
  instead of an anyio cancel scope, and the socket's readability (asked before each reuse of a connection) read
  from the socket kept at connect (:class:`_Stream`): the same errors for the same events, a third of the cost;
- a request's head and body leave in one write (one TCP segment on loopback instead of two), held by
  :class:`_Stream` until the connection next reads.

Redirects are not followed here: :func:`scanner.mcp.transports.http.send` follows them by hand, within the origin.
Where :data:`DIAL` is set (a local-port package in a network namespace of its own), it makes the connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Protocol

import anyio
import httpcore
import httpx
from httpcore._backends.anyio import AnyIOBackend, AnyIOStream
from httpcore._utils import is_socket_readable

from scanner.mcp.transports.http11 import Answer, Connection, Origin, Request

# What httpx.AsyncClient(headers={"Accept-Encoding": ...}) holds before a request's own headers are merged in.
_USER_AGENT = f"python-httpx/{httpx.__version__}"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

_ERRORS: dict[type[Exception], type[httpx.HTTPError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore's exception as the most specific httpx exception of the same name, with the same message."""
    try:
        yield
    except tuple(_ERRORS) as exc:
        mapped = next(_ERRORS[kind] for kind in type(exc).__mro__ if kind in _ERRORS)
        raise mapped(str(exc)) from exc


# Bytes a stream holds back at most: a write that brings them to this leaves at once, with what was held.
_HOLD_AT = 64 * 1024


class _Stream(AnyIOStream):
    """httpcore's anyio stream, cheaper per read and write.

    httpcore wraps every read and write in ``anyio.fail_after`` (a cancel scope: about 20 us each, some thirty
    times per server) and answers ``get_extra_info("is_readable")``, asked before a kept-alive connection is
    reused, by building anyio's whole attribute table. Here the timeout is ``asyncio.timeout`` (the scan runs on
    asyncio; the same ``TimeoutError`` when no byte came in time, the same cancellation from outside) and the
    socket is looked up once. Errors become the httpcore errors httpcore's own stream raises, with the same
    messages (``tests/mcp/test_httpclient.py`` holds them side by side).

    httpcore writes a request's head and its body separately: two sends, two TCP segments, each a system call
    and the kernel's whole loopback path (12 % of a first night's CPU samples, ``docs/benchmarks.md``). So a
    write is held until the connection next reads (or holds :data:`_HOLD_AT` bytes) and the held bytes leave in
    one send. A failed held write is what httpcore does with a failed request write: it is passed over and the
    answer read (a server may answer and close before it reads the body); a write timeout is still raised.
    """

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        super().__init__(stream)
        self._socket = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._held_timeout: float | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            with contextlib.suppress(httpcore.WriteError):
                await self._write_held()
        try:
            async with asyncio.timeout(timeout):
                return await self._stream.receive(max_bytes=max_bytes)
        except anyio.EndOfStream:
            return b""
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(exc) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpcore.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        self._held.append(buffer)
        self._held_bytes += len(buffer)
        self._held_timeout = timeout
        if self._held_bytes >= _HOLD_AT:
            await self._write_held()

    async def _write_held(self) -> None:
        buffer = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        try:
            async with asyncio.timeout(self._held_timeout):
                await self._stream.send(item=buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(exc) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpcore.WriteError(exc) from exc

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        if self._held:
            await self._write_held()
        secured = await super().start_tls(ssl_context, server_hostname, timeout)
        assert isinstance(secured, AnyIOStream)
        return _Stream(secured._stream)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self._socket)
        return super().get_extra_info(info)


DIAL: ContextVar[Callable[[str, int], Awaitable[anyio.abc.SocketStream | None]] | None] = ContextVar(
    "fathom_dial", default=None
)
"""Where set, ``await dial(host, port)`` makes this context's connections: a connected stream, or None to connect
as usual (:mod:`scanner.packages.localport`: a connection made inside a package's network namespace)."""


class _Backend(AnyIOBackend):
    """httpcore's anyio backend (the same connect, with the same errors) handing out :class:`_Stream`."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        dial = DIAL.get()
        if dial is not None:
            try:
                with anyio.fail_after(timeout):
                    made = await dial(host, port)
            except TimeoutError as exc:
                raise httpcore.ConnectTimeout(str(exc)) from exc
            except OSError as exc:
                raise httpcore.ConnectError(str(exc)) from exc
            if made is not None:
                return _Stream(made)
        stream = await super().connect_tcp(host, port, timeout, local_address, socket_options)
        assert isinstance(stream, AnyIOStream)
        return _Stream(stream._stream)


class Pool(Protocol):
    """What the client needs of its connections (a test hands a fake one to feed hostile answers)."""

    async def handle_async_request(self, request: Request) -> Any: ...

    async def aclose(self) -> None: ...


class _Connections:
    """One server's connections, kept alive as httpcore's pool keeps them.

    A request takes the first idle connection to its origin, or a new one (a legacy SSE stream held open and its
    POSTs get one each). Before each request, connections the server closed, or idle past the keep-alive expiry,
    are closed and dropped, as the pool does. A connection is made as httpcore's ``AsyncHTTPConnection`` makes one
    (its network backend, TLS with ALPN ``http/1.1``, no retries) and speaks :mod:`~scanner.mcp.transports.http11`.
    """

    def __init__(self, ssl_context: ssl.SSLContext | None, keepalive_expiry: float) -> None:
        self._ssl_context = ssl_context
        self._keepalive_expiry = keepalive_expiry
        self._backend = _Backend()
        self._connections: list[Connection] = []

    async def handle_async_request(self, request: Request) -> Answer:
        scheme, host, port = request.origin
        if scheme == "":
            raise httpcore.UnsupportedProtocol("Request URL is missing an 'http://' or 'https://' protocol.")
        if scheme not in ("http", "https", "ws", "wss"):
            raise httpcore.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.")
        await self._drop_stale()
        connection = next(
            (each for each in self._connections if each.origin == request.origin and each.is_available()), None
        )
        if connection is None:
            connect = request.timeouts.get("connect")
            stream = await self._backend.connect_tcp(host, port, timeout=connect)
            if scheme in ("https", "wss"):
                stream = await stream.start_tls(self._tls(), server_hostname=host, timeout=connect)
            connection = Connection(request.origin, stream, self._keepalive_expiry)
            self._connections.append(connection)
        else:
            connection.take()
        return await connection.exchange(request)

    def _tls(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        self._ssl_context.set_alpn_protocols(["http/1.1"])
        return self._ssl_context

    async def _drop_stale(self) -> None:
        kept = [each for each in self._connections if not each.is_closed() and not each.has_expired()]
        if len(kept) < len(self._connections):
            expired = [each for each in self._connections if each not in kept and not each.is_closed()]
            self._connections = kept
            await _close_all(expired)

    async def aclose(self) -> None:
        connections, self._connections = self._connections, []
        await _close_all(connections)


async def _close_all(connections: list[Connection]) -> None:
    with anyio.CancelScope(shield=True):  # as the pool does: a cancelled scan still closes its sockets
        for connection in connections:
            await connection.aclose()


class Headers(dict[str, str]):
    """A response's headers by lower-case name, repeated ones joined with ", " (as ``httpx.Headers.get``)."""

    @classmethod
    def from_raw(cls, raw: list[tuple[bytes, bytes]]) -> Headers:
        encoding = _header_encoding(raw)
        headers = cls()
        for name, value in raw:
            key = name.decode(encoding).lower()
            text = value.decode(encoding)
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return headers

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


def _header_encoding(raw: list[tuple[bytes, bytes]]) -> str:
    """httpx's rule: ASCII if every name and value is, else UTF-8 if every one decodes, else ISO-8859-1."""
    for encoding in ("ascii", "utf-8"):
        try:
            for name, value in raw:
                name.decode(encoding)
                value.decode(encoding)
        except UnicodeDecodeError:
            continue
        return encoding
    return "iso-8859-1"


class Response:
    """A response whose headers are read and whose body is still on the wire."""

    __slots__ = ("_raw", "headers", "status_code")

    def __init__(self, raw: Answer) -> None:
        self._raw = raw
        self.status_code = raw.status
        self.headers = Headers.from_raw(raw.headers)

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, still content-coded (:mod:`scanner.mcp.body` decodes them)."""
        stream = self._raw.stream
        assert isinstance(stream, AsyncIterable)
        with _httpx_errors():
            async for piece in stream:
                yield piece

    async def aclose(self) -> None:
        with _httpx_errors():
            await self._raw.aclose()


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@functools.lru_cache(maxsize=4096)
def _parsed(url: str) -> tuple[httpx.URL, Origin]:
    """httpx's parse of ``url`` (raises ``httpx.InvalidURL`` as it does) and its origin, as httpcore takes it
    (the host as sent: IDNA-encoded, an IPv6 address without its brackets; the scheme's default port filled in)."""
    parsed = httpx.URL(url)
    if parsed.is_relative_url:  # httpx joins it to the client's empty base URL, which leaves no scheme or host
        parsed = httpx.URL("").copy_with(raw_path=b"/" + parsed.raw_path.lstrip(b"/"))
    port = parsed.port or _DEFAULT_PORTS.get(parsed.scheme, 0)
    return parsed, (parsed.scheme, parsed.raw_host.decode("ascii"), port)


class HttpClient:
    """One server's HTTP client: its connections, its timeouts, the cookies it was given."""

    def __init__(
        self, *, timeout: httpx.Timeout, ssl_context: Any, default_headers: Mapping[str, str], pool: Pool | None = None
    ) -> None:
        self._pool: Pool = pool or _Connections(ssl_context, keepalive_expiry=5.0)
        self._timeouts = timeout.as_dict()
        # httpx.AsyncClient(headers=...) starts from its own defaults and moves each given header to the end.
        defaults = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate", "Connection": "keep-alive"}
        defaults["User-Agent"] = _USER_AGENT
        self._defaults = _merged(_by_lower(defaults), default_headers)
        self._cookies: httpx.Cookies | None = None

    def request_headers(
        self, method: str, url: str, headers: Mapping[str, str], content: bytes | None
    ) -> list[tuple[bytes, bytes]]:
        """The header lines httpx would send for this request, in its order."""
        parsed, _ = _parsed(url)
        merged = _merged(self._defaults, headers)
        if self._cookies:  # rare (a server set one): let httpx place the cookie, as it would
            given = dict(merged.values())
            return httpx.Request(method, parsed, headers=given, content=content, cookies=self._cookies).headers.raw
        lines = [(key.encode("ascii"), value.encode("ascii")) for key, value in merged.values()]
        names = merged.keys()
        sized = "content-length" in names or "transfer-encoding" in names
        if content and not sized:
            lines.append((b"Content-Length", str(len(content)).encode("ascii")))
        elif not content and method in _BODY_METHODS and not sized:
            lines.insert(0, (b"Content-Length", b"0"))
        if parsed.host and "host" not in names:
            lines.insert(0, (b"Host", parsed.netloc))
        return lines

    def build_request(
        self, method: str, url: str, *, headers: Mapping[str, str], content: bytes | None = None
    ) -> Request:
        """The request httpx would send (raises ``httpx.InvalidURL``, or ``ValueError`` for a header that is not
        ASCII, as ``httpx.AsyncClient.build_request`` does)."""
        lines = self.request_headers(method, url, headers, content)
        parsed, origin = _parsed(url)
        return Request(method, parsed, origin, parsed.raw_path, lines, content or b"", self._timeouts)

    async def send(self, request: Request) -> Response:
        """Send the request and return the response with its body unread (close it)."""
        with _httpx_errors():
            raw = await self._pool.handle_async_request(request)
        response = Response(raw)
        if "set-cookie" in response.headers:
            self._keep_cookies(request, raw)
        return response

    @asynccontextmanager
    async def stream(self, method: str, url: str, *, headers: Mapping[str, str]) -> AsyncIterator[Response]:
        response = await self.send(self.build_request(method, url, headers=headers))
        try:
            yield response
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        with _httpx_errors():
            await self._pool.aclose()

    def _keep_cookies(self, request: Request, raw: Answer) -> None:
        if self._cookies is None:
            self._cookies = httpx.Cookies()
        sent = httpx.Request(request.method, request.url)
        self._cookies.extract_cookies(httpx.Response(raw.status, headers=raw.headers, request=sent))


def _by_lower(headers: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    return {name.lower(): (name, value) for name, value in headers.items()}


def _merged(base: dict[str, tuple[str, str]], update: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """httpx's ``Headers.update``: a name already present (any case) is dropped and the new one appended; by lower-
    case name, each with its name as given and its value."""
    merged = dict(base)
    for key, value in update.items():
        lower = key.lower()
        merged.pop(lower, None)
        merged[lower] = (key, value)
    return merged
