"""The pieces that read untrusted bytes: the SSE parser, the WWW-Authenticate parser, JSON-RPC checks."""

from __future__ import annotations

import pytest

from scanner.mcp import jsonrpc
from scanner.mcp.auth import parse_challenge
from scanner.mcp.failures import ScanFailure
from scanner.mcp.sse import SSEParser
from scanner.mcp.transports import http
from scanner.models import Outcome, ServerEntry, Transport
from tests.mcp.helpers import scan

pytestmark = pytest.mark.timeout(10)

STREAM = b'id: 0\ndata:\n\n: keep-alive\r\n\r\nevent: message\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: x\r\r\n'


def test_sse_events_come_out_whole_whatever_the_chunking():
    expected = [("message", "", "0"), ("message", '{"a":\n1}', "0"), ("message", "x", "0")]
    for size in (1, 2, 3, 7, len(STREAM)):
        parser = SSEParser()
        events = []
        for start in range(0, len(STREAM), size):
            events.extend(parser.feed(STREAM[start : start + size]))
        assert [(e.event, e.data, e.id) for e in events] == expected, size


def test_challenge_parameters():
    challenge = parse_challenge(
        'Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource", '
        'scope="files:read files:write", error="insufficient_scope", realm=mcp'
    )
    assert challenge["scheme"] == "Bearer"
    assert challenge["params"] == {
        "resource_metadata": "https://a.example/.well-known/oauth-protected-resource",
        "scope": "files:read files:write",
        "error": "insufficient_scope",
        "realm": "mcp",
    }
    assert parse_challenge("")["params"] == {}


def test_ids_must_match_exactly():
    assert jsonrpc.same_id(3, 3)
    assert not jsonrpc.same_id("3", 3)
    assert not jsonrpc.same_id(True, 1)


@pytest.mark.parametrize(
    ("error", "modern"),
    [
        ({"code": -32022, "message": "x", "data": {"supported": ["2026-07-28"]}}, True),
        ({"code": -32021, "message": "x"}, True),
        ({"code": -32601, "message": "Method not found"}, False),
        ({"code": -32601, "message": "x", "data": {"supported": ["2026-07-28"]}}, True),
        ({"code": "-32022", "message": "x"}, False),
    ],
)
def test_modern_errors_are_recognised(error, modern):
    assert jsonrpc.is_modern_error(error) is modern


def test_not_json_is_invalid_response():
    with pytest.raises(ScanFailure) as caught:
        jsonrpc.decode(b"<html>")
    assert caught.value.outcome is Outcome.INVALID_RESPONSE
    with pytest.raises(ScanFailure):
        jsonrpc.decode(b"[" * 100_000)


def test_skipped_entry_is_not_connected():
    entry = ServerEntry(name="x", transport=Transport.STDIO, command=("/nonexistent",), skip="needs --run-packages")
    outcome = scan(entry)
    assert (outcome.outcome, outcome.detail) == (Outcome.SKIPPED, "needs --run-packages")


@pytest.mark.parametrize(
    ("start", "target", "allowed"),
    [
        ("http://a.example/mcp", "http://a.example/mcp/", True),
        ("http://a.example/mcp", "https://a.example/mcp", True),
        ("https://a.example/mcp", "http://a.example/mcp", False),
        ("http://a.example/mcp", "https://a.example:8443/mcp", False),
        ("https://a.example/mcp", "https://b.example/mcp", False),
        ("http://127.0.0.1:80/mcp", "http://127.0.0.1:81/mcp", False),
    ],
)
def test_redirects_stay_on_the_origin(start, target, allowed):
    assert http.redirect_allowed(http.origin(start), http.origin(target)) is allowed
