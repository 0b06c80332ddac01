"""The ONE concurrent place: scan many servers at once, bounded, and hand every result to a single writer.

Shape (after lychee's checker stage):

    entries ──► (interleaved by host) ──► N workers ──► memory stream ──► one writer (in a worker thread)
                 global limit = N workers
                 per-host limiter around each connection
                 retries with backoff for 429 / 503 / connection resets (Retry-After honoured, capped)
                 one deadline per server (limits.timeout) over every attempt and every wait

Each worker takes the next entry, checks it may be connected to (skips and refused addresses become outcomes
without a connection), scans it under the client's own deadline, retries what is worth retrying, and sends the
final outcome to the writer. A server's deadline starts with its first attempt and covers every attempt and
wait after it: a retry gets only the time left, and a wait (``Retry-After: 3600``, say) that would end past the
deadline is not waited for; the outcome so far is final. An entry whose credential is available is scanned in
both lanes, without and with it (``CrawlSettings.lanes``, :mod:`scanner.scan.lanes`), one after the other in the same
worker, each lane with its own deadline. The writer is the only code that touches the database, one batch of waiting
results per transaction, so a scan killed at any moment keeps every committed batch and nothing half-written.
"""

from __future__ import annotations

import contextlib
import gc
import math
import random
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import ObjectSendStream

from scanner import confine
from scanner.mcp import ClientLimits, scan_server
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages import PackageSettings, run_package, skip_outcome
from scanner.packages.cache import PackageCache
from scanner.packages.commands import run_command
from scanner.scan.lanes import (
    ANONYMOUS,
    CREDENTIALED,
    LaneChoice,
    anonymous_entry,
    combine,
    has_credential,
    needs_probe,
    signals_from_outcome,
    signals_from_probe,
)

Sink = Callable[[ServerEntry, ScanOutcome], None]
BatchSink = Callable[[list[tuple[ServerEntry, ScanOutcome]]], None]
ScanFn = Callable[[ServerEntry], Awaitable[ScanOutcome]]

RETRY_STATUSES = frozenset({429, 503})

CRAWL_GC_THRESHOLD = 20_000
"""Allocations between two collections of the youngest generation during a crawl (Python's default is 700)."""


@contextlib.contextmanager
def crawl_collector() -> Iterator[None]:
    """The cyclic garbage collector tuned for a crawl, restored after it.

    What exists when the crawl starts (the modules, the store's statements) is frozen out of every collection, and
    the youngest generation is collected every :data:`CRAWL_GC_THRESHOLD` allocations instead of 700. A crawl
    allocates short-lived objects by the million (requests, answers, rows) and reference counting frees nearly all
    of them; each collection walks the young objects still alive. Measured at 2 000 loopback servers: the
    collector's CPU per server 0.28-0.40 -> 0.11-0.12 ms on a first night and 0.37-0.43 -> 0.06-0.07 ms on an
    unchanged rescan (issue #24). Cyclic garbage waits at most that many allocations longer to be freed.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(CRAWL_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@dataclass(frozen=True)
class CrawlSettings:
    """How hard to crawl. Defaults suit a nightly scan of a public registry from one machine."""

    concurrency: int = 32
    per_host: int = 4
    limits: ClientLimits = field(default_factory=ClientLimits)
    profile: str = "rich"
    retries: int = 2
    backoff: float = 1.0
    max_backoff: float = 30.0
    allow_private: bool = False
    packages: PackageSettings = field(default_factory=PackageSettings)
    lanes: LaneChoice = LaneChoice.both


def host_key(entry: ServerEntry) -> str:
    """What the per-host limit counts: the URL's host, or one shared key for local processes."""
    if entry.url:
        try:
            return (urlsplit(entry.url).hostname or "").lower()
        except ValueError:  # "http://[::1/mcp": the address check gives it its outcome; it shares one key here
            return "(unparseable URLs)"
    return "(local processes)"


def interleave_by_host(entries: Iterable[ServerEntry]) -> list[ServerEntry]:
    """Round-robin the entries across hosts, so one host's many servers do not hold every worker waiting."""
    queues: dict[str, list[ServerEntry]] = defaultdict(list)
    for entry in entries:
        queues[host_key(entry)].append(entry)
    ordered: list[ServerEntry] = []
    columns = list(queues.values())
    for depth in range(max((len(column) for column in columns), default=0)):
        ordered.extend(column[depth] for column in columns if depth < len(column))
    return ordered


def retry_delay(outcome: ScanOutcome, attempt: int, settings: CrawlSettings) -> float | None:
    """Seconds to wait before trying again, or None if this outcome is final."""
    status = outcome.extra.get("status")
    retryable = (outcome.outcome in (Outcome.HTTP_ERROR, Outcome.RATE_LIMITED) and status in RETRY_STATUSES) or (
        outcome.outcome is Outcome.CONNECT_ERROR and "reset" in outcome.detail.lower()
    )
    if not retryable or attempt >= settings.retries:
        return None
    retry_after = outcome.extra.get("retry_after")
    if isinstance(retry_after, int | float) and math.isfinite(retry_after) and retry_after >= 0:
        return float(min(retry_after, settings.max_backoff))
    return min(settings.backoff * (2**attempt) * (1 + random.random() / 2), settings.max_backoff)


