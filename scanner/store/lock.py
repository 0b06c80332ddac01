"""The database's writer lock: one scan (or rescore) writes to a database at a time, and a second is told why not.

Two scans writing the same database used to collide inside the store (an ``IntegrityError`` on ``servers.name``,
a traceback, exit 1). Now the second one stops before it starts a run, with one line and exit 4::

    another scan is writing to fathom.db since 14:02 UTC (pid 1234 on build-7); let it finish or stop it

The lock is one row in ``writer_lock`` (migration 0002), the same on SQLite and PostgreSQL, so it works wherever
the database is reachable and ``fathom runs`` users can see who holds it:

* **take**: ``INSERT ... ON CONFLICT DO NOTHING`` of row 1 (the primary key makes it atomic on both backends);
* **stale**: the row's process is gone (same host and its pid is not running, or is a zombie), or its heartbeat
  is older than :data:`STALE_AFTER` (another host, a reused pid, a frozen process). A stale row is taken over
  with a compare-and-swap on its token, so of two processes taking over at once exactly one wins;
* **heartbeat**: a daemon thread refreshes ``heartbeat_at`` every :data:`HEARTBEAT_EVERY` while the lock is held.
  If the row was taken over meanwhile (this process stood still past :data:`STALE_AFTER`), :meth:`WriterLock.check`
  raises :class:`~scanner.errors.WriterBusy` at the next write, so two writers never interleave for long;
* **release**: ``DELETE`` of the row only while it still carries this holder's token.

A SIGKILLed scan leaves its row; the next scan on the same host sees the pid gone and takes over at once. Hosts
are told apart by ``socket.gethostname()``: processes sharing a database across pid namespaces must have distinct
host names (containers do by default); otherwise only the heartbeat tells their locks apart.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table, delete, select, update
from sqlalchemy.dialects import sqlite

from scanner.errors import StoreError, WriterBusy
from scanner.store import tables

STALE_AFTER = timedelta(minutes=2)
HEARTBEAT_EVERY = timedelta(seconds=20)
_ROW = 1
_TABLE: Table = tables.Base.metadata.tables[tables.WriterLock.__tablename__]


def _now() -> datetime:
    return datetime.now(UTC)


def pid_running(pid: int) -> bool:
    """Whether process ``pid`` exists on this host and is not a zombie (killed but not yet reaped)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    except OSError:
        return False
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def database_label(engine: Engine) -> str:
    """How a message names the database: a SQLite file's path, any other URL without its password."""
    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database:
        return url.database
    return url.render_as_string(hide_password=True)


