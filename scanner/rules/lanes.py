"""Rules over lanes (MCP601-MCP602): what each credential sees of one server.

They compare connections with and without a credential, so they are registered for the catalogue with the
``lanes`` scope and checked by :func:`lane_findings`, which ``fathom doctor`` (and a scan that runs both lanes)
calls with the lanes it connected and the auth signals the anonymous answer gave.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from scanner.models import Finding, Outcome, ScanOutcome, Severity
from scanner.rules.registry import make_finding, register_history

register_history(
    "MCP601",
    "silent-lane",
    Severity.WARNING,
    hint="Tell callers without a credential that they see less: a `WWW-Authenticate` challenge or "
    "protected-resource metadata, or say so in the server's instructions.",
    doc="""Warns when, with a credential, the server lists tools that it does not list without one, and the
    anonymous answer gave no sign that a credential would show more: a success status, no `WWW-Authenticate`
    header, and no protected-resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource` for the
    endpoint. A client that forgot its token then looks exactly like a working connection missing most of the
    product, and neither the agent nor the person who set it up can tell. Bad: 3 tools with HTTP 200 and nothing
    else, 14 with a member's token. Good: the same 3 tools, plus protected-resource metadata naming the
    authorization server and the scopes that show the rest.""",
    scope="lanes",
)

register_history(
    "MCP602",
    "auth-undiscoverable",
    Severity.NOTE,
    hint="Serve protected-resource metadata and point to it from the 401 challenge.",
    doc="""Notes a server that answers 401 without a `resource_metadata` parameter in `WWW-Authenticate` and
    without protected-resource metadata at the well-known URL, so a client cannot discover how to authenticate
    (required by the MCP authorization spec since 2025-06-18). Bad: `401` with `WWW-Authenticate: Bearer`.
    Good: `WWW-Authenticate: Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource/mcp"`
    and that document listing `authorization_servers`.""",
    scope="lanes",
)


class LaneView(Protocol):
    """What the lane rules read of one lane (``scanner.scan.doctor.Lane`` is one)."""

    @property
    def label(self) -> str: ...
    @property
    def outcome(self) -> ScanOutcome: ...
    @property
    def tools(self) -> tuple[str, ...]: ...
    @property
    def only_here(self) -> tuple[str, ...]: ...


class SignalsView(Protocol):
    """What the lane rules read of the anonymous answer's auth signals (``scanner.scan.doctor.AuthSignals``)."""

    @property
    def status(self) -> int | None: ...
    @property
    def challenge(self) -> Mapping[str, Any] | None: ...
    @property
    def resource_metadata(self) -> Mapping[str, Any] | None: ...


def lane_findings(lanes: Sequence[LaneView], signals: SignalsView) -> list[Finding]:
    """MCP601 and MCP602 for one server. ``lanes[0]`` is the anonymous lane; the others carry a credential."""
    if not lanes:
        return []
    anonymous, credentialed = lanes[0], lanes[1:]
    findings: list[Finding] = []
    silent = (
        anonymous.outcome.ok
        and signals.challenge is None
        and signals.resource_metadata is None
        and (signals.status is None or 200 <= signals.status < 300)
    )
    for lane in credentialed:
        if silent and lane.outcome.ok and lane.only_here:
            shown = ", ".join(lane.only_here[:10]) + (", …" if len(lane.only_here) > 10 else "")
            findings.append(
                make_finding(
                    "MCP601",
                    tool=None,
                    message=(
                        f"With {lane.label} the server lists {len(lane.tools)} tools; without a credential it lists "
                        f"{len(anonymous.tools)} and gives no sign that a credential shows more ({shown})."
                    ),
                    details={
                        "credential": lane.label,
                        "anonymous_tools": len(anonymous.tools),
                        "credential_tools": len(lane.tools),
                        "only_with_credential": list(lane.only_here),
                    },
                )
            )
    params = (signals.challenge or {}).get("params") or {}
    answered_401 = anonymous.outcome.outcome is Outcome.AUTH_REQUIRED and (
        signals.status == 401 or anonymous.outcome.extra.get("status") == 401
    )
    if answered_401 and not params.get("resource_metadata") and signals.resource_metadata is None:
        scheme = (signals.challenge or {}).get("scheme") or "none"
        findings.append(
            make_finding(
                "MCP602",
                tool=None,
                message=(
                    "The server answers 401 without a resource_metadata parameter in WWW-Authenticate "
                    f"(challenge scheme: {scheme}) and without protected-resource metadata at the well-known URL."
                ),
                details={"status": 401, "challenge": dict(signals.challenge) if signals.challenge else None},
            )
        )
    return findings
