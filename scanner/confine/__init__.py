"""The child's confinement in one room: every program Fathom starts (a registry package and its install step, a
``--run-commands`` command, a distributed worker's package or command, ``check --stdio``'s server) is started
confined from here, and nothing it starts outlives Fathom.

**The front** (this module: callers outside ``scanner/confine/`` use only these names)::

    with confine.child(private_home=True):                      # its own user (run as root), reaped with Fathom
        with confine.room(hide=[...], keep=[...], offline=True):  # these paths, this network (its namespaces)
            command = confine.limited(command, memory_bytes, writable=[home, folder])  # these limits
            argv, options = confine.start(command, env)           # then anyio.open_process(argv, **options)

* :func:`child`: a user of its own for one child's run (run as root; nothing elsewhere), its uid told to the
  reaper, everything it ran killed and what it left removed as the run ends;
* :func:`room`: the folders hidden from the children started in it (and the paths beneath them each keeps), a
  network of their own, the folder they start in;
* :func:`limited`: a command wrapped in the memory cap and (where the kernel has Landlock) writes only beneath
  the folders given;
* :func:`start`: the argv and process options of one child: through the namespace launcher where the kernel
  allows (its own PID, mount, IPC and, in an offline room, network namespace; its own ``/dev``; a cap on its
  processes), as the user of :func:`child`, in the room's folder;
* what the host gives (:func:`enabled`, :func:`namespaces`, :func:`own_network`, :func:`outbound`,
  :func:`root_namespaces`, :func:`landlock_abi`, :func:`reachable`), said once before a scan; the marks and
  listeners a local-port package is checked by (:func:`announce_mark`, :func:`marked`, :func:`listener_owned`).

**Behind it, one module per layer**:

* :mod:`~scanner.confine.users`: the leased users (uid range, leases, what a user left, orphans swept);
* :mod:`~scanner.confine.reaper`: the reaper that kills every leased uid's and marked process once Fathom is
  gone, however it ends;
* :mod:`~scanner.confine.spawn`: whether the kernel gives children namespaces (probed once per process) and the
  argv that starts a child through the launcher, with the context's paths, network and folder;
* :mod:`~scanner.confine.launcher`: the namespace launcher itself, a stand-alone script run as
  ``python -I -S`` between Fathom and the child (it imports nothing of Fathom): namespaces, a ``/dev`` of the
  child's own, its loopback, hidden folders, the process cap;
* :mod:`~scanner.confine.landlock`: the stand-alone wrapper that caps memory and confines writes (Landlock);
* :mod:`~scanner.confine.limits`: the memory and process limits;
* :mod:`~scanner.confine.netstack`: a network of its own's route out through slirp4netns (:func:`outbound`);
* :mod:`~scanner.confine.listeners`: whether what listens on a local-port package's port is its own;
* :mod:`~scanner.confine.relay`: Fathom's connections into a child's network of its own, made by its launcher.

docs/registry.md, "Which platform isolates what", says what each platform gets.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from scanner.confine import landlock, netstack, spawn
from scanner.confine.landlock import landlock_abi
from scanner.confine.limits import DEFAULT_MEMORY_LIMIT_MB, MAX_PROCESSES
from scanner.confine.listeners import listener_owned
from scanner.confine.netstack import STACK_ENV, network_stack, outbound
from scanner.confine.reaper import MARK_ENV, announce_mark, marked, reaper
from scanner.confine.relay import Relay
from scanner.confine.spawn import namespaces, own_network, root_namespaces, runnable_by_children
from scanner.confine.users import (
    CURRENT,
    Child,
    chown_tree,
    clear_leftovers,
    enabled,
    folders_above_reachable,
    kill_user,
    lease,
    pids,
    reachable,
    remove,
    sweep_orphans,
)

__all__ = [
    "CURRENT",
    "DEFAULT_MEMORY_LIMIT_MB",
    "MARK_ENV",
    "MAX_PROCESSES",
    "STACK_ENV",
    "Child",
    "Relay",
    "Start",
    "announce_mark",
    "child",
    "chown_tree",
    "enabled",
    "folders_above_reachable",
    "landlock_abi",
    "limited",
    "listener_owned",
    "marked",
    "namespaces",
    "network_stack",
    "outbound",
    "own_network",
    "pids",
    "reachable",
    "room",
    "root_namespaces",
    "start",
    "wrapper",
]


class Start(NamedTuple):
    """How one child is started: ``anyio.open_process(argv, env=..., start_new_session=True, **options)``."""

    argv: list[str]
    options: dict[str, Any]
    """Its user, group, umask and working folder (:func:`scanner.confine.users.spawn_options`,
    :func:`scanner.confine.spawn.workdir`)."""


def start(
    command: Sequence[str], env: Mapping[str, str], network: bool | None = None, relay: Relay | None = None
) -> Start:
    """Start ``command`` (with ``env``, its exact environment) as a confined child: in namespaces of its own
    where :func:`namespaces` holds, as the user of the :func:`child` it is started in, with the paths, network
    and folder of the :func:`room` it is started in (:func:`scanner.confine.spawn.launch`). ``network``: True
    keeps the host's network, False asks for one of its own; None (the default) follows the room. ``relay``:
    where the child gets a network of its own, Fathom's connections into it go through its launcher
    (:class:`~scanner.confine.relay.Relay`: :meth:`Relay.held` says whether it does; call :meth:`Relay.started`
    once the child is started). A program not found on ``env``'s PATH raises FileNotFoundError here, as
    starting it directly would."""
    argv, options = spawn.launch(command, env, network, relay.fd if relay is not None else -1)
    if relay is not None and not options.get("pass_fds"):
        relay.close()
    return Start(argv, options)


@contextlib.contextmanager
def room(
    *,
    hide: Sequence[Path] | None = None,
    keep: Sequence[Path] = (),
    offline: bool = False,
    workdir: str | None = None,
) -> Iterator[None]:
    """Start every child in this context with these paths, this network and this folder:

    * ``hide``: folders covered by an empty tmpfs in its namespace, only the ``keep`` paths beneath them bound
      back at their own paths (a package's siblings' HOMEs and installs are not there;
      :func:`scanner.confine.spawn.hiding`);
    * ``offline``: a network of its own where :func:`own_network` holds (a package's run, stdio or local-port,
      after its install step, a ``--run-commands`` command, ``check``'s server with a route out;
      :func:`scanner.confine.spawn.offline`): only its own loopback, and a route out through slirp4netns where
      :func:`outbound` holds, never to the host's loopback (:mod:`scanner.confine.netstack`);
    * ``workdir``: the folder it starts in, in place of its HOME (``check --stdio`` in the project it checks;
      :func:`scanner.confine.spawn.starting_in`).

    What is not given is left as the enclosing room has it."""
    with contextlib.ExitStack() as stack:
        if hide is not None:
            stack.enter_context(spawn.hiding(hide, keep))
        if offline:  # with a route out through slirp4netns where there is one (netstack)
            stack.enter_context(spawn.offline(netstack.route_out()))
        if workdir is not None:
            stack.enter_context(spawn.starting_in(workdir))
        yield


def wrapper() -> tuple[str, str]:
    """The Python interpreter and the Landlock wrapper (:mod:`scanner.confine.landlock`) a limited command is
    started through. Run as root, the child runs as a user of its own, which must reach both
    (:func:`scanner.confine.spawn.runnable_by_children`). OSError when no interpreter is reachable."""
    return runnable_by_children(Path(landlock.__file__))


def limited(command: Sequence[str], memory_bytes: int, writable: Sequence[Path] = ()) -> tuple[str, ...]:
    """``command`` as it is started under these limits: writable private memory capped at ``memory_bytes``
    (``RLIMIT_DATA``, :mod:`scanner.confine.limits`) and, given folders, writes only beneath ``writable`` and
    ``/dev`` (Landlock, where the kernel has it: :func:`landlock_abi`); with no folders, writes are not
    confined. OSError when no interpreter the child's user can run is reachable (:func:`wrapper`)."""
    folders = [str(path) for path in writable]
    python, script = wrapper()
    return (python, "-I", script, str(memory_bytes), str(len(folders)), *folders, "--", *command)


@contextlib.contextmanager
def child(private_home: bool = False) -> Iterator[Child | None]:
    """Lease a user for one child's run and make it :data:`CURRENT` (None when :func:`enabled` is false).

    ``private_home``: also make a HOME (with ``tmp/`` inside) owned by it, used in place of Fathom's own."""
    if not enabled():
        yield None
        return
    if not _SWEPT:
        _SWEPT.append(sweep_orphans())  # what a Fathom killed with its reaper (or before one existed) left
    reaper().start()  # before the lease: a fork must not hold a copy of it
    uid, held = lease()
    kid = Child(uid=uid, gid=uid, _lease=held)
    try:
        reaper().announce(f"u{uid}")
        kill_user(uid)  # left by a Fathom that was killed while it held this uid
        if private_home:
            kid.home = Path(tempfile.mkdtemp(prefix="fathom-home-"))
            (kid.home / "tmp").mkdir()
            kid.give(kid.home)
        token = CURRENT.set(kid)
        try:
            yield kid
        finally:
            CURRENT.reset(token)
    finally:
        kill_user(uid)
        clear_leftovers(uid)
        if kid.home is not None:
            remove(kid.home)
        os.close(held)


_SWEPT: list[int] = []
