"""Registry test helpers: fixture paths and a real registry API on 127.0.0.1 (fixtures registered in conftest)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "registry"
SAMPLE = FIXTURES / "registry-sample.json"  # a copy of the shared slice of the official registry


class FakeRegistry:
    """A tiny registry: ``pages`` maps a cursor ("" for the first page) to the JSON body (or bytes) it answers."""

    def __init__(self) -> None:
        self.pages: dict[str, Any] = {}
        self.requests: list[dict[str, list[str]]] = []
        self.paths: list[str] = []
        self.status = 200
        self.url = ""


@pytest.fixture
def fake_registry() -> Iterator[FakeRegistry]:
    registry = FakeRegistry()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            registry.requests.append(query)
            registry.paths.append(parts.path)
            body = registry.pages.get(query.get("cursor", [""])[0], {"servers": [], "metadata": {}})
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            self.send_response(registry.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    registry.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        server.shutdown()
        server.server_close()


def row(name: str, version: str, *, latest: bool = True, status: str = "active", url: str | None = None) -> dict:
    """One API row (2025-09-29 shape) for a remote server."""
    return {
        "server": {
            "name": name,
            "description": "test",
            "version": version,
            "remotes": [{"type": "streamable-http", "url": url or f"https://{name.split('/')[-1]}.example.com/mcp"}],
        },
        "_meta": {
            "io.modelcontextprotocol.registry/official": {
                "status": status,
                "isLatest": latest,
                "publishedAt": "2025-10-01T00:00:00Z",
                "updatedAt": "2025-10-01T00:00:00Z",
            }
        },
    }


@pytest.fixture
def write_json(tmp_path: Path) -> Callable[[str, Any], Path]:
    def write(name: str, document: Any) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(document), encoding="utf-8")
        return path

    return write
