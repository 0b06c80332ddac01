"""A run's lifecycle: open it, finish or interrupt it (computing its aggregates), resume it, find stale ones.

A run is ``running`` while a crawl writes it, ``finished`` when every entry was written and ``interrupted`` when
stopped; a process killed mid-crawl leaves it ``running`` until :func:`mark_gone_runs_interrupted` (its process
is gone, :mod:`scanner.store.owner`) or :func:`mark_stale_runs_interrupted` (no activity for a while) sees it.

A distributed run (``planned`` servers queued by ``fathom scan --enqueue``) is written by many workers and closed
by the one whose write brings its scans to ``planned`` (:func:`close_if_complete`, under a row lock so exactly
one closes it); each worker's share is counted in ``run_workers`` (:func:`note_worker`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from scanner.errors import InputError
from scanner.store import codec, common, owner
from scanner.store.aggregate import aggregate
from scanner.store.tables import Run, RunWorker, Scan, Server


def _source(source: str) -> str:
    """How a run's source is stored and looked up: redacted, cut to its column."""
    return codec.redact(str(source))[:1000]


def start_run(
    sessions: sessionmaker[Session],
    source: str,
    rule_version: str,
    options: Mapping[str, Any],
    planned: int | None = None,
) -> int:
    """Open a run (status ``running``) and return its id. ``options`` are stored without secrets; ``planned``
    is the number of servers queued for a distributed run (None when one process crawls it)."""
    with sessions.begin() as session:
        run = Run(
            started_at=common.now(),
            finished_at=None,
            status="running",
            source=_source(source),
            rule_version=str(rule_version)[:64],
            options=codec.small_json(options, limit=8192, items=100),
            servers_scanned=0,
            servers_ok=0,
            planned=planned,
        )
        session.add(run)
        session.flush()
        return run.id


def finish_run(sessions: sessionmaker[Session], run_id: int, status: str = "finished") -> None:
    """Close a run as ``finished`` or ``interrupted`` and compute its aggregates (one row for trends)."""
    if status not in ("finished", "interrupted"):
        raise ValueError(f"a run finishes as 'finished' or 'interrupted', not {status!r}")
    with sessions.begin() as session:
        run = common.get_run(session, run_id)
        run.status = status
        run.finished_at = common.now()
        aggregate(session, run, run.rule_version)


def resume_run(sessions: sessionmaker[Session], run_id: int) -> set[str]:
    """Reopen an interrupted (or still running) run; returns the names already scanned, to skip them."""
    with sessions.begin() as session:
        run = common.get_run(session, run_id)
        if run.status == "finished":
            raise InputError(f"run {run_id} is finished; start a new run instead of resuming it.")
        run.status = "running"
        run.options = {**(run.options or {}), owner.KEY: owner.this_process()}  # this process writes it now
        run.finished_at = None
    return scanned_server_names(sessions, run_id)


def resumable_run(sessions: sessionmaker[Session], source: str | None) -> int | None:
    """The newest unfinished run (interrupted, or left ``running`` by a killed process) of ``source``, or of any
    source when None."""
    query = select(Run.id).where(Run.status.in_(("interrupted", "running")))
    if source is not None:
        query = query.where(Run.source == _source(source))
    with sessions() as session:
        return session.scalar(query.order_by(Run.id.desc()).limit(1))


def scanned_server_names(sessions: sessionmaker[Session], run_id: int) -> set[str]:
    """The servers that already have a scan in ``run_id`` (what ``--resume`` skips)."""
    with sessions() as session:
        rows = session.scalars(select(Server.name).join(Scan, Scan.server_id == Server.id).where(Scan.run_id == run_id))
        return set(rows)


def mark_gone_runs_interrupted(sessions: sessionmaker[Session]) -> list[int]:
    """Mark ``running`` runs whose writing process is certainly gone (:func:`scanner.store.owner.gone`) as
    interrupted, whatever their age. Returns the ids it marked."""
    with sessions() as session:
        running = session.execute(
            select(Run.id, Run.options).where(Run.status == "running", Run.planned.is_(None))
        ).all()
    marked = []
    for run_id, options in running:
        if isinstance(options, dict) and owner.gone(options.get(owner.KEY)):
            finish_run(sessions, run_id, "interrupted")
            marked.append(run_id)
    return marked


