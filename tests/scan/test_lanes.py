"""The pure parts of lanes in scans: which lane a scan is ranked by, how lanes read side by side, and when the
lane rules fire for what a scan saw (the scans themselves are in tests/scan/test_lanes_scan.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.scan.lanes import (
    ANONYMOUS,
    CREDENTIALED,
    anonymous_entry,
    combine,
    has_credential,
    lanes_text,
    scan_findings,
)
from scanner.store.rows import LaneRow


def _ok(*names: str) -> ScanOutcome:
    return ScanOutcome(Outcome.OK, "streamable-http", tools=tuple({"name": name} for name in names))


def _denied(**extra: Any) -> ScanOutcome:
    return ScanOutcome(Outcome.AUTH_REQUIRED, "streamable-http", "HTTP 401", extra={"status": 401, **extra})


def test_a_credential_header_makes_two_lanes_and_the_anonymous_lane_drops_only_it() -> None:
    entry = ServerEntry(
        "io.example/a",
        Transport.STREAMABLE_HTTP,
        url="http://127.0.0.1:1/mcp",
        headers={"Authorization": "Bearer x", "X-Region": "eu"},
        credential_headers=("Authorization",),
    )
    assert has_credential(entry)
    bare = anonymous_entry(entry)
    assert dict(bare.headers) == {"X-Region": "eu"} and not has_credential(bare)
    assert not has_credential(ServerEntry("b", Transport.STDIO, command=("x",), credential_headers=("A",)))


def test_the_richest_lane_is_ranked_and_a_tie_goes_to_the_credential() -> None:
    richer = combine(_ok("a"), _ok("a", "b"), {})
    assert richer.lane == CREDENTIALED and len(richer.tools or ()) == 2
    assert [lane.lane for lane in richer.lanes] == [ANONYMOUS, CREDENTIALED]
    assert combine(_ok("a"), _ok("b"), {}).lane == CREDENTIALED
    # a server that shows less with a credential (a scope that hides tools) is ranked by its anonymous list
    assert combine(_ok("a", "b", "c"), _ok("a"), {}).lane == ANONYMOUS
    failed = combine(_ok("a"), _denied(), {})
    assert failed.lane == ANONYMOUS and failed.ok
    both_failed = combine(_denied(), _denied(), {})
    assert both_failed.lane == CREDENTIALED and not both_failed.ok


def test_lanes_read_side_by_side() -> None:
    def row(lane: str, outcome: str, count: int | None) -> LaneRow:
        return LaneRow(lane=lane, outcome=outcome, detail="", tools_count=count, toolset_sha256=None, signals={})

    assert lanes_text([row("anonymous", "ok", 3), row("credentialed", "ok", 14)]) == (
        "anonymous: 3 of 14 tools; credentialed: 14 tools"
    )
    assert lanes_text([row("anonymous", "auth_required", None), row("credentialed", "ok", 1)]) == (
        "anonymous: auth_required; credentialed: 1 tool"
    )
    assert lanes_text([]) == ""


def test_mcp601_needs_a_silent_anonymous_answer() -> None:
    silent = combine(_ok("a"), _ok("a", "b"), {"status": 200, "challenge": None, "resource_metadata": False})
    (finding,) = scan_findings(silent)
    assert finding.code == "MCP601" and finding.details["only_with_credential"] == ["b"]
    told = combine(_ok("a"), _ok("a", "b"), {"status": 200, "challenge": None, "resource_metadata": True})
    assert scan_findings(told) == []
    same = combine(_ok("a", "b"), _ok("a", "b"), {})
    assert scan_findings(same) == []


def test_mcp602_on_a_bare_401_in_the_anonymous_lane_only() -> None:
    (finding,) = scan_findings(_denied())
    assert finding.code == "MCP602"
    challenged = _denied(challenge={"scheme": "Bearer", "params": {"resource_metadata": "https://x/.well-known"}})
    assert scan_findings(challenged) == []
    assert scan_findings(_denied(resource_metadata={"resource": "x"})) == []
    assert scan_findings(replace(_denied(), lane=CREDENTIALED)) == []  # a token refused is not the anonymous answer
    assert [f.code for f in scan_findings(combine(_denied(), _ok("a"), {}))] == ["MCP602"]
