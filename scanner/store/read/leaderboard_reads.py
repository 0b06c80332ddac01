"""Reads: the leaderboard of a run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from scanner.models import Finding
from scanner.store import common
from scanner.store.read.server_reads import _INSTRUCTION_TOKENS, _with_lanes, lanes_of
from scanner.store.rows import (
    LeaderRow,
)
from scanner.store.tables import (
    Scan,
    Server,
    StoredFinding,
    ToolsetRow,
    ToolsetToken,
)


def leaderboard(sessions: sessionmaker[Session], run_id: int) -> list[LeaderRow]:
    """Every server scanned in ``run_id`` with outcome, tokens, findings and per-tool severity counts.

    Sorted by name; the report ranks. Findings are counted under the run's scoring rule version (the rescored
    one after a rescore).
    """
    with sessions() as session:
        return _leaderboard(session, run_id, None)


LEADER_CHUNK = 500  # servers whose leaderboard rows (with every finding) are read and held at once


def leaderboard_chunks(
    sessions: sessionmaker[Session], run_id: int, chunk: int = LEADER_CHUNK
) -> Iterator[list[LeaderRow]]:
    """The rows of :func:`leaderboard`, in the same order, ``chunk`` servers at a time: a caller that keeps only
    what it needs of each row holds one chunk's findings, not the whole run's (25 000 servers of real lists are
    hundreds of thousands of findings)."""
    with sessions() as session:
        common.get_run(session, run_id)
        ids = list(
            session.scalars(
                select(Scan.server_id)
                .join(Server, Server.id == Scan.server_id)
                .where(Scan.run_id == run_id)
                .order_by(Server.name)
            )
        )
    for part in common.chunks(ids, chunk):
        with sessions() as session:
            yield _leaderboard(session, run_id, None, part)


def leaderboard_of(sessions: sessionmaker[Session], run_id: int, names: Sequence[str]) -> dict[str, LeaderRow]:
    """The :func:`leaderboard` rows of the servers named ``names`` in ``run_id``, by name (a report's chunk of
    pages); a name not scanned in the run is left out."""
    if not names:
        return {}
    with sessions() as session:
        ids = [
            server_id
            for part in common.chunks(sorted(set(names)))
            for server_id in session.scalars(select(Server.id).where(Server.name.in_(part)))
        ]
        return {row.server: row for part in common.chunks(ids) for row in _leaderboard(session, run_id, None, part)}


def _leaderboard(
    session: Session, run_id: int, server_id: int | None, server_ids: Sequence[int] | None = None
) -> list[LeaderRow]:
    """The rows of ``run_id``: every server's, ``server_id``'s only, or those of ``server_ids`` (at most
    :data:`scanner.store.common.IN_CHUNK` of them)."""
    common.get_run(session, run_id)
    version = common.scoring_versions(session)[run_id]
    scans_query = (
        select(Scan, Server.name, ToolsetRow.sha256, ToolsetRow.tools_count)
        .join(Server, Server.id == Scan.server_id)
        .outerjoin(ToolsetRow, ToolsetRow.id == Scan.toolset_id)
        .where(Scan.run_id == run_id)
        .order_by(Server.name)
    )
    in_run = select(Scan.toolset_id).where(Scan.run_id == run_id, Scan.toolset_id.is_not(None))
    if server_id is not None:
        scans_query = scans_query.where(Scan.server_id == server_id)
        in_run = in_run.where(Scan.server_id == server_id)
    if server_ids is not None:
        scans_query = scans_query.where(Scan.server_id.in_(server_ids))
        in_run = in_run.where(Scan.server_id.in_(server_ids))
    scans = session.execute(scans_query).all()
    tokens: dict[int, dict[str, int]] = defaultdict(dict)
    methods: dict[int, dict[str, str]] = defaultdict(dict)
    for token_row in session.scalars(select(ToolsetToken).where(ToolsetToken.toolset_id.in_(in_run))):
        tokens[token_row.toolset_id][token_row.provider] = token_row.tokens
        methods[token_row.toolset_id][token_row.provider] = token_row.method
    by_toolset: dict[int, list[Finding]] = defaultdict(list)
    for row in session.scalars(
        select(StoredFinding)
        .where(
            StoredFinding.toolset_id.in_(in_run),
            StoredFinding.rule_version == version,
            StoredFinding.scan_id.is_(None),
        )
        .order_by(StoredFinding.id)
    ):
        if row.toolset_id is not None:  # a toolset's own findings always have one (only scan findings may not)
            by_toolset[row.toolset_id].append(common.finding_from_row(row))
    by_scan: dict[int, list[Finding]] = defaultdict(list)
    own = select(StoredFinding).join(Scan, Scan.id == StoredFinding.scan_id).where(Scan.run_id == run_id)
    if server_id is not None:
        own = own.where(Scan.server_id == server_id)
    if server_ids is not None:
        own = own.where(Scan.server_id.in_(server_ids))
    for row in session.scalars(own.order_by(StoredFinding.id)):
        if row.scan_id is not None:
            by_scan[row.scan_id].append(common.finding_from_row(row))
    in_scans = select(Scan.id).where(Scan.run_id == run_id)
    if server_id is not None:
        in_scans = in_scans.where(Scan.server_id == server_id)
    if server_ids is not None:
        in_scans = in_scans.where(Scan.server_id.in_(server_ids))
    lanes = lanes_of(session, in_scans)
    told = sorted({scan.instructions_id for scan, *_ in scans if scan.instructions_id is not None})
    instructions: dict[int, dict[str, int]] = defaultdict(dict)
    for chunk in common.chunks(told):
        rows = session.execute(
            select(
                _INSTRUCTION_TOKENS.c.instructions_id, _INSTRUCTION_TOKENS.c.provider, _INSTRUCTION_TOKENS.c.tokens
            ).where(_INSTRUCTION_TOKENS.c.instructions_id.in_(chunk))
        )
        for owner, provider, count in rows:
            instructions[owner][provider] = count

    result = []
    for scan, name, sha, tools_count in scans:
        found = sorted(by_toolset.get(scan.toolset_id or -1, []) + by_scan.get(scan.id, []), key=Finding.sort_key)
        per_tool = [[0, 0, 0] for _ in range(tools_count or 0)]
        list_wide = [0, 0, 0]
        for finding in found:
            index = finding.tool_index
            target = per_tool[index] if index is not None and 0 <= index < len(per_tool) else list_wide
            common.add_severity(target, int(finding.severity))
        problems, warnings, notes = common.severity_counts(found)
        result.append(
            _with_lanes(
                LeaderRow(
                    server=name,
                    scan_id=scan.id,
                    outcome=scan.outcome,
                    detail=scan.detail,
                    transport=scan.transport,
                    era=scan.era,
                    protocol_version=scan.protocol_version,
                    server_version=scan.server_version,
                    anonymous=scan.anonymous,
                    tools_count=tools_count,
                    tokens=dict(tokens.get(scan.toolset_id or -1, {})),
                    token_methods=dict(methods.get(scan.toolset_id or -1, {})),
                    problems=problems,
                    warnings=warnings,
                    notes=notes,
                    toolset_sha256=sha,
                    findings=tuple(found),
                    tool_severities=tuple((p, w, n) for p, w, n in per_tool),
                    list_severities=(list_wide[0], list_wide[1], list_wide[2]),
                    instructions_tokens=instructions.get(scan.instructions_id or -1, {}),
                ),
                lanes,
            )
        )
    return result
