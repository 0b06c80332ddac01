"""The children's own users: run as root, each child runs as a user of its own, leased for its run.

**Run as root (Linux)**, every registry package and every ``--run-commands`` command runs under a user and
group of its own, leased for its run from a high range (:data:`UID_BASE` + 0..:data:`UID_SLOTS`), with no
supplementary groups, ``umask 077`` and (for packages) a private HOME and TMPDIR owned by that user, mode 0700.
The kernel then refuses what one child tried against another in the attack passes:

* reading a sibling's ``/proc/<pid>/environ`` or ``mem``, or attaching to it (another user, no capabilities);
* signalling Fathom (``SIGSTOP`` froze a scan) or a sibling (``kill`` needs the same user);
* reading a sibling's HOME or package folder (mode 0700, another owner); writing another package's install;
* answering for a sibling's local port unnoticed: a listener is trusted only when it is the child's own
  (:func:`scanner.confine.listeners.listener_owned`).

A lease is an exclusive ``flock`` on a file named after the uid in :func:`lease_dir`, held while the child
runs: two Fathom processes on one host never share a uid, and a uid whose lease is free has no live owner.
Before a Fathom process starts its first child, every process running as a child user whose lease is free is
killed (:func:`sweep_orphans`: left by a Fathom killed together with its reaper); before a uid is handed out,
every process still running as it is killed; as the lease ends, again, and what the user left in
``/dev/shm``, ``/tmp`` and ``/var/tmp`` is removed (:func:`scanner.confine.child` holds a lease for one run,
and tells the reaper, :mod:`scanner.confine.reaper`, of its uid).

**Not root**: children run as Fathom's own user (no other is available without privileges, :func:`enabled` is
false); what keeps them apart then is their namespaces (:mod:`scanner.confine.spawn`).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Callable
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


def spawn_options() -> dict[str, Any]:
    """The user options of the child being started now (:data:`CURRENT`), none when it runs as Fathom's user."""
    kid = CURRENT.get()
    return kid.spawn_options() if kid is not None else {}


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """``chown -R`` without following links."""
    os.chown(path, uid, gid, follow_symlinks=False)
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)


def sweep_orphans() -> int:
    """Kill every process running as a child user whose lease no live Fathom holds (left by a Fathom that died
    with its reaper) and remove what that user left; how many processes. Run as root only."""
    if not enabled() or fcntl is None:
        return 0
    orphaned: set[int] = set()
    for pid in pids():
        orphaned |= {uid for uid in users_of(pid) if UID_BASE <= uid < UID_BASE + UID_SLOTS}
    for base in leftover_dirs():  # and users that left only files (a private HOME)
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
            clear_leftovers(uid)
        finally:
            os.close(fd)
    return killed


def lease() -> tuple[int, int]:
    """A free child uid and the descriptor holding its lease (closing it ends the lease)."""
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


def leftover_dirs() -> tuple[str, ...]:
    """Where a child's user may leave files: :data:`_LEFTOVER_DIRS` and this process's temporary folder
    (``$TMPDIR``, where a command's private HOME is made)."""
    return tuple(dict.fromkeys((*_LEFTOVER_DIRS, tempfile.gettempdir())))


def clear_leftovers(uid: int) -> None:
    """Remove what ``uid`` left in ``/dev/shm``, ``/tmp``, ``/var/tmp`` and this process's temporary folder
    (``$TMPDIR``, where a command's private HOME is made: a Fathom killed during the run left it there)."""
    for base in leftover_dirs():
        for path in _owned_in(Path(base), uid):
            remove(path)


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
    return kill_where(lambda pid: uid in users_of(pid))


def kill_where(test: Callable[[int], bool]) -> int:
    """SIGKILL every process (but this one) for which ``test(pid)`` holds, sweeping until none is left; how many."""
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
    """Every process id in this process's ``/proc``."""
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


def remove(path: Path) -> None:
    """Remove ``path`` (a folder with everything in it), never following a link; errors ignored."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
