"""The census classes against real loopback servers: 402 (x402 body and v2 header), an HTML page, a JSON API,
a 429 storm after the crawl's retries. Each ends as its own outcome with what a census needs to count it."""

from __future__ import annotations

import pytest

from scanner.mcp import ClientLimits
from scanner.mcp.census import snippet, status_outcome, x402_summary, x402_text
from scanner.models import Outcome, Transport
from tests.mcp.helpers import http_entry, timed_scan

pytestmark = pytest.mark.timeout(30)

LIMITS = ClientLimits(timeout=3.0, connect_timeout=1.0, shutdown_grace=0.3)


def scan_path(server, path: str, transport: Transport = Transport.HTTP):
    return timed_scan(http_entry(server.url(path), transport), LIMITS)[0]


def test_402_with_an_x402_body_is_payment_required_with_the_offer(hostile_http):
    result = scan_path(hostile_http, "/x402")
    assert result.outcome is Outcome.PAYMENT_REQUIRED, result.detail
    assert result.extra["status"] == 402
    offer = result.extra["x402"]
    assert offer["version"] == 1 and offer["offers"] == 2
    first = offer["accepts"][0]
    assert first == {
        "scheme": "exact",
        "network": "base",
        "amount": "10000",
        "asset": "USDC",
        "description": "One call \\u001b[31m",  # the escape character shown, never sent to a terminal
    }
    assert result.detail == "HTTP 402: payment required (x402: exact 10000 USDC on base (+1 more offer))"


def test_402_with_an_x402_v2_header(hostile_http):
    result = scan_path(hostile_http, "/x402-header", Transport.STREAMABLE_HTTP)
    assert result.outcome is Outcome.PAYMENT_REQUIRED, result.detail
    assert result.extra["x402"] == {
        "offers": 1,
        "version": 2,
        "accepts": [{"scheme": "exact", "network": "eip155:8453", "amount": "5"}],
    }


def test_an_html_page_is_not_mcp_with_its_type_and_an_escaped_snippet(hostile_http):
    result = scan_path(hostile_http, "/html-page", Transport.STREAMABLE_HTTP)
    assert result.outcome is Outcome.NOT_MCP, result.detail
    assert result.extra["content_type"] == "text/html"
    assert result.extra["snippet"] == "<html><title>Parked</title><body>\\u001b[2Jfor sale</body></html>"


def test_an_html_page_on_the_legacy_sse_get_is_not_mcp(hostile_http):
    result = scan_path(hostile_http, "/html-page", Transport.SSE)
    assert result.outcome is Outcome.NOT_MCP, result.detail
    assert result.extra["content_type"] == "text/html" and "for sale" in result.extra["snippet"]


def test_json_that_is_not_json_rpc_is_not_mcp(hostile_http):
    result = scan_path(hostile_http, "/json-api")
    assert result.outcome is Outcome.NOT_MCP, result.detail
    assert result.extra["content_type"] == "application/json"
    assert result.extra["snippet"] == '{"status":"ok","version":"1.2.3"}'


def test_malformed_json_stays_invalid_response(hostile_http):
    # Claiming JSON-RPC and sending broken JSON is a broken MCP server, not a web page.
    assert scan_path(hostile_http, "/malformed", Transport.STREAMABLE_HTTP).outcome is Outcome.INVALID_RESPONSE


def test_status_outcomes():
    assert status_outcome(402) is Outcome.PAYMENT_REQUIRED
    assert status_outcome(429) is Outcome.RATE_LIMITED
    assert status_outcome(500) is Outcome.HTTP_ERROR


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[1,2]", b'{"accepts": 5}', b'{"x402Version": true}', b'{"error": "pay up"}', b"{" * 5000],
)
def test_x402_summary_of_junk_is_none_or_empty(body):
    summary = x402_summary(body, "%%%not base64")
    assert summary is None or summary.get("accepts") is None


def test_x402_summary_caps_offers_and_fields():
    accepts = [{"scheme": "s" * 500, "network": n} for n in range(10)]
    import json

    summary = x402_summary(json.dumps({"x402Version": 1, "accepts": accepts}).encode())
    assert summary is not None and summary["offers"] == 10 and len(summary["accepts"]) == 3
    assert len(summary["accepts"][0]["scheme"]) <= 81
    assert x402_text(summary).endswith("(+9 more offers)")


def test_snippet_folds_space_and_escapes():
    assert snippet("a\n\n  b\x07c", limit=10) == "a b\\u0007c"
