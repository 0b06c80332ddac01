"""The client against ``@modelcontextprotocol/server-everything`` from npm (a TypeScript-SDK legacy server).

Its tool count depends on the declared client capabilities: 13 (bare), 16 (rich: roots, sampling, form
elicitation), 17 (full: plus URL elicitation). ``npm install`` in tests/npm installs it (CI does).
"""

from __future__ import annotations

import pytest

from scanner.mcp import ClientLimits
from scanner.models import Outcome, Transport
from tests.mcp.helpers import http_entry, scan, stdio_entry
from tests.servers.launch import everything_command, everything_installed, running, start_everything

pytestmark = [
    pytest.mark.npm,
    pytest.mark.timeout(60),
    pytest.mark.skipif(not everything_installed(), reason="run `npm install` in tests/npm (node_modules missing)"),
]

LIMITS = ClientLimits(timeout=20.0, shutdown_grace=0.5)


@pytest.mark.parametrize(("profile", "count"), [("bare", 13), ("rich", 16), ("full", 17)])
def test_stdio_tool_count_follows_the_profile(profile: str, count: int):
    outcome = scan(stdio_entry(everything_command("stdio")), LIMITS, profile=profile)
    assert outcome.outcome is Outcome.OK, outcome.detail
    assert len(outcome.tools or ()) == count
    assert outcome.capability_profile == profile
    assert outcome.server_name == "mcp-servers/everything"
    assert outcome.era == "legacy"
    assert outcome.transport == "stdio"
    assert outcome.extra["discover"] == "JSON-RPC error -32601"


def test_streamable_http_and_sse():
    with running(start_everything("streamableHttp")) as server:
        streamable = scan(http_entry(server.url("/mcp")), LIMITS)
    with running(start_everything("sse")) as server:
        sse = scan(http_entry(server.url("/sse")), LIMITS)
    assert streamable.outcome is Outcome.OK, streamable.detail
    assert (streamable.transport, streamable.era, len(streamable.tools or ())) == ("streamable-http", "legacy", 16)
    assert streamable.protocol_version == "2025-11-25"
    assert sse.outcome is Outcome.OK, sse.detail
    assert (sse.transport, sse.era, len(sse.tools or ())) == ("sse", "legacy", 16)
    assert Transport(sse.transport) is Transport.SSE
