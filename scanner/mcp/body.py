"""The one capped reader for HTTP bodies from outside: content-coding undone here, a piece at a time, and counted.

httpx decodes ``Content-Encoding`` by inflating each received chunk whole through every coding before a caller
can count a byte: a 3.5 KB body sent as ``gzip, gzip`` inflates to gigabytes in one call. Here the raw bytes
(``aiter_raw``/``iter_raw``) go through :class:`BodyDecoder`, which inflates with zlib's ``max_length`` so no
step ever holds more than :data:`PIECE` bytes of output, and counts the *decoded* bytes against the cap as they
come. Codings: ``identity``, ``gzip`` (``x-gzip``), ``deflate`` (zlib-wrapped or raw, as httpx reads it), at most
:data:`MAX_CODINGS` stacked; anything else is refused (the client only offers ``gzip, deflate``).

Used by the MCP client's every body read (answers, error bodies, snippets, RFC 9728 metadata) and by the
official registry reader. Both translate :class:`BodyError` into their own failure type.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Literal, Protocol

PIECE = 64 * 1024  # the most decoded bytes one inflate step may produce
MAX_CODINGS = 3  # stacked content-codings accepted (``gzip, gzip`` is odd but legal; a deeper stack is not served)
ACCEPT_ENCODING = "gzip, deflate"


class BodyError(Exception):
    """A body that cannot be read within its cap: ``too_large`` or ``undecodable`` (bad or unsupported coding)."""

    def __init__(self, kind: Literal["too_large", "undecodable"], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _Layer(Protocol):
    def push(self, data: bytes) -> Iterator[bytes]: ...

    def finish(self) -> Iterator[bytes]: ...


class _Inflate:
    """One zlib-family coding, undone in pieces of at most :data:`PIECE` bytes."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        # 16 + MAX_WBITS: gzip header; MAX_WBITS: zlib header (deflate as the RFC says); raw deflate on a retry.
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS)
        self._first = coding == "deflate"

    def push(self, data: bytes) -> Iterator[bytes]:
        while data:
            if self._inflater.eof:
                return  # bytes after the end of the stream (a trailer, padding): ignored, as httpx does
            try:
                out = self._inflater.decompress(data, PIECE)
            except zlib.error as exc:
                if self._first:  # many servers send raw deflate under "deflate"; httpx accepts both
                    self._first = False
                    self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise BodyError("undecodable", f"body is not valid {self._coding}") from exc
            self._first = False
            data = self._inflater.unconsumed_tail
            if out:
                yield out

    def finish(self) -> Iterator[bytes]:
        # push() consumed every input byte; what zlib may still hold is one pending copy (small). Drain it with a
        # bounded decompress, never an unbounded flush().
        try:
            while not self._inflater.eof and (out := self._inflater.decompress(b"", PIECE)):
                yield out
        except zlib.error as exc:
            raise BodyError("undecodable", f"body is not valid {self._coding}") from exc


class _Identity:
    def push(self, data: bytes) -> Iterator[bytes]:
        if data:
            yield data

    def finish(self) -> Iterator[bytes]:
        return iter(())


def _layers(content_encoding: str) -> list[_Layer]:
    codings = [part.strip().lower() for part in content_encoding.split(",") if part.strip()]
    codings = [coding for coding in codings if coding != "identity"]
    if len(codings) > MAX_CODINGS:
        raise BodyError("undecodable", f"{len(codings)} stacked content-codings (at most {MAX_CODINGS} are read)")
    layers: list[_Layer] = []
    for coding in reversed(codings):  # applied in the order listed, so undone from the last
        if coding in ("gzip", "x-gzip"):
            layers.append(_Inflate("gzip"))
        elif coding == "deflate":
            layers.append(_Inflate("deflate"))
        else:
            raise BodyError("undecodable", f"unsupported content-coding {coding[:40]!r}")
    return layers or [_Identity()]


class BodyDecoder:
    """Raw body bytes in, decoded bytes out, never more than ``cap`` decoded (or raw) bytes in total.

    Feed raw chunks with :meth:`feed`, then call :meth:`finish`; both yield decoded pieces. Exceeding the cap
    raises :class:`BodyError` ``too_large`` before the excess is held; a bad coding raises ``undecodable``.
    """

    def __init__(self, content_encoding: str, cap: float, what: str = "body") -> None:
        self._layers = _layers(content_encoding)
        self.cap = cap
        self.what = what
        self.raw = 0
        self.decoded = 0

    def _through(self, index: int, pieces: Iterable[bytes]) -> Iterator[bytes]:
        if index == len(self._layers):
            yield from pieces
            return
        layer = self._layers[index]
        for piece in pieces:
            yield from self._through(index + 1, layer.push(piece))

    def _count(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            self.decoded += len(piece)
            if self.decoded > self.cap:
                raise BodyError("too_large", f"{self.what} over {self.cap:.0f} bytes")
            yield piece

    def feed(self, raw: bytes) -> Iterator[bytes]:
        self.raw += len(raw)
        if self.raw > self.cap:
            raise BodyError("too_large", f"{self.what} over {self.cap:.0f} bytes")
        return self._count(self._through(0, (raw,)))

    def finish(self) -> Iterator[bytes]:
        return self._count(self._finish_from(0))

    def _finish_from(self, index: int) -> Iterator[bytes]:
        # Flushing layer i yields bytes that still pass through layers i+1..; then those layers flush in turn.
        for i in range(index, len(self._layers)):
            yield from self._through(i + 1, self._layers[i].finish())


def decode_all(raw_chunks: Iterable[bytes], content_encoding: str, cap: float, what: str = "body") -> bytes:
    """Every decoded byte of a synchronous raw stream (``httpx.Response.iter_raw``), capped."""
    decoder = BodyDecoder(content_encoding, cap, what)
    body = bytearray()
    for chunk in raw_chunks:
        for piece in decoder.feed(chunk):
            body += piece
    for piece in decoder.finish():
        body += piece
    return bytes(body)


async def iter_decoded(
    raw_chunks: AsyncIterator[bytes], content_encoding: str, cap: float, what: str = "body"
) -> AsyncIterator[bytes]:
    """The decoded pieces of an asynchronous raw stream (``httpx.Response.aiter_raw``), capped."""
    decoder = BodyDecoder(content_encoding, cap, what)
    async for chunk in raw_chunks:
        for piece in decoder.feed(chunk):
            yield piece
    for piece in decoder.finish():
        yield piece
