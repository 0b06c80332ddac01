"""Reads: runs."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from scanner.store.read.leaderboard_reads import leaderboard
from scanner.store.rows import (
    RunRow,
    RunTrend,
)
from scanner.store.tables import (
    Event,
    Measurement,
    Run,
    RunAggregate,
    RunWorker,
    Scan,
    Server,
    StoredFinding,
    ToolsetRow,
    ToolsetToken,
    ToolToken,
)


def runs(sessions: sessionmaker[Session]) -> list[RunRow]:
    """Every run, oldest first; a running run's counts are live."""
    with sessions() as session:
        live = dict(
            session.execute(
                select(Scan.run_id, func.count())
                .join(Run, Run.id == Scan.run_id)
                .where(Run.status == "running")
                .group_by(Scan.run_id)
            ).all()
        )
        live_ok = dict(
            session.execute(
                select(Scan.run_id, func.count())
                .join(Run, Run.id == Scan.run_id)
                .where(Run.status == "running", Scan.outcome == "ok")
                .group_by(Scan.run_id)
            ).all()
        )
        workers: dict[int, list[str]] = {}
        for run_id, worker in session.execute(
            select(RunWorker.run_id, RunWorker.worker).order_by(RunWorker.run_id, RunWorker.first_at, RunWorker.worker)
        ):
            workers.setdefault(run_id, []).append(worker)
        return [
            RunRow(
                id=run.id,
                started_at=run.started_at,
                finished_at=run.finished_at,
                status=run.status,
                source=run.source,
                rule_version=run.rule_version,
                options=dict(run.options or {}),
                servers_scanned=live.get(run.id, 0) if run.status == "running" else run.servers_scanned,
                servers_ok=live_ok.get(run.id, 0) if run.status == "running" else run.servers_ok,
                planned=run.planned,
                workers=tuple(workers.get(run.id, ())),
            )
            for run in session.scalars(select(Run).order_by(Run.id))
        ]


def trends(sessions: sessionmaker[Session], include_interrupted: bool = False) -> list[RunTrend]:
    """One point per finished run (and interrupted ones if asked), oldest first, from the aggregates."""
    with sessions() as session:
        query = select(Run, RunAggregate).join(RunAggregate, RunAggregate.run_id == Run.id).order_by(Run.id)
        statuses = ("finished", "interrupted") if include_interrupted else ("finished",)
        query = query.where(Run.status.in_(statuses))
        return [
            RunTrend(
                run_id=run.id,
                started_at=run.started_at,
                finished_at=run.finished_at,
                status=run.status,
                rule_version=aggregate.rule_version,
                servers_scanned=aggregate.servers_scanned,
                servers_ok=aggregate.servers_ok,
                servers_with_problems=aggregate.servers_with_problems,
                outcomes=dict(aggregate.outcomes or {}),
                median_tokens=aggregate.median_tokens,
                p90_tokens=aggregate.p90_tokens,
                median_tokens_by_provider=dict(aggregate.median_tokens_by_provider or {}),
                median_tools=aggregate.median_tools,
                findings_by_rule=dict(aggregate.findings_by_rule or {}),
            )
            for run, aggregate in session.execute(query)
        ]


def rule_hits(sessions: sessionmaker[Session], run_id: int) -> dict[str, int]:
    """How many servers each rule hit in ``run_id`` (from its aggregate; counted live for a running run)."""
    with sessions() as session:
        aggregate = session.get(RunAggregate, run_id)
        if aggregate is not None:
            return dict(aggregate.findings_by_rule or {})
    hits: dict[str, int] = defaultdict(int)
    for row in leaderboard(sessions, run_id):
        for code in {finding.code for finding in row.findings}:
            hits[code] += 1
    return dict(sorted(hits.items()))


def database_stats(sessions: sessionmaker[Session]) -> dict[str, int]:
    """Row counts per table (for ``fathom db info`` and the growth benchmark)."""
    tables = (Server, Run, ToolsetRow, Measurement, ToolsetToken, ToolToken, StoredFinding, Scan, Event)
    with sessions() as session:
        stats = {
            table.__tablename__: int(session.scalar(select(func.count()).select_from(table)) or 0) for table in tables
        }
        stats["run_aggregates"] = int(session.scalar(select(func.count()).select_from(RunAggregate)) or 0)
        return stats
