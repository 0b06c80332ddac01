"""The queue of a distributed run: Procrastinate on the run's own PostgreSQL, one job per server.

``fathom scan REGISTRY --db postgresql+psycopg://... --enqueue`` (:func:`enqueue_scan`) resolves the registry,
opens the run with ``planned`` = its number of distinct servers, and queues one ``fathom.scan_server`` job per
server in one transaction of the engine's batch insert. ``fathom worker`` (:mod:`scanner.distributed.worker`)
takes them. The engine's tables live in the same database as the scans (migration 0005 creates them), so there is
one thing to back up and one connection string to give every machine.

The database's writer lock (``scanner.store.lock``) becomes the run's: ``--enqueue`` takes it like any scan
(refused while another scan writes) and hands it to the run (``RunLease``); every worker of the run refreshes it
as it writes and the one that closes the run releases it. A local ``fathom scan`` meanwhile is refused.

What a job holds (:func:`entry_payload`) is the entry as ``fathom scan --dry-run`` shows it, plus the package's
server.json description: never a secret. The *values* of its environment variables and headers stay on the
coordinator; a job carries their names only. Headers are not sent at all, and the scan records which ones were
left out (``extra.headers_not_queued``).

Whoever can write the queue writes jobs, so a job is data (:func:`entry_from_payload`): a package's command is
*rebuilt* by the worker from the package description under the worker's own policy (``--run-packages``, its
memory limit, the checks of :mod:`scanner.registry.packages`), never taken from the job's ``command``; a variable
gets a value only under the naming rule, ``FATHOM_SECRET_<SERVER>_<VAR>`` in the worker's environment, never
the worker's own ``VAR`` (a job declaring ``AWS_SECRET_ACCESS_KEY`` or ``PGPASSWORD`` gets nothing). A job's
command of a list or client config runs as queued only on a worker started with ``--run-commands``: that flag
trusts whoever writes the queue.

A job is also checked whole before anything of it is used (:func:`job_problem`): ``--enqueue`` stores with it a
digest of the entry as queued (:func:`entry_digest`: every field, the package's server.json description
included), and the worker recomputes it. A job rewritten in the queue (another package, command or URL under a
queued server's name) no longer matches: it is recorded as ``refused`` with the reason, nothing of it runs and
no ``FATHOM_SECRET_*`` value is handed to anything. With ``FATHOM_QUEUE_KEY`` set on the coordinator and on every
worker (the same value), the digest is an HMAC under that key, so whoever can write the queue but does not have
the key cannot forge one for a job of their own; without it the digest is a plain SHA-256, which catches a job
changed by hand but not one whose writer recomputed it (docs/distributed.md). A worker with a key refuses a
job digested without one, and the other way round.

A job is bound to its run: the payload carries the id of the run it was queued for (``run_id``), under the same
digest, and the worker compares it with the run the job is delivered for (:func:`other_run`). A signed job saved
from one run and queued again for another (to replace that run's scan of the server with an old entry) is
dropped with a warning and written nowhere; the run's own job for the server scans it. Run ids are unique in one
database: give each database its own ``FATHOM_QUEUE_KEY``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scanner import wire
from scanner.confine import DEFAULT_MEMORY_LIMIT_MB
from scanner.errors import InputError, StoreError
from scanner.models import Finding, Outcome, ScanOutcome, ServerEntry, Severity, Transport

if TYPE_CHECKING:
    import procrastinate

    from scanner.scan.night import ScanConfig

QUEUE = "fathom"
TASK = "fathom.scan_server"
# A job that raised (the database went away mid-write, a shutdown cancelled it) goes back to the queue; a
# server's own failure never raises, it is an outcome.
MAX_ATTEMPTS = 20
#: The shared key of the coordinator and its workers that makes a job's digest an HMAC (see the module docstring).
QUEUE_KEY_ENV = "FATHOM_QUEUE_KEY"
DIGEST_FIELD = "digest"
RUN_FIELD = "run_id"  # the run a job was queued for, under the digest


def conninfo(db_url: str) -> str:
    """The libpq connection string of a ``postgresql+psycopg://`` URL; any other database is an InputError."""
    from scanner.store.engine import libpq_url

    plain = libpq_url(db_url)
    if plain is None:
        raise InputError(
            "distributed runs need PostgreSQL: give --db postgresql+psycopg://user@host/db "
            "(SQLite on one machine needs no workers: drop --enqueue)."
        )
    return plain


