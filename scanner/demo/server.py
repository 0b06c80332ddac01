"""A small MCP server host for the demo and the benchmarks: many servers on one loopback port, one per path.

Each path ``/<name>/mcp`` is one server with its own tool list, speaking Streamable HTTP with JSON answers in one
of three modes: ``legacy`` (the ``initialize`` handshake, protocol 2025-11-25, a session id), ``stateless`` (the
2026-07-28 revision: ``server/discover``, no session), or ``auth`` (401 with an RFC 9728 challenge and its
metadata document). Tool lists page ``PAGE_SIZE`` tools at a time. The host never runs a tool.

It uses only the standard library (a threading HTTP server), so ``fathom demo`` needs nothing beyond Fathom
itself. Sites can be replaced while it runs (:meth:`DemoHost.set_sites`), which is how the demo makes a change
between two scans. Run ``python -m scanner.demo.server --synthetic 2000`` to serve 2 000 generated servers for a
benchmark; it prints its base URL and then serves until killed.
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAGE_SIZE = 50
LEGACY_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"


@dataclass(frozen=True)
class Site:
    """One demo server: its path name, what it says it is, its tools, and how it speaks."""

    name: str
    version: str
    tools: Sequence[Mapping[str, Any]]
    mode: str = "legacy"  # legacy | stateless | auth
    instructions: str | None = None
    title: str = field(default="")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a demo host prints nothing per request."""

    def _site(self) -> Site | None:
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) == 2 and parts[1] == "mcp":
            return self.server.sites.get(parts[0])
        return None

    def _send(self, status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> None:
        payload = b"" if body is None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        prefix = "/.well-known/oauth-protected-resource/"
        if self.path.startswith(prefix):
            resource = self.path[len(prefix) :]
            self._send(
                200,
                {
                    "resource": f"{self.server.base_url}/{resource}",
                    "authorization_servers": ["https://auth.example.invalid"],
                    "scopes_supported": ["tools:read"],
                    "bearer_methods_supported": ["header"],
                },
            )
            return
        self._send(405 if self._site() else 404)

    def do_DELETE(self) -> None:
        self._send(200 if self._site() else 404)

    def do_POST(self) -> None:
        site = self._site()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, 1 << 20))
        if site is None:
            self._send(404)
            return
        if site.mode == "auth":
            metadata = f"{self.server.base_url}/.well-known/oauth-protected-resource/{site.name}/mcp"
            challenge = f'Bearer resource_metadata="{metadata}", scope="tools:read"'
            self._send(401, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})
            return
        try:
            message = json.loads(raw)
        except ValueError:
            self._send(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            return
        if not isinstance(message, dict) or "id" not in message:
            self._send(202)  # a notification
            return
        result, error, headers = self._answer(site, message)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        self._send(200, reply, headers)

    def _answer(
        self, site: Site, message: Mapping[str, Any]
    ) -> tuple[Any, dict[str, Any] | None, dict[str, str] | None]:
        method = message.get("method")
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        info = {"name": site.title or site.name, "version": site.version}
        stateless = site.mode == "stateless"
        if method == "server/discover":
            if not stateless:
                return None, {"code": -32601, "message": "Method not found"}, None
            result = {
                "resultType": "complete",
                "supportedVersions": [STATELESS_VERSION],
                "capabilities": {"tools": {}},
                "cacheScope": "public",
                "ttlMs": 0,
                "_meta": {"io.modelcontextprotocol/serverInfo": info},
            }
            if site.instructions:
                result["instructions"] = site.instructions
            return result, None, None
        if method == "initialize":
            if stateless:
                return None, {"code": -32601, "message": "Method not found"}, None
            result = {"protocolVersion": LEGACY_VERSION, "capabilities": {"tools": {}}, "serverInfo": info}
            return result, None, {"Mcp-Session-Id": uuid.uuid4().hex}
        if method == "ping":
            return {}, None, None
        if method == "tools/list":
            cursor = params.get("cursor")
            start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
            page = list(site.tools[start : start + PAGE_SIZE])
            result = {"tools": page}
            if start + PAGE_SIZE < len(site.tools):
                result["nextCursor"] = str(start + PAGE_SIZE)
            if stateless:
                result.update({"resultType": "complete", "ttlMs": 0, "cacheScope": "public"})
            return result, None, None
        return None, {"code": -32601, "message": "Method not found"}, None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default backlog of 5 resets connections under a concurrent scan

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that hangs up early (a deadline, a cancelled scan) is not the host's problem."""

    sites: dict[str, Site]
    base_url: str


class DemoHost:
    """Serves :class:`Site` s on ``127.0.0.1`` (a free port unless one is given) from a background thread."""

    def __init__(self, sites: Sequence[Site] = (), port: int = 0) -> None:
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.sites = {}
        self._server.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.set_sites(sites)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fathom-demo-host", daemon=True)

    @property
    def base_url(self) -> str:
        return self._server.base_url

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}/mcp"

    def set_sites(self, sites: Sequence[Site]) -> None:
        self._server.sites = {site.name: site for site in sites}

    def __enter__(self) -> DemoHost:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def synthetic_sites(count: int, tools_per_server: int = 8) -> list[Site]:
    """``count`` plausible servers with distinct, realistic tool lists (for benchmarks)."""
    sites = []
    for number in range(count):
        tools = [
            {
                "name": f"action_{index}",
                "description": f"Perform action {index} of service {number}: reads the record named by `id` and "
                f"returns its fields as JSON, or an error when the record does not exist.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The record id, e.g. rec_123."},
                        "verbose": {"type": "boolean", "description": "Include every field."},
                    },
                    "required": ["id"],
                },
            }
            for index in range(tools_per_server)
        ]
        sites.append(Site(name=f"s{number:05d}", version="1.0.0", tools=tools))
    return sites


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve generated MCP servers on 127.0.0.1 for benchmarks.")
    parser.add_argument("--synthetic", type=int, default=100, help="how many servers to serve")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    host = DemoHost(synthetic_sites(args.synthetic), port=args.port)
    print(host.base_url, flush=True)
    host._server.serve_forever()


if __name__ == "__main__":
    main()
