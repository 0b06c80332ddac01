"""A key echoed in a non-JSON answer's Content-Type is never printed or saved (issue 33, low item).

A real loopback server answers the scan with its ``Content-Type`` built from the ``Authorization`` header it was
sent. The content type was lower-cased before it was shown, so the scrubber no longer recognised the key in it and
the outcome's detail and ``extra["content_type"]`` kept it; now it is shown as written (and scrubbed) when it has a
media type's shape, and not shown at all otherwise. ``fathom try`` printed and saved a provider's echo the same
way.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.mcp import ClientLimits, scan_server
from scanner.models import Outcome, ServerEntry, Transport
from tests.trial.conftest import PROVIDER_VARIABLES
from tests.trial.stub import Stub

KEY = "Sk-Live-AbC123xyZ789QrSt"
SHAPES = {"text/{key}": "text/[secret]", "{key}": "(not a media type)", "Bearer {key}": "(not a media type)"}


class _Echo(BaseHTTPRequestHandler):
    shape = "text/{key}"

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        body = b"<html>nothing here</html>"
        self.send_response(200)
        self.send_header("Content-Type", self.shape.format(key=key) + "; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = _answer
    do_GET = _answer


@pytest.fixture
def echo_server() -> Iterator[tuple[str, type[_Echo]]]:
    handler = type("Echo", (_Echo,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("transport", [Transport.STREAMABLE_HTTP, Transport.SSE])
def test_a_key_echoed_in_the_content_type_is_not_kept(
    echo_server: tuple[str, type[_Echo]], shape: str, transport: Transport
) -> None:
    url, handler = echo_server
    handler.shape = shape
    entry = ServerEntry(name="echo", transport=transport, url=url, headers={"Authorization": f"Bearer {KEY}"})
    outcome = anyio.run(scan_server, entry, ClientLimits(timeout=30))
    assert outcome.outcome is Outcome.NOT_MCP, outcome
    kept = json.dumps([outcome.detail, outcome.extra])
    assert KEY not in kept and KEY.lower() not in kept and KEY[:12].lower() not in kept.lower(), kept
    assert outcome.extra["content_type"] == SHAPES[shape]
    assert SHAPES[shape] in outcome.detail


def test_an_ordinary_content_type_is_still_shown(echo_server: tuple[str, type[_Echo]]) -> None:
    url, handler = echo_server
    handler.shape = "Text/HTML"
    outcome = anyio.run(scan_server, ServerEntry(name="e", transport=Transport.STREAMABLE_HTTP, url=url))
    assert outcome.outcome is Outcome.NOT_MCP and outcome.extra["content_type"] == "Text/HTML"


@pytest.fixture
def provider() -> Iterator[Stub]:
    server = Stub()
    try:
        yield server
    finally:
        server.close()


def test_try_neither_prints_nor_saves_a_key_echoed_in_the_content_type(
    provider: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    stub = provider
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}), encoding="utf-8")
    stub.reply(200, raw=b"<html>no</html>", headers={"Content-Type": f"text/html; key={KEY}"})
    save = tmp_path / "t.json"
    args = ["try", "--model", "m", "--base-url", stub.url + "/v1", "-f", str(tools), "--prompt", "x"]
    result = CliRunner().invoke(app, [*args, "--save", str(save)])
    assert result.exit_code == 5, result.output
    said = result.output + (save.read_text(encoding="utf-8") if save.exists() else "")
    assert "not JSON" in result.output and KEY not in said, said
