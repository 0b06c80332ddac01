"""A run's aggregates (one row per run for the trend charts).

:func:`aggregate` is computed when a run finishes (``lifecycle.finish_run``) and again for every closed run by a
rescore (:func:`scanner.store.rescore.rescore_history`), which re-measures every stored toolset first.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from sqlalchemy import select
from sqlalchemy.orm import Session

from scanner.models import Severity
from scanner.rules.registry import is_preview
from scanner.store import common
from scanner.store.tables import Run, RunAggregate, Scan, StoredFinding, ToolsetRow, ToolsetToken


def _nearest_rank(values: list[int], fraction: float) -> int | None:
    """The nearest-rank percentile (an actual value of the list, never an interpolation)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def aggregate(session: Session, run: Run, rule_version: str) -> None:
    """(Re)compute a run's aggregate row and its counts, counting findings under ``rule_version``."""
    scans = session.execute(select(Scan.id, Scan.outcome, Scan.toolset_id).where(Scan.run_id == run.id)).all()
    ok_scans = [(scan_id, toolset_id) for scan_id, outcome, toolset_id in scans if outcome == "ok"]
    in_run = select(Scan.toolset_id).where(Scan.run_id == run.id, Scan.toolset_id.is_not(None))

    tokens: dict[int, dict[str, int]] = defaultdict(dict)
    for toolset_id, provider, count in session.execute(
        select(ToolsetToken.toolset_id, ToolsetToken.provider, ToolsetToken.tokens).where(
            ToolsetToken.toolset_id.in_(in_run)
        )
    ):
        tokens[toolset_id][provider] = count
    sizes = select(ToolsetRow.id, ToolsetRow.tools_count).where(ToolsetRow.id.in_(in_run))
    tools = dict(session.execute(sizes).all())
    codes_by_toolset: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for owner_toolset, code, severity in session.execute(
        select(StoredFinding.toolset_id, StoredFinding.code, StoredFinding.severity)
        .where(
            StoredFinding.toolset_id.in_(in_run),
            StoredFinding.rule_version == rule_version,
            StoredFinding.scan_id.is_(None),
        )
        .distinct()
    ):
        if owner_toolset is not None:  # a toolset's own findings always have one (only scan findings may not)
            codes_by_toolset[owner_toolset].add((code, severity))
    codes_by_scan: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for owner, code, severity in session.execute(
        select(StoredFinding.scan_id, StoredFinding.code, StoredFinding.severity)
        .join(Scan, Scan.id == StoredFinding.scan_id)
        .where(Scan.run_id == run.id)
        .distinct()
    ):
        if owner is not None:
            codes_by_scan[owner].add((code, severity))

    outcomes: dict[str, int] = defaultdict(int)
    for _, outcome, _ in scans:
        outcomes[outcome] += 1
    hits: dict[str, int] = defaultdict(int)
    with_problems = 0
    max_tokens: list[int] = []
    per_provider: dict[str, list[int]] = defaultdict(list)
    tool_counts: list[int] = []
    for scan_id, served in ok_scans:
        found = codes_by_scan.get(scan_id, set()) | codes_by_toolset.get(served or -1, set())
        for code in {code for code, _ in found}:
            hits[code] += 1
        # A server with a problem the leaderboard counts: preview rules' findings never count (rules.md, status).
        if any(severity == int(Severity.PROBLEM) and not is_preview(code) for code, severity in found):
            with_problems += 1
        costs = tokens.get(served or -1, {})
        if costs:
            max_tokens.append(max(costs.values()))
            for provider, count in costs.items():
                per_provider[provider].append(count)
        if served is not None and served in tools:
            tool_counts.append(tools[served])

    values = {
        "rule_version": rule_version,
        "computed_at": common.now(),
        "servers_scanned": len(scans),
        "servers_ok": len(ok_scans),
        "servers_with_problems": with_problems,
        "outcomes": dict(sorted(outcomes.items())),
        "median_tokens": int(statistics.median_low(max_tokens)) if max_tokens else None,
        "p90_tokens": _nearest_rank(max_tokens, 0.9),
        "median_tokens_by_provider": {
            provider: int(statistics.median_low(counts)) for provider, counts in sorted(per_provider.items())
        },
        "median_tools": int(statistics.median_low(tool_counts)) if tool_counts else None,
        "findings_by_rule": dict(sorted(hits.items())),
    }
    aggregate = session.get(RunAggregate, run.id)
    if aggregate is None:
        session.add(RunAggregate(run_id=run.id, **values))
    else:
        for key, value in values.items():
            setattr(aggregate, key, value)
    run.servers_scanned = len(scans)
    run.servers_ok = len(ok_scans)
    session.flush()
