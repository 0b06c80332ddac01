"""A real MCP server built on the official Python SDK, for the client's tests and other suites' crawls.

Its tool list comes from a JSON file (``--tools FILE``, re-read on every ``tools/list`` so a test can change it
between two scans) or a built-in default of three tools, and is paged ``--page-size`` tools at a time (cursor =
the next offset as a string). Transports: ``stdio``, ``http`` (Streamable HTTP at ``/mcp``, serving both the
legacy handshake and the 2026-07-28 stateless era, as the SDK does), ``sse`` (legacy HTTP+SSE at ``/sse``).
``--legacy-only`` makes the HTTP server answer any 2026-style request with a plain 400, like a server built on
an SDK that predates 2026-07-28. ``--instructions FILE`` sends the file's text as the server's ``instructions``
(re-read on every ``initialize`` and ``server/discover``, so a test can change them between two scans while the
version stays the same).

    python tests/servers/sdk_server.py --transport http --port 8123 --tools tools.json --page-size 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

SERVER_NAME = "fathom-test-sdk"
SERVER_VERSION = "1.2.3"
DEFAULT_TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    {"name": "ping_me", "description": "Does nothing.", "inputSchema": {"type": "object"}},
]


def load_tools(path: Path | None) -> list[dict[str, Any]]:
    if path is None:
        return DEFAULT_TOOLS
    return list(json.loads(path.read_text(encoding="utf-8")))


class FileInstructions(Server[Any]):
    """The SDK's low-level server whose ``instructions`` are read from a file each time the SDK asks for them."""

    def __init__(self, *args: Any, instructions_file: Path | None = None, **kwargs: Any) -> None:
        self.instructions_file = instructions_file
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def instructions(self) -> str | None:
        path = self.instructions_file
        return path.read_text(encoding="utf-8") if path is not None and path.exists() else None

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        """The constructor's value is ignored: the file is the one source."""


def build_server(tools_file: Path | None, page_size: int, instructions_file: Path | None = None) -> Server[Any]:
    """A low-level SDK server whose ``tools/list`` pages the file's tools ``page_size`` at a time."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = load_tools(tools_file)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size
        page = [types.Tool.model_validate(tool) for tool in tools[start:end]]
        return types.ListToolsResult(tools=page, next_cursor=str(end) if end < len(tools) else None)

    if instructions_file is not None:
        return FileInstructions(
            SERVER_NAME, version=SERVER_VERSION, on_list_tools=list_tools, instructions_file=instructions_file
        )
    return Server(SERVER_NAME, version=SERVER_VERSION, on_list_tools=list_tools)


class LegacyOnly:
    """ASGI wrapper: a 2026-07-28 request (by header) gets a plain-text 400, as an older server would answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"mcp-protocol-version", b"").startswith(b"2026"):
                await Response("Bad Request: unsupported protocol version", status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(server: Server[Any], legacy_only: bool) -> ASGIApp:
    app: ASGIApp = server.streamable_http_app(streamable_http_path="/mcp")
    return LegacyOnly(app) if legacy_only else app


def sse_app(server: Server[Any]) -> Starlette:
    sse = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as streams:
            await server.run(streams[0], streams[1], server.create_initialization_options())
        return Response()

    return Starlette(
        routes=[Route("/sse", endpoint=handle_sse, methods=["GET"]), Mount("/messages/", app=sse.handle_post_message)]
    )


async def run_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tools", type=Path, default=None)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--legacy-only", action="store_true")
    parser.add_argument("--instructions", type=Path, default=None)
    args = parser.parse_args(argv)
    server = build_server(args.tools, args.page_size, args.instructions)
    if args.transport == "stdio":
        anyio.run(run_stdio, server)
        return
    app = http_app(server, args.legacy_only) if args.transport == "http" else sse_app(server)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
