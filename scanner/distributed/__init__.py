"""Distributed scans: one run, many workers, one PostgreSQL, through Procrastinate (an existing task engine).

- :mod:`scanner.distributed.queue`: the engine's app on the run's database, what a job holds (never a secret),
  and ``fathom scan --enqueue`` (:func:`enqueue_scan`);
- :mod:`scanner.distributed.worker`: ``fathom worker`` (:func:`run_worker`).

SQLite on one machine (``fathom scan``) stays the default and needs none of this. See ``docs/distributed.md``.
"""

from scanner.distributed.queue import EnqueueSummary, enqueue_scan
from scanner.distributed.worker import WorkerConfig, WorkerSummary, run_worker

__all__ = ["EnqueueSummary", "WorkerConfig", "WorkerSummary", "enqueue_scan", "run_worker"]
