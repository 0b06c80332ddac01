"""The trust rule for commands: stated here once, and enforced here for every entry an input yields.

An input file is data, whoever wrote it, so nothing in one runs a command on this machine unless the user asked:

* a **registry package** (``packages`` of a server.json) runs only with ``--run-packages``;
* a **command written in a file** (a simple list's ``command``, a Claude Desktop or VS Code config's
  ``command``/``args``) runs only with ``--run-commands``.

Without the opt-in the entry is kept, its command shown by a dry run, and skipped with a reason naming the flag
that runs it. The kind of a file never grants trust: a saved registry response that happens to have the shape
of a simple list is still data. And no command inherits the user's environment: a child gets exactly the
variables its entry declares plus the short pass-through of :func:`scanner.mcp.transports.passthrough_env`
(``PATH``, ``HOME``, the locale, ...), never a ``FATHOM_SECRET_*`` value it did not declare; a package gets
only its declared variables, ``PATH``, ``LANG`` and a throw-away ``HOME``.
"""

from __future__ import annotations

from dataclasses import replace

from scanner.models import ServerEntry
from scanner.registry.interface import Options

RUN_PACKAGES = "--run-packages"
RUN_COMMANDS = "--run-commands"


def needs(entry: ServerEntry) -> str | None:
    """The opt-in flag ``entry`` needs to run a command, or None if it runs none."""
    if not entry.command:
        return None
    return RUN_PACKAGES if entry.package is not None else RUN_COMMANDS


def allowed(entry: ServerEntry, options: Options) -> bool:
    """Whether the user's opt-ins let ``entry`` run its command (True for an entry without one)."""
    flag = needs(entry)
    if flag is None:
        return True
    return options.run_packages if flag == RUN_PACKAGES else options.run_commands


def gate(entries: list[ServerEntry], kind: str, options: Options) -> list[ServerEntry]:
    """``entries`` with every command the user did not opt in to turned into a skip that says how to opt in."""
    gated: list[ServerEntry] = []
    for entry in entries:
        if entry.skip is None and not allowed(entry, options):
            if needs(entry) == RUN_PACKAGES:
                reason = f"package: needs {RUN_PACKAGES}"
            else:
                reason = f"command from a {kind} file: needs {RUN_COMMANDS} (commands in input files run only then)"
            entry = replace(entry, skip=reason)
        gated.append(entry)
    return gated
