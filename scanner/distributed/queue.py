"""The queue of a distributed run: Procrastinate on the run's own PostgreSQL, one job per server.

``fathom scan REGISTRY --db postgresql+psycopg://... --enqueue`` (:func:`enqueue_scan`) resolves the registry,
opens the run with ``planned`` = its number of distinct servers, and queues one ``fathom.scan_server`` job per
server in one transaction of the engine's batch insert. ``fathom worker`` (:mod:`scanner.distributed.worker`)
takes them. The engine's tables live in the same database as the scans (migration 0005 creates them), so there is
one thing to back up and one connection string to give every machine.

The database's writer lock (``scanner.store.lock``) becomes the run's: ``--enqueue`` takes it like any scan
(refused while another scan writes) and hands it to the run (``RunLease``); every worker of the run refreshes it
as it writes and the one that closes the run releases it. A local ``fathom scan`` meanwhile is refused.

What a job holds (:func:`entry_payload`) is the entry as ``fathom scan --dry-run`` shows it: never a secret. The
*values* of its environment variables and headers stay on the coordinator; a job carries their names only. A
worker gives a declared variable its own environment's value (``PATH`` and the locale are the worker's anyway);
headers are not sent at all, and the scan records which ones were left out (``extra.headers_not_queued``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scanner import wire
from scanner.errors import InputError, StoreError
from scanner.models import Finding, ServerEntry, Severity, Transport

if TYPE_CHECKING:
    import procrastinate

    from scanner.scan import ScanConfig

QUEUE = "fathom"
TASK = "fathom.scan_server"
# A job that raised (the database went away mid-write, a shutdown cancelled it) goes back to the queue; a
# server's own failure never raises, it is an outcome.
MAX_ATTEMPTS = 20


def conninfo(db_url: str) -> str:
    """The libpq connection string of a ``postgresql+psycopg://`` URL; any other database is an InputError."""
    from scanner.store.engine import libpq_url

    plain = libpq_url(db_url)
    if plain is None:
        raise InputError(
            "Distributed runs need PostgreSQL: give --db postgresql+psycopg://user@host/db "
            "(SQLite on one machine needs no workers: drop --enqueue)."
        )
    return plain


def make_app(db_url: str) -> procrastinate.App:
    """A Procrastinate app on ``db_url`` with the one task registered (its body is the worker's to give)."""
    plain = conninfo(db_url)  # SQLite is refused first: installing the extra would not help it
    try:
        import procrastinate
    except ImportError as exc:
        raise InputError("Distributed runs need the task engine: pip install 'fathom-scanner[postgres]'") from exc
    return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=plain))


@contextlib.contextmanager
def engine_errors(db_url: str) -> Iterator[None]:
    """Translate the task engine's and the driver's errors into one :class:`StoreError` line (exit 4)."""
    import procrastinate.exceptions
    import psycopg

    try:
        yield
    except (procrastinate.exceptions.ProcrastinateException, psycopg.Error) as exc:
        from scanner.store.engine import shown_url

        where = shown_url(db_url)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"The queue at {where} failed: {first}") from exc


def entry_payload(entry: ServerEntry) -> dict[str, Any]:
    """A job's view of ``entry``: JSON, with the names but never the values of its variables and headers."""
    return {
        "name": entry.name,
        "transport": entry.transport.value,
        "url": entry.url,
        "command": list(entry.command),
        "env_names": sorted(entry.env),
        "header_names": sorted(entry.headers),
        "version": entry.version,
        "source": entry.source,
        "skip": entry.skip,
        "anonymous": entry.anonymous,
        "secret_header_names": list(entry.secret_header_names),
        "package": dict(entry.package) if entry.package is not None else None,
        "registry_status": entry.registry_status,
        "status_message": entry.status_message,
        "findings": [finding.to_json() for finding in entry.findings],
    }


