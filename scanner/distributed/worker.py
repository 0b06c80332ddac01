"""``fathom worker``: take a distributed run's jobs from the queue, scan each server, write it, close the run.

Any number of workers, on any machines, share one PostgreSQL. Each is a Procrastinate worker on the ``fathom``
queue with its own ``--concurrency`` (jobs at once) and package limits. A job is one server:

0. the job is checked against the digest ``--enqueue`` stored with it (:func:`scanner.distributed.queue.job_problem`):
   a job rewritten in the queue is written as ``refused`` with the reason, and nothing of it runs; a job whose
   digest holds but that was queued for another run (:func:`scanner.distributed.queue.other_run`: a signed job
   saved and queued again) is dropped with a warning, written nowhere;
1. if the server already has its scan in the run (a retried job whose first attempt wrote before dying), the
   job is done: a retry never writes a second scan (the store also refuses one: one scan per server per run);
2. otherwise the server is scanned exactly as ``fathom scan`` does it (``scanner.scan.crawl.scan_one``: skips, the
   address check, per-host limits, retries of 429/503) and written through the same write path
   (:meth:`Store.record_scan`), one write at a time per worker;
3. the worker counts its share of the run (``run_workers``, written every few seconds) and, if that write was
   the run's last, closes it
   (:meth:`Store.close_if_complete`: aggregates computed, exactly one worker does it).

The database's writer lock is the run's while it is written (``scanner.store.lock.RunLease``): each write first
refreshes the run's hold on it; if another scan holds it (a local ``fathom scan`` after the run's workers were
silent for two minutes), the worker waits for it instead of writing beside it.

Faults: a worker killed outright (SIGKILL, a machine lost) stops its heartbeat; every worker looks for jobs of
workers silent for ``stall_timeout`` seconds and puts them back in the queue. Ctrl-C or SIGTERM hands the
running jobs back at once (aborted for shutdown, retried by the next worker). A job that raises (the database
went away mid-write) is retried with a growing delay, up to ``MAX_ATTEMPTS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from scanner import wire
from scanner.confine import DEFAULT_MEMORY_LIMIT_MB
from scanner.distributed.queue import (
    MAX_ATTEMPTS,
    QUEUE,
    TASK,
    engine_errors,
    entry_from_payload,
    job_problem,
    make_app,
    other_run,
    refused_job,
)
from scanner.errors import WriterBusy
from scanner.models import ScanOutcome, ServerEntry
from scanner.scan.crawl import CrawlSettings, crawl_collector
from scanner.store.lock import RunLease

if TYPE_CHECKING:
    from scanner.store import Store

LOG = logging.getLogger("fathom.worker")
# Seconds between tries of the writer lock while another scan writes to the database.
LEASE_RETRY_S = 5.0
# Seconds between one worker's refreshes of its run's writer lock (stale after 120 s without one).
LEASE_REFRESH_S = 10.0
# Seconds between writes of a worker's share of its runs (``run_workers.scans``; a killed worker's last few
# seconds are not counted there, its scans are all in the run).
SHARE_FLUSH_S = 5.0


def default_name() -> str:
    """A worker's name unless given: ``host:pid``, unique among live workers."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class WorkerConfig:
    """Everything ``fathom worker`` was asked to do. Holds no secret: the database URL is never stored."""

    db_url: str
    crawl: CrawlSettings = field(default_factory=CrawlSettings)
    name: str = field(default_factory=default_name)
    # Seconds without a heartbeat after which a worker's jobs are taken again. Heartbeats go every quarter of it.
    stall_timeout: float = 60.0
    # Stop when the queue has no job left to take (a batch job, a benchmark), instead of waiting for more.
    until_idle: bool = False
    # Whoever can write the queue chooses what runs: a worker runs queued packages and commands only if told to
    # here, on its own machine, whatever the coordinator was given.
    run_packages: bool = False
    run_commands: bool = False
    # What one package's processes may use (the job's own figure is data: a worker rebuilds commands under this).
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB


@dataclass(frozen=True)
class WorkerSummary:
    """What one worker did before it stopped."""

    name: str
    written: int
    already_done: int
    counts: dict[str, int]
    closed_runs: tuple[int, ...]
    requeued: int
    other_runs: int = 0  # signed jobs of another run (saved and queued again), dropped unwritten


