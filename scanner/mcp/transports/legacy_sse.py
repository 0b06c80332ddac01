"""The deprecated HTTP+SSE transport (2024-11-05): answers arrive on a long-lived GET event stream.

Open: GET the URL expecting ``text/event-stream``; its first ``endpoint`` event names the URI to POST messages
to (resolved against the SSE URL; another origin is refused, since POSTs carry the entry's headers). Each
request is POSTed there and its response is matched by id on the GET stream. A single event larger than
``max_answer_bytes`` ends the scan as too_large.

The server's own requests on the stream (``ping``...) are answered by one replier task, one POST at a time,
through a small queue: when replies fall behind, reading the stream waits (back-pressure), and more than
``max_server_requests`` in one scan is the server's protocol_error. A ping flood thus costs a bounded amount of
work and ends within the scan's deadline, instead of one task per ping starving every other scan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin

import anyio

from scanner import wire
from scanner.mcp import census, jsonrpc
from scanner.mcp.failures import ScanFailure
from scanner.mcp.limits import ClientLimits
from scanner.mcp.sse import SSEParser
from scanner.mcp.transports import http
from scanner.mcp.transports.base import ClientTransport
from scanner.mcp.transports.httpclient import HttpClient, Response
from scanner.mcp.transports.pending import Pending
from scanner.models import Outcome, Transport

_REPLY_QUEUE = 4  # replies waiting to be POSTed before reading the stream waits for them


class LegacySseTransport(ClientTransport):
    """GET an event stream for answers, POST requests to the endpoint it names."""

    name = Transport.SSE.value

    def __init__(self, url: str, headers: Mapping[str, str], limits: ClientLimits) -> None:
        self._url = url
        self._headers = dict(headers)
        self._limits = limits
        self._client: HttpClient | None = None
        self._endpoint: str | None = None
        self._ready = anyio.Event()
        self._pending = Pending()
        self._replies, self._reply_queue = anyio.create_memory_object_stream[dict[str, Any]](_REPLY_QUEUE)

    async def open(self) -> None:
        self._client = http.make_client(self._limits)
        self.task_group.start_soon(self._replier)
        self.task_group.start_soon(self._listen)
        await self._ready.wait()
        if self._endpoint is None:
            raise self._pending.failure or ScanFailure(
                Outcome.INVALID_RESPONSE, "event stream ended before an endpoint event"
            )

    async def _listen(self) -> None:
        try:
            await self._pending.read_guarded(self._read_stream, "event stream")
        finally:
            self._ready.set()

    async def _read_stream(self) -> None:
        """GET the event stream and read it to its end (which is a fault: answers were still expected)."""
        assert self._client is not None
        headers = dict(self._headers)
        headers["Accept"] = "text/event-stream"
        async with http.send(self._client, "GET", self._url, self._limits, headers=headers) as response:
            if response.status_code != 200:
                raise await http.status_failure(response, self._limits)
            kind = http.content_type(response)
            if kind != "text/event-stream":
                text = census.snippet(wire.decode_bytes(await http.read_prefix(response, 300)))
                shown = http.shown_type(response)  # as written (the scrubber sees an echoed key), or not at all
                raise ScanFailure(
                    Outcome.NOT_MCP,
                    f"SSE URL answered {shown or 'untyped'}, not an event stream",
                    {"content_type": shown[:100], "snippet": text},
                )
            await self._read(response)
        raise ScanFailure(Outcome.INVALID_RESPONSE, "event stream closed by the server")

    async def _read(self, response: Response) -> None:
        parser = SSEParser()
        cap = self._limits.max_answer_bytes
        pending = 0  # bytes since the last complete event: one answer's size
        async for chunk in http.iter_stream(response, "event stream"):
            pending += len(chunk)
            if pending > cap:
                raise ScanFailure(Outcome.TOO_LARGE, f"event over {cap} bytes", {"limit_bytes": cap})
            events = parser.feed(chunk)
            if events:
                pending = 0
            for event in events:
                if event.event == "endpoint":
                    self._set_endpoint(event.data.strip())
                elif event.event == "message" and event.data.strip():
                    message = jsonrpc.decode(event.data, "event")
                    if jsonrpc.is_server_request(message):
                        self.count_server_request(self._limits.max_server_requests)
                        await self._replies.send(jsonrpc.reply_to_server_request(message))
                    elif jsonrpc.is_response(message):
                        self._pending.route(message)

    def _set_endpoint(self, data: str) -> None:
        if self._endpoint is not None:
            return
        target = urljoin(self._url, data)
        if http.origin(target) != http.origin(self._url):
            raise ScanFailure(Outcome.PROTOCOL_ERROR, "endpoint event names another origin; refused")
        self._endpoint = target
        self._ready.set()

    async def _post(self, message: Mapping[str, Any]) -> None:
        assert self._client is not None and self._endpoint is not None
        headers = dict(self._headers)
        headers["Content-Type"] = "application/json"
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        async with http.send(
            self._client, "POST", self._endpoint, self._limits, headers=headers, content=jsonrpc.encode(message)
        ) as response:
            if response.status_code >= 300:
                raise await http.status_failure(response, self._limits)
            async for _ in http.iter_capped(response, http.ERROR_BODY_BYTES, "POST answer"):
                pass

    async def _replier(self) -> None:
        """Answer the server's requests one at a time, in order; a failed reply fails the stream."""
        async with self._reply_queue:
            async for message in self._reply_queue:
                await self._ready.wait()
                if self._endpoint is None:
                    return  # the stream ended before naming where to POST; open() reports that
                try:
                    await self._post(message)
                except ScanFailure as failure:
                    self._pending.fail(failure)
                    return

    async def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        response = await self._pending.call(message["id"], lambda: self._post(message))
        if response is not None:
            return response
        raise self._pending.failure or ScanFailure(Outcome.INVALID_RESPONSE, "event stream ended without an answer")

    async def notify(self, message: Mapping[str, Any]) -> None:
        if self._pending.failure is not None:
            raise self._pending.failure
        await self._post(message)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            if self._client is not None:
                await self._client.aclose()
                self._client = None