def entry_from_payload(payload: Mapping[str, Any], environ: Mapping[str, str]) -> ServerEntry:
    """The entry a worker scans: the job's fields, each declared variable from ``environ`` when set there."""
    clean = wire.sanitize(dict(payload))
    assert isinstance(clean, dict)
    package = clean.get("package")
    return ServerEntry(
        name=str(clean["name"]),
        transport=Transport(clean["transport"]),
        url=clean.get("url"),
        command=tuple(str(part) for part in clean.get("command") or ()),
        env={name: environ[name] for name in clean.get("env_names") or () if name in environ},
        version=clean.get("version"),
        source=clean.get("source"),
        skip=clean.get("skip"),
        anonymous=bool(clean.get("anonymous")),
        secret_header_names=tuple(clean.get("secret_header_names") or ()),
        package=package if isinstance(package, dict) else None,
        registry_status=clean.get("registry_status"),
        status_message=clean.get("status_message"),
        findings=tuple(_finding(item) for item in clean.get("findings") or () if isinstance(item, dict)),
    )


def _finding(item: Mapping[str, Any]) -> Finding:
    """A registry-data finding (MCP7xx) as the job carried it (:meth:`Finding.to_json`)."""
    return Finding(
        code=str(item["code"]),
        rule=str(item["rule"]),
        severity=Severity.parse(str(item["severity"])),
        tool=item.get("tool"),
        message=str(item["message"]),
        hint=str(item["hint"]),
        pointer=item.get("pointer"),
        details=dict(item.get("details") or {}),
    )


@dataclass(frozen=True)
class EnqueueSummary:
    """What ``--enqueue`` did: the run it opened and how many jobs it queued."""

    run_id: int
    queued: int
    duplicates: int


def enqueue_scan(config: ScanConfig) -> EnqueueSummary:
    """Resolve ``config.source``, open a distributed run and queue one job per distinct server name.

    The run is opened first (``planned`` = the jobs about to be queued), then every job goes in with one batch
    insert; if queueing fails the run is closed as interrupted, so nothing waits for jobs that do not exist.
    """
    from scanner import tokenizer
    from scanner.crawl import interleave_by_host
    from scanner.rules import RULES_VERSION
    from scanner.scan import resolve_entries, source_key
    from scanner.store import open_store
    from scanner.store.lock import RunLease, WriterLock

    if config.resume:
        raise InputError("--resume does not apply to --enqueue: a distributed run is finished by its workers")
    if config.source is None:
        raise InputError(
            "--enqueue needs a registry to queue: fathom scan REGISTRY --db postgresql+psycopg://... --enqueue"
        )
    source = config.source
    app = make_app(config.db_url)  # refuses SQLite before anything is read
    entries = resolve_entries(config)
    tokenizer.encoding()  # the workers need it too; fail here rather than in every job
    first: dict[str, ServerEntry] = {}
    for entry in entries:
        first.setdefault(entry.name, entry)
    unique = interleave_by_host(first.values())
    with open_store(config.db_url) as store:
        # Refused like any scan while another writes; then the lock is the run's, shared by its workers.
        lock = WriterLock(store.engine, "scan")
        lock.take()
        run_id: int | None = None
        try:
            options = {**config.options(), "distributed": True}
            run_id = store.start_run(source_key(source), RULES_VERSION, options, planned=len(unique))
            if unique:
                with engine_errors(config.db_url), app.open():
                    deferrer = app.configure_task(TASK, queue=QUEUE)
                    jobs: list[dict[str, Any]] = [{"run_id": run_id, "entry": entry_payload(e)} for e in unique]
                    deferrer.batch_defer(*jobs)
                RunLease(store.engine, run_id).adopt(lock)
            else:
                store.close_if_complete(run_id)  # nothing to scan: finished at once
                lock.release()
        except BaseException:
            with contextlib.suppress(Exception):
                lock.release()
                if run_id is not None:
                    store.finish_run(run_id, "interrupted")
            raise
    return EnqueueSummary(run_id=run_id, queued=len(unique), duplicates=len(entries) - len(unique))
