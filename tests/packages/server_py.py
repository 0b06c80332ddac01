"""A stdlib-only MCP server for Fathom's package tests, shipped as the wheel ``fathom_test_pyserver``.

Its one tool is named after its version. ``argv[1]`` picks a behaviour: serve (default), crash (a traceback
from a nested call, as a real server's import-time failure prints) or http (Streamable HTTP at /mcp, JSON
answers, on 127.0.0.1 at the port given by ``--port N``: a local-port package).
"""

from __future__ import annotations

import json
import sys

VERSION = "0.0.0"


def _load_index(path: str) -> None:
    raise RuntimeError(f"index {path} is corrupt")


def _start() -> None:
    _load_index("/var/lib/fathom-test/index.db")


def _serve_http(port: int) -> None:
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            reply = _answer(json.loads(body)) if self.path.split("?")[0] == "/mcp" else None
            data = json.dumps(reply).encode() if reply is not None else b""
            self.send_response(200 if reply is not None else 202)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = HTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    server.serve_forever()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "crash":
        print("starting fathom-test-pyserver", file=sys.stderr, flush=True)
        _start()
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        _serve_http(int(sys.argv[sys.argv.index("--port") + 1]))
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = _answer(json.loads(line))
        if reply is not None:
            print(json.dumps(reply), flush=True)


def _answer(request: dict) -> dict | None:
    """The answer to one JSON-RPC message (None for a notification)."""
    if "id" not in request:
        return None
    if request.get("method") == "initialize":
        result = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fathom-test-pyserver", "version": VERSION},
        }
        return {"jsonrpc": "2.0", "id": request["id"], "result": result}
    if request.get("method") == "tools/list":
        tool = {"name": "version_" + VERSION.replace(".", "_"), "inputSchema": {"type": "object"}}
        return {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [tool]}}
    return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "not found"}}
