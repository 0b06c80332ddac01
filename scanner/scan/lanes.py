"""Lanes in scans: a registry entry whose credential is available is listed twice, without and with it.

A *lane* is one way of calling a server (docs/lanes.md): the ``anonymous`` lane sends no credential, the
``credentialed`` lane sends the headers filled from ``FATHOM_SECRET_...`` (``ServerEntry.credential_headers``).
The crawl connects in each lane (:func:`anonymous_entry` strips the credential), collects the anonymous answer's
auth signals (:func:`signals_of`), and folds both into one outcome (:func:`combine`): the *richest* lane (the
most tools; a tie goes to the credentialed lane, the one configured) is the scan's own result, so the leaderboard
ranks it and says which lane it is, and every lane rides along in ``ScanOutcome.lanes``. :func:`scan_findings`
runs the lane rules (MCP601, MCP602) over what a scan saw; the store keeps them with the scan.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from scanner.models import Finding, LaneOutcome, Outcome, ScanOutcome, ServerEntry

ANONYMOUS = "anonymous"
CREDENTIALED = "credentialed"


class LaneChoice(enum.StrEnum):
    """``fathom scan --lanes``: which lanes of an entry with an available credential to scan."""

    anonymous = "anonymous"
    credentialed = "credentialed"
    both = "both"


def has_credential(entry: ServerEntry) -> bool:
    """Whether the entry holds a credential from the environment, so it has two lanes to scan."""
    return bool(entry.url) and any(name in entry.headers for name in entry.credential_headers)


def anonymous_entry(entry: ServerEntry) -> ServerEntry:
    """The same entry without its credential headers (the anonymous lane)."""
    kept = {name: value for name, value in entry.headers.items() if name not in entry.credential_headers}
    return replace(entry, headers=kept, credential_headers=())


def tool_names(outcome: ScanOutcome) -> tuple[str, ...]:
    """The names a lane listed (``#index`` for a tool without a string name)."""
    names = []
    for index, tool in enumerate(outcome.tools or ()):
        name = tool.get("name") if isinstance(tool, dict) else None
        names.append(name[:300] if isinstance(name, str) and name else f"#{index}")
    return tuple(names)


def only_in(lane: ScanOutcome, other: ScanOutcome) -> tuple[str, ...]:
    """Tools ``lane`` lists that ``other`` does not (all of them when ``other`` listed nothing)."""
    if not lane.ok:
        return ()
    seen = set(tool_names(other)) if other.ok else set()
    return tuple(name for name in tool_names(lane) if name not in seen)


def needs_probe(anonymous: ScanOutcome, credentialed: ScanOutcome) -> bool:
    """Whether MCP601 could fire: both lanes answered and the credential shows tools the anonymous lane lacks.
    Only then is the anonymous answer probed for a challenge and metadata (one POST, a few GETs)."""
    return anonymous.ok and credentialed.ok and bool(only_in(credentialed, anonymous))


def signals_from_outcome(outcome: ScanOutcome) -> dict[str, Any]:
    """The auth signals a 401/403 outcome already carries (the client records the challenge and metadata)."""
    extra = outcome.extra
    if outcome.outcome is not Outcome.AUTH_REQUIRED:
        return {}
    return _signals(
        extra.get("status"), extra.get("challenge"), extra.get("resource_metadata_url"), extra.get("resource_metadata")
    )


def signals_from_probe(probe: Any) -> dict[str, Any]:
    """The signals of a :class:`scanner.scan.doctor.AuthSignals` probe, as stored with the anonymous lane."""
    return _signals(probe.status, probe.challenge, probe.resource_metadata_url, probe.resource_metadata)


def _signals(status: Any, challenge: Any, metadata_url: Any, metadata: Any) -> dict[str, Any]:
    document = metadata if isinstance(metadata, Mapping) else None
    servers = document.get("authorization_servers") if document else None
    scopes = document.get("scopes_supported") if document else None
    # "issuers", not "authorization_servers": the store drops keys that look like credentials ("authoriz...").
    return {
        "status": status if isinstance(status, int) else None,
        "challenge": dict(challenge) if isinstance(challenge, Mapping) else None,
        "resource_metadata_url": metadata_url if isinstance(metadata_url, str) and document else None,
        "resource_metadata": document is not None,
        "issuers": [s for s in servers if isinstance(s, str)][:5] if isinstance(servers, list) else [],
        "scopes_supported": [s for s in scopes if isinstance(s, str)][:20] if isinstance(scopes, list) else [],
    }


def combine(anonymous: ScanOutcome, credentialed: ScanOutcome, signals: Mapping[str, Any]) -> ScanOutcome:
    """One outcome for a scan in both lanes: the richest lane's own, carrying every lane (anonymous first)."""
    lanes = (
        LaneOutcome(ANONYMOUS, replace(anonymous, lane=ANONYMOUS), dict(signals)),
        LaneOutcome(CREDENTIALED, replace(credentialed, lane=CREDENTIALED)),
    )
    richest = lanes[1]
    if anonymous.ok and (not credentialed.ok or len(anonymous.tools or ()) > len(credentialed.tools or ())):
        richest = lanes[0]
    return replace(richest.outcome, lanes=lanes)


@dataclass(frozen=True)
class _LaneView:
    label: str
    outcome: ScanOutcome
    tools: tuple[str, ...]
    only_here: tuple[str, ...]


@dataclass(frozen=True)
class _SignalsView:
    status: int | None
    challenge: Mapping[str, Any] | None
    resource_metadata: Mapping[str, Any] | None


def scan_findings(outcome: ScanOutcome) -> list[Finding]:
    """MCP601/MCP602 over what one scan saw: both lanes, or a single anonymous lane's 401."""
    from scanner.rules.lanes import lane_findings

    if outcome.lanes:
        anonymous = outcome.lanes[0]
        signals = anonymous.signals or signals_from_outcome(anonymous.outcome)
        views: Sequence[_LaneView] = [
            _LaneView(
                "its credential" if lane.lane == CREDENTIALED else lane.lane,
                lane.outcome,
                tool_names(lane.outcome),
                () if lane is anonymous else only_in(lane.outcome, anonymous.outcome),
            )
            for lane in outcome.lanes
        ]
    elif outcome.lane != CREDENTIALED and outcome.outcome is Outcome.AUTH_REQUIRED:
        signals = signals_from_outcome(outcome)
        views = [_LaneView(ANONYMOUS, outcome, (), ())]
    else:
        return []
    view = _SignalsView(
        status=signals.get("status"),
        challenge=signals.get("challenge"),
        # the rules ask whether metadata was found; the stored signals keep only that fact and its URL
        resource_metadata={"found": True} if signals.get("resource_metadata") else None,
    )
    return lane_findings(views, view)


def lanes_text(lanes: Sequence[Any]) -> str:
    """Lanes side by side, ``anonymous: 3 of 14 tools; credentialed: 14 tools`` (each lane's ``lane``,
    ``outcome`` and ``tools_count``); a lane that did not list says how it ended. Empty for a one-lane scan."""
    counts = [lane.tools_count for lane in lanes if lane.outcome == "ok" and lane.tools_count is not None]
    most = max(counts, default=0)
    parts = []
    for lane in lanes:
        if lane.outcome != "ok" or lane.tools_count is None:
            parts.append(f"{lane.lane}: {lane.outcome}")
        elif lane.tools_count < most:
            parts.append(f"{lane.lane}: {lane.tools_count:,} of {most:,} tools")
        else:
            parts.append(f"{lane.lane}: {lane.tools_count:,} tool{'' if lane.tools_count == 1 else 's'}")
    return "; ".join(parts)
