"""The scan's HTTP/1.1 connection reads every answer as httpcore's (h11 underneath) reads it: the same status,
headers and body, or the same error with the same message; and it sends what h11 sends."""

from __future__ import annotations

import asyncio

import anyio
import h11
import httpcore
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scanner.mcp.transports.http11 import Connection, Request, encode_request

ORIGIN = ("http", "127.0.0.1", 8000)
TIMEOUTS = {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}
HEADERS = [(b"Host", b"127.0.0.1:8000"), (b"Accept", b"*/*"), (b"Content-Length", b"2")]


class Wire:
    """A network stream that answers with the given pieces, one per read, then the connection's end; it keeps
    what was written to it. Lets one answer's bytes, cut the same way, reach both parsers."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)
        self.written = b""
        self.closed = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        if len(piece) > max_bytes:
            self.pieces.insert(0, piece[max_bytes:])
        return piece[:max_bytes]

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.written += buffer

    async def aclose(self) -> None:
        self.closed = True

    def get_extra_info(self, info: str) -> object:
        return False if info == "is_readable" else None


async def _ours(pieces: list[bytes], method: str) -> tuple[object, ...]:
    wire = Wire(pieces)
    connection = Connection(ORIGIN, wire, keepalive_expiry=5.0)
    request = Request(method, None, ORIGIN, b"/mcp", HEADERS, b"{}", TIMEOUTS)
    try:
        answer = await connection.exchange(request)
        body = b"".join([piece async for piece in answer.stream])
        await answer.aclose()
    except httpcore.ProtocolError as exc:
        return (type(exc).__name__, str(exc), wire.closed)
    return (answer.status, answer.headers, body, connection.is_available(), wire.written)


async def _httpcores(pieces: list[bytes], method: str) -> tuple[object, ...]:
    wire = Wire(pieces)
    connection = httpcore.AsyncHTTP11Connection(origin=httpcore.Origin(b"http", b"127.0.0.1", 8000), stream=wire)
    url = httpcore.URL(scheme=b"http", host=b"127.0.0.1", port=8000, target=b"/mcp")
    request = httpcore.Request(method, url, headers=HEADERS, content=b"{}", extensions={"timeout": TIMEOUTS})
    try:
        response = await connection.handle_async_request(request)
        body = b"".join([piece async for piece in response.stream])  # type: ignore[union-attr]
        await response.aclose()
    except httpcore.ProtocolError as exc:
        return (type(exc).__name__, str(exc), wire.closed)
    return (response.status, response.headers, body, connection.is_available(), wire.written)


def both(pieces: list[bytes], method: str = "POST") -> tuple[tuple[object, ...], tuple[object, ...]]:
    return anyio.run(_ours, pieces, method), anyio.run(_httpcores, pieces, method)


OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
CASES = {
    "length": [OK_HEAD + b"Content-Length: 5\r\n\r\nhello"],
    "length, cut in pieces": [OK_HEAD[:7], OK_HEAD[7:] + b"Content-Length: 5\r\n", b"\r\nhe", b"llo"],
    "length repeated alike": [OK_HEAD + b"Content-Length: 5\r\nContent-Length: 5, 5\r\n\r\nhello"],
    "length in conflict": [OK_HEAD + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello"],
    "length not a number": [OK_HEAD + b"Content-Length: five\r\n\r\nhello"],
    "length of 21 digits": [OK_HEAD + b"Content-Length: 100000000000000000000\r\n\r\nhello"],
    "length short, then closed": [OK_HEAD + b"Content-Length: 50\r\n\r\nhello"],
    "length zero": [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"],
    "chunked": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"],
    "chunked, cut in pieces": [
        OK_HEAD + b"Transfer-Encoding: Chunked\r\n\r\n5",
        b"\r\nhel",
        b"lo\r",
        b"\n0\r\nX-Trailer: yes\r\n",
        b"\r\n",
    ],
    "chunked with a bad trailer": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n"],
    "chunked, cut before the trailers": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"],
    "chunked, cut mid-chunk": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhel"],
    "chunked, cut in a chunk header": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5"],
    "chunked, cut in the trailers": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: y"],
    "chunked, bad footer": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n"],
    "chunked, footer cut": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r"],
    "chunked, bad header": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"],
    "chunked, header too long": [OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5;" + b"x" * 120_000],
    "chunked beats length": [OK_HEAD + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"],
    "gzip transfer coding": [OK_HEAD + b"Transfer-Encoding: gzip\r\n\r\nhello"],
    "two transfer codings": [OK_HEAD + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"],
    "no length: to the close": [b"HTTP/1.1 200 OK\r\n\r\nread ", b"until the end"],
    "HTTP/1.0": [b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"],
    "connection: close": [OK_HEAD + b"Connection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok"],
    "interim answers first": [
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: </a>\r\n\r\n"
        + OK_HEAD
        + b"Content-Length: 2\r\n\r\nok"
    ],
    "switching protocols": [b"HTTP/1.1 101 Switching\r\nUpgrade: x\r\n\r\nraw bytes"],
    "204 with a length": [b"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"],
    "304": [b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"],
    "no reason phrase": [b"HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n"],
    "bare line feeds": [b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nok"],
    "folded header": [OK_HEAD + b"X-Long: one\r\n  two\r\n\tthree\r\nContent-Length: 0\r\n\r\n"],
    "fold at the start": [b"HTTP/1.1 200 OK\r\n folded\r\nContent-Length: 0\r\n\r\n"],
    "header without a colon": [OK_HEAD + b"Content-Length 2\r\n\r\nok"],
    "space before the colon": [OK_HEAD + b"Content-Length : 2\r\n\r\nok"],
    "NUL in a value": [OK_HEAD + b"X-A: a\x00b\r\nContent-Length: 0\r\n\r\n"],
    "obs-text in a value": [OK_HEAD + b"X-A: caf\xe9 \xff\r\nContent-Length: 0\r\n\r\n"],
    "spaces around a value": [OK_HEAD + b"X-A: \t spaced \t \r\nContent-Length: 0\r\n\r\n"],
    "empty value": [OK_HEAD + b"X-A:\r\nContent-Length: 0\r\n\r\n"],
    "not HTTP": [b"SSH-2.0-OpenSSH_9.6\r\n\r\n"],
    "HTTP/2 preface": [b"\x00\x00\x12\x04\x00\x00\x00\x00\x00"],
    "starts with a blank line": [b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"],
    "starts with a space": [b" HTTP/1.1 200 OK\r\n"],
    "nothing": [],
    "half a head": [b"HTTP/1.1 200 OK\r\nContent-"],
    "head too long": [b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 20_000],
    "long head, in one read": [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + b"X-A: b\r\n" * 8_000 + b"\r\n"],
    "status of four digits": [b"HTTP/1.1 2000 OK\r\n\r\n"],
    "lower-case version": [b"http/1.1 200 OK\r\n\r\n"],
    "bytes after the answer": [OK_HEAD + b"Content-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n"],
}
# Where the scan does not use a connection again and httpcore would: bytes that follow an answer (httpcore reads
# them as the next answer's start; the scan closes the connection), and an answer read to the connection's end
# (httpcore leaves it idle until its next use finds the socket readable and drops it; the scan drops it at once).
DIFFERS_ONLY_IN_REUSE = {"bytes after the answer", "no length: to the close"}


@pytest.mark.parametrize("case", CASES)
def test_an_answer_reads_as_httpcore_reads_it(case):
    ours, httpcores = both(CASES[case])
    if case in DIFFERS_ONLY_IN_REUSE:
        assert ours[:3] == httpcores[:3] and (ours[3], httpcores[3]) == (False, True)
    else:
        assert ours == httpcores


def test_an_answer_to_head_has_no_body():
    ours, httpcores = both([OK_HEAD + b"Content-Length: 5\r\n\r\n"], method="HEAD")
    assert ours == httpcores and ours[2] == b""


answer_bytes = st.lists(
    st.sampled_from(
        [
            b"HTTP/1.1 200 OK\r\n",
            b"HTTP/1.0 201 Created\r\n",
            b"HTTP/1.1 100 Continue\r\n",
            b"Content-Length: 3\r\n",
            b"Content-Length: 3, 4\r\n",
            b"Transfer-Encoding: chunked\r\n",
            b"Connection: close\r\n",
            b"X-A: b\r\n",
            b" folded\r\n",
            b"\r\n",
            b"\n",
            b"3\r\nabc\r\n",
            b"0\r\n\r\n",
            b"abc",
            b"\x00",
            b"\xff",
            b":",
        ]
    ),
    max_size=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=answer_bytes, cuts=st.lists(st.integers(min_value=1, max_value=40), max_size=6))
def test_any_answer_reads_as_httpcore_reads_it(parts, cuts):
    """Answers put together from pieces of valid and broken HTTP, cut anywhere: the same result both ways."""
    data = b"".join(parts)
    pieces, start = [], 0
    for cut in cuts:
        if start < len(data):
            pieces.append(data[start : start + cut])
            start += cut
    if start < len(data):
        pieces.append(data[start:])
    ours, httpcores = both(pieces)
    if ours[:3] == httpcores[:3] and ours != httpcores and len(ours) == 5:
        assert (ours[3], httpcores[3]) == (False, True)  # bytes left after the answer: closed, not used again
    else:
        assert ours == httpcores


REQUEST_HEADERS = [
    [(b"Host", b"a"), (b"X-A", b"b")],
    [(b"X-A", b"b"), (b"host", b"a"), (b"Content-Length", b"2")],
    [(b"Host", b"a"), (b"Content-Length", b"2, 2"), (b"content-length", b"2")],
    [(b"Host", b"a"), (b"Transfer-Encoding", b"Chunked")],
    [(b"Host", b"a"), (b"Transfer-Encoding", b"gzip")],
    [(b"Host", b"a"), (b"Content-Length", b"3")],
    [(b"Host", b"a"), (b"Content-Length", b"1")],
    [(b"Host", b"a"), (b"Content-Length", b"x")],
    [(b"X-A", b"b")],
    [(b"Host", b"a"), (b"Host", b"b")],
    [(b"Host", b"a"), (b"Bad Name", b"b")],
    [(b"Host", b"a"), (b"X-A", b"line\r\nInjected: yes")],
    [(b"Host", b"a"), (b"X-A", b" padded")],
    [(b"Host", b"a"), (b"Connection", b"close")],
]


@pytest.mark.parametrize("headers", REQUEST_HEADERS)
@pytest.mark.parametrize("content", [b"{}", b""])
def test_a_request_is_sent_as_h11_sends_it_or_refused_as_h11_refuses_it(headers, content):
    request = Request("POST", None, ORIGIN, b"/mcp?x=1", headers, content, TIMEOUTS)
    try:
        ours: object = encode_request(request)[0]
    except httpcore.LocalProtocolError as exc:
        ours = str(exc)
    connection = h11.Connection(our_role=h11.CLIENT)
    try:
        theirs: object = connection.send(h11.Request(method="POST", target=b"/mcp?x=1", headers=headers))
        if content:
            theirs += connection.send(h11.Data(data=content))  # type: ignore[operator]
        theirs += connection.send(h11.EndOfMessage())  # type: ignore[operator]
    except h11.LocalProtocolError as exc:
        theirs = str(exc)
    assert ours == theirs


def test_a_cancelled_request_closes_its_connection():
    """A scan cancelled while it waits for an answer (its deadline) leaves no socket open."""

    class Silent(Wire):
        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            await asyncio.sleep(3600)
            return b""

    async def main() -> bool:
        wire = Silent([])
        connection = Connection(ORIGIN, wire, keepalive_expiry=5.0)
        request = Request("POST", None, ORIGIN, b"/mcp", HEADERS, b"{}", TIMEOUTS)
        with anyio.move_on_after(0.05):
            await connection.exchange(request)
        return wire.closed and connection.is_closed()

    assert anyio.run(main)
