"""Fathom's outcomes grouped the way registry censuses count endpoints (docs/outcomes.md).

``CENSUS_CLASSES`` is the one table: census class -> the outcomes it covers. ``census_class(outcome)`` looks one up;
``BROKEN`` and ``UNMEASURED`` say which outcomes count as a broken server and which as not measured at all (a 429
storm, a skip), so a rate is never blamed on a server that was only busy.
"""

from __future__ import annotations

from collections.abc import Mapping

CENSUS_CLASSES: Mapping[str, frozenset[str]] = {
    "open": frozenset({"ok"}),
    "gated": frozenset({"auth_required"}),
    "payment": frozenset({"payment_required"}),
    "not_mcp": frozenset({"not_mcp"}),
    "unreachable": frozenset({"connect_error", "http_error"}),
    "timeout": frozenset({"timeout"}),
    "jsonrpc_error": frozenset({"protocol_error", "invalid_response"}),
    "unmeasured": frozenset({"rate_limited", "skipped", "refused", "delisted", "deprecated"}),
    "package": frozenset(
        {
            "spawn_error",
            "exited",
            "crashed",
            "runner_missing",
            "package_not_found",
            "install_failed",
            "needs_configuration",
            "too_large",
        }
    ),
}
_CLASS_OF = {outcome: name for name, outcomes in CENSUS_CLASSES.items() for outcome in outcomes}

UNMEASURED = CENSUS_CLASSES["unmeasured"]
NOT_BROKEN = frozenset({"ok", "auth_required", "payment_required"}) | UNMEASURED
"""Outcomes that are not a broken server: it answered as designed (open, gated, paid) or was not measured."""


def census_class(outcome: str) -> str:
    """The census class of an outcome (``other`` for one this table does not know)."""
    return _CLASS_OF.get(outcome, "other")


def is_broken(outcome: str) -> bool:
    """True for an outcome that counts as a broken server in a census rate."""
    return outcome not in NOT_BROKEN