class _Crawler:
    def __init__(self, settings: CrawlSettings, scan: ScanFn | None) -> None:
        self.settings = settings
        self.custom_scan = scan
        self.hosts: dict[str, anyio.CapacityLimiter] = {}

    def _host_limiter(self, entry: ServerEntry) -> anyio.CapacityLimiter:
        key = host_key(entry)
        if key not in self.hosts:
            self.hosts[key] = anyio.CapacityLimiter(self.settings.per_host if entry.url else self.settings.concurrency)
        return self.hosts[key]

    async def _scan_with_client(self, entry: ServerEntry, limits: ClientLimits) -> ScanOutcome:
        if entry.package is None and entry.command:  # a command: as a user of its own where Fathom is root
            cache = PackageCache(self.settings.packages.cache())
            with confine.room(hide=[cache.homes(), cache.root / "pkg"]):  # no package's HOME nor install
                return await run_command(entry, limits, self.settings.profile)
        if entry.package is None:
            return await scan_server(entry, limits, self.settings.profile)
        # A stranger's package: its own throwaway HOME, the shared cache, a disk budget, its failure classified;
        # what it sent back (a local-port one's too, stderr tail included) scrubbed as any child's (scanner.scrub).
        from scanner.scrub import Scrubber

        outcome = await run_package(entry, limits, self.settings.profile, self.settings.packages)
        return Scrubber.for_child(entry).outcome(outcome)

    async def _attempt(self, entry: ServerEntry, remaining: float) -> ScanOutcome:
        """One attempt with ``remaining`` seconds of the server's deadline left (the client's own deadline is cut
        to it; a replacement ``scan`` is cancelled at it)."""
        limits = self.settings.limits
        if self.custom_scan is None:
            if remaining < limits.timeout:
                limits = replace(limits, timeout=remaining, connect_timeout=min(limits.connect_timeout, remaining))
            return await self._scan_with_client(entry, limits)
        with anyio.move_on_after(remaining):
            return await self.custom_scan(entry)
        return ScanOutcome(outcome=Outcome.TIMEOUT, transport=entry.transport.value, detail="deadline reached")

    async def outcome_for(self, entry: ServerEntry) -> ScanOutcome:
        transport = entry.transport.value
        if entry.skip:
            # Marked never started, whatever the outcome (a skip can be needs_configuration or runner_missing):
            # the report then shows what was declared, not a command that never ran.
            return ScanOutcome(
                outcome=skip_outcome(entry), transport=transport, detail=entry.skip, extra={"not_run": True}
            )
        if entry.url and entry.transport is not Transport.STDIO:
            from scanner.registry.address import check_url

            verdict = await check_url(entry.url, allow_private=self.settings.allow_private)
            if verdict is not None:
                return ScanOutcome(outcome=verdict.outcome, transport=transport, detail=verdict.detail)
        if not has_credential(entry):
            return await self._with_retries(entry)
        if self.settings.lanes is LaneChoice.credentialed:
            return replace(await self._with_retries(entry), lane=CREDENTIALED)
        anonymous = replace(await self._with_retries(anonymous_entry(entry)), lane=ANONYMOUS)
        if self.settings.lanes is LaneChoice.anonymous:
            return anonymous
        credentialed = await self._with_retries(entry)
        return combine(anonymous, credentialed, await self._signals(entry, anonymous, credentialed))

    async def _signals(self, entry: ServerEntry, anonymous: ScanOutcome, credentialed: ScanOutcome) -> dict[str, Any]:
        """The anonymous answer's auth signals: from its 401, or probed when MCP601 could fire."""
        from scanner.scrub import Scrubber  # the signals are stored: a server may echo the credential in them

        scrubber = Scrubber.for_scan(entry)
        if not needs_probe(anonymous, credentialed) or entry.url is None:
            return scrubber.value(signals_from_outcome(anonymous))
        from scanner.scan.doctor import probe_signals

        async with self._host_limiter(entry):
            return scrubber.value(signals_from_probe(await probe_signals(entry.url, self.settings.limits)))

    async def _with_retries(self, entry: ServerEntry) -> ScanOutcome:
        timeout = self.settings.limits.timeout
        attempt = 0
        async with self._host_limiter(entry):  # waiting for a turn on a busy host is not the server's time
            started = time.monotonic()
            outcome = await self._attempt(entry, timeout)
        note: str | None = None
        while (delay := retry_delay(outcome, attempt, self.settings)) is not None:
            if timeout - (time.monotonic() - started) - delay <= 0:
                note = f"not retried: the wait ({delay:g} s) would pass the {timeout:g} s deadline"
                break
            await anyio.sleep(delay)
            limiter = self._host_limiter(entry)
            with anyio.move_on_after(timeout - (time.monotonic() - started)) as waiting:
                await limiter.acquire()
            if waiting.cancelled_caught:
                note = f"not retried: no turn on this host within the {timeout:g} s deadline"
                break
            try:
                again = await self._attempt(entry, timeout - (time.monotonic() - started))
            finally:
                limiter.release()
            attempt += 1
            if again.outcome is Outcome.TIMEOUT:
                # The try was cut by what was left of the deadline: what the server said before is the news.
                note = f"the last try ran out of the {timeout:g} s deadline"
                break
            outcome = again
        if attempt or note:
            extra = {**outcome.extra, "attempts": attempt + 1, "elapsed_s": round(time.monotonic() - started, 2)}
            if note:
                extra["retry_stopped"] = note
            outcome = replace(outcome, extra=extra)
        return outcome


