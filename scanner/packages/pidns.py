"""Start a child in a PID namespace of its own, with its own ``/proc``: it cannot see, read or signal Fathom or
any sibling (their pids do not exist in its namespace).

This file is run as a script (``python -I -S pidns.py FATHOM_PID [--hide DIR]... [--keep PATH]... --
COMMAND...``) between Fathom and every
child it starts (:func:`scanner.packages.isolation.launch`), already as the child's own user (run as root, Fathom
switches to the leased user before it starts this, as before), so it imports nothing of Fathom.
Three processes, all visible from the host's ``/proc`` with host pids (the reaper, the mark sweep and the
local-port listener check see them as before):

* the *launcher* (this script, Fathom's child): asks for SIGKILL when Fathom dies (``PR_SET_PDEATHSIG``),
  ``unshare``-s a new PID, mount and IPC namespace (SysV shared memory, semaphores and message queues of its
  own, gone with it), and with ``--net`` a network namespace holding only its own ``lo`` (:func:`loopback_up`:
  nothing listening on the host's loopback, no abstract unix socket of the host's or a sibling's, no route
  out), inside a new user namespace that maps only its own uid and gid (to themselves) unless it holds
  ``CAP_SYS_ADMIN`` (a library caller run as root that kept its capabilities;
  every ``fathom`` process run as root empties its bounding set first, see :mod:`scanner.envguard`, so its
  children hold none), forks the *init*, forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to it, and exits as the
  command did (its exit code, or killed by the same signal);
* the *init*, PID 1 of the new namespace: makes every mount private, mounts a fresh ``/proc`` (the host's is
  under it, out of reach) and a ``/dev`` of the child's own (:func:`private_dev`: null, zero, full, random,
  urandom, tty, a fresh ``devpts``, the host's ``/dev/shm``; never the host's terminals), covers each
  ``--hide DIR`` with an empty tmpfs (mode 0700, 64 KiB) and binds back
  each ``--keep PATH`` beneath it at its own path (a package's own HOME and package folder; its siblings' are
  gone from its view, its own paths unchanged, Landlock's rules in :mod:`scanner.packages.confine` opened on
  them as before), asks for SIGKILL when the launcher dies, empties the capability bounding set, sets
  ``no_new_privs``, then forks the command and reaps every orphan until the command exits; then it exits, and
  the kernel kills whatever is left in the namespace;
* the *command*: ``exec``-ed as a non-zero uid (or as root without capabilities) with an empty bounding set
  and ``no_new_privs``, it holds no capability, so it cannot unmount its ``/proc`` to reveal the host's.

``--probe [--hide DIR]`` sets up the same namespaces (and hides ``DIR``) and exits 0 when all of it works, else
126 with the reason on stderr (:func:`scanner.packages.isolation.namespaces` runs it once per process).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import struct
import sys
from typing import Any

_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWIPC = 0x00020000, 0x10000000, 0x20000000, 0x08000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 8, 4096, 0x4000, 1 << 18
_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 24, 38
_CAP_SYS_ADMIN = 21
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
NOT_STARTED = 126  # the namespace could not be set up (the reason is on stderr)


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _die_with_parent(libc: Any) -> None:
    _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def _can_mount() -> bool:
    """Whether this process holds ``CAP_SYS_ADMIN`` (root, unless its bounding set was emptied before exec)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> _CAP_SYS_ADMIN & 1)
    except (OSError, ValueError):
        pass
    return False


def enter(libc: Any, net: bool = False) -> bool:
    """Unshare a new PID, mount and IPC namespace (and network namespace when ``net``): directly when this
    process may mount, else inside a new user namespace that maps only this process's uid and gid (to
    themselves). Root without capabilities (every
    child of a ``fathom`` run as root that runs as root itself: ``check --stdio``'s server, a command out of the
    children's users' reach) may not map uid 0 (Linux 5.12+ asks for ``CAP_SETFCAP``): its user namespace is
    left *unmapped*: it stays root on the host for every file it touches (kuid 0, no capability), shown as
    ``nobody`` inside, and its namespaces end with it as every child's do. Whether uid and gid are mapped."""
    uid, gid = os.geteuid(), os.getegid()
    direct = uid == 0 and _can_mount()
    flags = _CLONE_NEWPID | _CLONE_NEWNS | _CLONE_NEWIPC | (0 if direct else _CLONE_NEWUSER)
    flags |= _CLONE_NEWNET if net else 0
    _check(libc.unshare(flags), "unshare")
    if direct:
        return True
    if uid == 0:
        return False
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
            handle.write(text)
    return True