def _since(moment: datetime, now: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%H:%M UTC") if moment.date() == now.date() else moment.strftime("%Y-%m-%d %H:%M UTC")


class WriterLock:
    """The writer lock of one database, held by this process for ``purpose`` (``scan``, ``rescore``)."""

    def __init__(self, engine: Engine, purpose: str = "scan") -> None:
        self.engine = engine
        self.purpose = purpose
        self.token = secrets.token_hex(16)
        self.pid = os.getpid()
        self.host = socket.gethostname()[:255]
        self.took_over: dict[str, Any] | None = None  # the stale holder this lock replaced, if any
        self._lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _insert(self) -> Any:
        dialect = self.engine.dialect.name
        if dialect == "sqlite":
            return sqlite.insert(_TABLE).on_conflict_do_nothing(index_elements=["id"])
        if dialect == "postgresql":
            from sqlalchemy.dialects import postgresql  # here: a SQLite scan never pays for importing it

            return postgresql.insert(_TABLE).on_conflict_do_nothing(index_elements=["id"])
        raise StoreError(f"the writer lock supports SQLite and PostgreSQL, not {dialect}")

    def _values(self) -> dict[str, Any]:
        now = _now()
        return {
            "token": self.token,
            "purpose": self.purpose,
            "pid": self.pid,
            "host": self.host,
            "started_at": now,
            "heartbeat_at": now,
        }

    def is_stale(self, holder: Any, now: datetime) -> bool:
        """Whether the holder row ``holder`` was left by a process that is no longer writing."""
        if now - holder.heartbeat_at > STALE_AFTER:
            return True
        return holder.host == self.host and not pid_running(holder.pid)

    def _holder(self, connection: Any) -> Any:
        return connection.execute(select(_TABLE).where(_TABLE.c.id == _ROW)).one_or_none()

    def _try_insert(self, connection: Any) -> Any:
        """Insert our row unless one exists; the row there afterwards (ours if we won). Read back rather than
        trusting ``rowcount``, which drivers do not all report for ``INSERT ... ON CONFLICT``."""
        connection.execute(self._insert().values(id=_ROW, **self._values()))
        return self._holder(connection)

    def acquire(self) -> None:
        """Take the lock, taking over a stale one; raise :class:`WriterBusy` naming the live holder otherwise."""
        self.take()
        self._thread = threading.Thread(target=self._beat, name="fathom-writer-lock", daemon=True)
        self._thread.start()

    def take(self) -> None:
        """:meth:`acquire` without the heartbeat thread (a distributed run's workers beat it as they write)."""
        with self.engine.begin() as connection:
            holder = self._try_insert(connection)
        if holder is None or holder.token != self.token:
            with self.engine.begin() as connection:
                holder = self._holder(connection)
                now = _now()
                if holder is None:  # released between our insert and this read: try once more
                    holder = self._try_insert(connection)
                elif self.is_stale(holder, now):
                    swap = (
                        update(_TABLE)
                        .where(_TABLE.c.id == _ROW, _TABLE.c.token == holder.token)
                        .values(**self._values())
                    )
                    connection.execute(swap)
                    stale, holder = holder, self._holder(connection)
                    if holder is not None and holder.token == self.token:
                        self.took_over = {"pid": stale.pid, "host": stale.host, "started_at": stale.started_at}
                if holder is None or holder.token != self.token:
                    raise self._busy(holder, now)

    def _busy(self, holder: Any, now: datetime) -> WriterBusy:
        where = database_label(self.engine)
        if holder is None:
            return WriterBusy(f"another process is taking the writer lock of {where}; try again")
        since = _since(holder.started_at, now)
        return WriterBusy(
            f"another {holder.purpose} is writing to {where} since {since} (pid {holder.pid} on {holder.host});"
            " let it finish or stop it"
        )

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_EVERY.total_seconds()):
            try:
                self.refresh()
            except StoreError:
                continue  # the database is failing: the writer will say so itself at its next write

    def refresh(self) -> None:
        """Move the heartbeat to now; notes the loss if the row is no longer ours."""
        with self.engine.begin() as connection:
            beat = update(_TABLE).where(_TABLE.c.id == _ROW, _TABLE.c.token == self.token).values(heartbeat_at=_now())
            connection.execute(beat)
            holder = self._holder(connection)
            if holder is None or holder.token != self.token:
                self._lost = True

    def check(self) -> None:
        """Raise :class:`WriterBusy` if another process took the lock over (this one stood still too long)."""
        if self._lost:
            raise WriterBusy(
                f"this scan lost the writer lock of {database_label(self.engine)} to another process after standing"
                f" still for over {int(STALE_AFTER.total_seconds())} s; it stops here (--resume finishes the run)"
            )

    def release(self) -> None:
        """Stop the heartbeat and delete the row if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self.engine.begin() as connection:
            connection.execute(delete(_TABLE).where(_TABLE.c.id == _ROW, _TABLE.c.token == self.token))


@contextlib.contextmanager
def writer_lock(engine: Engine, purpose: str = "scan") -> Iterator[WriterLock]:
    """Hold the database's writer lock for the ``with`` block (see the module docstring)."""
    lock = WriterLock(engine, purpose)
    lock.acquire()
    try:
        yield lock
    except BaseException:
        # The database may be what failed: the error in flight is the one to report, not the release's.
        with contextlib.suppress(Exception):
            lock.release()
        raise
    lock.release()


class RunLease:
    """The writer lock held for a distributed run: one row whose token names the run, shared by all its workers.

    ``fathom scan --enqueue`` takes the lock like any scan (refused while another writes), then hands it to the
    run (:meth:`adopt`). Each worker, before each write, moves the heartbeat to now if the run still holds it, or
    takes it back if it is free or stale (:meth:`hold`); while another scan holds it, :meth:`hold` raises
    :class:`WriterBusy` and the worker waits. The worker that closes the run deletes the row (:meth:`release`).
    So a local ``fathom scan`` is refused while a distributed run is being written, and waits for nobody once its
    workers have been silent for :data:`STALE_AFTER`.
    """

    def __init__(self, engine: Engine, run_id: int) -> None:
        self.engine = engine
        self.lock = WriterLock(engine, purpose=f"distributed run {run_id}"[:32])
        self.lock.token = f"distributed-run-{run_id}"
        # Held by many processes on many hosts: no pid or host can say it is gone, only its heartbeat can.
        self.lock.pid, self.lock.host = 0, f"the workers of run {run_id}"[:255]

    def adopt(self, held: WriterLock) -> None:
        """Give the run the lock ``held`` holds (taken with :meth:`WriterLock.take`)."""
        with self.engine.begin() as connection:
            connection.execute(
                update(_TABLE)
                .where(_TABLE.c.id == _ROW, _TABLE.c.token == held.token)
                .values(
                    token=self.lock.token,
                    purpose=self.lock.purpose,
                    pid=self.lock.pid,
                    host=self.lock.host,
                    heartbeat_at=_now(),
                )
            )

    def hold(self) -> None:
        """Refresh the run's hold on the lock, or take it if free or stale; :class:`WriterBusy` if another has it."""
        with self.engine.begin() as connection:
            beat = (
                update(_TABLE).where(_TABLE.c.id == _ROW, _TABLE.c.token == self.lock.token).values(heartbeat_at=_now())
            )
            if connection.execute(beat).rowcount == 1:
                return
        self.lock.take()

    def release(self) -> None:
        """Delete the run's row (its last server is written)."""
        with self.engine.begin() as connection:
            connection.execute(delete(_TABLE).where(_TABLE.c.id == _ROW, _TABLE.c.token == self.lock.token))
