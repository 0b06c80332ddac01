"""Children apart: each package or command Fathom starts runs as its own user, and nothing outlives Fathom.

**Run as root (Linux)**, every registry package and every ``--run-commands`` command runs under a user and
group of its own, leased for its run from a high range (:data:`UID_BASE` + 0..:data:`UID_SLOTS`), with no
supplementary groups, ``umask 077`` and (for packages) a private HOME and TMPDIR owned by that user, mode 0700.
The kernel then refuses what one child tried against another in the attack passes:

* reading a sibling's ``/proc/<pid>/environ`` or ``mem``, or attaching to it (another user, no capabilities);
* signalling Fathom (``SIGSTOP`` froze a scan) or a sibling (``kill`` needs the same user);
* reading a sibling's HOME or package folder (mode 0700, another owner); writing another package's install;
* answering for a sibling's local port unnoticed: a listener is trusted only when it is the child's own
  (:func:`listener_owned`).

A lease is an exclusive ``flock`` on a file named after the uid in :func:`lease_dir`, held while the child
runs: two Fathom processes on one host never share a uid, and a uid whose lease is free has no live owner.
Before a Fathom process starts its first child, every process running as a child user whose lease is free is
killed (:func:`sweep_orphans`: left by a Fathom killed together with its reaper); before a uid is handed out,
every process still running as it is killed; as the lease ends, again, and what the user left in
``/dev/shm``, ``/tmp`` and ``/var/tmp`` is removed.

**Nothing outlives Fathom**: the first child a Fathom process starts also starts a *reaper* (a fork of Fathom
in its own session, holding only the read end of a pipe). Fathom tells it each leased uid and each child's
``FATHOM_SCAN_MARK``; when the pipe's other end closes (Fathom exited or was killed, even by SIGKILL), the
reaper kills every process running as those uids (whose lease no live Fathom has taken since) and every
process carrying those marks, removes what those users left (a command's private HOME, ``/dev/shm`` files),
then exits. Packages' launcher (:mod:`scanner.packages.confine`) also asks for
``SIGKILL`` when its parent dies (``PR_SET_PDEATHSIG``).

**A PID namespace of its own** (Linux, where the kernel allows unprivileged user namespaces): every child is
started through :mod:`scanner.packages.pidns` (:func:`launch`), as its own user as above, which makes a user, PID and
mount namespace and mounts a fresh ``/proc`` there. The child then cannot see any process outside its
namespace: not a sibling's ``/proc/<pid>/cmdline`` (a local-port package's port was read there and squatted),
``environ`` or HOME path, not Fathom's (its ``--db`` URL), and it cannot address Fathom, the reaper or a
sibling with a signal (no such pid). It holds no capability (empty bounding set, ``no_new_privs``), so it
cannot unmount that ``/proc``. A package's namespace also covers the cache's ``homes/`` and ``pkg/`` with an
empty tmpfs and binds back only its own HOME and package folder at their own paths (:func:`hiding`): the other
packages' HOMEs (a token in a config file there) and installs are not there, whatever its uid. The namespace's
init reaps orphans and, when the command exits or the
launcher dies (killed with Fathom: ``PR_SET_PDEATHSIG``), its end kills everything left in the namespace.
From the host nothing changes: the reaper, the ``FATHOM_SCAN_MARK`` sweep, :func:`listener_owned` and the
process-group kill see the child's processes with host pids. :func:`namespaces` tries it once per process;
where it fails (macOS, user namespaces switched off, a container's seccomp profile) children start as before
and the scan says so in one line. Run as root, a child that runs as root itself (``check --stdio``, a command
out of the children's users' reach) gets none: ``fathom`` empties root's bounding set (:mod:`scanner.envguard`)
and a root without capabilities may not map uid 0 into a user namespace.

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
import random
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no leases, no users of their own (enabled() is false there)
    fcntl = None  # type: ignore[assignment]

UID_BASE = 0x70000000  # 1879048192: far above any distribution's users, below 2**31 (signed-uid tools)
UID_SLOTS = 4096
MARK_ENV = "FATHOM_SCAN_MARK"
_SWEEPS = 5
_LEFTOVER_DIRS = ("/dev/shm", "/tmp", "/var/tmp")


def enabled() -> bool:
    """Whether children run as users of their own: Linux, and Fathom runs as root."""
    return sys.platform.startswith("linux") and os.geteuid() == 0


def lease_dir() -> Path:
    """Where uid leases are kept (root's own, 0711: children can reach the launcher copied there, not list)."""
    base = Path("/run") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir())
    folder = base / "fathom-children"
    folder.mkdir(mode=0o711, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise OSError(f"{folder} is not a folder of this user's")
    os.chmod(folder, 0o711)
    return folder


def reachable(path: Path) -> bool:
    """Whether a user with no groups in common can reach ``path`` (every folder above it searchable by others,
    and the file itself readable or executable by others), following links."""
    try:
        real = Path(os.path.realpath(path))
        info = real.stat()
    except OSError:
        return False
    if not info.st_mode & (stat.S_IROTH | stat.S_IXOTH):
        return False
    for parent in real.parents:
        try:
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def folders_above_reachable(path: Path) -> bool:
    """Whether every existing folder above ``path`` is searchable by others (``path`` itself may not exist yet:
    Fathom makes its own folders searchable)."""
    for parent in Path(os.path.abspath(path)).parents:
        try:
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
        except FileNotFoundError:
            continue
        except OSError:
            return False
    return True


@dataclass
class Child:
    """One child's identity for its run (see the module docstring)."""

    uid: int
    gid: int
    home: Path | None = None  # set for commands: a private HOME in place of Fathom's own
    _lease: int = field(default=-1, repr=False)

    def spawn_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`anyio.open_process` / :class:`subprocess.Popen`."""
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "umask": 0o077}

    def give(self, path: Path) -> None:
        """Make ``path`` (and everything beneath it) this child's own, the top mode 0700."""
        chown_tree(path, self.uid, self.gid)
        os.chmod(path, 0o700)

    def leftovers(self) -> int:
        """Bytes this child's user holds in ``/dev/shm`` (counted in its disk budget)."""
        total = 0
        for path in _owned_in(Path("/dev/shm"), self.uid):
            with contextlib.suppress(OSError):
                total += _size(path)
        return total


CURRENT: ContextVar[Child | None] = ContextVar("fathom_child", default=None)

OFFLINE: ContextVar[bool] = ContextVar("fathom_offline", default=False)
"""Whether the child being started now gets a network namespace of its own (:func:`offline`)."""

STACK: ContextVar[str | None] = ContextVar("fathom_stack", default=None)
"""The user-mode network stack (slirp4netns) that gives the network of its own of a child started now a route
out (:func:`scanner.packages.netstack.offline`), or None."""

HIDDEN: ContextVar[tuple[tuple[str, ...], tuple[str, ...]]] = ContextVar("fathom_hidden", default=((), ()))
"""The folders hidden from the child being started now, and the paths beneath them it keeps (:func:`hiding`)."""


@contextlib.contextmanager
def hiding(folders: Sequence[Path], keep: Sequence[Path]) -> Iterator[None]:
    """Start every child in this context with ``folders`` covered by an empty tmpfs in its namespace, and only
    the ``keep`` paths beneath them bound back at their own paths (:func:`scanner.packages.pidns.hide`): a
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
def offline() -> Iterator[None]:
    """Start every child in this context with a network namespace of its own where :func:`own_network` holds
    (a package's stdio run after its install step: it needs nothing from the registry), with a route out where
    :data:`STACK` is set (:func:`scanner.packages.netstack.offline`)."""
    token = OFFLINE.set(True)
    try:
        yield
    finally:
        OFFLINE.reset(token)


def spawn_options() -> dict[str, Any]:
    """The user options of the child being started now (:data:`CURRENT`), none when it runs as Fathom's user."""
    kid = CURRENT.get()
    return kid.spawn_options() if kid is not None else {}


# --- a PID namespace of its own ------------------------------------------------------------------------

PIDNS = Path(__file__).with_name("pidns.py")
MAX_PROCESSES = 512
"""The most processes and threads a child started in a namespace may have at once (``RLIMIT_NPROC`` in its
user namespace, :func:`scanner.packages.pidns.cap_processes`): far above what npx, uvx and a server use (node
runs about a dozen threads), far below a fork bomb's (a package started 600 processes)."""
_NAMESPACES: list[tuple[bool, str]] = []
_NETWORK: list[tuple[bool, str]] = []
_NAMESPACES_LOCK = threading.Lock()


def namespaces() -> tuple[bool, str]:
    """Whether every child starts in a PID and mount namespace of its own (:mod:`scanner.packages.pidns`), and one line
    saying so (or why not). Tried once per process, by starting the launcher itself."""
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
    """The launcher's probe with ``extra`` words (``--net --outbound PROGRAM``: :mod:`scanner.packages.netstack`)."""
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
    """A Python interpreter and a copy of ``script`` (a stand-alone launcher: :mod:`scanner.packages.pidns`,
    :mod:`scanner.packages.confine`) that a child's own user can run: Fathom's interpreter and files may live
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
    command: Sequence[str], env: Mapping[str, str], network: bool | None = None
) -> tuple[list[str], dict[str, Any]]:
    """The argv and :func:`anyio.open_process` options a child is started with: through the namespace launcher
    where :func:`namespaces` holds (run as root: for a child of its own user, or while Fathom may still mount; see
    :func:`_may_unshare_as_self`), else ``command`` as given; as the :data:`CURRENT` child's user either way
    (:func:`spawn_options`). ``network=False`` (by default: in :func:`offline`, a package's stdio run, a command,
    ``check``'s server with a route out: :mod:`scanner.packages.netstack`) adds a network namespace of its own
    where :func:`own_network` holds, with a route out through :data:`STACK` where set; an install and a
    local-port package (Fathom connects to its port) keep the host's. A program not found on ``env``'s PATH
    raises FileNotFoundError here, as starting it directly would."""
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
    (:func:`scanner.packages.pidns.enter`). Tried once per process."""
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


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """``chown -R`` without following links."""
    os.chown(path, uid, gid, follow_symlinks=False)
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)


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
    uid, lease = _lease()
    kid = Child(uid=uid, gid=uid, _lease=lease)
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
        _clear_leftovers(uid)
        if kid.home is not None:
            _remove(kid.home)
        os.close(lease)


_SWEPT: list[int] = []


def sweep_orphans() -> int:
    """Kill every process running as a child user whose lease no live Fathom holds (left by a Fathom that died
    with its reaper) and remove what that user left; how many processes. Run as root only."""
    if not enabled() or fcntl is None:
        return 0
    orphaned: set[int] = set()
    for pid in pids():
        orphaned |= {uid for uid in users_of(pid) if UID_BASE <= uid < UID_BASE + UID_SLOTS}
    for base in _LEFTOVER_DIRS:  # and users that left only files (a private HOME)
        owners: set[int | None] = set()
        with contextlib.suppress(OSError), os.scandir(base) as listing:
            owners = {_owner(item) for item in listing}
        orphaned |= {uid for uid in owners if uid is not None and UID_BASE <= uid < UID_BASE + UID_SLOTS}
    killed = 0
    folder = lease_dir()
    for uid in sorted(orphaned):
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live Fathom's child
            continue
        else:
            killed += kill_user(uid)
            _clear_leftovers(uid)
        finally:
            os.close(fd)
    return killed


def _lease() -> tuple[int, int]:
    assert fcntl is not None  # enabled() holds only on Linux
    folder = lease_dir()
    for slot in random.sample(range(UID_SLOTS), UID_SLOTS):
        uid = UID_BASE + slot
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return uid, fd
    raise OSError(f"all {UID_SLOTS} child users are in use")


def _clear_leftovers(uid: int) -> None:
    """Remove what ``uid`` left in ``/dev/shm``, ``/tmp`` and ``/var/tmp`` (a command's private HOME among it)."""
    for base in _LEFTOVER_DIRS:
        for path in _owned_in(Path(base), uid):
            _remove(path)


def users_of(pid: int) -> set[int]:
    """The real, effective, saved and filesystem uids of ``pid`` (empty when it is gone)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"Uid:"):
                    return {int(word) for word in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


def kill_user(uid: int) -> int:
    """SIGKILL every process running as ``uid`` (any of its uids), sweeping until none is left; how many."""
    return _kill_where(lambda pid: uid in users_of(pid))


def _kill_where(test: Any) -> int:
    killed: set[int] = set()
    me = os.getpid()
    for _ in range(_SWEEPS):
        found = [pid for pid in pids() if pid != me and pid not in killed and test(pid)]
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
    return len(killed)


def pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _owned_in(folder: Path, uid: int) -> list[Path]:
    try:
        with os.scandir(folder) as listing:
            return [Path(item.path) for item in listing if _owner(item) == uid]
    except OSError:
        return []


def _owner(item: os.DirEntry[str]) -> int | None:
    try:
        return item.stat(follow_symlinks=False).st_uid
    except OSError:
        return None


def _size(path: Path) -> int:
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        return int(info.st_blocks) * 512
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += int(os.lstat(os.path.join(top, name)).st_blocks) * 512
    return total


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()


# --- the local port's listener -------------------------------------------------------------------------


def listeners(port: int) -> list[tuple[int, int]]:
    """``(uid, socket inode)`` of every TCP socket listening on ``port`` at 127.0.0.1 or any address."""
    found: list[tuple[int, int]] = []
    wanted = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    wanted6 = {
        f"00000000000000000000000000000000:{port:04X}",
        f"0000000000000000FFFF00000100007F:{port:04X}",
        f"00000000000000000000000001000000:{port:04X}",
    }
    for table, addresses in (("/proc/net/tcp", wanted), ("/proc/net/tcp6", wanted6)):
        try:
            with open(table, encoding="ascii") as rows:
                next(rows, None)
                for row in rows:
                    words = row.split()
                    if len(words) > 9 and words[3] == "0A" and words[1].upper() in addresses:
                        found.append((int(words[7]), int(words[9])))
        except (OSError, ValueError):
            continue
    return found


def socket_inodes(pids: list[int]) -> set[int]:
    """The socket inodes open in ``pids``."""
    inodes: set[int] = set()
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for name in names:
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{name}")
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


def listener_owned(port: int, kid: Child | None, tree: list[int]) -> str | None:
    """None when whatever listens on ``port`` is the child's own (its user, or a socket open in ``tree``, the
    child's processes); else why not, in a few words."""
    found = listeners(port)
    if not found:
        return "nothing listens on its port"
    if kid is not None:
        strangers = [uid for uid, _ in found if uid != kid.uid]
        return f"another user's process (uid {strangers[0]}) listens on its port" if strangers else None
    own = socket_inodes(tree)
    if all(inode in own for _, inode in found):
        return None
    return "a process outside the package's own process tree listens on its port"


def marked(mark: str) -> list[int]:
    """Processes whose initial environment carries ``FATHOM_SCAN_MARK=<mark>``."""
    needle = f"{MARK_ENV}={mark}".encode()
    found = []
    for pid in pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                data = environ.read()
        except OSError:
            continue
        if needle + b"\0" in data or data.endswith(needle):
            found.append(pid)
    return found


# --- the reaper ----------------------------------------------------------------------------------------


class _Reaper:
    """The process that kills what Fathom started once Fathom is gone (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd = -1
        self._owner = -1

    def start(self) -> None:
        """Start the reaper of this process unless it runs."""
        self._ensure()

    def announce(self, line: str) -> None:
        """Tell the reaper of a uid (``u<uid>``) or a mark (``m<mark>``) to sweep when Fathom is gone."""
        self._ensure()
        with self._lock, contextlib.suppress(OSError):
            os.write(self._fd, f"{line}\n".encode())

    def _ensure(self) -> None:
        if not sys.platform.startswith("linux"):
            return
        with self._lock:
            if self._fd >= 0 and self._owner == os.getpid():
                return
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the reaper itself (tested through what it kills)
                try:
                    _reap(read_end)
                finally:
                    os._exit(0)
            os.close(read_end)
            self._fd, self._owner = write_end, os.getpid()


_REAPER = _Reaper()


def reaper() -> _Reaper:
    """This process's reaper (started on first use)."""
    return _REAPER


def announce_mark(mark: str) -> None:
    """Have the reaper kill processes carrying ``mark`` if Fathom dies (Linux; elsewhere nothing)."""
    _REAPER.announce(f"m{mark}")


LEASE_WAIT_S = 3.0
"""How long the reaper waits for a dead Fathom's lease: the pipe's end can close before the lease's descriptor
does while the kernel tears the process down, so a lease still locked for a moment is the dead one's."""


def _lock_soon(fd: int) -> bool:  # pragma: no cover - runs in the forked reaper
    """Lock the lease ``fd`` within :data:`LEASE_WAIT_S`; False when another Fathom keeps it."""
    for _ in range(int(LEASE_WAIT_S / 0.05)):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            time.sleep(0.05)
            continue
        return True
    return False


def _reap(fd: int) -> None:  # pragma: no cover - runs in the forked reaper
    """Only ``os`` calls here: this is a fork of a process that may have threads."""
    os.setsid()
    with contextlib.suppress(OSError):
        os.closerange(0, fd)
    with contextlib.suppress(OSError):
        os.closerange(fd + 1, 65536)
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    uids: set[int] = set()
    marks: set[bytes] = set()
    for line in data.split(b"\n"):
        if line.startswith(b"u") and line[1:].isdigit():
            uids.add(int(line[1:]))
        elif line.startswith(b"m") and len(line) > 1:
            marks.add(line[1:])
    free: set[int] = set()  # uids whose lease no live Fathom has taken since (held here while sweeping)
    if uids:
        with contextlib.suppress(OSError):
            folder = lease_dir()
            for uid in sorted(uids):
                lease = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
                if _lock_soon(lease):
                    free.add(uid)
                else:  # another Fathom holds it now: its child, not ours
                    os.close(lease)

    def ours(pid: int) -> bool:
        if free and users_of(pid) & free:
            return True
        if not marks:
            return False
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                data = environ.read()
        except OSError:
            return False
        return any(item.startswith(needle) and item[len(needle) :] in marks for item in data.split(b"\0") if item)

    needle = f"{MARK_ENV}=".encode()

    _kill_where(ours)
    for uid in free:  # and what those users left: a command's private HOME, /dev/shm files
        _clear_leftovers(uid)
