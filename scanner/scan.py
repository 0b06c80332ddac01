"""``fathom scan``: resolve a registry, crawl it, store every result, and keep the run's state honest.

:func:`run_scan` is the one library call behind the command. A run is ``running`` while it goes, ``finished``
when every entry was written, ``interrupted`` when stopped (Ctrl-C, SIGTERM); ``--resume`` continues the newest
unfinished run of the same source with only the servers it has not written yet.

One scan writes to a database at a time: :func:`run_scan` holds the database's writer lock
(:mod:`scanner.store.lock`) from before it looks at earlier runs until its run is closed, so a second scan on the
same database stops at once with :class:`~scanner.errors.WriterBusy` (exit 4) instead of colliding in the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scanner import wire
from scanner.crawl import CrawlSettings
from scanner.models import ScanOutcome, ServerEntry

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# A run still ``running`` with no new scan for this long was left by a killed process (a live crawl writes a
# server at least every per-server deadline); a new scan marks it interrupted so ``fathom runs`` stops showing it
# as running. ``--resume`` finishes it either way, and a live run wrongly marked (a crawl whose every worker waits
# on a deadline longer than this) is set back to finished by its own finish_run.
STALE_RUN_AFTER = timedelta(minutes=10)


@dataclass(frozen=True)
class ScanConfig:
    """Everything ``fathom scan`` was asked to do. Holds no secret: headers come from the environment."""

    source: str
    db_url: str = "sqlite:///fathom.db"
    kind: str | None = None
    updated_since: str | None = None
    run_packages: bool = False
    run_commands: bool = False
    memory_limit_mb: int = 1024
    max_input_mb: int = 64
    resume: bool = False
    crawl: CrawlSettings = field(default_factory=CrawlSettings)

    def options(self) -> dict[str, Any]:
        """The run's options as stored with it: every field of this config, of its crawl settings and of their
        client limits, flattened to one level (``timeout``, not ``crawl.limits.timeout``), minus
        :data:`OPTIONS_EXCLUDED`. Derived, not listed, so a new setting is stored the day it is added."""
        return _flat_fields(self, OPTIONS_EXCLUDED)


# Config fields never stored with a run. ``source`` is stored apart, redacted (``runs.source``); ``db_url`` can
# carry a database password; ``resume`` says how this process started, not what the run does; ``environ`` (the
# packages' settings) is where installer settings are read, values that may be secrets. A field that holds a
# secret or a callable must be added here.
OPTIONS_EXCLUDED = frozenset({"source", "db_url", "resume", "environ"})


def _json_ready(value: Any) -> Any:
    """An option value as it is stored (JSON): a path as its text, a tuple as a list."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_json_ready(item) for item in value]
    return value


def _flat_fields(settings: DataclassInstance, excluded: frozenset[str]) -> dict[str, Any]:
    """The fields of a dataclass instance, nested dataclasses merged in (their own field names, no prefix)."""
    flat: dict[str, Any] = {}
    for item in dataclasses.fields(settings):
        if item.name in excluded:
            continue
        value = getattr(settings, item.name)
        inner = (
            _flat_fields(value, excluded)
            if dataclasses.is_dataclass(value) and not isinstance(value, type)
            else {item.name: _json_ready(value)}
        )
        clash = flat.keys() & inner.keys()
        if clash:
            raise ValueError(f"run option {sorted(clash)[0]!r} is defined twice; rename one of the settings")
        flat.update(inner)
    return flat


@dataclass(frozen=True)
class ScanSummary:
    run_id: int
    total: int
    counts: dict[str, int]
    interrupted: bool = False
    resumed: bool = False
    already_done: int = 0
    duplicates: int = 0


def source_key(source: str) -> str:
    """How a run records its source: a file as its absolute path, so ``--resume`` finds the run however the path
    was typed (``servers.json``, ``./servers.json``); a URL or ``-`` as given."""
    if source == "-" or "://" in source:
        return source
    path = Path(source)
    return str(path.resolve()) if path.exists() else source


def resolve_entries(config: ScanConfig) -> list[ServerEntry]:
    from scanner.registry import load_entries

    return load_entries(
        config.source,
        kind=config.kind,
        updated_since=config.updated_since,
        run_packages=config.run_packages,
        run_commands=config.run_commands,
        memory_limit_mb=config.memory_limit_mb,
        max_input_bytes=config.max_input_mb * 1024 * 1024,
    )


