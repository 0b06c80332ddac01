"""The client against servers built on the official Python SDK: stdio, Streamable HTTP (both eras), SSE."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from scanner.mcp import ClientLimits, scan_server
from scanner.models import Outcome, ScanOutcome, Transport
from tests.mcp.helpers import http_entry, names, scan, stdio_entry
from tests.servers.launch import hostile_stdio_command, running, sdk_command, start_sdk_http

pytestmark = pytest.mark.timeout(30)

DEFAULT_NAMES = ["get_weather", "add", "ping_me"]


def test_stdio_sdk_server_speaks_the_2026_era_and_pages():
    # The probe waits min(connect_timeout, timeout / 3): 10 s for the SDK server to start, on a loaded machine too.
    limits = ClientLimits(timeout=30, connect_timeout=10, shutdown_grace=0.3)
    outcome = scan(stdio_entry(sdk_command("stdio", page_size=2)), limits)
    assert outcome.outcome is Outcome.OK, outcome.detail
    assert names(outcome) == DEFAULT_NAMES
    assert (outcome.server_name, outcome.server_version) == ("fathom-test-sdk", "1.2.3")
    assert (outcome.era, outcome.protocol_version) == ("stateless", "2026-07-28")
    assert outcome.transport == "stdio"
    assert outcome.pages == 2
    assert outcome.capability_profile == "rich"
    assert set(outcome.timings_ms) == {"connect", "handshake", "list", "shutdown", "total"}
    assert "discover" not in outcome.extra  # the probe was answered


def test_stdio_server_slower_than_the_probe_is_still_found_modern():
    # The probe gives up before the SDK server has started; the server then answers our discover, locks the
    # connection to 2026 and refuses initialize with -32022: the client re-probes instead of failing.
    limits = ClientLimits(timeout=10, connect_timeout=0.05, shutdown_grace=0.3)
    outcome = scan(stdio_entry(sdk_command("stdio")), limits)
    assert outcome.outcome is Outcome.OK, outcome.detail
    assert (outcome.era, outcome.protocol_version) == ("stateless", "2026-07-28")
    assert outcome.extra["discover"].startswith("late")
    assert names(outcome) == DEFAULT_NAMES


def test_streamable_http_sdk_server_2026_era(sdk_http):
    outcome = scan(http_entry(sdk_http.url("/mcp")))
    assert outcome.outcome is Outcome.OK, outcome.detail
    assert names(outcome) == DEFAULT_NAMES
    assert (outcome.era, outcome.protocol_version) == ("stateless", "2026-07-28")
    assert outcome.transport == "streamable-http"
    assert outcome.pages == 2
    assert outcome.server_name == "fathom-test-sdk"
    assert "session" not in outcome.extra  # stateless: no Mcp-Session-Id


def test_legacy_only_http_server_gets_initialize_and_a_session():
    with running(start_sdk_http(page_size=2, legacy_only=True)) as server:
        outcome = scan(http_entry(server.url("/mcp"), Transport.STREAMABLE_HTTP))
    assert outcome.outcome is Outcome.OK, outcome.detail
    assert names(outcome) == DEFAULT_NAMES
    assert (outcome.era, outcome.protocol_version) == ("legacy", "2025-11-25")
    assert outcome.pages == 2
    assert outcome.extra["discover"] == "HTTP 400"
    assert outcome.extra["session"] is True
    assert outcome.extra["delete_status"] in (200, 204, 405)  # the session was ended


def test_sdk_sse_server_by_fallback_and_forced():
    with running(start_sdk_http(sse=True)) as server:
        fallback = scan(http_entry(server.url("/sse")))
        forced = scan(http_entry(server.url("/sse"), Transport.SSE))
        streamable_only = scan(http_entry(server.url("/sse"), Transport.STREAMABLE_HTTP))
    for outcome in (fallback, forced):
        assert outcome.outcome is Outcome.OK, outcome.detail
        assert names(outcome) == DEFAULT_NAMES
        assert outcome.transport == "sse"
        assert outcome.era == "legacy"
        assert outcome.server_name == "fathom-test-sdk"
    assert "fallback" in fallback.extra and "fallback" not in forced.extra
    assert streamable_only.outcome is Outcome.HTTP_ERROR
    assert streamable_only.extra["status"] == 405


def test_tool_list_file_can_change_between_two_scans(tmp_path: Path):
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps([{"name": "first", "inputSchema": {"type": "object"}}]), encoding="utf-8")
    with running(start_sdk_http(tools_file=tools_file)) as server:
        before = scan(http_entry(server.url("/mcp")))
        tools_file.write_text(
            json.dumps([{"name": n, "inputSchema": {"type": "object"}} for n in ("second", "third")]),
            encoding="utf-8",
        )
        after = scan(http_entry(server.url("/mcp")))
    assert names(before) == ["first"]
    assert names(after) == ["second", "third"]


def test_profile_name_is_reported(sdk_http):
    outcome = scan(http_entry(sdk_http.url("/mcp")), profile="bare")
    assert outcome.outcome is Outcome.OK
    assert outcome.capability_profile == "bare"


def test_unknown_profile_is_a_caller_error(sdk_http):
    with pytest.raises(KeyError):
        scan(http_entry(sdk_http.url("/mcp")), profile="nope")


def test_concurrent_scans_in_one_event_loop_do_not_interfere(sdk_http):
    limits = ClientLimits(timeout=15, shutdown_grace=0.3)
    entries = [http_entry(sdk_http.url("/mcp")) for _ in range(6)]
    entries += [stdio_entry(hostile_stdio_command("banner")) for _ in range(4)]
    entries.append(http_entry(sdk_http.url("/nope")))
    outcomes: list[ScanOutcome | None] = [None] * len(entries)

    async def main() -> None:
        async def one(index: int) -> None:
            outcomes[index] = await scan_server(entries[index], limits)

        async with anyio.create_task_group() as group:
            for index in range(len(entries)):
                group.start_soon(one, index)

    anyio.run(main)
    done = [outcome for outcome in outcomes if outcome is not None]
    assert [names(o) for o in done[:6]] == [DEFAULT_NAMES] * 6
    assert [names(o) for o in done[6:10]] == [["one", "two"]] * 4
    assert done[10].outcome is Outcome.HTTP_ERROR
