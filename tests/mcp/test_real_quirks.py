"""Regressions from checking real npm and PyPI servers (docs/real-servers.md), each against a local server that
does the same thing (tests/mcp/real_quirks.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scanner.mcp import ClientLimits
from scanner.models import Outcome, Transport
from tests.mcp.helpers import FAST, http_entry, names, stdio_entry, timed_scan
from tests.servers.launch import RunningServer, free_port, running, start

pytestmark = pytest.mark.timeout(30)

QUIRKS = str(Path(__file__).resolve().parent / "real_quirks.py")


@pytest.fixture(scope="module")
def quirks_http() -> Iterator[RunningServer]:
    port = free_port()
    with running(start([sys.executable, QUIRKS, "--port", str(port)], port)) as server:
        yield server


def test_an_http_error_says_what_the_server_said(quirks_http):
    # @playwright/mcp over HTTP: a 403 to a Host it does not expect. The bare "HTTP 403" left a user guessing.
    result, _ = timed_scan(http_entry(quirks_http.url("/host-check")), FAST)
    expected = f"Access is only allowed at localhost:{quirks_http.port}"
    assert result.outcome is Outcome.HTTP_ERROR, result.detail
    assert result.detail == f"HTTP 403: {expected}"
    assert (result.extra["status"], result.extra["reason"]) == (403, expected)


def test_following_the_reason_works(quirks_http):
    # What the reason tells the user to do: use the host the server named.
    result, _ = timed_scan(http_entry(f"http://localhost:{quirks_http.port}/host-check"), FAST)
    assert result.outcome is Outcome.OK, result.detail
    assert names(result) == ["echo"]


def test_an_auth_answer_without_a_challenge_keeps_the_json_reason(quirks_http):
    # mcp-atlassian over HTTP: 401, no WWW-Authenticate, the reason in a JSON body.
    result, _ = timed_scan(http_entry(quirks_http.url("/json-401"), Transport.STREAMABLE_HTTP), FAST)
    reason = "Authentication required: no Atlassian credentials were provided."
    assert result.outcome is Outcome.AUTH_REQUIRED, result.detail
    assert result.detail == f"HTTP 401: authorization required ({reason})"
    assert result.extra["reason"] == reason
    assert "challenge" not in result.extra


def test_a_header_echoed_into_an_error_body_is_not_repeated(quirks_http):
    entry = http_entry(quirks_http.url("/echo-403"), headers={"Authorization": "Bearer SECRET-TOKEN-789"})
    result, _ = timed_scan(entry, FAST)
    assert result.outcome is Outcome.HTTP_ERROR, result.detail
    assert result.detail == "HTTP 403: Forbidden: token [secret] is not allowed here"
    assert "SECRET-TOKEN-789" not in repr(result)


def test_a_timeout_quotes_the_last_stderr_line():
    # mcp-server-qdrant offline: stuck retrying a model download; the detail now says so.
    result, elapsed = timed_scan(stdio_entry((sys.executable, QUIRKS, "--stdio", "stuck-start")), FAST)
    assert result.outcome is Outcome.TIMEOUT
    assert result.detail == (
        f"no complete answer within {FAST.timeout:g} s; "
        "last stderr line: ERROR Could not download model from HuggingFace, sleeping for 3.0 seconds"
    )
    assert elapsed < FAST.timeout + 3 * FAST.shutdown_grace + 1.0


def test_a_server_that_outlives_its_stdin_costs_shutdown_not_list_time():
    # server-everything on stdio keeps running after stdin closes: that wait is timed as shutdown, apart.
    limits = ClientLimits(timeout=10.0, connect_timeout=5.0, shutdown_grace=0.5)
    result, _ = timed_scan(stdio_entry((sys.executable, QUIRKS, "--stdio", "ignores-eof")), limits)
    assert result.outcome is Outcome.OK, result.detail
    timings = result.timings_ms
    assert set(timings) == {"connect", "handshake", "list", "shutdown", "total"}
    assert timings["shutdown"] >= limits.shutdown_grace * 1000
    assert timings["list"] < limits.shutdown_grace * 1000
    parts = timings["connect"] + timings["handshake"] + timings["list"] + timings["shutdown"]
    assert abs(timings["total"] - parts) < 50


def test_a_python_server_listing_a_set_lists_the_same_bytes_every_start(monkeypatch):
    # mcp-atlassian: a default joined from a set changed with each start's hash salt (a new toolset per scan).
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    entry = stdio_entry((sys.executable, QUIRKS, "--stdio", "set-default"))
    defaults = set()
    for _ in range(3):
        result, _ = timed_scan(entry, FAST)
        assert result.outcome is Outcome.OK, result.detail
        assert result.tools is not None
        defaults.add(result.tools[0]["inputSchema"]["properties"]["fields"]["default"])
    assert len(defaults) == 1
    assert len(next(iter(defaults)).split(",")) == 17


@pytest.mark.parametrize(("path", "outcome"), [("/drip-401", Outcome.AUTH_REQUIRED), ("/drip-403", Outcome.HTTP_ERROR)])
def test_an_endless_error_body_still_ends_as_its_status(quirks_http, path, outcome):
    # Reading the reason is bounded by connect_timeout: the status decides the outcome, not the body's pace.
    # The deadline far away (a loaded machine is slow): the endless body ends at connect_timeout, not at it.
    limits = ClientLimits(timeout=60.0, connect_timeout=0.5, shutdown_grace=0.3)
    result, elapsed = timed_scan(http_entry(quirks_http.url(path), Transport.STREAMABLE_HTTP), limits)
    assert result.outcome is outcome, result.detail
    assert result.extra["status"] == int(path[-3:])
    assert elapsed < limits.timeout
