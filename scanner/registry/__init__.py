"""Sources of :class:`~scanner.models.ServerEntry` and the safety policy for what gets connected to.

* :func:`load_entries`: a registry URL, a saved registry response, server.json files, a simple list, or a
  Claude Desktop / VS Code config → entries (``skip`` says why one will not be connected to).
* :func:`refuse_reason`: the address policy for URLs (no loopback, private or metadata addresses by default).
* :func:`entries_to_json`: what a dry run shows, never a secret value.
* :func:`secret_env_name`: where a server's secret headers and variables are read from.

See ``docs/registry.md``.
"""

from scanner.registry.address import refuse_reason
from scanner.registry.dryrun import entries_to_json
from scanner.registry.loader import KINDS, detect, load_entries
from scanner.registry.secrets import secret_env_name

__all__ = ["KINDS", "detect", "entries_to_json", "load_entries", "refuse_reason", "secret_env_name"]
