"""Local servers that reproduce what real MCP servers from npm and PyPI did to the client (docs/real-servers.md).

HTTP (``--port N``), one behaviour per path, each a plain legacy Streamable-HTTP server once let in:

* ``/host-check``: ``@playwright/mcp`` over HTTP answers 403 ``Access is only allowed at localhost:PORT``
  (text/plain) to any request whose ``Host`` is not ``localhost:PORT``;
* ``/json-401``: ``mcp-atlassian`` over HTTP answers 401 with a JSON ``{"error": "..."}`` body and no
  ``WWW-Authenticate`` header;
* ``/echo-403``: a 403 whose body quotes the request's ``Authorization`` header (the scan must not repeat it);
* ``/drip-401``, ``/drip-403``: the status at once, then a body of one byte every 0.2 s, forever (reading the
  reason must not turn an auth or HTTP error into a timeout).

stdio (``--stdio MODE``):

* ``stuck-start``: ``mcp-server-qdrant`` offline retries a model download for minutes, saying so on stderr,
  before it reads a single message;
* ``ignores-eof``: ``server-everything`` keeps running after its stdin closes (timers keep node alive), so
  every stop costs the shutdown grace;
* ``set-default``: ``mcp-atlassian`` joins a Python ``set`` of field names into a parameter's default, so the
  list changes with the interpreter's hash salt at every start.

    python tests/mcp/real_quirks.py --port 8125
    python tests/mcp/real_quirks.py --stdio ignores-eof
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any

TOOLS = [
    {"name": "echo", "description": "Echo the given text back.", "inputSchema": {"type": "object", "properties": {}}}
]


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The legacy (2025-11-25) answer to one message; None for a notification."""
    if "id" not in message:
        return None
    method = message.get("method")
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "real-quirks", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


# --- HTTP ------------------------------------------------------------------------------------------------------


def http_app(port: int) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def serve(request: Request) -> Response:
        message = json.loads(await request.body())
        reply = answer(message)
        return JSONResponse(reply) if reply is not None else Response(status_code=202)

    async def host_check(request: Request) -> Response:
        if request.headers.get("host") != f"localhost:{port}":
            return PlainTextResponse(f"Access is only allowed at localhost:{port}", status_code=403)
        return await serve(request)

    async def json_401(request: Request) -> Response:
        return JSONResponse({"error": "Authentication required: no Atlassian credentials were provided."}, 401)

    async def echo_403(request: Request) -> Response:
        sent = request.headers.get("authorization", "")
        return PlainTextResponse(f"Forbidden: token {sent} is not allowed here", status_code=403)

    async def drip(status: int) -> Response:
        async def forever() -> Any:
            while True:
                yield b" "
                await asyncio.sleep(0.2)

        return StreamingResponse(forever(), status_code=status, media_type="application/json")

    async def drip_401(request: Request) -> Response:
        return await drip(401)

    async def drip_403(request: Request) -> Response:
        return await drip(403)

    return Starlette(
        routes=[
            Route("/drip-401", drip_401, methods=["POST", "GET", "DELETE"]),
            Route("/drip-403", drip_403, methods=["POST", "GET", "DELETE"]),
            Route("/host-check", host_check, methods=["POST", "GET", "DELETE"]),
            Route("/json-401", json_401, methods=["POST", "GET", "DELETE"]),
            Route("/echo-403", echo_403, methods=["POST", "GET", "DELETE"]),
        ]
    )


# --- stdio -----------------------------------------------------------------------------------------------------


def stuck_start() -> None:
    for wait in (3.0, 9.0, 27.0):
        sys.stderr.write(f"ERROR Could not download model from HuggingFace, sleeping for {wait} seconds\n")
        sys.stderr.flush()
        time.sleep(wait)


def serve_stdio(tools: list[dict[str, Any]]) -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        reply = answer(json.loads(line))
        if reply is not None and "result" in reply and "tools" in reply["result"]:
            reply["result"]["tools"] = tools
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


def ignores_eof() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    serve_stdio(TOOLS)
    while True:  # stdin is closed; keep running until a signal, like a node process with live timers
        time.sleep(0.05)


def set_default() -> None:
    fields = {"summary", "status", "labels", "assignee", "reporter", "priority", "created", "updated", "issuetype"}
    fields |= {"description", "versions", "components", "duedate", "resolution", "watches", "parent", "project"}
    schema = {"type": "object", "properties": {"fields": {"type": "string", "default": ",".join(fields)}}}
    serve_stdio([{"name": "get_issue", "description": "Get one issue by its key.", "inputSchema": schema}])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int)
    parser.add_argument("--stdio", choices=["stuck-start", "ignores-eof", "set-default"])
    args = parser.parse_args()
    if args.stdio == "stuck-start":
        stuck_start()
    elif args.stdio == "ignores-eof":
        ignores_eof()
    elif args.stdio == "set-default":
        set_default()
    else:
        import uvicorn

        uvicorn.run(http_app(args.port), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
