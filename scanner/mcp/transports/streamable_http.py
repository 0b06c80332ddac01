"""Streamable HTTP (2025-03-26 and later, and the 2026-07-28 stateless binding): one POST per message.

A request's answer is either one JSON message or an SSE stream that may carry the server's own requests and
notifications before the response; the stream is read until the response with the request's id arrives.
Priming events (an id and empty data) and comments are skipped, a server ``ping`` is answered ``{}`` and any
other server request method-not-found, each by its own POST. ``Mcp-Session-Id`` is echoed once set and the
session is DELETEd at the end (405 is fine). After a legacy handshake every POST carries
``MCP-Protocol-Version``; in the 2026 era every POST also carries ``Mcp-Method``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import httpx

from scanner import wire
from scanner.mcp import census, jsonrpc
from scanner.mcp.failures import ScanFailure, SessionExpired
from scanner.mcp.limits import ClientLimits
from scanner.mcp.sse import SSEParser
from scanner.mcp.transports import http
from scanner.mcp.transports.base import ClientTransport
from scanner.mcp.transports.httpclient import HttpClient, Response
from scanner.models import Outcome, Transport

SESSION_HEADER = "Mcp-Session-Id"


class StreamableHttpTransport(ClientTransport):
    """POST every message to one URL; answers as JSON or an SSE stream."""

    name = Transport.STREAMABLE_HTTP.value

    def __init__(self, url: str, headers: Mapping[str, str], limits: ClientLimits) -> None:
        self._url = url
        self._headers = dict(headers)
        self._limits = limits
        self._client: HttpClient | None = None
        self.session_id: str | None = None
        self._notes: dict[str, Any] = {}

    async def open(self) -> None:
        self._client = http.make_client(self._limits)

    def _post_headers(self, method: str | None) -> dict[str, str]:
        headers = dict(self._headers)
        headers["Accept"] = "application/json, text/event-stream"
        headers["Content-Type"] = "application/json"
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.modern and method is not None:
            headers["Mcp-Method"] = method
        return headers

    def _post(self, message: Mapping[str, Any], method: str | None) -> AbstractAsyncContextManager[Response]:
        """POST one message; ``method`` names it in ``Mcp-Method`` (2026 era), None for replies."""
        assert self._client is not None
        headers = self._post_headers(method)
        return http.send(
            self._client, "POST", self._url, self._limits, headers=headers, content=jsonrpc.encode(message)
        )

    async def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        method = str(message.get("method"))
        request_id = message["id"]
        async with self._post(message, method) as response:
            if response.status_code not in (200, 201):
                failure = await http.status_failure(response, self._limits)
                if failure.status == 404 and self.session_id is not None and method != "initialize":
                    self.session_id = None
                    raise SessionExpired(failure.body, failure.content_type)
                answer = _error_answer(failure.body, request_id) if self.modern else None
                if answer is None:
                    raise failure
                # 2026-07-28 servers answer errors with a 4xx status and the JSON-RPC error as the body.
                return answer
            session = response.headers.get(SESSION_HEADER)
            if session and self.session_id is None and method == "initialize":
                if len(session) > 1024 or not all("!" <= char <= "~" for char in session):
                    # The spec allows only visible ASCII; anything else could not even be sent back.
                    raise ScanFailure(Outcome.INVALID_RESPONSE, "Mcp-Session-Id is not visible ASCII (or too long)")
                self.session_id = session
            kind = http.content_type(response)
            if kind == "application/json" or kind.endswith("+json"):
                body = await http.read_capped(response, self._limits.max_answer_bytes)
                answer = jsonrpc.decode(body)
                if isinstance(answer, list):
                    raise ScanFailure(Outcome.INVALID_RESPONSE, f"{method}: answered with a JSON array (batch)")
                if not jsonrpc.is_response(answer):
                    shown = http.shown_type(response)
                    raise _not_mcp(f"{method}: answered JSON that is not a JSON-RPC response", shown, body)
                return self._check_id(answer, request_id, method)
            if kind == "text/event-stream":
                return await self._read_stream(response, request_id, method)
            shown = http.shown_type(response)  # as written (the scrubber sees an echoed key), or not at all
            raise _not_mcp(
                f"{method}: answer is {shown or 'untyped'}, not JSON or an event stream",
                shown,
                await http.read_prefix(response, 300),
            )

    @staticmethod
    def _check_id(answer: dict[str, Any], request_id: int, method: str) -> dict[str, Any]:
        if not jsonrpc.same_id(answer.get("id"), request_id):
            raise ScanFailure(
                Outcome.PROTOCOL_ERROR,
                f"{method}: answer has id {str(answer.get('id'))[:40]!r}, request had {request_id}",
            )
        return answer

    async def _read_stream(self, response: Response, request_id: int, method: str) -> dict[str, Any]:
        parser = SSEParser()
        async for chunk in http.iter_capped(response, self._limits.max_answer_bytes, f"{method} stream"):
            for event in parser.feed(chunk):
                if not event.data.strip() or event.event != "message":
                    continue  # priming events, keep-alives, other event types
                message = jsonrpc.decode(event.data, f"{method} stream event")
                if jsonrpc.is_server_request(message):
                    self.count_server_request(self._limits.max_server_requests)
                    await self._post_discarding(jsonrpc.reply_to_server_request(message), None)
                elif jsonrpc.is_response(message):
                    return self._check_id(message, request_id, method)
        raise ScanFailure(Outcome.INVALID_RESPONSE, f"{method}: event stream ended without an answer")

    async def _post_discarding(self, message: Mapping[str, Any], method: str | None) -> int:
        async with self._post(message, method) as response:
            async for _ in http.iter_capped(response, http.ERROR_BODY_BYTES, "notification answer"):
                pass
            return response.status_code

    async def notify(self, message: Mapping[str, Any]) -> None:
        status = await self._post_discarding(message, str(message.get("method")))
        if status >= 400:
            # Lenient: some servers reject notifications they do not need; the list may still come.
            self._notes.setdefault("notification_status", {})[str(message.get("method"))] = status

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            client, self._client = self._client, None
            if client is None:
                return
            if self.session_id is not None:
                with anyio.move_on_after(self._limits.shutdown_grace):
                    try:
                        headers = self._post_headers(None)
                        del headers["Content-Type"]
                        async with client.stream("DELETE", self._url, headers=headers) as response:
                            async for _ in response.aiter_raw():  # read to its end, as before, never kept
                                pass
                        self._notes["delete_status"] = response.status_code
                    except httpx.HTTPError:
                        pass
            await client.aclose()

    def details(self, failed: bool) -> dict[str, Any]:
        facts = dict(self._notes)
        if self.session_id is not None:
            facts["session"] = True
        return facts


def _error_answer(body: bytes, request_id: int) -> dict[str, Any] | None:
    """The JSON-RPC error response to ``request_id`` in an HTTP error body, or None."""
    try:
        answer = jsonrpc.decode(body)
    except ScanFailure:
        return None
    if isinstance(answer, dict) and "error" in answer and jsonrpc.same_id(answer.get("id"), request_id):
        return answer
    return None


def _not_mcp(detail: str, kind: str, body: bytes) -> ScanFailure:
    """The server answered, but not MCP (a web page, a JSON API): ``not_mcp`` with the content type and the
    start of the body (:func:`scanner.mcp.census.snippet`), for a person."""
    text = census.snippet(wire.decode_bytes(body[:1024]))
    return ScanFailure(Outcome.NOT_MCP, detail, {"content_type": kind[:100], "snippet": text})
