"""The ``scans`` and ``toolsets`` rows a result becomes: every value a server sent cut to its column, what was run,
and the entry's secrets (its env and headers) never stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scanner.measure import metrics as scan_metrics
from scanner.models import ScanOutcome, ServerEntry, Toolset
from scanner.store import codec, common


def toolset_values(toolset: Toolset) -> dict[str, Any]:
    """A new ``toolsets`` row: the list compressed, first seen now."""
    data, size = codec.compress_tools(toolset.tools)
    return {
        "sha256": toolset.sha256,
        "tools_count": len(toolset),
        "raw_size": size,
        "data": data,
        "first_seen": common.now(),
    }


def scan_values(
    run_id: int,
    server_id: int | None,
    entry: ServerEntry,
    outcome: ScanOutcome,
    toolset_id: int | None,
    instructions_id: int | None,
    measure_error: str | None,
) -> dict[str, Any]:
    """A ``scans`` row: every value a server sent cut to its column, the entry's secrets blanked, and the row's
    own reading of the clock (each row reads it once, in write order: the report tests' clock ticks per reading)."""
    secrets = entry_secrets(entry)
    return {
        "run_id": run_id,
        "server_id": server_id,
        "scanned_at": common.now(),
        "outcome": str(outcome.outcome),
        "detail": codec.redact_known(str(outcome.detail or "")[: codec.MAX_DETAIL * 2], secrets)[: codec.MAX_DETAIL],
        "transport": str(outcome.transport or entry.transport)[:32],
        "era": codec.text(outcome.era, 16),
        "protocol_version": codec.text(outcome.protocol_version, 32),
        "server_name": codec.text(outcome.server_name, 200),
        "server_version": codec.text(outcome.server_version, 100),
        "capability_profile": codec.text(outcome.capability_profile, 64),
        "timings": codec.timings(outcome.timings_ms),
        "pages": outcome.pages if isinstance(outcome.pages, int) else 0,
        "toolset_id": toolset_id,
        "anonymous": bool(entry.anonymous),
        # A server may print the secrets it was given (its env, its headers): never stored.
        "extra": codec.small_json(codec.blank_known(_stored_extra(outcome.extra, measure_error), secrets)),
        "lane": outcome.lane[:16] if outcome.lane and outcome.lanes else None,
        "instructions_id": instructions_id,
        "metrics": scan_metrics.values(outcome),
        **what_was_run(entry),
    }


# The package facts kept with a scan: what identifies what ran, none of the entry's variables.
_PACKAGE_KEYS = {
    "registryType": "registry_type",
    "identifier": "identifier",
    "version": "version",
    "pinned": "pinned",
    "spec": "spec",
    "runner": "runner",
}


def entry_secrets(entry: ServerEntry) -> list[str]:
    """The values an entry hands a server (its env and headers, and a header's credential without its scheme,
    as in ``Bearer X``): any may be a secret, none is stored."""
    values = [str(value) for value in (*entry.env.values(), *entry.headers.values())]
    return values + [value.split()[-1] for value in map(str, entry.headers.values()) if len(value.split()) > 1]


def what_was_run(entry: ServerEntry) -> dict[str, Any]:
    """The ``scans`` columns saying what was run: the entry's registry version, its package, its URL and its
    command line, with every value of its env and headers (and anything credential-like) redacted."""
    secrets = entry_secrets(entry)
    package = None
    if entry.package is not None and entry.package.get("identifier"):
        package = {
            stored: entry.package[key] if isinstance(entry.package[key], bool) else codec.text(entry.package[key], 300)
            for key, stored in _PACKAGE_KEYS.items()
            if entry.package.get(key) is not None
        }
    return {
        "registry_version": codec.text(entry.version, 100),
        "package": package,
        "url": codec.redact_known(entry.url, secrets)[: codec.MAX_COMMAND] if entry.url else None,
        "command": codec.redact_command(entry.command, secrets) if entry.command else None,
    }


def _stored_extra(extra: Mapping[str, Any], measure_error: str | None) -> dict[str, Any]:
    """The outcome's extra as a scan row keeps it: the instructions live once in their own table, not per scan."""
    kept = {key: value for key, value in extra.items() if key != "instructions"}
    if measure_error:
        kept["measure_error"] = measure_error
    return kept