class _Job:
    """The task's body and the worker's tallies; one per worker process."""

    def __init__(
        self,
        store: Store,
        config: WorkerConfig,
        on_result: Callable[[ServerEntry, ScanOutcome], None] | None,
        on_closed: Callable[[int], None] | None,
    ) -> None:
        from scanner.scan.crawl import scan_one

        self.store = store
        self.config = config
        self.scan = scan_one(config.crawl)
        self.write_lock = asyncio.Lock()  # one writer per worker, as in a crawl
        self.on_result, self.on_closed = on_result, on_closed
        self.counts: Counter[str] = Counter()
        self.written = self.already_done = self.requeued = self.other_runs = 0
        self.closed: list[int] = []
        self.held: dict[int, float] = {}  # run id -> when this worker last refreshed the run's writer lock
        self.pending: Counter[int] = Counter()  # run id -> servers written since the last flush

    def allowed(self, entry: ServerEntry) -> ServerEntry:
        """``entry``, or the same entry marked skipped if it would run a process this worker may not start."""
        if entry.skip or not entry.command:  # a local-port package has a command but an HTTP transport
            return entry
        if entry.package is not None and not self.config.run_packages:
            return replace(entry, skip="this worker does not run packages (start it with --run-packages)")
        if entry.package is None and not self.config.run_commands:
            return replace(entry, skip="this worker does not run commands (start it with --run-commands)")
        return entry

    async def hold_lease(self, run_id: int) -> None:
        """Refresh the run's hold on the database's writer lock before a write (at most every
        :data:`LEASE_REFRESH_S`: it goes stale after two minutes); while another scan holds it, wait (the job keeps
        its place, and the worker's heartbeat keeps it from being taken again)."""
        if time.monotonic() - self.held.get(run_id, -LEASE_REFRESH_S) < LEASE_REFRESH_S:
            return
        lease = RunLease(self.store.engine, run_id)
        while True:
            try:
                await asyncio.to_thread(lease.hold)
                self.held[run_id] = time.monotonic()
                return
            except WriterBusy as busy:
                LOG.warning("%s; waiting", busy)
                await asyncio.sleep(LEASE_RETRY_S)

    async def flush(self) -> None:
        """Write this worker's share of each run (``run_workers``) counted since the last flush."""
        pending, self.pending = self.pending, Counter()
        for run_id, scans in pending.items():
            await asyncio.to_thread(self.store.note_worker, run_id, self.config.name, scans)

    async def __call__(self, run_id: int, entry: dict[str, Any], *, retried: bool = False) -> None:
        from scanner.measure.toollist import measure

        # A job is data: checked whole against the digest queued with it before anything of it is used.
        problem = job_problem(entry, os.environ)
        refused: ScanOutcome | None = None
        foreign = other_run(entry, run_id) if problem is None else None
        if foreign is not None:
            # Its digest holds but it is another run's job (issue 42): writing it would replace this run's scan
            # of the server with an old entry. Written nowhere; this run's own job for the server scans it.
            name = entry.get("name")
            LOG.warning("job for %s dropped: %s", wire.clean_str(name)[:200] if isinstance(name, str) else "?", foreign)
            self.other_runs += 1
            return
        if problem is not None:
            server, refused = refused_job(entry, problem)
            LOG.warning("job for %s refused: %s", server.name, problem)
        else:
            server = self.allowed(entry_from_payload(entry, os.environ, memory_limit_mb=self.config.memory_limit_mb))
        # Only a job run before (retried, or taken back from a silent worker) can find its server written.
        if not (retried and await asyncio.to_thread(self.store.has_scan, run_id, server.name)):
            outcome = refused if refused is not None else await self.scan(server)
            dropped = entry.get("header_names") or []
            if dropped:  # said with the scan, never silent: the coordinator's header values are not queued
                outcome = replace(outcome, extra={**outcome.extra, "headers_not_queued": list(dropped)})
            async with self.write_lock:
                await self.hold_lease(run_id)
                try:
                    await asyncio.to_thread(self.store.record_scan, run_id, server, outcome, measure)
                except Exception:
                    # Another attempt of this job wrote first (the store keeps one scan per server per run), or
                    # the run is gone or finished: nothing to write. Anything else is retried by the queue.
                    if await asyncio.to_thread(self.store.has_scan, run_id, server.name):
                        self.already_done += 1
                        return
                    if await asyncio.to_thread(_run_closed, self.store, run_id):
                        LOG.warning("run %s is finished or gone; job for %s dropped", run_id, server.name)
                        return
                    raise
            self.pending[run_id] += 1
            self.written += 1
            self.counts[outcome.outcome.value] += 1
            if self.on_result is not None:
                self.on_result(server, outcome)
        else:
            self.already_done += 1
        if await asyncio.to_thread(self.store.close_if_complete, run_id):
            await self.flush()
            await asyncio.to_thread(RunLease(self.store.engine, run_id).release)
            self.closed.append(run_id)
            if self.on_closed is not None:
                self.on_closed(run_id)


def _run_closed(store: Store, run_id: int) -> bool:
    """Whether ``run_id`` no longer takes scans (finished, or not in this database)."""
    return not any(run.id == run_id and run.status != "finished" for run in store.runs())