def run_scan(
    config: ScanConfig,
    *,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[ServerEntry, ScanOutcome], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> ScanSummary:
    """Scan every entry of ``config.source`` into the database at ``config.db_url``.

    ``on_start(run_id, to_scan)`` and ``on_result(entry, outcome)`` feed a progress display; both run in the
    writer, never concurrently. A KeyboardInterrupt (Ctrl-C, or SIGTERM turned into one by the CLI) marks the
    run interrupted, keeps every server already written, and returns a summary with ``interrupted=True``.
    """
    from scanner import tokenizer
    from scanner.store import open_store
    from scanner.store.lock import writer_lock

    entries = resolve_entries(config)
    from scanner.packages.runners import warning_lines

    if on_warning is not None:
        for line in warning_lines(entries, config.crawl.packages):
            on_warning(line)  # once per missing runner, before connecting to anything
    # Fail before connecting to anything if token counts cannot be made (no silent heuristic, no wasted crawl).
    tokenizer.encoding()
    with open_store(config.db_url) as store, writer_lock(store.engine, "scan") as lock:
        # The encoding, the modules and the store's statements live as long as the run: keep them out of every
        # garbage collection the crawl triggers (measured: ~0.4 ms CPU per server on a 2 000-server scan).
        gc.freeze()
        try:
            return _scan_into(store, config, entries, on_start, on_result, lock.check)
        finally:
            gc.unfreeze()


def _scan_into(
    store: Any,
    config: ScanConfig,
    entries: list[ServerEntry],
    on_start: Callable[[int, int], None] | None,
    on_result: Callable[[ServerEntry, ScanOutcome], None] | None,
    still_writer: Callable[[], None] = lambda: None,
) -> ScanSummary:
    import anyio

    from scanner.check import measure
    from scanner.crawl import crawl
    from scanner.rules import RULES_VERSION

    source = source_key(config.source)
    run_id, done = None, set[str]()
    if config.resume:
        run_id = store.resumable_run(source)
        if run_id is not None:
            done = store.resume_run(run_id)
    resumed = run_id is not None
    if run_id is None:
        store.mark_stale_runs_interrupted(older_than=STALE_RUN_AFTER)
        run_id = store.start_run(source, RULES_VERSION, config.options())
    # A name is a server's identity in the store: a second entry with the same name would be scanned for nothing
    # (the store keeps one scan per server per run), so only the first is scanned and the rest are counted. Names
    # are compared as the store keeps them (NUL and lone surrogates as U+FFFD), so --resume recognises them.
    first: dict[str, ServerEntry] = {}
    for entry in entries:
        name = wire.clean_str(entry.name)
        first.setdefault(name, entry if name is entry.name else dataclasses.replace(entry, name=name))
    unique = list(first.values())
    duplicates = len(entries) - len(unique)
    todo = [entry for entry in unique if entry.name not in done]
    counts: Counter[str] = Counter()

    def write(entry: ServerEntry, outcome: ScanOutcome) -> None:
        still_writer()  # raises WriterBusy if another process took the lock over
        store.record_scan(run_id, entry, outcome, measure)
        counts[outcome.outcome.value] += 1
        if on_result is not None:
            on_result(entry, outcome)

    if on_start is not None:
        on_start(run_id, len(todo))
    try:
        anyio.run(crawl, todo, config.crawl, write)
    except Exception:
        # A run-fatal error while writing (no tokenizer, the database refusing writes): keep what was written
        # resumable, then let the caller report the error. Best effort: the database may be what failed.
        with contextlib.suppress(Exception):
            store.finish_run(run_id, "interrupted")
        raise
    except KeyboardInterrupt:
        store.finish_run(run_id, "interrupted")
        return ScanSummary(
            run_id,
            len(todo),
            dict(counts),
            interrupted=True,
            resumed=resumed,
            already_done=len(done),
            duplicates=duplicates,
        )
    store.finish_run(run_id, "finished")
    return ScanSummary(run_id, len(todo), dict(counts), resumed=resumed, already_done=len(done), duplicates=duplicates)
