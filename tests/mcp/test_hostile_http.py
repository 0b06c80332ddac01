"""Every HTTP fault ends as the right outcome, within its deadline, and never as an exception."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scanner.mcp import ClientLimits
from scanner.models import Outcome, Transport
from tests.mcp.helpers import FAST, http_entry, names, timed_scan
from tests.servers.launch import free_port

pytestmark = pytest.mark.timeout(180)

LIMITS = ClientLimits(
    timeout=2.0, connect_timeout=1.0, shutdown_grace=0.3, max_answer_bytes=1024 * 1024, max_pages=20, max_tools=30
)
LONG = replace(LIMITS, timeout=60.0)
SLACK = 30.0  # seconds over the deadline a scan may take to wind down (generous: a loaded machine is slow)


@pytest.mark.parametrize(
    ("path", "outcome"),
    [
        ("/hang", Outcome.TIMEOUT),
        ("/drip", Outcome.TIMEOUT),
        ("/sse-silent", Outcome.TIMEOUT),
        ("/huge", Outcome.TOO_LARGE),
        ("/malformed", Outcome.INVALID_RESPONSE),
        ("/html", Outcome.NOT_MCP),
        ("/error500", Outcome.HTTP_ERROR),
        ("/wrong-id", Outcome.PROTOCOL_ERROR),
        ("/repeat", Outcome.PROTOCOL_ERROR),
        ("/endless", Outcome.PROTOCOL_ERROR),
        ("/redirect-loop", Outcome.HTTP_ERROR),
        ("/redirect-foreign", Outcome.HTTP_ERROR),
        ("/tools-not-list", Outcome.INVALID_RESPONSE),
        ("/many-tools", Outcome.TOO_LARGE),
        ("/modern-unsupported", Outcome.PROTOCOL_ERROR),
        ("/bad-session", Outcome.INVALID_RESPONSE),
    ],
)
def test_fault_becomes_outcome_within_deadline(hostile_http, path, outcome):
    # A fault that is not a timeout is judged with the deadline far away: on a loaded machine the fault, not the
    # clock, must decide the outcome. A timeout keeps the short deadline, which the scan must not overrun.
    limits = LIMITS if outcome is Outcome.TIMEOUT else LONG
    result, elapsed = timed_scan(http_entry(hostile_http.url(path), Transport.STREAMABLE_HTTP), limits)
    assert result.outcome is outcome, result.detail
    assert result.tools is None
    assert result.detail
    assert elapsed < limits.timeout + SLACK


def test_fault_details(hostile_http):
    def scan_path(path: str):
        return timed_scan(http_entry(hostile_http.url(path), Transport.STREAMABLE_HTTP), LONG)[0]

    assert scan_path("/error500").extra["status"] == 500
    html = scan_path("/html")
    assert html.extra["content_type"] == "text/html" and "log in" in html.extra["snippet"]
    assert scan_path("/huge").extra["limit_bytes"] == 1024 * 1024
    endless = scan_path("/endless")
    assert endless.pages == LIMITS.max_pages and "20 pages" in endless.detail
    repeat = scan_path("/repeat")
    assert repeat.pages == 2 and "repeated a cursor" in repeat.detail
    assert scan_path("/redirect-loop").extra["redirects"] == LIMITS.max_redirects + 1
    assert "another origin" in scan_path("/redirect-foreign").detail
    unsupported = scan_path("/modern-unsupported")
    assert unsupported.era == "stateless" and unsupported.extra["supported"] == ["2099-01-01"]


def test_auth_required_with_challenge_and_metadata(hostile_http):
    secret = "Bearer SECRET-TOKEN-123"
    entry = http_entry(hostile_http.url("/auth"), headers={"Authorization": secret})
    result, _ = timed_scan(entry, LONG, extra_headers={"X-Api-Key": "OTHER-SECRET-456"})
    assert result.outcome is Outcome.AUTH_REQUIRED, result.detail
    assert result.extra["status"] == 401
    challenge = result.extra["challenge"]
    assert challenge["scheme"] == "Bearer"
    assert challenge["params"]["scope"] == "tools:read"
    assert result.extra["resource_metadata_url"] == hostile_http.url("/.well-known/oauth-protected-resource/auth")
    assert result.extra["resource_metadata"]["authorization_servers"] == ["https://auth.example.com"]
    assert result.extra["resource_metadata"]["scopes_supported"] == ["tools:read", "tools:write"]
    assert "SECRET-TOKEN-123" not in repr(result) and "OTHER-SECRET-456" not in repr(result)


def test_auth_metadata_on_another_origin_is_not_fetched(hostile_http):
    result, elapsed = timed_scan(http_entry(hostile_http.url("/auth-foreign")), LONG)
    assert result.outcome is Outcome.AUTH_REQUIRED
    assert "another origin" in result.extra["resource_metadata_error"]
    assert "resource_metadata" not in result.extra
    assert elapsed < 30  # generous: a loaded machine is slow, not wrong


def test_server_requests_on_the_stream_are_answered(hostile_http):
    # The server holds the initialize answer until we replied {} to its ping and -32601 to its roots/list.
    result, _ = timed_scan(http_entry(hostile_http.url("/sse-ping")), LONG)
    assert result.outcome is Outcome.OK, result.detail
    assert names(result) == ["tool_1", "tool_2"]


def test_modern_server_follows_the_empty_string_cursor(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/modern")), LONG)
    assert result.outcome is Outcome.OK, result.detail
    assert (result.era, result.protocol_version, result.server_name) == ("stateless", "2026-07-28", "hostile-modern")
    assert result.pages == 2
    assert names(result) == ["tool_1", "tool_2"]
    assert result.extra["instructions"] == "Use tool_1 before tool_2."
    assert (result.extra["ttl_ms"], result.extra["cache_scope"]) == (0, "public")


def test_modern_error_in_an_http_400_body_is_a_protocol_error(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/modern-needs-capability")), LONG)
    assert result.outcome is Outcome.PROTOCOL_ERROR, result.detail
    assert result.era == "stateless"
    assert result.extra["error"]["code"] == -32021


def test_an_ended_session_is_started_again_once(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/session-expire")), LONG)
    assert result.outcome is Outcome.OK, result.detail
    assert names(result) == ["tool_1", "tool_2"]
    assert result.extra["session_restarted"] is True
    assert result.pages == 1


def test_a_4xx_after_the_handshake_is_not_a_reason_to_try_sse(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/list-400")), LONG)
    assert result.outcome is Outcome.HTTP_ERROR, result.detail
    assert (result.transport, result.era, result.extra["status"]) == ("streamable-http", "legacy", 400)
    assert "fallback" not in result.extra


def test_server_without_tools_has_an_empty_list(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/no-tools")), LONG)
    assert result.outcome is Outcome.OK, result.detail
    assert result.tools == ()
    assert result.extra["tools_capability"] is False


def test_legacy_empty_string_cursor_is_the_end(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/empty-cursor")), LONG)
    assert result.outcome is Outcome.OK
    assert result.pages == 1 and result.extra["empty_cursor_taken_as_end"] is True
    assert (result.era, result.protocol_version) == ("legacy", "2025-06-18")


def test_hostile_tools_are_kept_untouched(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/hostile-tools")), LONG)
    assert result.outcome is Outcome.OK, result.detail
    assert result.tools == (42, "x", {"name": ["a", "b"], "inputSchema": "nope"})


def test_hand_written_legacy_sse_server(hostile_http):
    forced, _ = timed_scan(http_entry(hostile_http.url("/sse-legacy"), Transport.SSE), LONG)
    fallback, _ = timed_scan(http_entry(hostile_http.url("/sse-legacy")), LONG)
    for result in (forced, fallback):
        assert result.outcome is Outcome.OK, result.detail
        assert (result.transport, result.protocol_version) == ("sse", "2024-11-05")
        assert names(result) == ["tool_1", "tool_2"]


def test_sse_endpoint_on_another_origin_is_refused(hostile_http):
    result, elapsed = timed_scan(http_entry(hostile_http.url("/sse-foreign-endpoint"), Transport.SSE), LONG)
    assert result.outcome is Outcome.PROTOCOL_ERROR, result.detail
    assert "another origin" in result.detail
    assert elapsed < 30  # generous: a loaded machine is slow, not wrong


def test_nothing_listening_is_a_connect_error():
    result, elapsed = timed_scan(http_entry(f"http://127.0.0.1:{free_port()}/mcp"), FAST)
    assert result.outcome is Outcome.CONNECT_ERROR, result.detail
    assert elapsed < 30  # generous: a loaded machine is slow, not wrong


@pytest.mark.parametrize("value", ["SECRET-1\nInjected: yes", "SECRÉT-1", "SECRET-1\x00"])
def test_a_header_that_is_not_valid_http_is_refused_without_quoting_it(hostile_http, value):
    result, _ = timed_scan(http_entry(hostile_http.url("/ok"), headers={"Authorization": value}), LONG)
    assert result.outcome is Outcome.CONNECT_ERROR, result.detail
    assert "SECRET" not in repr(result) and "CRÉT" not in repr(result)