def make_app(db_url: str) -> procrastinate.App:
    """A Procrastinate app on ``db_url`` with the one task registered (its body is the worker's to give)."""
    plain = conninfo(db_url)  # SQLite is refused first: installing the extra would not help it
    try:
        import procrastinate
    except ImportError as exc:
        raise InputError("distributed runs need the task engine: pip install 'fathom-scanner[postgres]'") from exc
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
        raise StoreError(f"the queue at {where} failed: {first}") from exc


def entry_payload(
    entry: ServerEntry, environ: Mapping[str, str] | None = None, *, run_id: int | None = None
) -> dict[str, Any]:
    """A job's view of ``entry``: JSON, with the names but never the values of its variables and headers, the run
    it is queued for (``run_id``), and the digest of all of it (:func:`entry_digest`, keyed by ``environ``'s
    ``FATHOM_QUEUE_KEY``; ours by default)."""
    import os

    payload = _payload(entry)
    if run_id is not None:
        payload[RUN_FIELD] = run_id
    payload[DIGEST_FIELD] = entry_digest(payload, os.environ if environ is None else environ)
    return payload


def entry_digest(payload: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    """The digest of a job's entry: every field but the digest, as canonical JSON (sorted keys, ASCII, as a JSON
    column gives it back whatever order it stores), under ``FATHOM_QUEUE_KEY`` when ``environ`` has one."""
    body = {key: value for key, value in payload.items() if key != DIGEST_FIELD}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str).encode()
    key = environ.get(QUEUE_KEY_ENV) or ""
    if key:
        return "hmac-sha256:" + hmac.new(key.encode("utf-8", "surrogatepass"), canonical, hashlib.sha256).hexdigest()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def job_problem(payload: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """Why a job cannot be trusted (its digest is missing or does not match the entry it carries), or None."""
    digest = payload.get(DIGEST_FIELD)
    if not isinstance(digest, str) or not digest:
        return "queued job carries no digest of its registry entry (queued by an older version? queue it again)"
    expected = entry_digest(payload, environ)
    if hmac.compare_digest(digest.encode("utf-8", "replace"), expected.encode("ascii")):
        return None
    said, wanted = digest.partition(":")[0], expected.partition(":")[0]
    if said != wanted:
        keyed = "with" if wanted == "hmac-sha256" else "without"
        return (
            f"queued job's digest is {said[:20]!r} but this worker runs {keyed} {QUEUE_KEY_ENV} "
            "(give the coordinator and every worker the same key): not run"
        )
    return "queued job does not match the digest of its registry entry (the queue row was changed): not run"


def other_run(payload: Mapping[str, Any], run_id: int) -> str | None:
    """Why a job whose digest holds (:func:`job_problem` None) is not this run's, or None when it is: it was
    queued for another run (a signed job saved and queued again) or for none (queued by an older version)."""
    queued_for = payload.get(RUN_FIELD)
    if queued_for is None:
        return f"queued job is bound to no run (queued by an older version? queue it again); delivered for run {run_id}"
    if type(queued_for) is not int or queued_for != run_id:
        return f"queued job was queued for run {str(queued_for)[:20]}, not run {run_id} (saved and queued again)"
    return None


def refused_job(payload: Mapping[str, Any], problem: str) -> tuple[ServerEntry, ScanOutcome]:
    """The entry and outcome a worker records for a job it does not trust: nothing of the job runs, no secret is
    read for it; the entry keeps only the server's name (as the job says it) and the queued source."""
    name = payload.get("name")
    name = wire.clean_str(name)[:500] if isinstance(name, str) and name.strip() else "(unnamed job)"
    source = payload.get("source")
    entry = ServerEntry(
        name=name,
        transport=Transport.STDIO,
        source=wire.clean_str(source)[:500] if isinstance(source, str) else "queue",
        skip=problem,
    )
    outcome = ScanOutcome(
        outcome=Outcome.REFUSED,
        transport=Transport.STDIO.value,
        detail=problem,
        extra={"not_run": True, "queue_digest": "mismatch"},
    )
    return entry, outcome


def _payload(entry: ServerEntry) -> dict[str, Any]:
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
        "package_source": dict(entry.package_source) if entry.package_source is not None else None,
    }