def hide(libc: Any, hidden: list[str], kept: list[str]) -> None:
    """Cover each folder of ``hidden`` with an empty tmpfs (mode 0700), then bind back at their own paths the
    entries of ``kept`` beneath it (the child's own HOME and package folder): a sibling's are gone from this
    namespace, the child's own paths do not change. A ``kept`` path is opened before its folder is covered and
    bound from that descriptor (``/proc/self/fd/N``, the fresh ``/proc``)."""
    held: list[tuple[str, int]] = []
    try:
        for path in kept:
            held.append((path, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
        for folder in hidden:
            options = b"mode=0700,size=64k,nr_inodes=256"
            _check(libc.mount(b"fathom-hidden", folder.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options),
                   f"hiding {folder}")  # fmt: skip
        for path, fd in held:
            os.makedirs(path, mode=0o700, exist_ok=True)
            source = f"/proc/self/fd/{fd}".encode()
            _check(libc.mount(source, path.encode(), None, _MS_BIND | _MS_REC, None), f"keeping {path}")
    finally:
        for _, fd in held:
            os.close(fd)


def loopback_up() -> None:
    """Bring up ``lo`` in a fresh network namespace (``SIOCSIFFLAGS`` on a socket, no ``ip`` needed): the
    child's own 127.0.0.1 works (a server that talks to itself over loopback), the host's is not there, and no
    other interface exists (no route anywhere: ``Network is unreachable``). Abstract unix sockets are per network
    namespace too, so the host's and siblings' are gone."""
    import fcntl
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock.fileno(), _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
"""The host's device nodes a child's own ``/dev`` holds (bound from the host's, as bubblewrap's ``--dev``)."""


def fresh_terminals(libc: Any) -> None:
    """Only a fresh ``devpts`` instance over ``/dev/pts`` (the ``/dev`` of a child whose user namespace is
    unmapped, :func:`enter`: no file can be made in a tmpfs of its own there): the host's terminals are gone,
    its other devices stay (root without capabilities could open those before)."""
    pts = b"newinstance,ptmxmode=0666,mode=0620"
    _check(libc.mount(b"devpts", b"/dev/pts", b"devpts", _MS_NOSUID | _MS_NOEXEC, pts), "a devpts of its own")


def private_dev(libc: Any) -> None:
    """A ``/dev`` of the child's own: an empty tmpfs holding only :data:`DEVICES` (bound from the host's), a
    fresh ``devpts`` instance (``newinstance``: none of the host's terminals; none at all where the kernel
    refuses one), the host's ``/dev/shm`` (counted in a package's budget as before) and the usual links. The
    host's ``/dev/pts/N`` (the user's other terminals: a ``sudo`` prompt was read there) are not there."""
    held: list[tuple[str, int]] = []
    try:
        for name in (*DEVICES, "shm"):
            with contextlib.suppress(OSError):
                held.append((name, os.open(f"/dev/{name}", os.O_PATH | os.O_CLOEXEC)))
        options = b"mode=0755,size=64k,nr_inodes=64"
        _check(libc.mount(b"fathom-dev", b"/dev", b"tmpfs", _MS_NOSUID | _MS_NOEXEC, options), "a /dev of its own")
        for name, fd in held:
            path = f"/dev/{name}"
            if name == "shm":
                os.mkdir(path, 0o1777)
            else:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o666))
            source = f"/proc/self/fd/{fd}".encode()
            _check(libc.mount(source, path.encode(), None, _MS_BIND, None), f"binding {path}")
        os.mkdir("/dev/pts", 0o755)
        pts = b"newinstance,ptmxmode=0666,mode=0620"
        if libc.mount(b"devpts", b"/dev/pts", b"devpts", _MS_NOSUID | _MS_NOEXEC, pts) == 0:
            os.symlink("pts/ptmx", "/dev/ptmx")
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):  # fmt: skip
            os.symlink(target, f"/dev/{name}")
    finally:
        for _, fd in held:
            os.close(fd)


def settle(libc: Any, hidden: list[str] | None = None, kept: list[str] | None = None, mapped: bool = True) -> None:
    """In the init: a private ``/proc`` and ``/dev`` (only fresh terminals where ``mapped`` is false), siblings'
    folders hidden (:func:`hide`), and no capability left to anything it starts."""
    try:
        here: str | None = os.getcwd()
    except OSError:
        here = None
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "making mounts private")
    _check(libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None), "mounting /proc")
    if mapped:
        private_dev(libc)
    else:
        fresh_terminals(libc)
    if hidden:
        hide(libc, hidden, kept or [])
        if here is not None:  # the child's own folder (its HOME), bound back at its own path
            with contextlib.suppress(OSError):
                os.chdir(here)
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        _check(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), "prctl(PR_CAPBSET_DROP)")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _die_with_parent(libc)


def cap_processes(most: int) -> None:
    """At most ``most`` processes and threads of this user in this namespace (``RLIMIT_NPROC``; the kernel
    counts it per user and user namespace, so a leased user's, or the user namespace's own, not the host
    user's other processes): a fork or thread beyond it fails with ``EAGAIN``. Not enforced for root in the
    host's user namespace (the kernel exempts it), the case where no user namespace is made."""
    import resource

    resource.setrlimit(resource.RLIMIT_NPROC, (most, most))


