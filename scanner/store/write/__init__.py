"""The write path: the crawl's results (:func:`record_scans`, :func:`record_scan` for one), a toolset's measurement,
and a bulk loader of already-shaped rows for benchmarks and imports (:func:`load`).

A batch of results (what the crawl's writer hands over at once) is written in one transaction, its lists measured
before it, so a crawl killed at any point leaves a consistent database that keeps every batch committed before the
kill. Tool lists are stored once by content hash and
measured (tokens, per-tool costs, findings) once per rule catalogue version, so an unchanged server costs one
small ``scans`` row per rescan.

One module per part of what is written: scan_writes (the batch, in order), state (what is read before it),
new_servers (new servers' first scans and unchanged scans gathered and written together), scan_rows (the ``scans``
and ``toolsets`` rows, secrets kept out), extras (lanes, instructions, a scan's own findings), history_events
(change events and over-time findings), measurements (tokens, costs, findings of a toolset), load (the bulk
loader); shared holds the tables and prepared statements.
"""

from __future__ import annotations

from scanner.store.write.load import LOAD_CHUNK, LOAD_ORDER, load
from scanner.store.write.measurements import write_measurement
from scanner.store.write.scan_rows import entry_secrets, what_was_run
from scanner.store.write.scan_writes import record_scan, record_scans
from scanner.store.write.shared import Measure
from scanner.store.write.state import STATE_CHUNK

__all__ = [
    "LOAD_CHUNK",
    "LOAD_ORDER",
    "STATE_CHUNK",
    "Measure",
    "entry_secrets",
    "load",
    "record_scan",
    "record_scans",
    "what_was_run",
    "write_measurement",
]
