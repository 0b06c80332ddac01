"""The whole-product property for the client: no single server holds a worker past its deadline or starves the others.

One crawl through the real MCP client mixes 30 healthy servers (a demo host in its own process, one per path) with
every kind of hostile server: a legacy-SSE ping flood, a stdio ping flood, a stacked gzip bomb, a 503 asking to
come back in an hour, a drip, a silent event stream, a hang, stdio servers that hang, escape their process group
or double-fork. Every healthy server must come back ok and fast, every hostile one as its own outcome, and the
crawl must end within a bound set by the deadline, not by the hostile servers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.scan.crawl import CrawlSettings, crawl
from tests.mcp.helpers import alive, recorded_pids
from tests.servers.launch import RunningServer, free_port, hostile_stdio_command, running, start

pytestmark = pytest.mark.timeout(300)

HEALTHY = 30
TIMEOUT = 20.0  # long enough that, on a loaded machine too, every fault but a hang decides its own outcome
LIMITS = ClientLimits(timeout=TIMEOUT, connect_timeout=2.0, shutdown_grace=0.3, max_answer_bytes=1024 * 1024)

HOSTILE_HTTP = {
    "sse-ping-flood": (Transport.SSE, {Outcome.PROTOCOL_ERROR}),
    "gzip-bomb": (Transport.STREAMABLE_HTTP, {Outcome.TOO_LARGE}),
    "slow-503": (Transport.HTTP, {Outcome.HTTP_ERROR}),
    "drip": (Transport.STREAMABLE_HTTP, {Outcome.TIMEOUT}),
    "sse-silent": (Transport.STREAMABLE_HTTP, {Outcome.TIMEOUT}),
    "hang": (Transport.STREAMABLE_HTTP, {Outcome.TIMEOUT}),
    "huge": (Transport.STREAMABLE_HTTP, {Outcome.TOO_LARGE}),
}
HOSTILE_STDIO = {
    "ping-flood": {Outcome.PROTOCOL_ERROR},
    "hang": {Outcome.TIMEOUT},
    "setsid": {Outcome.OK},
    "double-fork": {Outcome.TIMEOUT},
    "fork-ignore-term": {Outcome.TIMEOUT},
}


@pytest.fixture(scope="module")
def demo_host() -> Iterator[RunningServer]:
    port = free_port()
    command = [sys.executable, "-m", "scanner.demo.server", "--synthetic", str(HEALTHY), "--port", str(port)]
    with running(start(command, port)) as server:
        yield server


def test_hostile_servers_neither_overrun_their_deadline_nor_starve_healthy_ones(hostile_http, demo_host, tmp_path):
    entries = [
        ServerEntry(name=f"healthy-{n}", transport=Transport.HTTP, url=demo_host.url(f"/s{n:05d}/mcp"))
        for n in range(HEALTHY)
    ]
    entries += [
        ServerEntry(name=f"http-{path}", transport=transport, url=hostile_http.url(f"/{path}"))
        for path, (transport, _) in HOSTILE_HTTP.items()
    ]
    pid_files: list[Path] = []
    for mode in HOSTILE_STDIO:
        pid_file = tmp_path / f"{mode}.pids"
        pid_files.append(pid_file)
        command = hostile_stdio_command(mode, "--pid-file", str(pid_file))
        entries.append(ServerEntry(name=f"stdio-{mode}", transport=Transport.STDIO, command=command))
    settings = CrawlSettings(concurrency=16, per_host=64, limits=LIMITS, retries=2, backoff=0.2, allow_private=True)
    outcomes: dict[str, ScanOutcome] = {}
    finished_at: dict[str, float] = {}
    started = time.monotonic()

    def sink(entry: ServerEntry, outcome: ScanOutcome) -> None:
        outcomes[entry.name] = outcome
        finished_at[entry.name] = time.monotonic() - started

    anyio.run(lambda: crawl(entries, settings, sink))
    elapsed = time.monotonic() - started

    assert len(outcomes) == len(entries)
    for n in range(HEALTHY):
        healthy = outcomes[f"healthy-{n}"]
        assert healthy.outcome is Outcome.OK, (n, healthy.detail)
        assert len(healthy.tools or ()) == 8
        # Not held up by the floods around it (they run to the deadline); generous for a loaded machine.
        assert healthy.timings_ms["total"] < TIMEOUT * 1000 * 0.8, healthy.timings_ms
    for path, (_, expected) in HOSTILE_HTTP.items():
        assert outcomes[f"http-{path}"].outcome in expected, (path, outcomes[f"http-{path}"].detail)
    for mode, expected in HOSTILE_STDIO.items():
        assert outcomes[f"stdio-{mode}"].outcome in expected, (mode, outcomes[f"stdio-{mode}"].detail)
    # No server took longer than its deadline plus the stdio shutdown (3 x grace) and a little slack.
    assert max(finished_at.values()) == pytest.approx(elapsed, abs=5.0)
    assert elapsed < TIMEOUT + 3 * LIMITS.shutdown_grace + 30.0, elapsed  # generous: a loaded machine
    # Nothing the stdio servers started is left running.
    deadline = time.monotonic() + 30  # generous: a loaded machine is slow to reap
    pids = [pid for path in pid_files if path.exists() for pid in recorded_pids(path)]
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids and not any(alive(pid) for pid in pids)
