"""Requests waiting for their response on a stream shared by all of them (stdio's stdout, the SSE GET stream).

A background reader routes each response to the request with its id; a fault on the stream wakes every
waiter with the same failure. A request given up on (the era probe's short wait) is *abandoned*: its late
answer is dropped quietly, while an id never sent is the server's protocol_error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from scanner.mcp.failures import ScanFailure
from scanner.models import Outcome


class Pending:
    """Waiters by request id, the responses that arrived, and the first fault of the stream."""

    def __init__(self) -> None:
        self._waiters: dict[int, anyio.Event] = {}
        self._responses: dict[int, dict[str, Any]] = {}
        self._abandoned: set[int] = set()
        self.failure: ScanFailure | None = None
        #: Set when the reader has stopped (end of stream or a fault): nothing more will be routed.
        self.closed = anyio.Event()

    async def read_guarded(self, reader: Callable[[], Awaitable[None]], what: str) -> None:
        """Run the background ``reader``: its ScanFailure (or any error) fails the stream, never the task group;
        when it returns, the stream is closed and every waiter wakes."""
        try:
            await reader()
        except ScanFailure as failure:
            self.fail(failure)
        except Exception as exc:
            self.fail(ScanFailure(Outcome.INVALID_RESPONSE, f"{what} failed: {type(exc).__name__}"))
        finally:
            self.closed.set()
            self.wake_all()

    async def call(self, request_id: int, send: Callable[[], Awaitable[None]]) -> dict[str, Any] | None:
        """Expect ``request_id``, ``send`` the request, wait for its response: the response, or None when the
        stream failed or closed first (or the caller gave up: then a late answer is dropped quietly)."""
        event = self.expect(request_id)
        try:
            if self.failure is None and not self.closed.is_set():
                await send()
                await event.wait()
        finally:
            response = self.collect(request_id)
        return response

    def expect(self, request_id: int) -> anyio.Event:
        """Register a request before it is sent (its answer may arrive before the send returns)."""
        event = anyio.Event()
        self._waiters[request_id] = event
        return event

    def collect(self, request_id: int) -> dict[str, Any] | None:
        """After waiting (or being cancelled): the response, or None (then :attr:`failure` says why)."""
        if self._waiters.pop(request_id, None) is not None:
            self._abandoned.add(request_id)
        return self._responses.pop(request_id, None)

    def route(self, message: dict[str, Any]) -> None:
        """Hand a response to its waiter; an id the client never sent fails the stream."""
        request_id = message.get("id")
        if type(request_id) is int and request_id in self._waiters:
            self._responses[request_id] = message
            self._waiters.pop(request_id).set()
        elif type(request_id) is int and request_id in self._abandoned:
            self._abandoned.discard(request_id)
        else:
            self.fail(
                ScanFailure(
                    Outcome.PROTOCOL_ERROR, f"response with an id the client never sent: {str(request_id)[:40]!r}"
                )
            )

    def fail(self, failure: ScanFailure) -> None:
        """Record the stream's first fault and wake every waiter."""
        if self.failure is None:
            self.failure = failure
        self.wake_all()

    def wake_all(self) -> None:
        for event in self._waiters.values():
            event.set()
