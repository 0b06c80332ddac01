"""One HTTP server, many misbehaving MCP endpoints: every fault the client must turn into an outcome.

Each path is one behaviour (``/hang``, ``/drip``, ``/huge``...; see :data:`BEHAVIOURS`). Paths that are not
faults of the whole exchange act as a plain legacy Streamable-HTTP server (``server/discover`` gets a text 400,
``initialize`` works) and misbehave at ``tools/list``. ``/modern-*`` paths act as 2026-07-28 servers.

    python tests/servers/hostile_http.py --port 8124
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

BEHAVIOURS = {
    "ok": "a correct legacy server with two tools",
    "hang": "accepts the POST and never answers",
    "drip": "answers 200 JSON one byte every 0.2 s, forever",
    "huge": "answers a 4 MiB JSON body",
    "malformed": "answers 200 application/json that is not JSON",
    "html": "answers 200 text/html (a login page)",
    "auth": "401 with WWW-Authenticate: Bearer resource_metadata=..., metadata served on the same origin",
    "auth-foreign": "401 whose resource_metadata URL is on another origin",
    "error500": "answers 500",
    "sse-silent": "answers an event stream that sends a priming event and keep-alives, never the answer",
    "sse-ping": "answers over an event stream after asking the client ping and roots/list and checking replies",
    "endless": "tools/list always returns a fresh nextCursor",
    "repeat": "tools/list returns the same nextCursor forever",
    "empty-cursor": 'legacy tools/list with nextCursor "" (taken as the end)',
    "redirect-loop": "307 to itself, forever",
    "redirect-foreign": "307 to another origin",
    "wrong-id": "answers with an id the client never sent",
    "tools-not-list": "tools/list 'tools' is a number",
    "hostile-tools": "tools/list holds a number, a string and a tool whose name is a list",
    "many-tools": "tools/list holds 50 tools",
    "session-expire": "the first session ends (404) at tools/list; the next one works",
    "list-400": "a good legacy handshake, then 400 to tools/list",
    "bad-session": "an Mcp-Session-Id that is not visible ASCII",
    "no-tools": "declares no tools capability and answers tools/list with method-not-found",
    "modern": "a 2026-07-28 server whose second page is behind the empty-string cursor",
    "modern-needs-capability": "a 2026-07-28 server refusing tools/list with 400 and -32021",
    "modern-unsupported": "a 2026-07-28 server that only speaks a future version (-32022)",
    "sse-legacy": "the deprecated HTTP+SSE transport (GET for events, POST to the endpoint)",
    "sse-foreign-endpoint": "an HTTP+SSE stream whose endpoint event names another origin",
    "sse-ping-flood": "an HTTP+SSE stream that sends endless ping requests after the endpoint event",
    "error500-surrogate": 'answers 500 {"error": "boom \\ud800 here"} (a lone surrogate, escaped)',
    "auth-surrogate": "401 whose RFC 9728 metadata holds a lone surrogate and a NUL (escaped)",
    "gzip-bomb": "answers 200 JSON sent as Content-Encoding: gzip, gzip that inflates to 4 GiB",
    "gzip-bomb-500": "answers 500 with the same 4 GiB gzip, gzip body",
    "gzip-bomb-html": "answers 200 text/html with the same 4 GiB gzip, gzip body (read for a snippet)",
    "auth-gzip-bomb": "401 whose RFC 9728 metadata is the same 4 GiB gzip, gzip body",
    "echo-auth": "answers 500 whose error echoes the Authorization header in several shapes",
    "echo-auth-401": "answers 401 echoing the Authorization header in the challenge and the body",
    "echo-auth-rpc": "answers initialize with a JSON-RPC error echoing the Authorization header",
    "slow-503": "waits 1 s, then answers 503 with Retry-After: 3600",
    "x402": "answers 402 with an x402 v1 body offering two ways to pay",
    "x402-header": "answers 402 with an empty body and an x402 v2 PAYMENT-REQUIRED header",
    "json-api": "answers 200 application/json that is not JSON-RPC (a REST API's status)",
    "html-page": "answers every method (GET too) 200 text/html with control characters in it",
    "remember-auth": "with an Authorization header a correct legacy server (the header is remembered); without "
    "one 401 whose challenge, body and metadata echo the last header it saw",
}
X402_BODY = {
    "x402Version": 1,
    "error": "X-PAYMENT header is required",
    "accepts": [
        {
            "scheme": "exact",
            "network": "base",
            "maxAmountRequired": "10000",
            "resource": "https://example.com/mcp",
            "description": "One call \u001b[31m",
            "payTo": "0x0000000000000000000000000000000000000001",
            "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "extra": {"name": "USDC", "version": "2"},
        },
        {"scheme": "exact", "network": "base-sepolia", "maxAmountRequired": "10000"},
    ],
}
REMEMBERED: list[str] = [""]

BOMB = (Path(__file__).resolve().parent.parent / "fixtures" / "bombs" / "gzip-gzip-4gib.bin").read_bytes()


def echoes(header: str) -> str:
    """The Authorization header as servers echo it: raw, without its scheme, URL-encoded, base64."""
    token = header.split(" ", 1)[-1]
    return (
        f"got {header}; token={token}; url={quote(header, safe='')}; plus={quote_plus(token)}; "
        f"b64={base64.b64encode(token.encode()).decode()}; quoted={json.dumps(token)}"
    )


# The client's replies to our own requests, by request id (the sse-ping behaviour waits for them).
_replies: dict[str, dict[str, Any]] = {}
_reply_events: dict[str, asyncio.Event] = {}


def _tool(i: int) -> dict[str, Any]:
    return {"name": f"tool_{i}", "description": f"Tool number {i}.", "inputSchema": {"type": "object"}}


def _answer(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _initialize_result(name: str) -> dict[str, Any]:
    return {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": f"hostile-{name}", "version": "0.0.1"},
    }


def _tools_page(behaviour: str, params: dict[str, Any]) -> dict[str, Any]:
    cursor = params.get("cursor")
    if behaviour == "endless":
        n = int(cursor or 0) + 1
        return {"tools": [_tool(n)], "nextCursor": str(n)}
    if behaviour == "repeat":
        return {"tools": [_tool(1)], "nextCursor": "same"}
    if behaviour == "empty-cursor":
        return {"tools": [_tool(1)], "nextCursor": ""}
    if behaviour == "tools-not-list":
        return {"tools": 42}
    if behaviour == "hostile-tools":
        return {"tools": [42, "x", {"name": ["a", "b"], "inputSchema": "nope"}]}
    if behaviour == "many-tools":
        return {"tools": [_tool(i) for i in range(50)]}
    return {"tools": [_tool(1), _tool(2)]}


async def _drip() -> AsyncIterator[bytes]:
    while True:
        yield b" "
        await asyncio.sleep(0.2)


async def _sse_silent() -> AsyncIterator[bytes]:
    yield b"id: 0\ndata:\n\n"
    while True:
        await asyncio.sleep(0.2)
        yield b": keep-alive\n\n"


async def mcp_endpoint(request: Request) -> Response:
    behaviour = request.path_params["behaviour"]
    if behaviour == "redirect-loop":
        return Response(status_code=307, headers={"Location": str(request.url)})
    if behaviour == "redirect-foreign":
        return Response(status_code=307, headers={"Location": "http://other.invalid/mcp"})
    if behaviour == "auth":
        base = f"{request.url.scheme}://{request.url.netloc}"
        challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/auth", scope="tools:read"'
        return Response("unauthorized", status_code=401, headers={"WWW-Authenticate": challenge})
    if behaviour == "auth-foreign":
        challenge = 'Bearer resource_metadata="http://other.invalid/.well-known/oauth-protected-resource"'
        return Response("unauthorized", status_code=401, headers={"WWW-Authenticate": challenge})
    if behaviour == "sse-legacy":
        return await _sse_legacy(request)
    if behaviour == "sse-ping-flood":
        if request.method == "GET":
            return StreamingResponse(_ping_flood(), media_type="text/event-stream")
        return Response("Accepted", status_code=202)
    if behaviour == "auth-surrogate" or behaviour == "auth-gzip-bomb":
        base = f"{request.url.scheme}://{request.url.netloc}"
        challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/{behaviour}"'
        return Response("unauthorized", status_code=401, headers={"WWW-Authenticate": challenge})
    if behaviour == "error500-surrogate":
        return Response(b'{"error": "boom \\ud800 here"}', status_code=500, media_type="application/json")
    if behaviour.startswith("gzip-bomb"):
        status, kind = {"gzip-bomb-500": (500, "application/json"), "gzip-bomb-html": (200, "text/html")}.get(
            behaviour, (200, "application/json")
        )
        return Response(BOMB, status_code=status, headers={"Content-Encoding": "gzip, gzip", "Content-Type": kind})
    if behaviour == "x402":
        return JSONResponse(X402_BODY, status_code=402)
    if behaviour == "x402-header":
        offer = {"x402Version": 2, "accepts": [{"scheme": "exact", "network": "eip155:8453", "amount": "5"}]}
        header = base64.b64encode(json.dumps(offer).encode()).decode()
        return Response(status_code=402, headers={"PAYMENT-REQUIRED": header})
    if behaviour == "html-page":
        return Response("<html><title>Parked</title><body>\x1b[2Jfor sale</body></html>", media_type="text/html")
    if behaviour == "slow-503":
        await asyncio.sleep(1)
        return Response("busy", status_code=503, headers={"Retry-After": "3600"})
    if behaviour == "remember-auth":
        if request.headers.get("authorization"):
            REMEMBERED[0] = request.headers["authorization"]
            behaviour = "ok"
        elif request.method == "POST":
            base = f"{request.url.scheme}://{request.url.netloc}"
            echo = echoes(REMEMBERED[0])
            challenge = (
                f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/remember-auth", '
                f'error="invalid_token", error_description="last good token: {echo}"'
            )
            return JSONResponse({"error_description": echo}, status_code=401, headers={"WWW-Authenticate": challenge})
    if behaviour.startswith("echo-auth") and behaviour != "echo-auth-rpc":
        echo = echoes(request.headers.get("authorization", ""))
        if behaviour == "echo-auth":
            return JSONResponse({"error": {"message": echo}}, status_code=500)
        challenge = f'Bearer error="invalid_token", error_description="{echo}"'
        return JSONResponse({"error_description": echo}, status_code=401, headers={"WWW-Authenticate": challenge})
    if behaviour == "sse-foreign-endpoint":
        if request.method != "GET":
            return Response(status_code=405)
        return StreamingResponse(_foreign_endpoint(), media_type="text/event-stream")
    if request.method == "DELETE":
        return Response(status_code=405)
    if request.method != "POST":
        return Response(status_code=405)
    if behaviour == "hang":
        await asyncio.sleep(3600)
    if behaviour == "drip":
        return StreamingResponse(_drip(), media_type="application/json")
    if behaviour == "huge":
        return Response(b'{"x": "' + b"a" * (4 * 1024 * 1024) + b'"}', media_type="application/json")
    if behaviour == "malformed":
        return Response(b'{"jsonrpc": "2.0", "id": 1, "result": {', media_type="application/json")
    if behaviour == "html":
        return Response("<!doctype html><html><body>Please log in</body></html>", media_type="text/html")
    if behaviour == "error500":
        return Response("internal error", status_code=500)
    if behaviour == "json-api":
        return JSONResponse({"status": "ok", "version": "1.2.3"})
    if behaviour == "sse-silent":
        return StreamingResponse(_sse_silent(), media_type="text/event-stream")
    try:
        message = json.loads(await request.body())
    except ValueError:
        return Response("bad json", status_code=400)
    if not isinstance(message, dict):
        return Response("batches not accepted", status_code=400)
    if "id" not in message:
        return Response(status_code=202)
    if "method" not in message:  # the client's reply to one of our requests
        key = str(message.get("id"))
        _replies[key] = message
        _reply_events.setdefault(key, asyncio.Event()).set()
        return Response(status_code=202)
    return await _request(behaviour, message, request)


async def _request(behaviour: str, message: dict[str, Any], request: Request) -> Response:
    method, request_id = message.get("method"), message.get("id")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if behaviour.startswith("modern"):
        return _modern(behaviour, method, request_id, params, request)
    if method == "server/discover":
        return Response("Bad Request: no valid session", status_code=400)
    if behaviour == "wrong-id":
        return JSONResponse(_answer(999, _initialize_result(behaviour)))
    if behaviour == "echo-auth-rpc":
        error = {"code": -32000, "message": echoes(request.headers.get("authorization", ""))}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error})
    if behaviour == "session-expire":
        return _session_expire(method, request_id, request)
    if behaviour == "sticky":  # a load balancer's affinity cookie: set on initialize, wanted on every request after
        if method == "initialize":
            cookie = {"Set-Cookie": "affinity=node-7; Path=/", "Mcp-Session-Id": "sticky-session"}
            return JSONResponse(_answer(request_id, _initialize_result(behaviour)), headers=cookie)
        if request.cookies.get("affinity") != "node-7":
            return Response("Bad Request: no affinity cookie", status_code=400)
    if method == "initialize":
        result = _answer(request_id, _initialize_result(behaviour))
        if behaviour == "no-tools":
            result["result"]["capabilities"] = {"resources": {}}
        if behaviour == "sse-ping":
            return StreamingResponse(_with_ping(result, str(request_id)), media_type="text/event-stream")
        session = "s\u00e9ssion with spaces" if behaviour == "bad-session" else "hostile-session"
        return JSONResponse(result, headers={"Mcp-Session-Id": session})
    if method == "tools/list" and behaviour == "list-400":
        return Response("Bad Request", status_code=400)
    if method == "tools/list" and behaviour != "no-tools":
        return JSONResponse(_answer(request_id, _tools_page(behaviour, params)))
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})


_sessions_started = 0


def _session_expire(method: Any, request_id: Any, request: Request) -> Response:
    """Sessions 1, 3, 5... expire at their first tools/list (404); 2, 4, 6... work."""
    global _sessions_started
    if method == "initialize":
        _sessions_started += 1
        headers = {"Mcp-Session-Id": f"s-{_sessions_started}"}
        return JSONResponse(_answer(request_id, _initialize_result("session-expire")), headers=headers)
    session = request.headers.get("mcp-session-id", "")
    if not session.startswith("s-"):
        return Response("Bad Request: no session", status_code=400)
    if method == "tools/list":
        if int(session[2:]) % 2:
            return Response("session not found", status_code=404)
        return JSONResponse(_answer(request_id, _tools_page("session-expire", {})))
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})


async def _with_ping(result: dict[str, Any], key: str) -> AsyncIterator[bytes]:
    """Priming event, comment, notification, then a ping and a roots/list request of our own: the answer is
    sent only if the client replied ``{}`` to the ping and method-not-found to roots/list."""
    yield b"id: 1\ndata:\n\n"
    yield b": a comment\n\n"
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
    yield f"event: message\ndata: {json.dumps(note)}\n\n".encode()
    checks = {f"srv-ping-{key}": ("ping", {"result": {}}), f"srv-roots-{key}": ("roots/list", None)}
    for request_id, (method, _) in checks.items():
        _reply_events.setdefault(request_id, asyncio.Event())
        yield f"data: {json.dumps({'jsonrpc': '2.0', 'id': request_id, 'method': method})}\n\n".encode()
    try:
        for request_id in checks:
            await asyncio.wait_for(_reply_events[request_id].wait(), 2)
    except TimeoutError:
        result = {"jsonrpc": "2.0", "id": result["id"], "error": {"code": -1, "message": "requests not answered"}}
    ping_ok = _replies[f"srv-ping-{key}"].get("result") == {}
    roots = _replies.get(f"srv-roots-{key}", {}).get("error")
    if not ping_ok or not isinstance(roots, dict) or roots.get("code") != -32601:
        result = {"jsonrpc": "2.0", "id": result["id"], "error": {"code": -2, "message": "wrong replies"}}
    yield f"data: {json.dumps(result)}\n\n".encode()


def _modern(behaviour: str, method: Any, request_id: Any, params: dict[str, Any], request: Request) -> Response:
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    version = meta.get("io.modelcontextprotocol/protocolVersion")
    if behaviour == "modern-unsupported" or version != "2026-07-28":
        error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2099-01-01"]}}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=400)
    if request.headers.get("mcp-method") != method or request.headers.get("mcp-protocol-version") != version:
        error = {"code": -32020, "message": "header mismatch"}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=400)
    if method == "server/discover":
        return JSONResponse(
            _answer(
                request_id,
                {
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile-modern", "version": "2026.1"},
                    "instructions": "Use tool_1 before tool_2.",
                    "resultType": "complete",
                    "ttlMs": 0,
                    "cacheScope": "public",
                },
            )
        )
    if method == "tools/list" and behaviour == "modern-needs-capability":
        error = {"code": -32021, "message": "Missing required client capability", "data": {"required": ["x"]}}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=400)
    if method == "tools/list":
        if params.get("cursor") == "":
            page = {"tools": [_tool(2)], "resultType": "complete", "ttlMs": 0, "cacheScope": "public"}
        else:
            page = {"tools": [_tool(1)], "nextCursor": "", "resultType": "complete", "ttlMs": 0, "cacheScope": "public"}
        return JSONResponse(_answer(request_id, page))
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})


async def _foreign_endpoint() -> AsyncIterator[bytes]:
    yield b"event: endpoint\ndata: http://other.invalid/messages\n\n"
    await asyncio.sleep(3600)


_sse_queues: dict[str, asyncio.Queue[dict[str, Any]]] = {}


async def _sse_legacy(request: Request) -> Response:
    """GET opens the event stream (endpoint event first); POST ?session=... queues the answer on it."""
    if request.method == "GET":
        session = str(len(_sse_queues) + 1)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        _sse_queues[session] = queue

        async def events() -> AsyncIterator[bytes]:
            yield f"event: endpoint\ndata: /sse-legacy?session={session}\n\n".encode()
            while True:
                answer = await queue.get()
                yield f"event: message\ndata: {json.dumps(answer)}\n\n".encode()

        return StreamingResponse(events(), media_type="text/event-stream")
    if request.method != "POST" or "session" not in request.query_params:
        return Response(status_code=405)
    message = json.loads(await request.body())
    queue = _sse_queues[request.query_params["session"]]
    if "id" in message and "method" in message:
        if message["method"] == "initialize":
            result = _initialize_result("sse-legacy") | {"protocolVersion": "2024-11-05"}
            await queue.put(_answer(message["id"], result))
        elif message["method"] == "tools/list":
            await queue.put(_answer(message["id"], _tools_page("sse-legacy", {})))
    return Response("Accepted", status_code=202)


async def _ping_flood() -> AsyncIterator[bytes]:
    yield b"event: endpoint\ndata: /sse-ping-flood?session=1\n\n"
    n = 0
    while True:
        batch = []
        for _ in range(100):
            n += 1
            batch.append(f'event: message\ndata: {{"jsonrpc":"2.0","id":"p{n}","method":"ping"}}\n\n'.encode())
        yield b"".join(batch)
        await asyncio.sleep(0)


async def metadata(request: Request) -> Response:
    base = f"{request.url.scheme}://{request.url.netloc}"
    which = request.path_params["rest"]
    if which == "auth-surrogate":
        body = b'{"resource": "x", "authorization_servers": ["https://a.example/\\ud800"], "n": "a\\u0000b"}'
        return Response(body, media_type="application/json")
    if which == "auth-gzip-bomb":
        return Response(BOMB, headers={"Content-Encoding": "gzip, gzip", "Content-Type": "application/json"})
    if which == "remember-auth":
        doc = {"resource": f"{base}/remember-auth", "scopes_supported": [REMEMBERED[0]], "note": echoes(REMEMBERED[0])}
        return JSONResponse(doc)
    return JSONResponse(
        {
            "resource": f"{base}/auth",
            "authorization_servers": ["https://auth.example.com"],
            "scopes_supported": ["tools:read", "tools:write"],
            "bearer_methods_supported": ["header"],
        }
    )


def app() -> Starlette:
    return Starlette(
        routes=[
            Route("/.well-known/oauth-protected-resource/{rest:path}", metadata, methods=["GET"]),
            Route("/{behaviour}", mcp_endpoint, methods=["GET", "POST", "DELETE"]),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    uvicorn.run(app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
