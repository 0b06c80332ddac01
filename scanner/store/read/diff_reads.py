"""Reads: what changed between two scans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from scanner.errors import InputError, StoreError
from scanner.measure import history as changes
from scanner.models import Finding
from scanner.store import codec, common
from scanner.store.read.server_reads import lanes_of
from scanner.store.read.toolset_reads import _toolsets
from scanner.store.rows import (
    Diff,
)
from scanner.store.tables import (
    Event,
    Scan,
    ToolsetRow,
)


def _scan_of(
    session: Session, server_id: int, run_id: int | None, before: int | None, *, ok: bool = True
) -> Scan | None:
    """The newest scan of a server (a successful one when ``ok``), in ``run_id`` and before scan ``before`` if
    given."""
    query = select(Scan).where(Scan.server_id == server_id)
    if ok:
        query = query.where(Scan.outcome == "ok")
    if run_id is not None:
        query = query.where(Scan.run_id == run_id)
    if before is not None:
        query = query.where(Scan.id < before)
    return session.scalar(query.order_by(Scan.id.desc()).limit(1))


def _diff_ends(
    session: Session, server: str, server_id: int, from_run: int | None, to_run: int | None
) -> tuple[Scan | None, Scan]:
    """The two scans :func:`diff` compares (see :class:`Diff`)."""
    if to_run is not None:
        to_scan = _scan_of(session, server_id, to_run, None, ok=False)
        if to_scan is None:
            raise InputError(f"server {server!r} has no scan in run {to_run}.")
    else:
        found = _scan_of(session, server_id, None, None) or _scan_of(session, server_id, None, None, ok=False)
        if found is None:
            raise InputError(f"server {server!r} has no scan yet.")
        to_scan = found
    if from_run is not None:
        from_scan = _scan_of(session, server_id, from_run, None, ok=False)
        if from_scan is None:
            raise InputError(f"server {server!r} has no scan in run {from_run}.")
    else:
        from_scan = _scan_of(session, server_id, None, to_scan.id, ok=to_scan.outcome == "ok")
    return from_scan, to_scan


def diff(sessions: sessionmaker[Session], server: str, from_run: int | None = None, to_run: int | None = None) -> Diff:
    """What changed on ``server`` between two scans (see :class:`Diff`).

    ``to_run`` None: its latest successful scan (its latest scan if none succeeded); ``from_run`` None: the
    successful scan before that (the scan before it, when it failed). Raises :class:`InputError` when the server
    has no scan in a run asked for.
    """
    with sessions() as session:
        server_id = common.server_id(session, server)
        versions = common.scoring_versions(session)
        from_scan, to_scan = _diff_ends(session, server, server_id, from_run, to_run)
        compared = to_scan.toolset_id is not None and (from_scan is None or from_scan.toolset_id is not None)

        def side(scan: Scan | None) -> tuple[list[Any], str | None, dict[str, int], list[Finding]]:
            if not compared or scan is None or scan.toolset_id is None:
                return [], None, {}, []
            row = session.get(ToolsetRow, scan.toolset_id)
            if row is None:  # a foreign key guarantees it, unless a hand changed the row (issue 42): one line
                raise StoreError(f"scan {scan.id} names tool list {scan.toolset_id}, which is not in the database")
            found = common.toolset_findings(session, row.id, versions[scan.run_id])
            found += common.scan_findings(session, scan.id)
            _, tokens = _toolsets(session, [row.id])
            return codec.decompress_tools(row.data), row.sha256, dict(tokens.get(row.id, {})), found

        tools_from, sha_from, tokens_from, found_from = side(from_scan)
        tools_to, sha_to, tokens_to, found_to = side(to_scan)
        tool_changes = changes.diff_tools(tools_from, tools_to)
        renamed = changes.renamed_tools(tools_from, tools_to, tool_changes)
        sides = [scan.id for scan in (from_scan, to_scan) if scan is not None]
        lanes = lanes_of(session, select(Scan.id).where(Scan.id.in_(sides)))
        new, fixed, gone = _compared_findings(found_from, found_to, renamed, tool_changes.removed)
        low, high = sorted((from_scan.id if from_scan else 0, to_scan.id))
        outcome_events = session.execute(
            select(Event.run_id, Event.details)
            .where(
                Event.server_id == server_id,
                Event.kind == changes.OUTCOME_CHANGED,
                Event.scan_id > low,
                Event.scan_id <= high,
            )
            .order_by(Event.id)
        ).all()
        return Diff(
            server=server,
            from_run=from_scan.run_id if from_scan else None,
            to_run=to_scan.run_id,
            from_version=from_scan.server_version if from_scan else None,
            to_version=to_scan.server_version,
            from_sha256=sha_from,
            to_sha256=sha_to,
            tools_added=tuple(label for label in tool_changes.added if label not in renamed.values()),
            tools_removed=tuple(label for label in tool_changes.removed if label not in renamed),
            tools_renamed=tuple(renamed.items()),
            renamed_fields=changes.renamed_fields(tools_from, tools_to, renamed),
            tools_changed=tool_changes.changed,
            tokens_from=tokens_from,
            tokens_to=tokens_to,
            findings_new=new,
            findings_fixed=fixed,
            findings_gone_with_tool=gone,
            from_outcome=from_scan.outcome if from_scan else None,
            to_outcome=to_scan.outcome,
            from_registry_version=from_scan.registry_version if from_scan else None,
            to_registry_version=to_scan.registry_version,
            outcome_changes=tuple(
                (run_id, _text_or_none(details.get("from")), _text_or_none(details.get("to")))
                for run_id, details in outcome_events
                if isinstance(details, Mapping)
            ),
            tools_compared=compared,
            lanes_from=lanes.get(from_scan.id, (None, ()))[1] if from_scan else (),
            lanes_to=lanes.get(to_scan.id, (None, ()))[1],
        )


def _compared_findings(
    found_from: list[Finding], found_to: list[Finding], renamed: Mapping[str, str], removed: tuple[str, ...]
) -> tuple[tuple[Finding, ...], tuple[Finding, ...], tuple[Finding, ...]]:
    """The findings new, fixed and gone with their tool between two scans' findings, each sorted.

    As in the readable change log (:func:`scanner.measure.history.readable_log`): a finding that followed a renamed
    tool to
    its new name is neither new nor fixed, the MCP502 of a renamed tool is not new (the rename says it), and a
    finding whose tool was removed went with it."""
    keys_from = {changes.finding_key(f) for f in found_from}
    keys_to = {changes.finding_key(f) for f in found_to}
    appeared = [f for f in found_to if changes.finding_key(f) not in keys_from]
    resolved = [f for f in found_from if changes.finding_key(f) not in keys_to]
    followed = changes.followed_findings(
        renamed, (changes.finding_key(f) for f in appeared), (changes.finding_key(f) for f in resolved)
    )
    gone_tools = {label for label in removed if label not in renamed}
    new = [
        f for f in appeared if changes.finding_key(f) not in followed and not (f.code == "MCP502" and f.tool in renamed)
    ]
    fixed: list[Finding] = []
    gone: list[Finding] = []
    for f in resolved:
        if f.tool is not None and f.tool in renamed and (f.code, renamed[f.tool]) in followed:
            continue
        (gone if f.tool in gone_tools else fixed).append(f)
    return (
        tuple(sorted(new, key=Finding.sort_key)),
        tuple(sorted(fixed, key=Finding.sort_key)),
        tuple(sorted(gone, key=Finding.sort_key)),
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
