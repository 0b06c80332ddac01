"""One HTTP/1.1 connection of the scan's client: a request written in one send, its answer read and framed here.

httpcore's HTTP/1.1 connection drives h11's general state machine (events, a validation pass over headers the
client built itself, locks and traces around each step): more than a third of an unchanged rescan's CPU
(``docs/benchmarks.md``, *Issue #47, fifth session*) for five small exchanges per server. This module does the one
exchange a scan makes, a request and then its whole answer, with h11's rules and h11's and httpcore's error
messages (``tests/mcp/test_http11.py`` holds every case beside h11's own parse of the same bytes):

- a request's header names must be tokens and its values field values, with one ``Host``; a declared
  ``Content-Length`` must match the body, and ``Transfer-Encoding: chunked`` chunks it
  (:class:`httpcore.LocalProtocolError`, as h11 raises them);
- an answer's head: lines up to the first blank line (``\\n`` or ``\\r\\n``), at most :data:`MAX_HEAD` bytes
  while it is incomplete; the status line and each header line matched by h11's own patterns, obsolete line folding
  joined; ``Content-Length`` values agreed and digits only, ``Transfer-Encoding`` only ``chunked``; interim (1xx)
  answers skipped, a 101 refused (the scan never asks to switch protocols); anything else
  :class:`httpcore.RemoteProtocolError`;
- the body's framing (RFC 9112 6.3): none after ``HEAD``, 204 or 304; chunked (trailers read and checked);
  ``Content-Length``; else up to the connection's close;
- the connection is used again only when the whole answer was read, both sides said nothing of ``close``, the
  answer was HTTP/1.1 and nothing followed it on the wire (httpcore would keep bytes that follow an answer and
  read them as the next one's start; here the connection is closed instead).

Reads and writes go through the client's network stream (:class:`scanner.mcp.transports.httpclient._Stream`), whose
errors are httpcore's. Everything a server sends is capped by the caller (:mod:`scanner.mcp.transports.http`).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpcore

READ_BYTES = 64 * 1024
# httpcore's bound on an answer's head (h11's max_incomplete_event_size), and on a chunk's header and trailers.
MAX_HEAD = 100 * 1024
_CONTENT_LENGTH_DIGITS = 20

# h11's grammar (h11/_abnf.py), the same patterns matched in full.
_TOKEN = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_FIELD_VCHAR = rb"[^\x00\s]"
_FIELD_VALUE = rb"(?:" + _FIELD_VCHAR + rb"+(?:[ \t]+" + _FIELD_VCHAR + rb"+)*)?"
_NAME = re.compile(_TOKEN)  # a header name, and a method
_VALUE = re.compile(_FIELD_VALUE)
_HEADER_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*(" + _FIELD_VALUE + rb")[ \t]*")
_STATUS_LINE = re.compile(rb"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: ((?:[ \t]|" + _FIELD_VCHAR + rb")*))?")
_CHUNK_HEADER = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*\r\n")
_DIGITS = re.compile(rb"[0-9]+")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_BLANK_LINE = re.compile(rb"\n\r?\n")
_FOLD = re.compile(rb"[ \t]+")
_CRLF = b"\r\n"
_INCOMPLETE_CHUNKED = "peer closed connection without sending complete message body (incomplete chunked read)"
_NO_ANSWER = "Server disconnected without sending a response."

Origin = tuple[str, str, int]
"""(scheme, host, port): what a connection can serve."""


class Request:
    """What one request sends: its head's parts, its body and its timeouts (httpx's ``Timeout.as_dict()``)."""

    __slots__ = ("content", "headers", "method", "origin", "target", "timeouts", "url")

    def __init__(
        self,
        method: str,
        url: Any,
        origin: Origin,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        content: bytes,
        timeouts: dict[str, float | None],
    ) -> None:
        self.method = method
        self.url = url  # httpx.URL: read back for cookies
        self.origin = origin
        self.target = target
        self.headers = headers
        self.content = content
        self.timeouts = timeouts


def _h11_error(message: str) -> httpcore.RemoteProtocolError:
    """An answer refused in h11's or httpcore's own words, verbatim (so an outcome reads as it did with them: the
    scan's detail quotes them after its own "not valid HTTP: ")."""
    return httpcore.RemoteProtocolError(message)


def encode_request(request: Request) -> tuple[bytes, bool]:
    """The request's bytes, as h11 writes them (``Host`` first), and whether it leaves the connection open.

    Raises :class:`httpcore.LocalProtocolError` with h11's message where h11 refuses to send it.
    """
    method = request.method.encode("ascii")
    lines: list[bytes] = [b"%s %s HTTP/1.1\r\n" % (method, request.target)]
    hosts: list[bytes] = []
    framing = _Framing(httpcore.LocalProtocolError)
    for name, value in request.headers:
        if not _NAME.fullmatch(name):
            raise httpcore.LocalProtocolError(f"Illegal header name {name!r}")
        if not _VALUE.fullmatch(value):
            raise httpcore.LocalProtocolError(f"Illegal header value {value!r}")
        if name.lower() == b"host":
            hosts.append(b"%s: %s\r\n" % (name, value))
        elif (sent := framing.read(name, value)) is not None:
            lines.append(b"%s: %s\r\n" % (name, sent))
    if not hosts:
        raise httpcore.LocalProtocolError("Missing mandatory Host: header")
    if len(hosts) > 1:
        raise httpcore.LocalProtocolError("Found multiple Host: headers")
    if not _NAME.fullmatch(method):
        raise httpcore.LocalProtocolError("Illegal method characters")
    if not _TARGET.fullmatch(request.target):
        raise httpcore.LocalProtocolError("Illegal target characters")
    lines.insert(1, hosts[0])
    lines.append(b"\r\n")
    body = request.content
    if framing.chunked:
        lines.append((b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n")
    else:
        length = int(framing.declared) if framing.declared is not None else 0
        if len(body) > length:
            raise httpcore.LocalProtocolError("Too much data for declared Content-Length")
        if len(body) < length:
            raise httpcore.LocalProtocolError("Too little data for declared Content-Length")
        lines.append(body)
    return b"".join(lines), framing.keep_alive


def _content_length(value: bytes, seen: bytes | None, error: type[Exception]) -> bytes:
    lengths = {length.strip() for length in value.split(b",")}
    if len(lengths) != 1:
        raise error("conflicting Content-Length headers")
    value = lengths.pop()
    if not _DIGITS.fullmatch(value) or len(value) > _CONTENT_LENGTH_DIGITS:
        raise error("bad Content-Length")
    if seen is not None and seen != value:
        raise error("conflicting Content-Length headers")
    return value


def _comma_values(value: bytes) -> list[bytes]:
    return [piece.strip().lower() for piece in value.split(b",")]


class _Framing:
    """What a message's headers say of its body and its connection, read as h11 reads them (``error``: the
    exception for a refusal, local for a request, remote for an answer)."""

    __slots__ = ("chunked", "declared", "error", "keep_alive")

    def __init__(self, error: type[Exception]) -> None:
        self.error = error
        self.declared: bytes | None = None
        self.chunked = False
        self.keep_alive = True

    def read(self, name: bytes, value: bytes) -> bytes | None:
        """The header's value as h11 keeps it (a length stripped, a coding lower-cased), or None for a length
        already given (h11 keeps the first)."""
        lower = name.lower()
        if lower == b"content-length":
            value = _content_length(value, self.declared, self.error)
            if self.declared is not None:
                return None
            self.declared = value
        elif lower == b"transfer-encoding":
            if self.chunked:
                raise self.error("multiple Transfer-Encoding headers")
            value = value.lower()
            if value != b"chunked":
                raise self.error("Only Transfer-Encoding: chunked is supported")
            self.chunked = True
        elif lower == b"connection" and b"close" in _comma_values(value):
            self.keep_alive = False
        return value


class _Head:
    __slots__ = ("chunked", "headers", "keep_alive", "length", "status")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], keep_alive: bool) -> None:
        self.status = status
        self.headers = headers
        self.keep_alive = keep_alive
        self.chunked = False
        self.length: int | None = None


def _header_lines(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    """h11's reading of header lines: folded lines joined, each ``name: value`` matched in full."""
    joined: list[bytes] = []
    for line in lines:
        fold = _FOLD.match(line)
        if fold:
            if not joined:
                raise _h11_error("continuation line at start of headers")
            joined[-1] = joined[-1] + b" " + line[fold.end() :]
        else:
            joined.append(line)
    headers = []
    for line in joined:
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            raise _h11_error(f"illegal header line: {bytearray(line)!r}")
        headers.append((match[1], match[2]))
    return headers


def parse_head(lines: list[bytes], method: str) -> _Head:
    """The answer's status, its headers (values as h11 normalises them) and its body's framing."""
    if not lines:
        raise _h11_error("no response line received")
    status_line = _STATUS_LINE.fullmatch(lines[0])
    if status_line is None:
        raise _h11_error(f"illegal status line: {bytearray(lines[0])!r}")
    status = int(status_line[2])
    framing = _Framing(httpcore.RemoteProtocolError)
    headers = [
        (name, sent) for name, value in _header_lines(lines[1:]) if (sent := framing.read(name, value)) is not None
    ]
    head = _Head(status, headers, framing.keep_alive and status_line[1] >= b"1.1")
    if status < 200:
        return head
    if status in (204, 304) or method == "HEAD":
        head.length = 0
    elif framing.chunked:
        head.chunked = True
    elif framing.declared is not None:
        head.length = int(framing.declared)
    else:
        head.keep_alive = False  # read to the connection's close
    return head


_IDLE, _ACTIVE, _CLOSED = 0, 1, 2


class Connection:
    """One connection to one origin, serving one exchange at a time; closed on any fault."""

    def __init__(self, origin: Origin, stream: Any, keepalive_expiry: float) -> None:
        self.origin = origin
        self._stream = stream
        self._keepalive_expiry = keepalive_expiry
        self._expire_at: float | None = None
        self._buffer = bytearray()
        self._eof = False
        self._state = _ACTIVE  # its maker's, for the first request

    def is_available(self) -> bool:
        return self._state == _IDLE

    def is_closed(self) -> bool:
        return self._state == _CLOSED

    def has_expired(self) -> bool:
        """Idle past the keep-alive expiry, or closed by the server (an idle socket that reads: its close)."""
        if self._state != _IDLE:
            return False
        expired = self._expire_at is not None and time.monotonic() > self._expire_at
        return expired or bool(self._stream.get_extra_info("is_readable"))

    def take(self) -> None:
        self._state = _ACTIVE
        self._expire_at = None

    async def exchange(self, request: Request) -> Answer:
        """Send the request and read the answer's head (its body is read from the answer). On any fault, or a
        cancellation, the connection is closed and the fault raised."""
        try:
            data, keep_alive = encode_request(request)
            # As httpcore: a failed write is passed over and the answer read (a server may answer and close before
            # it reads the whole request).
            with contextlib.suppress(httpcore.WriteError):
                await self._stream.write(data, timeout=request.timeouts.get("write"))
            timeout = request.timeouts.get("read")
            head = parse_head(await self._head_lines(timeout, answer=True), request.method)
            while head.status < 200:  # an interim answer: the final one follows
                if head.status == 101:  # the scan never asks to switch protocols
                    raise _h11_error("Received server _SWITCH_UPGRADE event without a pending proposal")
                head = parse_head(await self._head_lines(timeout, answer=True), request.method)
            return Answer(self, head, keep_alive and head.keep_alive, timeout)
        except BaseException:
            await self.close_shielded()
            raise

    async def _fill(self, timeout: float | None) -> bool:
        """Read more into the buffer; False at the connection's end."""
        if self._eof:
            return False
        data = await self._stream.read(READ_BYTES, timeout=timeout)
        if not data:
            self._eof = True
            return False
        self._buffer += data
        return True

    async def _head_lines(self, timeout: float | None, *, answer: bool) -> list[bytes]:
        """The lines up to the first blank line, as h11's receive buffer extracts them (an answer's head, or a
        chunked body's trailers)."""
        buffer = self._buffer
        searched = 0
        while True:
            if buffer[:1] == b"\n" or buffer[:2] == _CRLF:
                del buffer[: 1 if buffer[:1] == b"\n" else 2]
                return []
            match = _BLANK_LINE.search(buffer, searched)
            if match is not None:
                end = match.end()
                lines = bytes(buffer[:end]).split(b"\n")[:-2]
                del buffer[:end]
                return [line[:-1] if line.endswith(b"\r") else line for line in lines]
            if answer and buffer and buffer[0] < 0x21:
                raise _h11_error("illegal request line")  # h11's words for an answer that starts with a control byte
            if len(buffer) > MAX_HEAD:
                raise _h11_error("Receive buffer too long")
            searched = max(0, len(buffer) - 2)
            if not await self._fill(timeout):
                raise _h11_error(_NO_ANSWER if answer else self._cut())

    def _cut(self) -> str:
        """h11's words for a chunked body the connection's end cut: part of a line read, or nothing more."""
        return "peer unexpectedly closed connection" if self._buffer else _INCOMPLETE_CHUNKED

    async def _some(self, at_most: int, timeout: float | None) -> bytes:
        """Up to ``at_most`` bytes of the body, at least one; b"" at the connection's end."""
        if not self._buffer and not await self._fill(timeout):
            return b""
        piece = bytes(self._buffer[:at_most])
        del self._buffer[:at_most]
        return piece

    async def body(self, head: _Head, timeout: float | None) -> AsyncIterator[bytes]:
        if head.chunked:
            async for piece in self._chunked(timeout):
                yield piece
        elif head.length is None:  # to the connection's close
            while piece := await self._some(READ_BYTES, timeout):
                yield piece
        else:
            remaining = head.length
            while remaining:
                piece = await self._some(remaining, timeout)
                if not piece:
                    raise _h11_error(
                        "peer closed connection without sending complete message body "
                        f"(received {head.length - remaining} bytes, expected {head.length})"
                    )
                remaining -= len(piece)
                yield piece

    async def _chunked(self, timeout: float | None) -> AsyncIterator[bytes]:
        buffer = self._buffer
        while True:
            searched = 0
            while (end := buffer.find(_CRLF, searched)) < 0:
                if len(buffer) > MAX_HEAD:
                    raise _h11_error("Receive buffer too long")
                searched = max(0, len(buffer) - 1)
                if not await self._fill(timeout):
                    raise _h11_error(self._cut())
            line = buffer[: end + 2]
            match = _CHUNK_HEADER.fullmatch(line)
            if match is None:
                raise _h11_error(f"illegal chunk header: {line!r}")
            del buffer[: end + 2]
            size = int(match[1], 16)
            if size == 0:
                break
            while size:
                piece = await self._some(size, timeout)
                if not piece:
                    raise _h11_error(_INCOMPLETE_CHUNKED)
                size -= len(piece)
                yield piece
            while len(buffer) < 2 and await self._fill(timeout):
                pass
            footer = buffer[:2]
            if footer != _CRLF[: len(footer)]:
                raise _h11_error(f"malformed chunk footer: {footer!r} (expected {_CRLF!r})")
            if len(footer) < 2:
                raise _h11_error(_INCOMPLETE_CHUNKED)
            del buffer[:2]
        _header_lines(await self._head_lines(timeout, answer=False))  # the trailers, checked and dropped

    async def finished(self, reusable: bool) -> None:
        """The answer was read to its end: idle for the next request if it may be used again, else closed."""
        if reusable and not self._buffer and not self._eof:
            self._state = _IDLE
            self._expire_at = time.monotonic() + self._keepalive_expiry
        else:
            await self.aclose()

    async def aclose(self) -> None:
        self._state = _CLOSED
        await self._stream.aclose()

    async def close_shielded(self) -> None:
        with anyio.CancelScope(shield=True):  # a cancelled request still closes its socket
            await self.aclose()


class Answer:
    """An answer whose head is read: ``status``, ``headers`` (raw names, values as h11 gives them) and its body,
    read once from ``stream``. ``aclose`` leaves the connection idle for the next request if the body was read to
    its end and the connection may be used again (as httpcore's pool: not before), else closes it."""

    __slots__ = ("_connection", "_head", "_open", "_read", "_reusable", "_timeout", "headers", "status", "stream")

    def __init__(self, connection: Connection, head: _Head, reusable: bool, timeout: float | None) -> None:
        self._connection = connection
        self._head = head
        self._reusable = reusable
        self._timeout = timeout
        self._open = True
        self._read = head.length == 0 and not head.chunked  # nothing to read (a 202, a 204)
        self.status = head.status
        self.headers = head.headers
        self.stream = self._body()

    async def _body(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._connection.body(self._head, self._timeout):
                yield piece
        except GeneratorExit:
            raise
        except BaseException:
            if self._open:
                self._open = False
                await self._connection.close_shielded()
            raise
        self._read = True

    async def aclose(self) -> None:
        if self._open:
            self._open = False
            if self._read:
                await self._connection.finished(self._reusable)
            else:
                await self._connection.aclose()
