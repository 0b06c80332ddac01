"""Nothing outlives Fathom: the reaper, and the marks it kills by.

The first child a Fathom process starts also starts a *reaper* (a fork of Fathom in its own session, holding
only the read end of a pipe). Fathom tells it each leased uid (:mod:`scanner.confine.users`) and each child's
``FATHOM_SCAN_MARK``; when the pipe's other end closes (Fathom exited or was killed, even by SIGKILL), the
reaper kills every process running as those uids (whose lease no live Fathom has taken since) and every
process carrying those marks, removes what those users left (a command's private HOME, ``/dev/shm`` files),
then exits. Packages' wrapper (:mod:`scanner.confine.landlock`) and the namespace launcher
(:mod:`scanner.confine.launcher`) also ask for ``SIGKILL`` when their parent dies (``PR_SET_PDEATHSIG``).

Not root, children run as Fathom's own user: the reaper still kills marked processes when Fathom dies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from scanner.confine.users import clear_leftovers, kill_where, lease_dir, pids, users_of

try:
    import fcntl
except ImportError:  # Windows: no leases (the reaper starts on Linux only)
    fcntl = None  # type: ignore[assignment]

MARK_ENV = "FATHOM_SCAN_MARK"


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

    kill_where(ours)
    for uid in free:  # and what those users left: a command's private HOME, /dev/shm files
        clear_leftovers(uid)