def mark_stale_runs_interrupted(sessions: sessionmaker[Session], older_than: timedelta = timedelta(0)) -> list[int]:
    """Mark ``running`` runs with no activity (start or last scan) for ``older_than`` as interrupted.

    A process killed mid-crawl leaves its run ``running``; call this when a new scan starts (with a margin such
    as ten minutes if several crawls may share the database). Returns the ids it marked.
    """
    cutoff = common.now() - older_than
    marked = []
    with sessions() as session:
        running = session.execute(
            select(Run.id, Run.started_at, func.max(Scan.scanned_at))
            .outerjoin(Scan, Scan.run_id == Run.id)
            .where(Run.status == "running", Run.planned.is_(None))  # workers close distributed runs
            .group_by(Run.id, Run.started_at)
        ).all()
    for run_id, started, last_scan in running:
        last = max(started, last_scan) if last_scan is not None else started
        if last <= cutoff:
            finish_run(sessions, run_id, "interrupted")
            marked.append(run_id)
    return marked


def close_if_complete(sessions: sessionmaker[Session], run_id: int) -> bool:
    """Finish a distributed run if every planned server has its scan; True if this call finished it.

    Counted first without a lock (the common case: not complete, nothing held). When complete, the run's row is
    locked (``SELECT ... FOR UPDATE`` on PostgreSQL) while it is counted again and its aggregates computed, so
    when the last two workers write at once exactly one of them closes it.
    """
    scanned_query = select(func.count()).select_from(Scan).where(Scan.run_id == run_id)
    with sessions() as session:
        row = session.execute(
            select(Run.planned, Run.status, scanned_query.scalar_subquery()).where(Run.id == run_id)
        ).one_or_none()
    if row is None or row.planned is None or row.status == "finished" or row[2] < row.planned:
        return False
    with sessions.begin() as session:
        run = session.scalars(select(Run).where(Run.id == run_id).with_for_update()).one()
        if run.planned is None or run.status == "finished":
            return False
        if (session.scalar(scanned_query) or 0) < run.planned:
            return False
        run.status = "finished"
        run.finished_at = common.now()
        aggregate(session, run, run.rule_version)
        return True


def note_worker(sessions: sessionmaker[Session], run_id: int, worker: str, scans: int = 1) -> None:
    """Count ``scans`` more servers written by ``worker`` in ``run_id`` (one row per worker and run)."""
    now = common.now()
    name = codec.text(worker, 200) or "?"
    with sessions.begin() as session:
        if session.get_bind().dialect.name == "postgresql":
            from sqlalchemy.dialects import postgresql  # here: a SQLite scan never pays for importing it

            insert = postgresql.insert(RunWorker).values(
                run_id=run_id, worker=name, first_at=now, last_at=now, scans=scans
            )
            session.execute(
                insert.on_conflict_do_update(
                    index_elements=[RunWorker.run_id, RunWorker.worker],
                    set_={"last_at": now, "scans": RunWorker.scans + scans},
                )
            )
            return
        changed = session.execute(
            update(RunWorker)
            .where(RunWorker.run_id == run_id, RunWorker.worker == name)
            .values(last_at=now, scans=RunWorker.scans + scans)
        )
        if not changed.rowcount:  # type: ignore[attr-defined]
            session.add(RunWorker(run_id=run_id, worker=name, first_at=now, last_at=now, scans=scans))


def has_scan(sessions: sessionmaker[Session], run_id: int, name: str) -> bool:
    """Whether server ``name`` already has its scan in ``run_id`` (a retried job finds its work done)."""
    with sessions() as session:
        found = session.scalar(
            select(Scan.id).join(Server, Server.id == Scan.server_id).where(Scan.run_id == run_id, Server.name == name)
        )
        return found is not None
