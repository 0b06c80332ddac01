"""Fathom's outcomes grouped the way registry censuses count endpoints (docs/outcomes.md).

``CENSUS_CLASSES`` is the one table: census class -> the outcomes it covers. ``census_class(outcome)`` looks one up;
``BROKEN`` and ``UNMEASURED`` say which outcomes count as a broken server and which as not measured at all (a 429
storm, a skip), so a rate is never blamed on a server that was only busy.

``fault(outcome, detail)`` says whose the failure is: the server's or package's own (``server``), this host's
(``host``: a runner or Python missing, a broken interpreter, the network or TLS on the way to the index, a
Docker daemon down), Fathom's own budgets (``policy``: the disk budget, the memory limit, a write its
confinement refused) or the package index mirror Fathom was pointed at (``mirror``). Only a ``server`` fault
counts as a broken server (:func:`is_broken` with the detail).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from scanner.models import SETUP_FAULT

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
            "memory_limit",
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


FAULTS = ("server", "host", "policy", "mirror")
"""Whose a failure is, in the order pages list them (docs/outcomes.md)."""

# The host's: the runner or a Python is missing or broken here, the Docker daemon is down, the network or TLS on
# the way to the index failed (npm's and uv's own words).
_HOST = re.compile(
    r"could not be started|is not on PATH|daemon does not answer|Cannot connect to the Docker daemon|"
    r"needs Python |no usable Python interpreter|uv python find|Failed to (inspect|query) Python interpreter|"
    r"\b(ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENOSPC|EACCES)\b|npm (error|ERR!) network|"
    r"request to \S+ failed|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT|CERT_\w+|invalid peer certificate|"
    r"unable to get local issuer certificate|Failed to (download|fetch)\b",
    re.IGNORECASE,
)
_POLICY = re.compile(r"disk budget|--disk-limit-mb|memory limit|--memory-limit-mb|refused: wrote outside", re.I)
_PROCESS_CAP = "stopped at Fathom's cap of "  # scanner.packages.diagnose: a fork refused at the cap on processes
_NO_NETWORK = "stopped for want of a network "  # scanner.packages.diagnose.NO_NETWORK: a stdio child has none
# The public indexes; an install-time failure naming another host is the mirror's (UV_INDEX_URL, npm_config_registry).
_PUBLIC_INDEXES = re.compile(
    r"^(registry\.npmjs\.org|registry\.yarnpkg\.com|pypi\.org|files\.pythonhosted\.org|"
    r"(registry-1\.|index\.)?docker\.io|ghcr\.io|quay\.io)$",
    re.IGNORECASE,
)
_URL_HOST = re.compile(r"https?://([A-Za-z0-9.-]+)")
_INSTALL_OUTCOMES = frozenset({"package_not_found", "install_failed"})
_SETUP_OUTCOMES = frozenset({"runner_missing", "spawn_error"})
SETUP = SETUP_FAULT


def fault(outcome: str, detail: str = "") -> str | None:
    """Whose the failure of ``outcome`` (with its one-line ``detail``) is: ``server``, ``host``, ``policy`` or
    ``mirror`` (see the module's docstring); None for an outcome that is not a failure, or not measured."""
    if outcome in NOT_BROKEN:
        return None
    if outcome in _SETUP_OUTCOMES and detail.startswith(SETUP):  # Fathom started it where it could not run
        return "host"
    if outcome == "memory_limit" or (outcome in ("too_large", "refused") and _POLICY.search(detail)):
        return "policy"
    if outcome == "crashed" and detail.startswith((_PROCESS_CAP, _NO_NETWORK)):
        return "policy"
    if outcome in _INSTALL_OUTCOMES:
        hosts = [host for host in _URL_HOST.findall(detail) if not _PUBLIC_INDEXES.match(host.rstrip("."))]
        if hosts:
            return "mirror"
    if outcome == "runner_missing" or (outcome in _INSTALL_OUTCOMES and _HOST.search(detail)):
        return "host"
    return "server"


def is_broken(outcome: str, detail: str | None = None) -> bool:
    """True for an outcome that counts as a broken server in a census rate; given its ``detail``, a failure that
    is this host's, Fathom's budgets' or a mirror's (:func:`fault`) is not the server's, so not broken."""
    if outcome in NOT_BROKEN:
        return False
    return detail is None or fault(outcome, detail) == "server"