async def _requeue_stalled(app: Any, job: _Job, stall_timeout: float) -> None:
    """Every quarter of the stall timeout, put back the jobs of workers whose heartbeat stopped."""
    manager = app.job_manager
    while True:
        await asyncio.sleep(max(stall_timeout / 4, 0.5))
        stalled = await manager.get_stalled_jobs(queue=QUEUE, task_name=TASK, seconds_since_heartbeat=stall_timeout)
        for stale in stalled:
            try:
                await manager.retry_job(stale)
            except Exception as exc:  # another worker took it back first: the job is no longer ``doing``
                LOG.debug("job %s not requeued: %s", stale.id, exc)
                continue
            job.requeued += 1
            LOG.warning("job %s of a silent worker put back in the queue", stale.id)


async def _flush_every(job: _Job, seconds: float) -> None:
    """Write the worker's share of its runs every ``seconds`` (one upsert per run, not one per server)."""
    while True:
        await asyncio.sleep(seconds)
        await job.flush()


async def _work(config: WorkerConfig, job: _Job) -> None:
    import procrastinate

    app = make_app(config.db_url)

    async def scan_server(context: procrastinate.JobContext, run_id: int, entry: dict[str, Any]) -> None:
        assert context.job is not None
        await job(run_id, entry, retried=context.job.attempts > 0)

    app.task(
        name=TASK,
        queue=QUEUE,
        pass_context=True,
        retry=procrastinate.RetryStrategy(max_attempts=MAX_ATTEMPTS, linear_wait=1),
    )(scan_server)
    async with app.open_async():
        beat = max(config.stall_timeout / 4, 0.5)
        requeue = asyncio.create_task(_requeue_stalled(app, job, config.stall_timeout))
        flusher = asyncio.create_task(_flush_every(job, min(SHARE_FLUSH_S, beat)))
        try:
            if config.until_idle:
                # The worker stops as on Ctrl-C once the queue is empty: it lets its running jobs finish first.
                await app.run_worker_async(
                    queues=[QUEUE],
                    name=config.name,
                    concurrency=config.crawl.concurrency,
                    wait=False,
                    delete_jobs="successful",
                    update_heartbeat_interval=beat,
                    stalled_worker_timeout=config.stall_timeout,
                )
            else:
                await app.run_worker_async(
                    queues=[QUEUE],
                    name=config.name,
                    concurrency=config.crawl.concurrency,
                    # Ctrl-C / SIGTERM: running jobs are aborted at once and go back to the queue for another.
                    shutdown_graceful_timeout=0,
                    delete_jobs="successful",  # the queue keeps only what is left to do (and failures, to read)
                    update_heartbeat_interval=beat,
                    stalled_worker_timeout=config.stall_timeout,
                    fetch_job_polling_interval=min(5.0, beat),
                )
        finally:
            for side in (requeue, flusher):
                side.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await side
            await job.flush()


def _package_cache_kept(config: WorkerConfig, on_warning: Callable[[str], None] | None) -> Callable[[], None]:
    """With ``run_packages``: the package cache's housekeeping started (orphans cleared) and what finishes it
    when the worker stops; else a no-op (a worker that runs no package leaves the cache alone)."""
    if not config.run_packages:
        return lambda: None
    from scanner.packages import housekeeping

    return housekeeping.kept(config.crawl.packages, on_warning or (lambda line: LOG.warning("%s", line)))


def run_worker(
    config: WorkerConfig,
    *,
    on_result: Callable[[ServerEntry, ScanOutcome], None] | None = None,
    on_closed: Callable[[int], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> WorkerSummary:
    """Take jobs from the queue at ``config.db_url`` until stopped (Ctrl-C, SIGTERM) or, with ``until_idle``,
    until none is left; return what this worker did. Run-fatal faults (no tokenizer, no database) raise.

    A worker that runs packages keeps its machine's package cache as a scan does
    (:func:`scanner.packages.housekeeping.kept`): orphans cleared as it starts, the installers' prune and
    ``cache_max_mb`` held as it stops; each line of what was done goes to ``on_warning``."""
    from scanner.distributed.queue import conninfo
    from scanner.measure import tokenizer
    from scanner.store import open_store

    conninfo(config.db_url)  # PostgreSQL only, said before anything else
    tokenizer.verify()
    with open_store(config.db_url) as store:
        job = _Job(store, config, on_result, on_closed)
        tidy = _package_cache_kept(config, on_warning)
        try:
            with crawl_collector(), engine_errors(config.db_url):
                asyncio.run(_work(config, job))
        finally:
            tidy()
    return WorkerSummary(
        name=config.name,
        written=job.written,
        already_done=job.already_done,
        counts=dict(job.counts),
        closed_runs=tuple(job.closed),
        requeued=job.requeued,
        other_runs=job.other_runs,
    )