async def crawl(
    entries: Sequence[ServerEntry],
    settings: CrawlSettings,
    sink: Sink | None,
    *,
    scan: ScanFn | None = None,
    on_begin: Callable[[ServerEntry], None] | None = None,
    sink_many: BatchSink | None = None,
) -> None:
    """Scan ``entries`` concurrently and call ``sink(entry, outcome)`` for each, one at a time, in a thread.
    ``on_begin(entry)`` (a progress display's "in flight") is called in the event loop as a worker takes an entry.
    ``sink_many``, given instead of ``sink``, takes every result waiting at once, in arrival order (the store
    writes the unchanged servers of a batch together).

    ``sink`` is the single writer (the store, a progress bar); it never runs concurrently with itself. ``scan``
    replaces the MCP client (benchmarks, fault tests); by default each entry goes through
    :func:`scanner.mcp.scan_server`. Returns when every entry has been written; cancelling it (Ctrl-C) stops the
    workers and lets the writer finish the server it is writing. If ``sink`` raises, the crawl stops and that
    exception (not an exception group) propagates.
    """
    crawler = _Crawler(settings, scan)
    workers = max(1, min(settings.concurrency, len(entries)))
    entry_send, entry_receive = anyio.create_memory_object_stream[ServerEntry](max_buffer_size=math.inf)
    result_send, result_receive = anyio.create_memory_object_stream[tuple[ServerEntry, ScanOutcome]](
        max_buffer_size=workers
    )
    for entry in interleave_by_host(entries):
        entry_send.send_nowait(entry)
    entry_send.close()

    async def worker(results: ObjectSendStream[tuple[ServerEntry, ScanOutcome]]) -> None:
        async with results:
            async for entry in entry_receive:
                if on_begin is not None:
                    on_begin(entry)
                await results.send((entry, await crawler.outcome_for(entry)))

    def write_all(batch: list[tuple[ServerEntry, ScanOutcome]]) -> None:
        if sink_many is not None:
            sink_many(batch)
            return
        assert sink is not None, "crawl needs a sink or a sink_many"
        for entry, outcome in batch:
            sink(entry, outcome)

    async def writer() -> None:
        # Whatever results are waiting go to the thread together: one hand-off per batch, not per server (the
        # store writes each batch in one transaction).
        async with result_receive:
            async for first in result_receive:
                batch = [first]
                while len(batch) < workers:
                    try:
                        batch.append(result_receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                await anyio.to_thread.run_sync(write_all, batch)

    from scanner.scrub import scan_secrets

    try:
        # Every entry's secret values are held while the crawl runs: a child that read a sibling's cannot publish it.
        with scan_secrets(entries):
            async with anyio.create_task_group() as group:
                group.start_soon(writer)
                async with result_send:
                    for _ in range(workers):
                        group.start_soon(worker, result_send.clone())
    except BaseExceptionGroup as failed:
        # Servers' faults are outcomes, so the one way a crawl fails is its writer raising (a store or tokenizer
        # error, run-fatal). Raise that error itself, so callers catch it by its type (FathomError -> exit code).
        cause = _run_fatal(failed)
        if cause is None:
            raise
        raise cause from None


def _run_fatal(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The error that failed the crawl: a FathomError first; else the one error that is not a worker finding the
    writer's stream gone (``BrokenResourceError``, raised by workers because the writer stopped); else None."""
    from scanner.errors import FathomError

    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        current = pending.pop()
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            leaves.append(current)
    fatal = [exc for exc in leaves if isinstance(exc, FathomError)]
    if fatal:
        return fatal[0]
    others = [exc for exc in leaves if not isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError))]
    return others[0] if len(others) == 1 else None


def scan_one(settings: CrawlSettings) -> ScanFn:
    """One entry's whole treatment as :func:`crawl` gives it (skips, the address check, per-host limits, retries),
    for a caller that takes entries one at a time (``fathom worker``). Its per-host limiters are shared by every
    call of the function it returns."""
    return _Crawler(settings, None).outcome_for
