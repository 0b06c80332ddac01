"""The one interface every transport implements: send a request and get its response, send a notification.

A transport moves JSON-RPC messages and nothing more: it matches a response to its request id, answers the
server's own requests (``ping`` → ``{}``, anything else → method-not-found), skips server notifications, and
turns every wire fault into a :class:`scanner.mcp.failures.ScanFailure`. The handshake and paging live in
``scanner.mcp.session``; which transport to use is decided in ``scanner.mcp.transports`` alone.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from scanner.mcp.failures import ScanFailure
from scanner.models import Outcome


class ClientTransport(abc.ABC):
    """An open connection to one server. Use as an async context manager; closing never raises."""

    #: The :class:`scanner.models.Transport` value this transport reports as used.
    name: str = ""

    #: Set by the session: the protocol version to announce on HTTP headers (None before a handshake).
    protocol_version: str | None = None
    #: Set by the session for the 2026-07-28 era: every POST carries ``Mcp-Method`` too.
    modern: bool = False

    @abc.abstractmethod
    async def open(self) -> None:
        """Spawn or connect. Raises ScanFailure (spawn_error, connect_error, ...)."""

    @abc.abstractmethod
    async def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request and return the server's response message (a dict with ``result`` or ``error``)."""

    @abc.abstractmethod
    async def notify(self, message: Mapping[str, Any]) -> None:
        """Send one notification; nothing comes back."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release everything (process group, HTTP session); shielded from cancellation, never raises."""

    #: How many requests of the server's own were answered so far (see :meth:`count_server_request`).
    server_requests: int = 0

    def count_server_request(self, cap: int) -> None:
        """Count one request from the server; more than ``cap`` in one scan is a flood: its protocol_error."""
        self.server_requests += 1
        if self.server_requests > cap:
            raise ScanFailure(
                Outcome.PROTOCOL_ERROR,
                f"server sent more than {cap} requests of its own (a flood)",
                {"max_server_requests": cap},
            )

    def details(self, failed: bool) -> dict[str, Any]:
        """Transport facts for ``ScanOutcome.extra`` (skipped lines, session use; the stderr tail if failed)."""
        return {}

    async def __aenter__(self) -> ClientTransport:
        """Open a task group for background readers (stdio pipes, the SSE stream), then :meth:`open`.

        The body's exceptions leave through the task group, so a fault may arrive wrapped in an
        ``ExceptionGroup``; ``scan_server`` unwraps it.
        """
        self._stack = AsyncExitStack()
        self.task_group: anyio.abc.TaskGroup = await self._stack.enter_async_context(anyio.create_task_group())
        try:
            await self.open()
        except BaseException:
            await self._finish(None, None, None)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._finish(exc_type, exc, tb)

    async def _finish(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        self.task_group.cancel_scope.cancel()
        return await self._stack.__aexit__(exc_type, exc, tb)