def _let_go(null: int | None = None) -> None:
    """Hand the child's stdin and stdout back to /dev/null here: only the command holds them, so Fathom reads
    the end of its output when the command closes it, not when the launcher exits. ``null``: /dev/null opened
    before the init was forked (it shares the launcher's mount namespace and lays its own ``/dev`` there)."""
    null = os.open(os.devnull, os.O_RDWR) if null is None else null
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _exit_as(status: int) -> None:
    """Exit as a process with wait status ``status`` did: its code, or killed by its signal."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        os._exit(128 - code)
    os._exit(code)


def _init(
    libc: Any,
    command: list[str],
    status_w: int,
    alive_r: int,
    hidden: list[str],
    kept: list[str],
    nproc: int = 0,
    mapped: bool = True,
) -> None:
    """PID 1 of the new namespace (never returns)."""
    try:
        settle(libc, hidden, kept, mapped)
        if nproc > 0:
            cap_processes(nproc)
        if select.select([alive_r], [], [], 0)[0]:  # the launcher died before PR_SET_PDEATHSIG took effect
            os._exit(137)
    except OSError as exc:
        print(f"fathom: cannot start {command[0] if command else 'a child'} in a namespace of its own: {exc}",
              file=sys.stderr, flush=True)  # fmt: skip
        os._exit(NOT_STARTED)
    if not command:  # the probe
        os._exit(0 if os.getpid() == 1 and os.readlink("/proc/self") == "1" else 1)
    child = -1

    def forward(signum: int, _frame: object) -> None:
        if child > 0:
            with contextlib.suppress(OSError):
                os.kill(child, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    child = os.fork()
    if child == 0:
        try:
            for signum in (*_FORWARDED, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(signum, signal.SIG_DFL)
            os.execvp(command[0], command)
        except OSError as exc:
            print(f"fathom: cannot start {command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        os._exit(127)
    _let_go()
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            with contextlib.suppress(OSError):
                os.write(status_w, struct.pack("i", status))
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def _options(words: list[str]) -> tuple[list[str], list[str], int, list[str]]:
    """``[--net] [--hide DIR | --keep PATH | --nproc N]... -- COMMAND...``: the folders to hide, the paths to
    keep, the cap on processes (0: none), the command (``--net`` is read by :func:`main`)."""
    hidden: list[str] = []
    kept: list[str] = []
    nproc = 0
    at = 0
    while at < len(words) and words[at] == "--net":
        at += 1
    while at < len(words) and words[at] != "--":
        if words[at] not in ("--hide", "--keep", "--nproc") or at + 1 >= len(words):
            raise SystemExit(f"fathom: namespace launcher: unexpected argument {words[at]!r}")
        if words[at] == "--nproc":
            nproc = int(words[at + 1])
        else:
            (hidden if words[at] == "--hide" else kept).append(words[at + 1])
        at += 2
    return hidden, kept, nproc, words[at + 1 :]


def main(argv: list[str]) -> None:
    """``FATHOM_PID [--net] [--hide DIR]... [--keep PATH]... -- COMMAND...`` or ``--probe [--net] [--hide DIR]...``
    (``--net``: a network namespace of its own too, with only ``lo``, brought up)."""
    probe = argv[:1] == ["--probe"]
    net = argv[1:2] == ["--net"]
    hidden, kept, nproc, command = _options(argv[1:] + ([] if not probe else ["--"]))
    if probe:
        command = []
    parent = os.getppid() if probe else int(argv[0])
    libc = _libc()
    try:
        _die_with_parent(libc)
        if os.getppid() != parent:  # Fathom died before the request took effect (it may be PID 1 itself)
            os._exit(137)
        mapped = enter(libc, net)
        if net:
            loopback_up()
    except OSError as exc:
        what = command[0] if command else "a child"
        print(f"fathom: cannot start {what} in a namespace of its own: {exc}", file=sys.stderr, flush=True)
        os._exit(NOT_STARTED)
    status_r, status_w = os.pipe()
    alive_r, alive_w = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)  # now: the init's /dev of its own is an empty tmpfs for a moment
    init = os.fork()
    if init == 0:
        os.close(null)
        os.close(status_r)
        os.close(alive_w)
        _init(libc, command, status_w, alive_r, hidden, kept, nproc, mapped)
    os.close(status_w)
    os.close(alive_r)
    _let_go(null)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(init, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    _, status = os.waitpid(init, 0)
    data = os.read(status_r, 4)
    _exit_as(struct.unpack("i", data)[0] if len(data) == 4 else status)


if __name__ == "__main__":
    main(sys.argv[1:])
