"""A child's network of its own, and its route out through a user-mode network stack (issue 42).

A package's run (stdio or on a local port) and a ``--run-commands`` command start in a network namespace of
their own (``confine.room(offline=True)``; :func:`scanner.confine.spawn.own_network` says where the kernel allows
one), ``check``'s server and a package's install step too when there is a route out (the install only where its
registry is reachable that way: :mod:`scanner.packages.installnet`). Where slirp4netns is on Fathom's ``PATH`` (and
:data:`STACK_ENV` does not hide it) that network gets a route out: the launcher starts it beside the child
(:func:`scanner.confine.launcher.stack_fork`, ``--disable-host-loopback --disable-dns``), so the child reaches the
internet and the machine's own address, never what listens on the host's loopback. :func:`outbound` tries it once
per process and stack and says which holds in one line (``outbound through slirp4netns, never the host's
loopback``, or ``none: ...`` and why). docs/registry.md, "A network of its own, for a package's run and install
step, a command and ``check``'s server", says what holds where.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from scanner.confine import spawn
from scanner.confine.users import enabled, reachable

STACK_ENV = "FATHOM_NETWORK_STACK"
"""Which user-mode network stack gives a child's own network a route out: unset or ``slirp4netns`` (the one on
Fathom's ``PATH``), or ``none`` (no route out: a package's run and a command have only their own loopback, and
``check``'s server keeps the host's network)."""
_OUTBOUND: dict[str, tuple[bool, str]] = {}


def network_stack() -> tuple[str | None, str]:
    """The user-mode network stack program to start (:data:`STACK_ENV`), or None and why not (``none: ...``)."""
    chosen = os.environ.get(STACK_ENV, "").strip()
    if chosen == "none":
        return None, f"none: {STACK_ENV}=none"
    if chosen and os.path.basename(chosen) != "slirp4netns":
        return None, f"none: {STACK_ENV}={chosen[:80]!r} is neither slirp4netns nor none"
    found = shutil.which(chosen or "slirp4netns")
    if found is None:
        return None, "none: no slirp4netns on PATH (Debian and Ubuntu: apt-get install slirp4netns)"
    if enabled() and not reachable(Path(found)):
        return None, f"none: {found} is out of reach of the children's users"
    return found, ""


def outbound() -> tuple[bool, str]:
    """Whether a child's network of its own (:func:`spawn.own_network`) also gets a route out, through
    slirp4netns (:func:`scanner.confine.launcher.stack_fork`: never to the host's loopback), and one line saying so
    (or ``none: ...`` and why). Tried once per process and stack, by starting the launcher with ``--net
    --outbound``: a stack that does not start is said here, never a silent fallback."""
    program, why = network_stack()
    if program is None:
        return False, why
    holds, said = spawn.own_network()
    if not holds:
        return False, f"none: {said}"
    if program not in _OUTBOUND:
        done, reason = spawn.probe(["--net", "--outbound", program])
        _OUTBOUND[program] = (
            (True, "outbound through slirp4netns, never the host's loopback")
            if done
            else (False, "none: " + reason.replace(": children share the host's PID namespace and /proc", ""))
        )
    return _OUTBOUND[program]


def route_out() -> str | None:
    """The stack program a child's network of its own gets its route out through (None: only its own loopback)."""
    return network_stack()[0] if outbound()[0] else None
