"""A loopback HTTP server that stands in for a model provider: it records each request and replies from a script.

Replies are queued (status, JSON body, headers, delay); when the queue is empty the default reply is sent. The
request target is kept as sent, so a request that came through an HTTP proxy (absolute form,
``POST http://provider.test/v1/messages``) shows which host it was meant for.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Recorded:
    method: str
    target: str  # as sent: a path, or an absolute URL through a proxy
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None  # sent as is instead of JSON


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-answer (a test of a cap or a timeout) is expected, not news


class Stub:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: deque[Reply] = deque()
        self.default = Reply(500, {"error": "no reply scripted"})
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                stub.requests.append(
                    Recorded(
                        method="POST",
                        target=self.path,
                        path=urlsplit(self.path).path,
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                    )
                )
                reply = stub.replies.popleft() if stub.replies else stub.default
                if reply.delay:
                    time.sleep(reply.delay)
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    content_type = "application/json" if reply.raw is None else "text/html"
                    self.send_header("content-type", content_type)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply(self, status: int = 200, body: Any = None, **kwargs: Any) -> None:
        self.replies.append(Reply(status, body, **kwargs))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
