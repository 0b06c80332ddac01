"""The store's front: :class:`Store` holds the engine and hands each call to the room that does it.

The rooms of ``scanner.store`` (the only package that writes SQL):

- ``lifecycle``: open, finish, resume and time out runs;
- ``write``: a batch of results per transaction (:meth:`Store.record_scans`), a toolset's measurement, the bulk
  loader (a package, one module per part of what is written);
- ``aggregate``: a run's aggregate row, and rescoring under a new rule catalogue;
- ``read``: every query, and the bulk reads the report uses;
- ``common``: the clock, the Core tables and the lookups they share; ``rows``: the frozen rows queries return.

Each batch of results handed to :meth:`Store.record_scans` (one for :meth:`Store.record_scan`) is written in one
transaction, so a crawl killed at any point leaves a consistent database that keeps every batch committed before
the kill; ``mark_stale_runs_interrupted`` and ``resume_run``
pick such a run up again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlalchemy.orm import sessionmaker

from scanner.models import Finding, ScanOutcome, ServerEntry, Severity, TokenCount, ToolCost
from scanner.store import lifecycle, read, write
from scanner.store.rows import (
    Diff,
    EventRow,
    FindingRow,
    HistoryColumns,
    LeaderRow,
    RunRow,
    RunTrend,
    ScanRecord,
    ScanRow,
    ScanScore,
    ServerSummary,
)
from scanner.store.write import Measure

if TYPE_CHECKING:
    from scanner.store.rescore import RescoreResult

__all__ = ["Measure", "Store"]


class Store:
    """A Fathom database: open it with :func:`scanner.store.open_store`, then write runs and query them.

    Not thread-safe: a crawl has one writer (``scanner.scan.crawl``); readers in other processes are fine (WAL).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def close(self) -> None:
        """Release every pooled connection (the database file is closed)."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- Runs (lifecycle) ---------------------------------------------------------------------------------

    def start_run(self, source: str, rule_version: str, options: Mapping[str, Any], planned: int | None = None) -> int:
        """Open a run (status ``running``) and return its id. ``options`` are stored without secrets;
        ``planned``: the servers queued for a distributed run."""
        return lifecycle.start_run(self._sessions, source, rule_version, options, planned)

    def close_if_complete(self, run_id: int) -> bool:
        """Finish a distributed run if every planned server has its scan; True if this call finished it."""
        return lifecycle.close_if_complete(self._sessions, run_id)

    def note_worker(self, run_id: int, worker: str, scans: int = 1) -> None:
        """Count ``scans`` more servers written by ``worker`` in distributed run ``run_id``."""
        lifecycle.note_worker(self._sessions, run_id, worker, scans)

    def has_scan(self, run_id: int, name: str) -> bool:
        """Whether server ``name`` already has its scan in ``run_id``."""
        return lifecycle.has_scan(self._sessions, run_id, name)

    def finish_run(self, run_id: int, status: str = "finished") -> None:
        """Close a run as ``finished`` or ``interrupted`` and compute its aggregates (one row for trends)."""
        lifecycle.finish_run(self._sessions, run_id, status)

    def resume_run(self, run_id: int) -> set[str]:
        """Reopen an interrupted (or still running) run; returns the names already scanned, to skip them."""
        return lifecycle.resume_run(self._sessions, run_id)

    def resumable_run(self, source: str | None) -> int | None:
        """The newest unfinished run (interrupted, or left ``running`` by a killed process) of ``source``, or of
        any source when None."""
        return lifecycle.resumable_run(self._sessions, source)

    def scanned_server_names(self, run_id: int) -> set[str]:
        """The servers that already have a scan in ``run_id`` (what ``--resume`` skips)."""
        return lifecycle.scanned_server_names(self._sessions, run_id)

    def interrupted_runs(self) -> list[RunRow]:
        """Runs marked ``interrupted``, newest first: candidates for ``--resume``."""
        return [row for row in reversed(self.runs()) if row.status == "interrupted"]

    def mark_gone_runs_interrupted(self) -> list[int]:
        """Mark ``running`` runs whose writing process is gone as interrupted; returns the ids it marked."""
        return lifecycle.mark_gone_runs_interrupted(self._sessions)

    def mark_stale_runs_interrupted(self, older_than: timedelta = timedelta(0)) -> list[int]:
        """Mark ``running`` runs with no activity for ``older_than`` as interrupted; returns the ids it marked."""
        return lifecycle.mark_stale_runs_interrupted(self._sessions, older_than)

    # --- The write path -----------------------------------------------------------------------------------

    def record_scan(self, run_id: int, entry: ServerEntry, outcome: ScanOutcome, measure: Measure) -> ScanRecord:
        """Store one server's result in its own transaction, and what changed since its previous scan
        (see :func:`scanner.store.write.record_scan`)."""
        return write.record_scan(self.engine, run_id, entry, outcome, measure)

    def record_scans(
        self, run_id: int, results: Sequence[tuple[ServerEntry, ScanOutcome]], measure: Measure
    ) -> list[ScanRecord]:
        """:meth:`record_scan` of each result in turn, in one transaction, the unchanged servers' rows and new
        servers' first scans written together (``executemany``; see :func:`scanner.store.write.record_scans`)."""
        return write.record_scans(self.engine, run_id, results, measure)

    def bulk_load(self, rows: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, int]:
        """Insert trusted, already-shaped rows straight into tables (benchmarks, imports): see
        :func:`scanner.store.write.load`."""
        return write.load(self.engine, rows)

    # --- Aggregates and rescoring -------------------------------------------------------------------------

    def rescore(self, rule_version: str, measure: Measure) -> int:
        """Re-measure every stored toolset under ``rule_version`` and recount every closed run's aggregates
        (see :func:`scanner.store.rescore.rescore_history`). Returns how many toolsets were measured."""
        from scanner.store.rescore import rescore_history

        return rescore_history(self.engine, self._sessions, rule_version, measure, every=True).measured

    def rescore_history(
        self, rule_version: str, measure: Measure, *, dry_run: bool = False, every: bool = False
    ) -> RescoreResult:
        """:meth:`rescore` with what changed per rule (added, removed, changed findings); with ``dry_run``
        nothing is written. A rescore that changes nothing writes nothing; a list already measured under this
        catalogue and basis is measured again only with ``every`` (see :mod:`scanner.store.rescore`)."""
        from scanner.store.rescore import rescore_history

        return rescore_history(self.engine, self._sessions, rule_version, measure, dry_run=dry_run, every=every)

    # --- Queries ------------------------------------------------------------------------------------------

    def runs(self) -> list[RunRow]:
        """Every run, oldest first; a running run's counts are live."""
        return read.runs(self._sessions)

    def servers(self, names: Sequence[str] | None = None) -> list[ServerSummary]:
        """Every server by name (or those of ``names``), with its last outcome and the tools and tokens of its
        last successful scan."""
        return read.servers(self.engine, names)

    def server_names(self) -> list[str]:
        """Every server's name in Python's order (:meth:`servers` a chunk at a time reads in this order)."""
        return read.server_names(self.engine)

    def history(self, server: str) -> list[ScanRow]:
        """Every scan of ``server``, oldest first, with its tokens and finding counts."""
        return read.history(self.engine, server)

    def scan_scores(self, scan_ids: Iterable[int]) -> dict[int, ScanScore]:
        """Each scan's leaderboard score and finding counts (scans that listed tools; others left out)."""
        return read.scan_scores(self.engine, scan_ids)

    def histories(self, names: Iterable[str] | None = None) -> dict[str, list[ScanRow]]:
        """:meth:`history` of many servers (all when None) in four queries per 500; unknown names left out."""
        return read.histories(self.engine, names)

    def history_columns(self, names: Iterable[str] | None = None) -> dict[str, HistoryColumns]:
        """:meth:`history` of many servers as columns ordered by run, plus each one's newest scan: for charts."""
        return read.history_columns(self.engine, names)

    def events(
        self,
        server: str | None = None,
        *,
        kind: str | None = None,
        run: int | None = None,
        since: datetime | None = None,
    ) -> list[EventRow]:
        """Change events, oldest first: of one server or all, optionally one kind, one run, or at/after ``since``."""
        return read.events(self.engine, server, kind=kind, run=run, since=since)

    def events_of(self, names: Iterable[str]) -> dict[str, list[EventRow]]:
        """:meth:`events` of each of ``names`` by name, one query per 500 (servers without events left out)."""
        return read.events_of(self.engine, names)

    def findings(
        self,
        rule: str | None = None,
        server: str | None = None,
        since: datetime | None = None,
        run: int | None = None,
        *,
        severity: Severity | None = None,
        still_open: bool = False,
    ) -> list[FindingRow]:
        """Findings with when they first appeared and when they went away (see :func:`scanner.store.read.findings`)."""
        return read.findings(self._sessions, rule, server, since, run, severity=severity, still_open=still_open)

    def finding_chunks(
        self,
        rule: str | None = None,
        server: str | None = None,
        since: datetime | None = None,
        *,
        severity: Severity | None = None,
        still_open: bool = False,
    ) -> Iterator[list[FindingRow]]:
        """:meth:`findings` over the whole history, in order, a chunk of servers at a time (bounded memory)."""
        return read.finding_chunks(self._sessions, rule, server, since, severity=severity, still_open=still_open)

    def open_findings_of(self, names: Sequence[str], codes: Sequence[str]) -> list[FindingRow]:
        """The findings of ``codes`` still open on each of ``names`` (a chunk of servers), by server, then in the
        order of ``codes``: :meth:`findings` with ``still_open`` per code, in one read."""
        return read.open_findings_of(self._sessions, names, codes)

    def diff(self, server: str, from_run: int | None = None, to_run: int | None = None) -> Diff:
        """What changed on ``server`` between two successful scans (default: its last two)."""
        return read.diff(self._sessions, server, from_run, to_run)

    def leaderboard(self, run_id: int) -> list[LeaderRow]:
        """Every server scanned in ``run_id`` with outcome, tokens, findings and per-tool severity counts."""
        return read.leaderboard(self._sessions, run_id)

    def leaderboard_chunks(self, run_id: int, chunk: int = read.LEADER_CHUNK) -> Iterator[list[LeaderRow]]:
        """The rows of :meth:`leaderboard` in order, ``chunk`` servers at a time (one chunk's findings in memory)."""
        return read.leaderboard_chunks(self._sessions, run_id, chunk)

    def leaderboard_of(self, run_id: int, names: Sequence[str]) -> dict[str, LeaderRow]:
        """The :meth:`leaderboard` rows of the servers ``names`` in ``run_id``, by name."""
        return read.leaderboard_of(self._sessions, run_id, names)

    def trends(self, include_interrupted: bool = False) -> list[RunTrend]:
        """One point per finished run (and interrupted ones if asked), oldest first, from the aggregates."""
        return read.trends(self._sessions, include_interrupted)

    def rule_hits(self, run_id: int) -> dict[str, int]:
        """How many servers each rule hit in ``run_id`` (from its aggregate; counted live for a running run)."""
        return read.rule_hits(self._sessions, run_id)

    def stored_list(self, server: str) -> read.StoredList:
        """A server's newest stored tool list with its leaderboard row, tokens, tool costs and instructions
        (``fathom check --db DB --server NAME``)."""
        return read.stored_list(self._sessions, server)

    def toolset_tools(self, sha256: str) -> list[Any]:
        """A stored tool list exactly as the server sent it (raw JSON values)."""
        return read.toolset_tools(self._sessions, sha256)

    def toolsets_tools(self, shas: Iterable[str]) -> dict[str, list[Any]]:
        """:meth:`toolset_tools` of many hashes in one query per 500; unknown hashes are left out."""
        return read.toolsets_tools(self.engine, shas)

    def toolsets_packed(self, shas: Iterable[str]) -> dict[str, Any]:
        """:meth:`toolsets_tools` as stored (compressed), for a caller that unpacks one at a time
        (:meth:`unpack_tools`): a chunk of report pages holds its lists packed, not as JSON values."""
        return read.toolsets_packed(self.engine, shas)

    @staticmethod
    def unpack_tools(sha256: str, packed: Any) -> list[Any] | None:
        """One list of :meth:`toolsets_packed`, as :meth:`toolset_tools` returns it; None for a crafted row."""
        return read.unpack_tools(sha256, packed)

    def toolset_findings(self, sha256: str, rule_version: str) -> list[Finding]:
        """A toolset's own findings under ``rule_version``, worst first (no over-time findings: those are a scan's)."""
        return read.toolset_findings(self._sessions, sha256, rule_version)

    def toolset_tokens(self, sha256: str) -> dict[str, TokenCount]:
        """A toolset's tokens per turn for each provider, with the method that counted them."""
        return read.toolset_tokens(self._sessions, sha256)

    def toolset_costs(self, sha256: str, largest: int | None = None) -> list[ToolCost]:
        """Each tool's own cost per provider, in list order; ``largest=5`` gives the five dearest, dearest first."""
        return read.toolset_costs(self._sessions, sha256, largest)

    def toolsets_costs(self, shas: Sequence[str]) -> dict[str, list[ToolCost]]:
        """:meth:`toolset_costs` of many toolsets at once, by sha256 (a few queries, not one per toolset)."""
        return read.toolsets_costs(self._sessions, shas)

    def scans_instructions_tokens(self, scan_ids: Sequence[int], provider: str = "openai") -> dict[int, int]:
        """What each scan's instructions cost ``provider`` (scans without instructions left out)."""
        return read.scans_instructions_tokens(self._sessions, scan_ids, provider)

    def database_stats(self) -> dict[str, int]:
        """Row counts per table (for ``fathom db info`` and the growth benchmark)."""
        return read.database_stats(self._sessions)
