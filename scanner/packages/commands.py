"""A command from a list or client config (``--run-commands``), run apart from the others.

Run as root, each command runs as a user of its own with a private HOME and TMPDIR (:func:`scanner.confine.child`):
it cannot read another command's environment, HOME or files, nor signal Fathom or the other commands. That
user must be able to reach the program: where the command's executable lies out of its reach (under root's
own 0700 HOME, for one), the command runs as Fathom's user, as before, and its outcome says so in
``extra["isolation"]`` (docs/registry.md, "Which platform isolates what"). Each command also starts in a PID
namespace of its own where the kernel allows (:func:`scanner.confine.start`): it cannot see another's
command line nor address Fathom or a sibling at all; and in a network namespace of its own (:func:`scan_offline`):
it reaches nothing that listens on the host's loopback, and the internet only through slirp4netns.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from scanner import confine
from scanner.mcp import ClientLimits, scan_server
from scanner.mcp.transports import stdio_env
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages.diagnose import no_network


def out_of_reach(entry: ServerEntry) -> str | None:
    """Why ``entry``'s program cannot run as a user of its own (None: it can)."""
    program = entry.command[0]
    path = stdio_env(entry, None).get("PATH")
    found = shutil.which(program, path=path) if path is not None else shutil.which(program)
    if found is None:
        return None  # not found at all: the start fails the same way as any user, and says so
    if not confine.reachable(Path(found)):
        return f"none: {found} is out of reach of an unprivileged user, so it ran as Fathom's user{_how()}"
    for word in entry.command[1:]:  # a script or folder it is handed (``python3 /root/srv/server.py``)
        if os.path.isabs(word) and os.path.exists(word) and not confine.reachable(Path(word)):
            return (
                f"none: {word} (in its command) is out of reach of an unprivileged user, so it ran as Fathom's "
                f"user{_how()}"
            )
    return None


def _how() -> str:
    """What a command run as Fathom's user (root) still gets: its namespaces where the kernel allows."""
    if confine.namespaces()[0] and confine.root_namespaces():
        return " (in namespaces of its own, which end with it)"
    return ", without a PID namespace of its own"


async def run_command(entry: ServerEntry, limits: ClientLimits, profile: str) -> ScanOutcome:
    """Scan a stdio command entry, as a user of its own where Fathom runs as root, in a network of its own
    (:func:`scan_offline`)."""
    if not confine.enabled() or not entry.command:
        return await scan_offline(entry, limits, profile)
    why = out_of_reach(entry)
    if why is not None:
        outcome = await scan_offline(entry, limits, profile)
        return replace(outcome, extra={**outcome.extra, "isolation": why})
    try:
        with confine.child(private_home=True):
            return await scan_offline(entry, limits, profile)  # never raises for the server's fault
    except OSError as exc:  # a user of its own could not be set up: not run at all, and said so
        detail = f"could not run it as a user of its own: {exc.strerror or exc}"
        return ScanOutcome(outcome=Outcome.SPAWN_ERROR, transport=entry.transport.value, detail=detail)


async def scan_offline(entry: ServerEntry, limits: ClientLimits, profile: str) -> ScanOutcome:
    """Scan a command in a network namespace of its own where the kernel allows (``confine.room(offline=True)``):
    nothing that listens on the host's loopback, no shared abstract unix socket; a route out through slirp4netns
    where :func:`confine.outbound` holds, else only its own loopback, and a command that stopped for want of a
    network is recorded so (:func:`scanner.packages.diagnose.no_network`)."""
    if not entry.command or not confine.own_network()[0]:
        return await scan_server(entry, limits, profile)
    with confine.room(offline=True):
        outcome = await scan_server(entry, limits, profile)
    if confine.outbound()[0]:
        return outcome
    return no_network(replace(outcome, extra={**outcome.extra, "offline": True}))
