"""What a dry run prints: every entry's target, with header and variable *names* only, never a value."""

from __future__ import annotations

from typing import Any

from scanner.models import ServerEntry

_BASE_ENV = ("PATH", "LANG")


def entry_to_json(entry: ServerEntry) -> dict[str, Any]:
    """One entry as JSON for ``fathom scan --dry-run --format json``; secrets are reduced to their names."""
    package = dict(entry.package) if entry.package else None
    return {
        "name": entry.name,
        "version": entry.version,
        "transport": str(entry.transport),
        "url": entry.url,
        "command": list(entry.command) if entry.command else None,
        "header_names": sorted(entry.headers),
        "env_names": sorted(name for name in entry.env if name not in _BASE_ENV),
        "anonymous": entry.anonymous,
        "missing_secrets": list(entry.secret_header_names),
        "credential_headers": list(entry.credential_headers),
        "missing_inputs": list(package.get("missing_inputs", [])) if package else [],
        "package": {k: v for k, v in package.items() if k != "missing_inputs"} if package else None,
        "skip": entry.skip,
        "source": entry.source,
        "findings": [finding.to_json() for finding in entry.findings],
    }


def entries_to_json(entries: list[ServerEntry] | tuple[ServerEntry, ...]) -> list[dict[str, Any]]:
    """Every entry as :func:`entry_to_json`, in input order."""
    return [entry_to_json(entry) for entry in entries]