def entry_from_payload(
    payload: Mapping[str, Any], environ: Mapping[str, str], *, memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB
) -> ServerEntry:
    """The entry a worker scans (see the module docstring): a package rebuilt from its description under this
    worker's policy; any other entry from the job's fields, each declared variable from ``environ`` under the
    naming rule only. Either way it keeps what the registry said of it (its MCP7xx findings and status)."""
    import dataclasses

    clean = wire.sanitize(dict(payload))
    assert isinstance(clean, dict)
    entry = _rebuilt(clean, environ, memory_limit_mb)
    return dataclasses.replace(
        entry,
        registry_status=clean.get("registry_status") if isinstance(clean.get("registry_status"), str) else None,
        status_message=clean.get("status_message") if isinstance(clean.get("status_message"), str) else None,
        findings=tuple(_finding(item) for item in clean.get("findings") or () if isinstance(item, dict)),
    )


def _rebuilt(clean: dict[str, Any], environ: Mapping[str, str], memory_limit_mb: int) -> ServerEntry:
    from scanner.registry.interface import Options
    from scanner.registry.packages import resolve_packages
    from scanner.registry.secrets import lookup

    name = str(clean["name"])
    version = clean.get("version") if isinstance(clean.get("version"), str) else None
    source = clean.get("source") if isinstance(clean.get("source"), str) else None
    package = clean.get("package")
    declared = clean.get("package_source")
    if package is not None or declared is not None:
        if clean.get("skip"):
            return ServerEntry(
                name=name, transport=Transport.STDIO, version=version, source=source, skip=str(clean["skip"])
            )
        if not isinstance(declared, dict):
            return ServerEntry(
                name=name,
                transport=Transport.STDIO,
                version=version,
                source=source,
                skip="queued package has no description to rebuild its command from (queue it again)",
            )
        # run_packages here only builds the command; whether it runs is the worker's --run-packages (allowed()).
        options = Options(run_packages=True, environ=environ, memory_limit_mb=memory_limit_mb)
        return resolve_packages(name, version, [declared], source=source or "queue", options=options)
    env: dict[str, str] = {}
    for variable in clean.get("env_names") or ():
        value = lookup(environ, name, str(variable))
        if value is not None and "\0" not in value:
            env[str(variable)] = value
    return ServerEntry(
        name=name,
        transport=Transport(clean["transport"]),
        url=clean.get("url"),
        command=tuple(str(part) for part in clean.get("command") or ()),
        env=env,
        version=version,
        source=source,
        skip=clean.get("skip"),
        anonymous=bool(clean.get("anonymous")),
        secret_header_names=tuple(clean.get("secret_header_names") or ()),
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
    from scanner.measure import tokenizer
    from scanner.rules import RULES_VERSION
    from scanner.scan.crawl import interleave_by_host
    from scanner.scan.night import resolve_entries, source_key
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
    tokenizer.verify()  # the workers need it too; fail here rather than in every job
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
                    jobs: list[dict[str, Any]] = [
                        {"run_id": run_id, "entry": entry_payload(e, run_id=run_id)} for e in unique
                    ]
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
