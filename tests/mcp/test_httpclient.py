"""The scan's HTTP client sends what httpx would send and reads answers as httpx would, on httpcore's connections."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator

import anyio
import h11
import httpcore
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scanner.mcp import ClientLimits
from scanner.mcp.failures import ScanFailure
from scanner.mcp.transports import http
from scanner.mcp.transports.http11 import Request, encode_request
from scanner.mcp.transports.httpclient import Headers, HttpClient
from scanner.models import Outcome, Transport
from tests.mcp.helpers import http_entry, names, timed_scan

LIMITS = ClientLimits(timeout=20.0, connect_timeout=10.0, shutdown_grace=1.0)


def twin_httpx_client() -> httpx.AsyncClient:
    """The httpx client the scan used before: the same defaults, the same header the scan adds."""
    return httpx.AsyncClient(trust_env=False, follow_redirects=False, headers={"Accept-Encoding": "gzip, deflate"})


CASES = [
    ("POST", "http://127.0.0.1:8000/s/mcp", {"Accept": "application/json, text/event-stream"}, b"{}"),
    ("POST", "http://127.0.0.1:8000/s/mcp?x=1&y=%20", {"Content-Type": "application/json", "X-K": "v"}, b"[]"),
    ("POST", "https://example.com:443/mcp", {"accept-encoding": "identity", "Authorization": "Bearer t"}, b""),
    ("POST", "http://example.com/mcp", {}, None),
    ("DELETE", "http://[::1]:8080/s/mcp", {"Mcp-Session-Id": "abc", "MCP-Protocol-Version": "2025-11-25"}, None),
    ("GET", "https://bücher.example/ä b/.well-known/oauth-protected-resource", {"Accept": "application/json"}, None),
    ("GET", "http://example.com:80/sse", {"Host": "override.example", "accept": "text/event-stream"}, None),
    ("POST", "http://example.com/mcp", {"Content-Length": "2", "User-Agent": "mine"}, b"{}"),
]


def h11_bytes(method: str, target: bytes, headers: list[tuple[bytes, bytes]], content: bytes | None) -> bytes:
    """What httpcore's HTTP/1.1 connection writes for a request: h11's serialisation of it."""
    connection = h11.Connection(our_role=h11.CLIENT)
    data = connection.send(h11.Request(method=method, target=target, headers=headers))
    if content:
        data += connection.send(h11.Data(data=content))
    return data + connection.send(h11.EndOfMessage())


@pytest.mark.parametrize(("method", "url", "headers", "content"), CASES)
def test_request_headers_are_httpxs(method, url, headers, content):
    """The scan's request is httpx's, byte for byte on the wire, to the same origin."""
    ours = http.make_client(LIMITS)
    expected = twin_httpx_client().build_request(method, url, headers=headers, content=content)
    request = ours.build_request(method, url, headers=headers, content=content)
    assert request.headers == expected.headers.raw
    wire, _ = encode_request(request)
    assert wire == h11_bytes(method, expected.url.raw_path, expected.headers.raw, content)
    origin = httpcore.URL(
        scheme=expected.url.raw_scheme, host=expected.url.raw_host, port=expected.url.port, target=b"/"
    ).origin
    assert request.origin == (origin.scheme.decode(), origin.host.decode(), origin.port)


def test_a_header_that_is_not_ascii_cannot_be_built_as_with_httpx():
    with pytest.raises(UnicodeEncodeError):
        twin_httpx_client().build_request("POST", "http://example.com/", headers={"X": "é"})
    with pytest.raises(UnicodeEncodeError):
        http.make_client(LIMITS).build_request("POST", "http://example.com/", headers={"X": "é"})


raw_headers = st.lists(
    st.tuples(
        st.sampled_from(
            [b"Content-Type", b"content-type", b"Set-Cookie", b"X-\xe9", b"Retry-After", b"mcp-session-id"]
        ),
        st.binary(max_size=12),
    ),
    max_size=6,
)


@given(raw=raw_headers, name=st.sampled_from(["content-type", "Content-Type", "SET-COOKIE", "retry-after", "nope"]))
def test_response_headers_read_as_httpx_reads_them(raw, name):
    ours, theirs = Headers.from_raw(raw), httpx.Headers(raw)
    assert ours.get(name, "") == theirs.get(name, "")
    assert (name in ours) == (name in theirs)


class FailingPool:
    """A pool whose every request fails as httpcore fails (a fault a loopback server cannot be made to cause)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        raise self.error

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(
    ("error", "outcome", "detail"),
    [
        (httpcore.ReadTimeout("timed out"), Outcome.TIMEOUT, "HTTP ReadTimeout"),
        (httpcore.PoolTimeout(""), Outcome.TIMEOUT, "HTTP PoolTimeout"),
        (httpcore.ConnectError("refused"), Outcome.CONNECT_ERROR, "cannot connect: refused"),
        (httpcore.LocalProtocolError("bad header"), Outcome.CONNECT_ERROR, "request cannot be sent"),
        (httpcore.RemoteProtocolError("junk"), Outcome.INVALID_RESPONSE, "not valid HTTP: junk"),
        (httpcore.ReadError("reset"), Outcome.CONNECT_ERROR, "HTTP transport error: reset"),
    ],
)
def test_httpcore_errors_end_as_the_httpx_errors_did(error, outcome, detail):
    async def attempt() -> ScanFailure:
        client = HttpClient(timeout=httpx.Timeout(1.0), ssl_context=None, default_headers={}, pool=FailingPool(error))
        with pytest.raises(ScanFailure) as caught:
            async with http.send(client, "POST", "http://127.0.0.1:9/mcp", LIMITS, headers={}, content=b"{}"):
                pass
        return caught.value

    failure = anyio.run(attempt)
    assert failure.outcome is outcome
    assert failure.detail.startswith(detail)


