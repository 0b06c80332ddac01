"""Shared fixtures: real MCP test servers on 127.0.0.1, started once per session and killed at the end.

Keep this small and generic; helpers to start more servers (N SDK servers with changeable tool lists, the
hostile app, server-everything) are in :mod:`tests.servers.launch`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.launch import RunningServer, running, start_hostile_http, start_sdk_http


@pytest.fixture(scope="session")
def sdk_http() -> Iterator[RunningServer]:
    """The official-SDK server (3 tools, 2 per page) over Streamable HTTP at ``/mcp``, both eras."""
    with running(start_sdk_http(page_size=2)) as server:
        yield server


@pytest.fixture(scope="session")
def hostile_http() -> Iterator[RunningServer]:
    """The hostile HTTP app: ``server.url("/hang")`` etc. (see tests/servers/hostile_http.py)."""
    with running(start_hostile_http()) as server:
        yield server
