"""How a child is started: through the namespace launcher where the kernel allows, as its own user, with the
paths, network and folder of the context it is started in.

**A PID namespace of its own** (Linux, where the kernel allows unprivileged user namespaces): every child is
started through :mod:`scanner.confine.launcher` (:func:`launch`), as its own user (:mod:`scanner.confine.users`),
which makes a user, PID and mount namespace and mounts a fresh ``/proc`` there. The child then cannot see any
process outside its namespace: not a sibling's ``/proc/<pid>/cmdline`` (a local-port package's port was read
there and squatted), ``environ`` or HOME path, not Fathom's (its ``--db`` URL), and it cannot address Fathom, the
reaper or a sibling with a signal (no such pid). It holds no capability (empty bounding set, ``no_new_privs``),
so it cannot unmount that ``/proc``. A package's namespace also covers the cache's ``homes/`` and ``pkg/`` with
an empty tmpfs and binds back only its own HOME and package folder at their own paths (:func:`hiding`): the
other packages' HOMEs (a token in a config file there) and installs are not there, whatever its uid. The
namespace's init reaps orphans and, when the command exits or the launcher dies (killed with Fathom:
``PR_SET_PDEATHSIG``), its end kills everything left in the namespace. From the host nothing changes: the reaper
(:mod:`scanner.confine.reaper`), the ``FATHOM_SCAN_MARK`` sweep, the local port's listener check
(:mod:`scanner.confine.listeners`) and the process-group kill see the child's processes with host pids.
:func:`namespaces` tries it once per process; where it fails (macOS, user namespaces switched off, a container's
seccomp profile) children start as before and the scan says so in one line. Run as root, a child that runs as
root itself (``check --stdio``, a command out of the children's users' reach) gets none: ``fathom`` empties
root's bounding set (:mod:`scanner.envguard`) and a root without capabilities may not map uid 0 into a user
namespace.

**Not root**: children run as Fathom's own user (no other is available without privileges); the reaper
still kills marked processes when Fathom dies. Without namespaces a child can read a sibling's environment,
signal Fathom and its siblings, and kill the reaper; with them it cannot see or address any of them, and a
package finds no other package's HOME or install folder (hidden in its namespace), but it can still read
other files the user owns (Fathom's own HOME; a ``--run-commands`` command runs with it). docs/registry.md,
"Which platform isolates what", says what each platform gets.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from scanner.confine.limits import MAX_PROCESSES
from scanner.confine.users import CURRENT, UID_BASE, UID_SLOTS, enabled, lease_dir, reachable, spawn_options

OFFLINE: ContextVar[bool] = ContextVar("fathom_offline", default=False)
"""Whether the child being started now gets a network namespace of its own (:func:`offline`)."""

STACK: ContextVar[str | None] = ContextVar("fathom_stack", default=None)
"""The user-mode network stack (slirp4netns) that gives the network of its own of a child started now a route
out (:func:`offline`, :mod:`scanner.confine.netstack`), or None."""

HIDDEN: ContextVar[tuple[tuple[str, ...], tuple[str, ...]]] = ContextVar("fathom_hidden", default=((), ()))
"""The folders hidden from the child being started now, and the paths beneath them it keeps (:func:`hiding`)."""


@contextlib.contextmanager
def hiding(folders: Sequence[Path], keep: Sequence[Path]) -> Iterator[None]:
    """Start every child in this context with ``folders`` covered by an empty tmpfs in its namespace, and only
    the ``keep`` paths beneath them bound back at their own paths (:func:`scanner.confine.launcher.hide`): a
    package's siblings' HOMEs and package folders are not there. Only where the child gets a namespace
    (:func:`launch`); folders that do not exist, and kept paths outside the hidden folders, are left out."""
    hidden = tuple(os.path.realpath(folder) for folder in folders if os.path.isdir(folder))
    kept = tuple(
        real
        for real in (os.path.realpath(path) for path in keep)
        if any(real.startswith(folder + os.sep) for folder in hidden) and os.path.isdir(real)
    )
    token = HIDDEN.set((hidden, kept))
    try:
        yield
    finally:
        HIDDEN.reset(token)


@contextlib.contextmanager
def offline(stack: str | None = None) -> Iterator[None]:
    """Start every child in this context with a network namespace of its own where :func:`own_network` holds
    (a package's run, stdio or local-port, after its install step: it needs nothing from the registry; a command),
    with a route out through ``stack`` (slirp4netns: :mod:`scanner.confine.netstack`) when given."""
    token = OFFLINE.set(True)
    held = STACK.set(stack)
    try:
        yield
    finally:
        STACK.reset(held)
        OFFLINE.reset(token)


# --- a PID namespace of its own ------------------------------------------------------------------------

PIDNS = Path(__file__).with_name("launcher.py")
_NAMESPACES: list[tuple[bool, str]] = []
_NETWORK: list[tuple[bool, str]] = []
_NAMESPACES_LOCK = threading.Lock()


def namespaces() -> tuple[bool, str]:
    """Whether every child starts in a PID and mount namespace of its own (:mod:`scanner.confine.launcher`), and one
    line saying so (or why not). Tried once per process, by starting the launcher itself."""
    with _NAMESPACES_LOCK:
        if not _NAMESPACES:
            _NAMESPACES.append(_probe())
        return _NAMESPACES[0]


def own_network() -> tuple[bool, str]:
    """Whether a package's stdio run (:func:`offline`) also gets a network namespace of its own (only its own
    ``lo``: nothing that listens on the host's loopback, no shared abstract unix socket, no route out), and one
    line saying so (or why not). Tried once per process, by starting the launcher with ``--net`` (only where
    :func:`namespaces` holds)."""
    if not namespaces()[0]:
        return False, "no namespaces: children share the host's network"
    with _NAMESPACES_LOCK:
        if not _NETWORK:
            holds, why = _probe(["--net"])
            shared = why.replace("the host's PID namespace and /proc", "the host's network")
            _NETWORK.append((True, "a network of its own: only its own loopback") if holds else (False, shared))
        return _NETWORK[0]


def probe(extra: Sequence[str]) -> tuple[bool, str]:
    """The launcher's probe with ``extra`` words (``--net --outbound PROGRAM``: :mod:`scanner.confine.netstack`)."""
    return _probe(extra)


def _probe(extra: Sequence[str] = ()) -> tuple[bool, str]:
    if not sys.platform.startswith("linux"):
        return False, "not Linux: children share the host's PID namespace and /proc"
    import subprocess

    user: dict[str, Any] = {}
    try:
        python, script = sys.executable, str(PIDNS)
        if enabled():  # tried as the children run: an unprivileged user (one never leased), no capabilities
            python, script = runnable_by_children(PIDNS)
            probe = UID_BASE + UID_SLOTS
            user = {"user": probe, "group": probe, "extra_groups": []}
        done = subprocess.run(
            [python, "-I", "-S", script, "--probe", *extra, *(["--hide", "/tmp"] if os.path.isdir("/tmp") else [])],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={"PATH": os.defpath},
            cwd="/",
            **user,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"unavailable ({exc}): children share the host's PID namespace and /proc"
    if done.returncode == 0:
        return True, "each child in a PID namespace of its own with its own /proc, /dev and SysV IPC"
    said = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
    why = said[0].split(": ", 2)[-1] if said[0].startswith("fathom: ") else said[0]
    return False, f"unavailable ({why[:200]}): children share the host's PID namespace and /proc"


def runnable_by_children(script: Path) -> tuple[str, str]:
    """A Python interpreter and a copy of ``script`` (a stand-alone launcher: :mod:`scanner.confine.launcher`,
    :mod:`scanner.confine.landlock`) that a child's own user can run: Fathom's interpreter and files may live
    under root's 0700 HOME, so an interpreter it can reach is chosen and ``script`` is copied beside the uid
    leases when out of its reach. OSError when no interpreter is reachable."""
    if not enabled():
        return sys.executable, str(script)
    found = [sys.executable, "/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3") or ""]
    python = next((path for path in found if path and reachable(Path(path))), None)
    if python is None:
        raise OSError(
            "run as root, children run as an unprivileged user of their own, and no Python interpreter is "
            "reachable by it (install python3 system-wide)"
        )
    if reachable(script):
        return python, str(script)
    copy = lease_dir() / script.name
    text = script.read_bytes()
    if not copy.is_file() or copy.read_bytes() != text:
        partial = copy.with_name(f".{script.name}.{os.getpid()}")
        partial.write_bytes(text)
        os.chmod(partial, 0o644)
        partial.replace(copy)
    return python, str(copy)


def launch(
    command: Sequence[str], env: Mapping[str, str], network: bool | None = None, relay: int = -1
) -> tuple[list[str], dict[str, Any]]:
    """The argv and :func:`anyio.open_process` options a child is started with: through the namespace launcher
    where :func:`namespaces` holds (run as root: for a child of its own user, or while Fathom may still mount; see
    :func:`_may_unshare_as_self`), else ``command`` as given; as the :data:`CURRENT` child's user either way
    (:func:`spawn_options`). ``network=False`` (by default: in :func:`offline`, a package's run after its install,
    stdio or local-port, a command, ``check``'s server with a route out) adds a network namespace of its own where
    :func:`own_network` holds, with a route out through :data:`STACK` where set; an install step has one only where
    :func:`scanner.packages.installnet.install_network` holds (it is started in such a room then).
    With that namespace, ``relay`` (a socket's descriptor) goes to the launcher (``--relay``, ``pass_fds`` in the
    options): Fathom asks there for connections to the child's own loopback (a local-port package's port,
    :class:`scanner.confine.relay.Relay`). A program not found on ``env``'s PATH raises FileNotFoundError here, as
    starting it directly would."""
    kid = CURRENT.get()
    options = {**spawn_options(), "cwd": workdir(env)}
    if not command or not namespaces()[0] or (kid is None and not _may_unshare_as_self()):
        return list(command), options
    program = command[0]
    if "/" in program:
        found = program if os.path.isfile(program) else None
    else:
        found = shutil.which(program, mode=os.F_OK, path=env.get("PATH") or os.defpath)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    python, script = runnable_by_children(PIDNS) if kid is not None else (sys.executable, str(PIDNS))
    hidden, kept = HIDDEN.get()
    network = not OFFLINE.get() if network is None else network
    words = ["--net"] if not network and own_network()[0] else []
    stack = STACK.get() if words else None
    words += ["--outbound", stack] if stack else []
    if words and relay >= 0:
        words += ["--relay", str(relay)]
        options["pass_fds"] = (relay,)
    words += ["--nproc", str(MAX_PROCESSES), *(word for folder in hidden for word in ("--hide", folder))]
    words += [word for path in kept for word in ("--keep", path)]
    return [python, "-I", "-S", script, str(os.getpid()), *words, "--", *command], options


WORKDIR: ContextVar[str | None] = ContextVar("fathom_workdir", default=None)
"""A folder the children started in this context start in, in place of their HOME: ``fathom check``'s own
server runs as Fathom's user in the project it checks, whose command names paths relative to it."""


@contextlib.contextmanager
def starting_in(folder: str) -> Iterator[None]:
    """Start the children of this context in ``folder`` (:data:`WORKDIR`)."""
    token = WORKDIR.set(folder)
    try:
        yield
    finally:
        WORKDIR.reset(token)


def workdir(env: Mapping[str, str]) -> str:
    """The folder a child starts in: its own HOME (``env["HOME"]``: a package's throwaway HOME, a command's
    private HOME run as root, the user's HOME otherwise), never Fathom's working directory, which the child's
    user may not be able to enter (a nightly run as root from ``/root``, a checkout in a ``mktemp -d`` folder:
    npm then cannot spawn its shell). ``/`` when the environment names no HOME that is a folder;
    :data:`WORKDIR` where set."""
    chosen = WORKDIR.get()
    if chosen is not None:
        return chosen
    home = env.get("HOME") or ""
    return home if os.path.isabs(home) and os.path.isdir(home) else "/"


def _may_unshare_as_self() -> bool:
    """Whether a child started as Fathom's own user can make its namespaces: always when Fathom is not root (a
    user namespace mapping its uid); run as root only while Fathom's bounding set still holds ``CAP_SYS_ADMIN``
    (the launcher makes them directly). A ``fathom`` process run as root has emptied it
    (:mod:`scanner.envguard`), and a root without capabilities may not map uid 0 into a user namespace (Linux
    5.12+ asks for ``CAP_SETFCAP``): such a child makes them in a user namespace left unmapped
    (:func:`root_namespaces`), so it too dies with its namespace (nothing outlives Fathom)."""
    if os.geteuid() != 0:
        return True
    try:
        import ctypes

        if int(ctypes.CDLL(None, use_errno=True).prctl(23, 21, 0, 0, 0)) == 1:  # PR_CAPBSET_READ, SYS_ADMIN
            return True
    except (OSError, AttributeError):
        pass
    return root_namespaces()


_ROOT_NAMESPACES: list[bool] = []

# Run as root without capabilities (as every child of ``fathom`` run as root is), then the launcher's probe.
_WITHOUT_CAPABILITIES = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None)\n"
    "for cap in range(64):\n"
    "    libc.prctl(24, cap, 0, 0, 0)\n"
    "os.execv(sys.executable, [sys.executable, '-I', '-S', sys.argv[1], '--probe'])\n"
)


def root_namespaces() -> bool:
    """Whether a child that runs as root without capabilities (``check --stdio``'s server, a command out of the
    children's users' reach) can make its namespaces in a user namespace left unmapped
    (:func:`scanner.confine.launcher.enter`). Tried once per process."""
    with _NAMESPACES_LOCK:
        if not _ROOT_NAMESPACES:
            import subprocess

            try:
                done = subprocess.run(
                    [sys.executable, "-I", "-S", "-c", _WITHOUT_CAPABILITIES, str(PIDNS)],
                    capture_output=True,
                    timeout=30,
                    check=False,
                    env={"PATH": os.defpath},
                    cwd="/",
                )
                _ROOT_NAMESPACES.append(done.returncode == 0)
            except (OSError, subprocess.SubprocessError):
                _ROOT_NAMESPACES.append(False)
        return _ROOT_NAMESPACES[0]
