"""A small MCP server host for the demo and the benchmarks: many servers on one loopback port, one per path.

Each path ``/<name>/mcp`` is one server with its own tool list, speaking Streamable HTTP with JSON answers in one
of four modes: ``legacy`` (the ``initialize`` handshake, protocol 2025-11-25, a session id), ``stateless`` (the
2026-07-28 revision: ``server/discover``, no session), ``auth`` (401 with an RFC 9728 challenge and its
metadata document), or ``lanes`` (tools registered by scope: each bearer token in :attr:`Site.tokens` sees its own
tools, a caller without one sees :attr:`Site.public` with a 200, or a 401; the challenge and the metadata are
switched on and off per site, and the metadata names an authorization server on the same host). Tool lists page
``PAGE_SIZE`` tools at a time. The host never runs a tool.

For benchmarks at registry scale a site can also fail the way real servers do (:attr:`Site.fault`: 402, 429, an
HTML page instead of MCP, an answer later than any deadline, a body that never ends), and the host can wait a set
latency before every answer (``DemoHost(latency=...)``, ``--latency-ms``), as a server across the internet does.

It uses only the standard library (a threading HTTP server), so ``fathom demo`` needs nothing beyond Fathom
itself. Sites can be replaced while it runs (:meth:`DemoHost.set_sites`), which is how the demo makes a change
between two scans. Run ``python -m scanner.demo.server --synthetic 2000`` to serve 2 000 generated servers for a
benchmark; it prints its base URL and then serves until killed.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
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
    mode: str = "legacy"  # legacy | stateless | auth | lanes
    instructions: str | None = None
    title: str = field(default="")
    # mode "lanes": the tools each bearer token sees, and what a caller without one gets
    tokens: Mapping[str, Sequence[str]] = field(default_factory=dict)
    public: Sequence[str] = ()  # the tools a caller without a credential sees (anonymous="list")
    anonymous: str = "list"  # list: 200 with the public tools | 401
    challenge: bool = True  # a 401 names its resource_metadata in WWW-Authenticate
    metadata: bool = True  # protected-resource metadata is served at the well-known URL
    # "" answers; "402" / "429" that status to every POST; "not_mcp" a 200 HTML page; "slow" answers only after the
    # host's stall; "hang" sends a 200's headers and part of its body, then nothing until the stall ends
    fault: str = ""


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
        if self.server.latency:
            time.sleep(self.server.latency)
        prefix = "/.well-known/oauth-protected-resource/"
        as_prefix = "/.well-known/oauth-authorization-server/as/"
        if self.path.startswith(prefix):
            resource = self.path[len(prefix) :]
            site = self.server.sites.get(resource.split("/")[0])
            if site is None or not site.metadata:
                self._send(404)
                return
            lanes = site.mode == "lanes"
            issuer = f"{self.server.base_url}/as/{site.name}" if lanes else "https://auth.example.invalid"
            self._send(
                200,
                {
                    "resource": f"{self.server.base_url}/{resource}",
                    "authorization_servers": [issuer],
                    "scopes_supported": ["tools:read", "tools:admin"] if lanes else ["tools:read"],
                    "bearer_methods_supported": ["header"],
                },
            )
            return
        if self.path.startswith(as_prefix) and self.path[len(as_prefix) :] in self.server.sites:
            issuer = f"{self.server.base_url}/as/{self.path[len(as_prefix) :]}"
            self._send(
                200,
                {
                    "issuer": issuer,
                    "authorization_endpoint": f"{issuer}/authorize",
                    "token_endpoint": f"{issuer}/token",
                    "scopes_supported": ["tools:read", "tools:admin"],
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                },
            )
            return
        self._send(405 if self._site() else 404)

    def do_DELETE(self) -> None:
        if self.server.latency:
            time.sleep(self.server.latency)
        self._send(200 if self._site() else 404)

    def _faulted(self, site: Site) -> bool:
        """Answer as ``site.fault`` says (True), or leave the request to the MCP answer (False)."""
        if site.fault in ("402", "429"):
            self._send(int(site.fault), {"error": "payment required" if site.fault == "402" else "slow down"})
        elif site.fault == "not_mcp":
            page = b"<!doctype html><html><body><h1>Welcome</h1></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif site.fault == "hang":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b'{"jsonrpc": "2.0", ')
            self.wfile.flush()
            time.sleep(self.server.stall)
            self.close_connection = True
        elif site.fault == "slow":
            time.sleep(self.server.stall)
            return False
        else:
            return False
        return True

    def do_POST(self) -> None:
        site = self._site()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, 1 << 20))
        if self.server.latency:
            time.sleep(self.server.latency)
        if site is None:
            self._send(404)
            return
        if site.fault and self._faulted(site):
            return
        visible: set[str] | None = None
        if site.mode in ("auth", "lanes"):
            visible = self._lane(site)
            if visible is None:
                return
        try:
            message = json.loads(raw)
        except ValueError:
            self._send(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            return
        if not isinstance(message, dict) or "id" not in message:
            self._send(202)  # a notification
            return
        result, error, headers = self._answer(site, message, visible)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        self._send(200, reply, headers)

    def _lane(self, site: Site) -> set[str] | None:
        """The tool names this caller's lane sees, or None once a 401 has been sent."""
        header = self.headers.get("Authorization") or ""
        token = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else ""
        if site.mode == "lanes" and token in site.tokens:
            return set(site.tokens[token])
        if site.mode == "lanes" and not token and site.anonymous == "list":
            return set(site.public)
        if site.challenge:
            metadata = f"{self.server.base_url}/.well-known/oauth-protected-resource/{site.name}/mcp"
            challenge = f'Bearer resource_metadata="{metadata}", scope="tools:read"'
        else:
            challenge = 'Bearer realm="demo"'
        if token:
            challenge += ', error="invalid_token"'
        self._send(401, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})
        return None

    def _answer(
        self, site: Site, message: Mapping[str, Any], visible: set[str] | None = None
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
            if site.instructions:
                result["instructions"] = site.instructions
            return result, None, {"Mcp-Session-Id": uuid.uuid4().hex}
        if method == "ping":
            return {}, None, None
        if method == "tools/list":
            cursor = params.get("cursor")
            start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
            tools = [tool for tool in site.tools if visible is None or tool.get("name") in visible]
            page = tools[start : start + PAGE_SIZE]
            result = {"tools": page}
            if start + PAGE_SIZE < len(tools):
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
    latency: float  # seconds waited before answering each request
    stall: float  # seconds a "slow" or "hang" site keeps the caller waiting


class DemoHost:
    """Serves :class:`Site` s on ``127.0.0.1`` (a free port unless one is given) from a background thread.

    ``latency`` seconds pass before each request is answered; a ``slow`` or ``hang`` site keeps its caller ``stall``
    seconds."""

    def __init__(self, sites: Sequence[Site] = (), port: int = 0, *, latency: float = 0.0, stall: float = 60.0) -> None:
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.sites = {}
        self._server.latency = latency
        self._server.stall = stall
        self._server.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.set_sites(sites)
        # Polled every 50 ms, not the standard 0.5 s: leaving (``shutdown``) waits for the next poll, which cost a
        # quarter of a second on average each time a demo host (``fathom demo``, a test's servers) was closed.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fathom-demo-host", daemon=True
        )

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
    parser.add_argument("--latency-ms", type=float, default=0.0, help="wait this long before each answer")
    args = parser.parse_args()
    host = DemoHost(synthetic_sites(args.synthetic), port=args.port, latency=args.latency_ms / 1000)
    print(host.base_url, flush=True)
    host._server.serve_forever()


if __name__ == "__main__":
    main()