def test_a_stream_cut_mid_body_is_the_httpx_read_error():
    class CutPool(FailingPool):
        async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
            async def body() -> AsyncIterator[bytes]:
                yield b'{"jsonrpc": "2.0",'
                raise httpcore.RemoteProtocolError("peer closed connection without sending complete message body")

            return httpcore.Response(200, headers=[(b"Content-Type", b"application/json")], content=body())

    async def attempt() -> ScanFailure:
        client = HttpClient(
            timeout=httpx.Timeout(1.0), ssl_context=None, default_headers={}, pool=CutPool(ValueError())
        )
        with pytest.raises(ScanFailure) as caught:
            async with http.send(client, "POST", "http://127.0.0.1:9/mcp", LIMITS, headers={}, content=b"{}") as r:
                await http.read_capped(r, 1024)
        return caught.value

    failure = anyio.run(attempt)
    assert failure.outcome is Outcome.CONNECT_ERROR
    assert "peer closed connection" in failure.detail


def test_a_servers_affinity_cookie_is_sent_back(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/sticky"), Transport.STREAMABLE_HTTP), LIMITS)
    assert result.outcome is Outcome.OK, result.detail
    plain, _ = timed_scan(http_entry(hostile_http.url("/ok"), Transport.STREAMABLE_HTTP), LIMITS)
    assert names(result) == names(plain) and names(plain)


class HttpcorePool:
    """httpcore's own connection pool (h11 underneath) behind the scan's client: the reference the scan's own
    connections (:mod:`scanner.mcp.transports.http11`) are held against, on the same server."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._pool = httpcore.AsyncConnectionPool(ssl_context=ssl_context, network_backend=httpcore.AnyIOBackend())

    async def handle_async_request(self, request: Request) -> httpcore.Response:
        scheme, host, port = request.origin
        url = httpcore.URL(scheme=scheme.encode(), host=host.encode(), port=port, target=request.target)
        sent = httpcore.Request(
            request.method,
            url,
            headers=request.headers,
            content=request.content,
            extensions={"timeout": request.timeouts},
        )
        return await self._pool.handle_async_request(sent)

    async def aclose(self) -> None:
        await self._pool.aclose()


async def _answer(client: HttpClient, method: str, url: str, content: bytes) -> tuple[str, ...]:
    """The status and body of one request's answer, or the name and message of the error it ended in."""
    try:
        response = await client.send(client.build_request(method, url, headers={}, content=content))
        try:
            body = b"".join([piece async for piece in response.aiter_raw()])
            return (str(response.status_code), body.decode())
        finally:
            await response.aclose()
    except httpx.HTTPError as exc:
        return (type(exc).__name__, str(exc))


async def _raw_server(behaviour: str, started: anyio.Event, port: list[int], done: anyio.Event) -> None:
    """A TCP server on loopback that reads one request and then does ``behaviour``."""
    import asyncio
    import socket

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b'{"ok": true}'
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        if behaviour == "answer":
            writer.write(head + body)
            await writer.drain()
        elif behaviour == "half body":
            writer.write(head + body[:4])
            await writer.drain()
            await done.wait()  # then say nothing more: the client's read timeout ends it
        elif behaviour == "silent":
            await done.wait()
        elif behaviour == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port.append(server.sockets[0].getsockname()[1])
    started.set()
    async with server:
        await done.wait()


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("behaviour", ["answer", "half body", "silent", "close", "reset"])
def test_the_lean_network_stream_ends_as_httpcores_own(behaviour, method):
    """The scan's streams (asyncio timers instead of anyio cancel scopes, a request's writes held until the
    answer is read) give what httpcore's anyio streams give: the same answer, or the same error with the same
    message, for a server that answers, stalls mid-body, never answers, closes or resets, after a request with a
    body or without."""

    async def through(pool: HttpcorePool | None) -> tuple[str, str]:
        started, done, port = anyio.Event(), anyio.Event(), []
        async with anyio.create_task_group() as group:
            group.start_soon(_raw_server, behaviour, started, port, done)
            await started.wait()
            timeout = httpx.Timeout(30.0, read=0.3)
            client = HttpClient(timeout=timeout, ssl_context=None, default_headers={}, pool=pool)
            try:
                url = f"http://127.0.0.1:{port[0]}/mcp"
                result = await _answer(client, method, url, b'{"jsonrpc": "2.0"}' * 50)
            finally:
                await client.aclose()
                done.set()
        return result

    ours = anyio.run(through, None)
    httpcores = anyio.run(through, HttpcorePool())
    assert ours == httpcores, (ours, httpcores)
    expected = {"answer": "200", "half body": "ReadTimeout", "silent": "ReadTimeout", "close": "RemoteProtocolError"}
    assert ours[0] == expected.get(behaviour, ours[0]), ours


@pytest.mark.parametrize("size", [2_000, 200_000])
def test_a_request_leaves_in_one_write(size, monkeypatch):
    """httpcore writes a request's head and body apart; the scan's stream sends them together, once, whatever
    the body's size, and the server reads the whole request."""
    from anyio._backends import _asyncio

    sent: list[bytes] = []
    real_send = _asyncio.SocketStream.send

    async def counted(self, item: bytes) -> None:
        sent.append(item)
        await real_send(self, item)

    monkeypatch.setattr(_asyncio.SocketStream, "send", counted)
    body = b"x" * size
    received: list[bytes] = []

    async def main() -> str:
        import asyncio

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            received.append(head + await reader.readexactly(size))
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = HttpClient(timeout=httpx.Timeout(30.0), ssl_context=None, default_headers={})
        try:
            request = client.build_request("POST", f"http://127.0.0.1:{port}/mcp", headers={}, content=body)
            response = await client.send(request)
            await response.aclose()
            return str(response.status_code)
        finally:
            await client.aclose()
            server.close()

    assert anyio.run(main) == "204"
    assert len(sent) == 1, [len(piece) for piece in sent]
    assert sent[0].endswith(b"\r\n\r\n" + body) and received == sent


@pytest.mark.parametrize("server", ["keep-alive", "connection: close", "closes when idle"])
def test_connections_are_kept_and_renewed_as_httpcores_pool_does(server):
    """The scan keeps its connections itself instead of in httpcore's pool: the same answers over as many
    connections as the pool opens, for a server that keeps them alive, one that says ``Connection: close`` and
    one that closes them unannounced once answered; a request held open (a legacy SSE stream) gets a connection
    of its own while the next ones are sent; closing the client closes every connection."""
    import asyncio

    async def through(pool: HttpcorePool | None) -> tuple[list[str], int]:
        accepted: list[asyncio.StreamWriter] = []
        closed = asyncio.Event()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(writer)
            try:
                while head := await reader.readuntil(b"\r\n\r\n"):
                    sized = [line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
                    await reader.readexactly(int(sized[0].split(b":")[1]) if sized else 0)
                    body = b"answer to " + head.split(b" ")[1]
                    close = server == "connection: close"
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s"
                        % (len(body), b"Connection: close\r\n" if close else b"", body)
                    )
                    await writer.drain()
                    if close or server == "closes when idle":
                        break
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            writer.close()
            if all(each.is_closing() for each in accepted):
                closed.set()

        listener = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        client = HttpClient(timeout=httpx.Timeout(30.0), ssl_context=None, default_headers={}, pool=pool)
        answers: list[str] = []

        async def ask(path: str) -> None:
            request = client.build_request("POST", f"http://127.0.0.1:{port}{path}", headers={}, content=b"{}")
            response = await client.send(request)
            answers.append(b"".join([piece async for piece in response.aiter_raw()]).decode())
            await response.aclose()
            if server == "closes when idle":
                await anyio.sleep(0.05)  # the server's close reaches the client before the next request

        try:
            for path in ("/a", "/b"):
                await ask(path)
            held = await client.send(client.build_request("GET", f"http://127.0.0.1:{port}/held", headers={}))
            answers.append(b"".join([piece async for piece in held.aiter_raw()]).decode())
            await ask("/c")
            await held.aclose()
            await ask("/d")
        finally:
            await client.aclose()
        with anyio.fail_after(10):
            await closed.wait()  # every connection closed
        listener.close()
        return answers, len(accepted)

    ours = anyio.run(through, None)
    pools = anyio.run(through, HttpcorePool())
    assert ours == pools
    assert ours[0] == ["answer to /a", "answer to /b", "answer to /held", "answer to /c", "answer to /d"]
    assert ours[1] == {"keep-alive": 2, "connection: close": 5, "closes when idle": 5}[server]


@pytest.mark.parametrize("trusted", [True, False])
def test_https_connects_as_httpcore_does(trusted):
    """Over TLS (a loopback server with a certificate of a test CA): the same answer when the CA is trusted, the same
    refusal when it is not, and HTTP/1.1 offered and chosen by ALPN, as httpcore's connection does."""
    import asyncio

    import trustme

    authority = trustme.CA()
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(served)
    served.set_alpn_protocols(["h2", "http/1.1"])
    trusting = ssl.create_default_context()
    if trusted:
        authority.configure_trust(trusting)

    async def through(pool: HttpcorePool | None) -> tuple[str, ...]:
        chosen: list[str | None] = []

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            chosen.append(writer.get_extra_info("ssl_object").selected_alpn_protocol())
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(2)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
                await writer.drain()
            writer.close()

        asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)  # the refused handshake
        listener = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=served)
        port = listener.sockets[0].getsockname()[1]
        client = HttpClient(timeout=httpx.Timeout(30.0), ssl_context=trusting, default_headers={}, pool=pool)
        try:
            result = await _answer(client, "POST", f"https://localhost:{port}/mcp", b"{}")
            if result[0] == "200":
                result = (*result, str(chosen))
        finally:
            await client.aclose()
            listener.close()
        return result

    ours = anyio.run(through, None)
    assert ours == anyio.run(through, HttpcorePool(ssl_context=trusting))
    if trusted:
        assert ours == ("200", "secret", "['http/1.1']")
    else:
        assert ours[0] == "ConnectError" and "CERTIFICATE_VERIFY_FAILED" in ours[1], ours
