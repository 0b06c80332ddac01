"""Sources of :class:`~scanner.models.ServerEntry` and the safety policy for what gets connected to.

* :func:`load_entries`: a registry URL, a saved registry response, server.json files, a simple list, or a
  Claude Desktop / VS Code config → entries (``skip`` says why one will not be connected to). The kinds are
  one table, :data:`scanner.registry.loader.FORMATS`; every entry passes the trust rule for commands
  (:mod:`scanner.registry.trust`: nothing runs without ``--run-packages`` / ``--run-commands``).
* :func:`refuse_reason`: the address policy for URLs (no loopback, private or metadata addresses by default).
* :func:`entries_to_json`: what a dry run shows, never a secret value.
* :func:`secret_env_name`: where a server's secret headers and variables are read from.

See ``docs/registry.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scanner.registry.address import refuse_reason
    from scanner.registry.dryrun import entries_to_json
    from scanner.registry.loader import KINDS, detect, load_entries
    from scanner.registry.secrets import secret_env_name

__all__ = ["KINDS", "detect", "entries_to_json", "load_entries", "refuse_reason", "secret_env_name"]

# Imported on first use, so that reading the formats table (the CLI's --kind help) does not load httpx.
_HOMES = {
    "refuse_reason": "scanner.registry.address",
    "entries_to_json": "scanner.registry.dryrun",
    "KINDS": "scanner.registry.loader",
    "detect": "scanner.registry.loader",
    "load_entries": "scanner.registry.loader",
    "secret_env_name": "scanner.registry.secrets",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
