"""Bring stored history onto the current rule catalogue, saying what changed (``fathom rescore``).

Two parts, both compared with what is stored before anything is written:

1. every stored toolset is measured again (its findings and token counts), and what it confirmed unchanged is
   stamped with this process's measurement basis (:mod:`scanner.measure.basis`), so the next scan reuses it; a
   toolset already measured under this catalogue and this basis (by this very code: the basis names the rule
   catalogue's digest, the tokenizers and the client table) is not measured again unless ``every`` (``--all``);
2. every scan's own findings are recomputed from what the store kept: MCP501/MCP502 (tools changed silently,
   tools removed) and MCP503 (instructions changed silently) by walking each server's successful scans in
   order, MCP401/MCP402 over the scan's stored instructions, MCP601/MCP602 from its stored lanes and their auth
   signals; the registry entry's findings (MCP701-MCP705) are kept as stored (the entry itself is not stored).

A finding is *added* or *removed* per rule by its key (code, tool, pointer) against the toolset's newest stored
catalogue (or the scan's stored findings); a finding whose key stays but whose message, hint or details moved is
*changed*. Nothing is written when nothing changed (a second rescore is a no-op), nor with ``dry_run``. Run
aggregates are recounted only when something was written.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, delete, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from scanner.errors import FathomError
from scanner.measure.basis import measure_basis
from scanner.models import Finding, LaneOutcome, Outcome, ScanOutcome, Toolset
from scanner.store import codec, common
from scanner.store.tables import (
    InstructionsRow,
    Measurement,
    Run,
    RunAggregate,
    Scan,
    ScanLaneRow,
    Server,
    ToolsetRow,
    ToolsetToken,
)
from scanner.store.write import Measure, write_measurement

Key = tuple[str, str | None, str | None]


@dataclass
class RescoreResult:
    """What a rescore found: toolsets measured (and skipped), scans rechecked, findings added/removed/changed
    per rule code, and whether anything was (or, with ``dry_run``, would be) written."""

    rule_version: str
    dry_run: bool = False
    measured: int = 0
    current: int = 0  # toolsets already measured under this catalogue and basis: not measured again
    skipped: int = 0
    toolsets_changed: int = 0
    scans_changed: int = 0
    runs_recounted: int = 0  # closed runs whose aggregates were counted under another catalogue
    added: Counter[str] = field(default_factory=Counter)
    removed: Counter[str] = field(default_factory=Counter)
    changed: Counter[str] = field(default_factory=Counter)

    @property
    def anything(self) -> bool:
        """Whether any finding or count of a toolset or scan differs (runs to recount alone do not count)."""
        return bool(self.toolsets_changed or self.scans_changed)

    def rows(self) -> list[dict[str, Any]]:
        """One row per rule with a difference: code, added, removed, changed."""
        codes = sorted(set(self.added) | set(self.removed) | set(self.changed))
        return [
            {"code": code, "added": self.added[code], "removed": self.removed[code], "changed": self.changed[code]}
            for code in codes
        ]

    def text(self) -> str:
        """What ``fathom rescore`` prints."""
        verb = "would change" if self.dry_run else "changed"
        lines = [
            f"rules {self.rule_version}: {self.measured:,} tool lists measured"
            + (f" ({self.skipped:,} skipped: the checker failed on them)" if self.skipped else "")
            + (
                f", {self.current:,} already measured under this catalogue and basis (--all measures them again)"
                if self.current
                else ""
            )
            + f"; {verb} {self.toolsets_changed:,} tool lists and {self.scans_changed:,} scans"
        ]
        if self.runs_recounted:
            lines.append(f"{self.runs_recounted:,} runs' aggregates counted under another catalogue: recounted")
        if not self.anything and not self.runs_recounted:
            lines.append("nothing changed" + ("" if self.dry_run else "; nothing written"))
        for row in self.rows():
            lines.append(f"  {row['code']}  +{row['added']:,}  -{row['removed']:,}  ~{row['changed']:,}")
        return "\n".join(lines)


def _key(finding: Finding) -> Key:
    return (finding.code, finding.tool, finding.pointer)


def _same(finding: Finding, other: Finding) -> bool:
    return (finding.message, finding.hint, dict(finding.details), finding.severity) == (
        other.message,
        other.hint,
        dict(other.details),
        other.severity,
    )


def compare(result: RescoreResult, before: Iterable[Finding], after: Iterable[Finding]) -> bool:
    """Count per rule what ``after`` adds, removes and changes against ``before``; True when anything differs."""
    old: dict[Key, list[Finding]] = defaultdict(list)
    for finding in before:
        old[_key(finding)].append(finding)
    differs = False
    for finding in after:
        matches = old.get(_key(finding))
        if not matches:
            result.added[finding.code] += 1
            differs = True
            continue
        previous = matches.pop(0)
        if not _same(previous, finding):
            result.changed[finding.code] += 1
            differs = True
    for left in old.values():
        for finding in left:
            result.removed[finding.code] += 1
            differs = True
    return differs


def _newest_version(session: Session, toolset_id: int, rule_version: str) -> str | None:
    """The catalogue version to compare a toolset against: this one if measured under it, else the newest."""
    versions = list(session.scalars(select(Measurement.rule_version).where(Measurement.toolset_id == toolset_id)))
    if rule_version in versions:
        return rule_version
    numeric = sorted((v for v in versions if v.isdigit()), key=int)
    return numeric[-1] if numeric else (max(versions) if versions else None)


def _rescore_toolsets(
    engine: Engine, sessions: sessionmaker[Session], result: RescoreResult, measure: Measure, every: bool
) -> None:
    with sessions() as session:
        ids = list(session.scalars(select(ToolsetRow.id).order_by(ToolsetRow.id)))
        # Measured by this very code (this catalogue, this basis): measuring it again gives what is stored.
        current = (
            set()
            if every
            else set(
                session.scalars(
                    select(Measurement.toolset_id).where(
                        Measurement.rule_version == result.rule_version, Measurement.basis == measure_basis()
                    )
                )
            )
        )
    result.current = sum(1 for toolset_id in ids if toolset_id in current)
    for toolset_id in ids:
        if toolset_id in current:
            continue
        with sessions() as session:
            row = session.get(ToolsetRow, toolset_id)
            if row is None:
                continue
            toolset = Toolset(tools=tuple(codec.decompress_tools(row.data)), sha256=row.sha256)
            version = _newest_version(session, toolset_id, result.rule_version)
            before = common.toolset_findings(session, toolset_id, version) if version is not None else []
            basis = session.scalar(
                select(Measurement.basis).where(
                    Measurement.toolset_id == toolset_id, Measurement.rule_version == result.rule_version
                )
            )
            # A count is the same only with the same method: a new render relabels even an unchanged number.
            tokens = {
                provider: (count, method)
                for provider, count, method in session.execute(
                    select(ToolsetToken.provider, ToolsetToken.tokens, ToolsetToken.method).where(
                        ToolsetToken.toolset_id == toolset_id
                    )
                )
            }
        try:
            report = measure(toolset)
        except FathomError:
            raise
        except Exception:  # one list the checker cannot handle keeps its old numbers; the rest go on
            result.skipped += 1
            continue
        result.measured += 1
        differs = compare(result, before, report.findings)
        same_tokens = tokens == {p: (count.tokens, count.method[:200]) for p, count in report.tokens.items()}
        if not differs and same_tokens and version == result.rule_version:
            if basis != measure_basis() and not result.dry_run:
                # Measured again and found the same: what is stored holds under this basis, so a scan reuses it.
                with engine.begin() as connection:
                    connection.execute(
                        update(common.MEASUREMENTS)
                        .where(
                            common.MEASUREMENTS.c.toolset_id == toolset_id,
                            common.MEASUREMENTS.c.rule_version == result.rule_version,
                        )
                        .values(basis=measure_basis())
                    )
            continue
        result.toolsets_changed += 1
        if not result.dry_run:
            with engine.begin() as connection:
                write_measurement(connection, toolset_id, report, result.rule_version)


def _lane_outcome(lane: ScanLaneRow, tools: Sequence[Any] | None) -> LaneOutcome:
    outcome = Outcome(lane.outcome) if lane.outcome in Outcome._value2member_map_ else Outcome.PROTOCOL_ERROR
    signals = dict(lane.signals or {})
    extra = {"status": signals.get("status")} if signals.get("status") is not None else {}
    return LaneOutcome(
        lane=lane.lane,
        outcome=ScanOutcome(outcome=outcome, transport="", tools=tuple(tools or ()), extra=extra, lane=lane.lane),
        signals=signals,
    )


def _scan_findings(
    session: Session,
    scan: Scan,
    previous: Scan | None,
    tools_of: dict[int, list[Any]],
    texts: dict[int, str],
    stored: list[Finding],
    server: str,
    named: dict[tuple[int, str], list[Finding]],
) -> list[Finding]:
    """A scan's own findings recomputed from the store: over time, on its instructions, over its lanes, and MCP809
    under the key a client gives the server (from its registry name and the ``serverInfo.name`` the scan stored,
    as at scan time; ``named`` holds them by toolset and key).

    A scan in lanes whose anonymous lane kept no auth signals (they came from the outcome itself, which the
    store does not keep whole) keeps its stored MCP6xx findings: they cannot be recomputed faithfully.
    """
    from scanner.measure import history
    from scanner.measure.instructions import instruction_findings
    from scanner.scan.lanes import scan_findings as lane_scan_findings

    def tools(toolset_id: int | None) -> list[Any]:
        if toolset_id is None:
            return []
        if toolset_id not in tools_of:
            row = session.get(ToolsetRow, toolset_id)
            if len(tools_of) > 64:  # a server's recent lists are enough: scans come in order
                tools_of.clear()
            tools_of[toolset_id] = codec.decompress_tools(row.data) if row is not None else []
        return tools_of[toolset_id]

    def text(instructions_id: int | None) -> str | None:
        if instructions_id is None:
            return None
        if instructions_id not in texts:
            row = session.get(InstructionsRow, instructions_id)
            texts[instructions_id] = row.text if row is not None else ""
        return texts[instructions_id] or None

    from scanner.rules.registrydata import REGISTRY_CODES

    # The registry entry's own findings (MCP7xx) come from the server.json read at scan time, which the store does
    # not keep whole: kept as stored, never dropped.
    found: list[Finding] = [finding for finding in stored if finding.code in REGISTRY_CODES]
    if scan.toolset_id is not None:
        from scanner.measure.toollist import registry_server_key, server_key_findings

        key = registry_server_key(server, scan.server_name)
        if (scan.toolset_id, key) not in named:
            if len(named) > 64:  # as tools_of: a server's recent lists
                named.clear()
            named[(scan.toolset_id, key)] = server_key_findings(tools(scan.toolset_id), key)
        found += named[(scan.toolset_id, key)]
    if scan.outcome == "ok" and previous is not None:
        if previous.toolset_id != scan.toolset_id and previous.toolset_id is not None and scan.toolset_id:
            _events, over_time = history.compare_tools(
                tools(previous.toolset_id), previous.server_version, tools(scan.toolset_id), scan.server_version
            )
            found += over_time
        before, after = text(previous.instructions_id), text(scan.instructions_id)
        if before is not None and after is not None and previous.instructions_id != scan.instructions_id:
            found += history.compare_instructions(before, previous.server_version, after, scan.server_version)[1]
    own = text(scan.instructions_id) if scan.outcome == "ok" else None
    if own is not None:
        found += instruction_findings(own)
    lanes = list(session.scalars(select(ScanLaneRow).where(ScanLaneRow.scan_id == scan.id).order_by(ScanLaneRow.id)))
    if lanes and not (lanes[0].signals or {}) and any(lane.lane == "anonymous" for lane in lanes):
        found += [finding for finding in stored if finding.code.startswith("MCP6")]
    elif lanes:
        lanes.sort(key=lambda lane: lane.lane != "anonymous")
        outcome = ScanOutcome(
            outcome=Outcome(scan.outcome) if scan.outcome in Outcome._value2member_map_ else Outcome.PROTOCOL_ERROR,
            transport=scan.transport,
            lane=scan.lane,
            lanes=tuple(_lane_outcome(lane, tools(lane.toolset_id)) for lane in lanes),
        )
        found += lane_scan_findings(outcome)
    elif scan.outcome == "auth_required" and scan.lane != "credentialed":
        extra = dict(scan.extra or {})
        found += lane_scan_findings(
            ScanOutcome(outcome=Outcome.AUTH_REQUIRED, transport=scan.transport, extra=extra, lane=scan.lane)
        )
    return found


def _rescore_scans(engine: Engine, sessions: sessionmaker[Session], result: RescoreResult) -> None:
    """Recompute every scan's own findings, each server's scans in order (see the module docstring)."""
    with sessions() as session:
        names = {id_: name for id_, name in session.execute(select(Server.id, Server.name))}
        servers = list(session.scalars(select(Scan.server_id).distinct().order_by(Scan.server_id)))
    for server_id in servers:
        tools_of: dict[int, list[Any]] = {}
        texts: dict[int, str] = {}
        named: dict[tuple[int, str], list[Finding]] = {}
        with sessions() as session:
            scans = list(session.scalars(select(Scan).where(Scan.server_id == server_id).order_by(Scan.id)))
            previous: Scan | None = None
            for scan in scans:
                stored = common.scan_findings(session, scan.id)
                fresh = _scan_findings(session, scan, previous, tools_of, texts, stored, names[server_id], named)
                if scan.outcome == "ok" and scan.toolset_id is not None:
                    previous = scan
                if not compare(result, stored, fresh):
                    continue
                result.scans_changed += 1
                if result.dry_run:
                    continue
                with engine.begin() as connection:
                    connection.execute(delete(common.FINDINGS).where(common.FINDINGS.c.scan_id == scan.id))
                    if fresh:
                        connection.execute(
                            common.FINDINGS.insert(),
                            [common.finding_values(f, scan.toolset_id, result.rule_version, scan.id) for f in fresh],
                        )


def rescore_history(
    engine: Engine,
    sessions: sessionmaker[Session],
    rule_version: str,
    measure: Measure,
    *,
    dry_run: bool = False,
    every: bool = False,
) -> RescoreResult:
    """Re-measure every toolset not measured under ``rule_version`` and this process's basis (every one with
    ``every``) and recompute every scan's own findings under ``rule_version``; recount the aggregates of every
    closed run when anything was written. See the module docstring."""
    from scanner.store.aggregate import aggregate

    result = RescoreResult(rule_version=rule_version, dry_run=dry_run)
    _rescore_toolsets(engine, sessions, result, measure, every)
    _rescore_scans(engine, sessions, result)
    with sessions() as session:
        stale = session.scalar(
            select(func.count())
            .select_from(Run)
            .outerjoin(RunAggregate, RunAggregate.run_id == Run.id)
            .where(Run.status != "running")
            .where(or_(RunAggregate.rule_version.is_(None), RunAggregate.rule_version != rule_version))
        )
    result.runs_recounted = int(stale or 0) if not result.anything else 0
    if (result.anything or result.runs_recounted) and not dry_run:
        with sessions.begin() as session:
            for run in session.scalars(select(Run).where(Run.status != "running")):
                aggregate(session, run, rule_version)
    return result
