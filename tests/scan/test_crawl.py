"""The crawl stage (:mod:`scanner.scan.crawl`) with a fake ``scan`` function: limits, retries, the single writer.

A fake scan is where faults that real servers cannot be made to produce on demand (a 429 with a given
Retry-After, a reset connection) are simulated; everything else here is the real crawl, with tiny delays.
Hosts are IP literals on loopback (``127.0.0.x``) so the address check never asks DNS.
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from scanner.errors import StoreError
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.scan.crawl import (
    CRAWL_GC_THRESHOLD,
    CrawlSettings,
    crawl,
    crawl_collector,
    host_key,
    interleave_by_host,
    retry_delay,
)

pytestmark = pytest.mark.timeout(30)


def http(name: str, host: str = "127.0.0.1") -> ServerEntry:
    return ServerEntry(name=name, transport=Transport.HTTP, url=f"http://{host}:9/{name}/mcp")


def stdio(name: str) -> ServerEntry:
    return ServerEntry(name=name, transport=Transport.STDIO, command=("true",))


def ok() -> ScanOutcome:
    return ScanOutcome(outcome=Outcome.OK, transport="http", detail="1 tools", tools=({"name": "t"},))


def status(code: int, retry_after: float | None = None) -> ScanOutcome:
    extra: dict[str, Any] = {"status": code}
    if retry_after is not None:
        extra["retry_after"] = retry_after
    return ScanOutcome(outcome=Outcome.HTTP_ERROR, transport="http", detail=f"HTTP {code}", extra=extra)


def settings(**overrides: Any) -> CrawlSettings:
    return CrawlSettings(**{"allow_private": True, "backoff": 0.01, "max_backoff": 1.0, **overrides})


def run(
    entries: list[ServerEntry],
    crawl_settings: CrawlSettings,
    scan: Callable[[ServerEntry], Awaitable[ScanOutcome]],
    sink: Callable[[ServerEntry, ScanOutcome], None] | None = None,
) -> dict[str, ScanOutcome]:
    """Crawl and return every written outcome by server name (checking each was written exactly once)."""
    written: list[tuple[str, ScanOutcome]] = []

    def collect(entry: ServerEntry, outcome: ScanOutcome) -> None:
        if sink is not None:
            sink(entry, outcome)
        written.append((entry.name, outcome))

    anyio.run(lambda: crawl(entries, crawl_settings, collect, scan=scan))
    assert Counter(name for name, _ in written) == Counter(entry.name for entry in entries)
    return dict(written)


class InFlight:
    """A fake scan that sleeps and records how many scans run at once, overall and per host."""

    def __init__(self, delay: float = 0.02) -> None:
        self.delay = delay
        self.now = 0
        self.peak = 0
        self.by_host: Counter[str] = Counter()
        self.peak_by_host: dict[str, int] = defaultdict(int)

    async def __call__(self, entry: ServerEntry) -> ScanOutcome:
        key = host_key(entry)
        self.now += 1
        self.by_host[key] += 1
        self.peak = max(self.peak, self.now)
        self.peak_by_host[key] = max(self.peak_by_host[key], self.by_host[key])
        await anyio.sleep(self.delay)
        self.now -= 1
        self.by_host[key] -= 1
        return ok()


def test_no_more_than_concurrency_scans_at_once() -> None:
    entries = [http(f"s{i}", f"127.0.0.{i + 1}") for i in range(40)]
    fake = InFlight()
    outcomes = run(entries, settings(concurrency=5, per_host=4), fake)
    assert fake.peak == 5  # reached, never exceeded
    assert {outcome.outcome for outcome in outcomes.values()} == {Outcome.OK}


def test_no_more_than_per_host_scans_on_one_host() -> None:
    entries = [http(f"{host}-{i}", f"127.0.0.{host}") for host in (1, 2, 3) for i in range(10)]
    fake = InFlight()
    run(entries, settings(concurrency=20, per_host=2), fake)
    assert dict(fake.peak_by_host) == {"127.0.0.1": 2, "127.0.0.2": 2, "127.0.0.3": 2}
    assert fake.peak == 6


def test_local_processes_share_the_global_limit_not_the_per_host_one() -> None:
    entries = [stdio(f"p{i}") for i in range(12)]
    fake = InFlight()
    run(entries, settings(concurrency=6, per_host=2), fake)
    assert fake.peak_by_host["(local processes)"] == 6


class Scripted:
    """A fake scan answering each server from a script of outcomes, recording when each attempt started."""

    def __init__(self, script: dict[str, list[ScanOutcome]]) -> None:
        self.script = {name: list(outcomes) for name, outcomes in script.items()}
        self.attempts: dict[str, list[float]] = defaultdict(list)

    async def __call__(self, entry: ServerEntry) -> ScanOutcome:
        self.attempts[entry.name].append(time.monotonic())
        remaining = self.script[entry.name]
        return remaining.pop(0) if len(remaining) > 1 else remaining[0]

    def gaps(self, name: str) -> list[float]:
        times = self.attempts[name]
        return [later - earlier for earlier, later in itertools.pairwise(times)]


def test_429_is_retried_after_the_retry_after_it_names() -> None:
    # Backoff alone would wait 60 s and more; Retry-After says 0.1 s, and the crawl must listen to it. (Bounds
    # generous: a loaded machine is slow, not wrong.)
    fake = Scripted({"busy": [status(429, retry_after=0.1), status(429, retry_after=0.1), ok()]})
    started = time.monotonic()
    outcomes = run([http("busy")], settings(retries=2, backoff=60.0, max_backoff=120.0), fake)
    assert time.monotonic() - started < 40
    assert len(fake.attempts["busy"]) == 3
    assert all(0.1 <= gap < 20 for gap in fake.gaps("busy")), fake.gaps("busy")
    final = outcomes["busy"]
    assert final.outcome is Outcome.OK and final.extra["attempts"] == 3 and final.extra["elapsed_s"] >= 0.2


def test_retry_after_is_capped_by_max_backoff() -> None:
    fake = Scripted({"slowpoke": [status(503, retry_after=3600), ok()]})
    started = time.monotonic()
    run([http("slowpoke")], settings(retries=1, max_backoff=0.05), fake)
    assert time.monotonic() - started < 60  # not the 3600 s asked; generous: a loaded machine is slow
    assert 0.05 <= fake.gaps("slowpoke")[0] < 30


def test_503_backs_off_exponentially_then_gives_up() -> None:
    fake = Scripted({"down": [status(503)]})
    outcomes = run([http("down")], settings(retries=3, backoff=0.04, max_backoff=1.0), fake)
    gaps = fake.gaps("down")
    assert len(fake.attempts["down"]) == 4  # the first try and three retries, no more
    # backoff * 2**attempt, with up to 50 % jitter on top.
    for attempt, gap in enumerate(gaps):
        assert 0.04 * 2**attempt <= gap < 0.04 * 2**attempt * 1.5 + 3.0, gaps  # slack: a loaded machine
    final = outcomes["down"]
    assert final.outcome is Outcome.HTTP_ERROR and final.extra["status"] == 503 and final.extra["attempts"] == 4


@pytest.mark.parametrize("code", [404, 500, 401])
def test_other_statuses_are_final_at_once(code: int) -> None:
    fake = Scripted({"gone": [status(code, retry_after=0.01), ok()]})
    outcomes = run([http("gone")], settings(retries=5), fake)
    assert len(fake.attempts["gone"]) == 1
    assert outcomes["gone"].extra == {"status": code, "retry_after": 0.01}  # no attempts count added


def test_a_reset_connection_is_retried_a_refused_one_is_not() -> None:
    reset = ScanOutcome(outcome=Outcome.CONNECT_ERROR, transport="http", detail="Connection reset by peer")
    refused = ScanOutcome(outcome=Outcome.CONNECT_ERROR, transport="http", detail="Connection refused")
    fake = Scripted({"flaky": [reset, ok()], "closed": [refused, ok()]})
    outcomes = run([http("flaky"), http("closed", "127.0.0.2")], settings(retries=2), fake)
    assert (len(fake.attempts["flaky"]), len(fake.attempts["closed"])) == (2, 1)
    assert outcomes["flaky"].outcome is Outcome.OK and outcomes["closed"].outcome is Outcome.CONNECT_ERROR


def test_retries_zero_means_one_attempt() -> None:
    fake = Scripted({"busy": [status(429, retry_after=0.01), ok()]})
    outcomes = run([http("busy")], settings(retries=0), fake)
    assert len(fake.attempts["busy"]) == 1 and outcomes["busy"].extra["status"] == 429


def test_retry_delay_ignores_a_retry_after_that_is_not_a_finite_number() -> None:
    crawl_settings = settings(retries=2, backoff=0.5, max_backoff=10.0)
    for junk in (float("nan"), float("inf"), -1, "120", None, [5]):
        outcome = ScanOutcome(outcome=Outcome.HTTP_ERROR, transport="http", extra={"status": 429, "retry_after": junk})
        delay = retry_delay(outcome, 0, crawl_settings)
        assert delay is not None and 0.5 <= delay <= 0.75, (junk, delay)


def test_skipped_and_refused_entries_never_reach_scan() -> None:
    fake = Scripted({})
    entries = [
        ServerEntry(name="pkg", transport=Transport.STDIO, command=("npx", "x"), skip="needs --run-packages"),
        http("loopback"),
        ServerEntry(name="meta", transport=Transport.HTTP, url="http://169.254.169.254/mcp"),
    ]
    outcomes = run(entries, settings(allow_private=False), fake)
    assert fake.attempts == {}
    assert outcomes["pkg"].outcome is Outcome.SKIPPED and outcomes["pkg"].detail == "needs --run-packages"
    assert outcomes["loopback"].outcome is Outcome.REFUSED and outcomes["meta"].outcome is Outcome.REFUSED


def test_the_writer_never_runs_concurrently_with_itself() -> None:
    lock = threading.Lock()
    overlaps = 0
    threads: set[int] = set()

    def slow_sink(_entry: ServerEntry, _outcome: ScanOutcome) -> None:
        nonlocal overlaps
        if not lock.acquire(blocking=False):
            overlaps += 1
            lock.acquire()
        try:
            threads.add(threading.get_ident())
            time.sleep(0.005)
        finally:
            lock.release()

    entries = [http(f"s{i}", f"127.0.0.{i % 8 + 1}") for i in range(40)]
    fake = InFlight(delay=0.001)
    run(entries, settings(concurrency=16, per_host=4), fake, sink=slow_sink)
    assert overlaps == 0
    assert threading.get_ident() not in threads  # the writer runs off the event loop's thread


def test_cancelling_the_crawl_lets_the_writer_finish_its_server() -> None:
    events: list[str] = []
    writing = threading.Event()

    def sink(entry: ServerEntry, _outcome: ScanOutcome) -> None:
        events.append(f"start {entry.name}")
        writing.set()
        time.sleep(0.3)
        events.append(f"end {entry.name}")

    async def scan(entry: ServerEntry) -> ScanOutcome:
        if entry.name != "first":
            await anyio.sleep(60)
        return ok()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            entries = [http("first"), http("second", "127.0.0.2")]
            group.start_soon(lambda: crawl(entries, settings(), sink, scan=scan))
            while not writing.is_set():
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()

    started = time.monotonic()
    anyio.run(main)
    assert events == ["start first", "end first"]
    assert time.monotonic() - started < 60  # generous: a loaded machine is slow, not wrong


def test_interleave_by_host_round_robins_in_input_order() -> None:
    entries = [
        http("a1", "127.0.0.1"),
        http("a2", "127.0.0.1"),
        http("a3", "127.0.0.1"),
        http("b1", "127.0.0.2"),
        stdio("p1"),
        http("c1", "127.0.0.3"),
        stdio("p2"),
        http("b2", "127.0.0.2"),
    ]
    order = [entry.name for entry in interleave_by_host(entries)]
    assert order == ["a1", "b1", "p1", "c1", "a2", "b2", "p2", "a3"]
    assert interleave_by_host([]) == []


def test_host_key_is_case_insensitive_and_ignores_port_and_path() -> None:
    one = ServerEntry(name="x", transport=Transport.HTTP, url="https://API.Example.com:8443/a/mcp")
    two = ServerEntry(name="y", transport=Transport.HTTP, url="https://api.example.com/b/mcp")
    assert host_key(one) == host_key(two) == "api.example.com"
    assert host_key(stdio("p")) == "(local processes)"


def test_a_failing_writer_stops_the_crawl_with_its_own_error() -> None:
    def sink(_entry: ServerEntry, _outcome: ScanOutcome) -> None:
        raise StoreError("the database refused the write")

    fake = InFlight()
    with pytest.raises(StoreError, match="refused the write"):
        anyio.run(lambda: crawl([http(f"s{i}") for i in range(5)], settings(concurrency=2), sink, scan=fake))


def test_a_writer_error_is_raised_itself_when_workers_find_its_stream_gone() -> None:
    """Many workers waiting to hand results over when the writer fails: they hit a closed stream too, and the
    crawl's exception group holds both. The caller still gets the writer's own error (exit 4, not a group)."""

    def sink(_entry: ServerEntry, _outcome: ScanOutcome) -> None:
        raise StoreError("the disk is full")

    async def instant(entry: ServerEntry) -> ScanOutcome:
        return ScanOutcome(outcome=Outcome.OK, transport="streamable-http", detail="0 tools", tools=())

    entries = [http(f"s{i}") for i in range(200)]
    with pytest.raises(StoreError, match="disk is full"):
        anyio.run(lambda: crawl(entries, settings(concurrency=32), sink, scan=instant))


def test_the_crawl_collector_freezes_what_exists_and_collects_young_objects_less_often_until_it_ends() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), crawl_collector():
        assert gc.get_threshold() == (CRAWL_GC_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0  # the modules and everything else alive when the crawl starts
        raise RuntimeError("a run-fatal error")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
