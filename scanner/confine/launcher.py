"""Start a child in a PID namespace of its own, with its own ``/proc``: it cannot see, read or signal Fathom or
any sibling (their pids do not exist in its namespace).

This file is run as a script (``python -I -S launcher.py FATHOM_PID [--hide DIR]... [--keep PATH]... --
COMMAND...``) between Fathom and every
child it starts (:func:`scanner.confine.spawn.launch`), already as the child's own user (run as root, Fathom
switches to the leased user before it starts this, as before), so it imports nothing of Fathom.
Three processes, all visible from the host's ``/proc`` with host pids (the reaper, the mark sweep and the
local-port listener check see them as before):

* the *launcher* (this script, Fathom's child): asks for SIGKILL when Fathom dies (``PR_SET_PDEATHSIG``),
  ``unshare``-s a new PID, mount and IPC namespace (SysV shared memory, semaphores and message queues of its
  own, gone with it), and with ``--net`` a network namespace holding only its own ``lo`` (:func:`loopback_up`:
  nothing listening on the host's loopback, no abstract unix socket of the host's or a sibling's, no route
  out; with ``--outbound PROGRAM`` too, a route out through a user-mode network stack, :func:`stack_fork`,
  never to the host's loopback), inside a new user namespace that maps only its own uid and gid (to themselves)
  unless it holds
  ``CAP_SYS_ADMIN`` (a library caller run as root that kept its capabilities;
  every ``fathom`` process run as root empties its bounding set first, see :mod:`scanner.envguard`, so its
  children hold none), forks the *init*, forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to it, and exits as the
  command did (its exit code, or killed by the same signal);
* the *init*, PID 1 of the new namespace: makes every mount private, mounts a fresh ``/proc`` (the host's is
  under it, out of reach) and a ``/dev`` of the child's own (:func:`private_dev`: null, zero, full, random,
  urandom, tty, a fresh ``devpts``, the host's ``/dev/shm``; never the host's terminals), covers each
  ``--hide DIR`` with an empty tmpfs (mode 0700, 64 KiB) and binds back
  each ``--keep PATH`` beneath it at its own path (a package's own HOME and package folder; its siblings' are
  gone from its view, its own paths unchanged, Landlock's rules in :mod:`scanner.confine.landlock` opened on
  them as before), asks for SIGKILL when the launcher dies, empties the capability bounding set, sets
  ``no_new_privs``, then forks the command and reaps every orphan until the command exits; then it exits, and
  the kernel kills whatever is left in the namespace;
* the *command*: ``exec``-ed as a non-zero uid (or as root without capabilities) with an empty bounding set
  and ``no_new_privs``, it holds no capability, so it cannot unmount its ``/proc`` to reveal the host's.

``--relay FD`` (only with ``--net``): ``FD`` is Fathom's socket to this launcher (:func:`serve_relay`): Fathom asks
there for a connection to a port of the child's own loopback (a local-port package's server) and gets it made
here, inside the child's network namespace; nothing of the child's listens on the host's loopback.

``--probe [--hide DIR]`` sets up the same namespaces (and hides ``DIR``) and exits 0 when all of it works, else
126 with the reason on stderr (:func:`scanner.confine.spawn.namespaces` runs it once per process).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import signal
import struct
import sys
import time
from typing import Any, NamedTuple

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


RELAY_REQUEST = struct.Struct("!IH")
"""A request on the relay socket: its number and the port to connect to on the namespace's 127.0.0.1."""
RELAY_REPLY = struct.Struct("!Ii")
"""The answer: the request's number and 0 with the connected socket attached (``SCM_RIGHTS``), or an errno."""
RELAY_CONNECT_S = 5.0
"""How long the launcher waits for one connect (a loopback connect is at once, unless the listen backlog is full)."""


def relay_option(words: list[str]) -> tuple[int, list[str]]:
    """``--relay FD`` taken out of the launcher's options (before ``--``): the descriptor (-1: none), the rest."""
    end = words.index("--") if "--" in words else len(words)
    for at in range(end - 1):
        if words[at] == "--relay":
            return int(words[at + 1]), words[:at] + words[at + 2 :]
    return -1, words


def serve_relay(fd: int, init: int) -> int:
    """Answer Fathom's requests on ``fd`` (its ``SOCK_SEQPACKET`` socket to this launcher) inside the child's
    network namespace until the init exits (then reap it: its wait status). Each :data:`RELAY_REQUEST` is
    answered with a socket connected to the namespace's 127.0.0.1 at that port, or the connect's errno
    (:data:`RELAY_REPLY`). Served by the launcher's own loop, not a thread: after ``unshare(CLONE_NEWPID)`` the
    kernel refuses a new thread (``EINVAL``), and a forked helper would be inside the child's PID namespace,
    within its reach. The launcher is not (no pid the child can signal or trace), so only Fathom talks here."""
    import errno
    import socket

    control = socket.socket(fileno=fd)
    try:
        exited: int | None = os.pidfd_open(init)
    except (AttributeError, OSError):  # before Linux 5.3: look at the init between requests
        exited = None
    while True:
        watched: list[Any] = [control] if exited is None else [control, exited]
        ready = select.select(watched, [], [], None if exited is not None else 0.2)[0]
        if exited is None:
            pid, status = os.waitpid(init, os.WNOHANG)
            if pid == init:
                return status
        elif exited in ready:
            break
        if control not in ready:
            continue
        try:
            data = control.recv(64)
        except OSError:
            data = b""
        if len(data) != RELAY_REQUEST.size:  # Fathom closed its end (or sent what it never sends)
            break
        number, port = RELAY_REQUEST.unpack(data)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as conn:
            conn.settimeout(RELAY_CONNECT_S)
            try:
                conn.connect(("127.0.0.1", port))
            except OSError as exc:
                reply, fds = RELAY_REPLY.pack(number, exc.errno or errno.ETIMEDOUT), []
            else:
                reply, fds = RELAY_REPLY.pack(number, 0), [conn.fileno()]
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []
            with contextlib.suppress(OSError):  # sendmsg, not send_fds (3.9+): the children's Python may be older
                control.sendmsg([reply], rights)
    control.close()
    return os.waitpid(init, 0)[1]


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


STACK_READY_S = 10.0
"""How long the launcher waits for the user-mode network stack to say it is ready (it takes about 20 ms)."""


class Stack(NamedTuple):
    """The helper of :func:`stack_fork` and the launcher's ends of its pipes."""

    program: str
    helper: int
    go: int
    ready: int
    log: int
    exit: int


def stack_fork(program: str) -> Stack:
    """Fork the helper that gives the network namespace a route out (``--outbound PROGRAM``, slirp4netns), before
    the launcher unshares: the helper stays in the host's namespaces, asks for SIGKILL when the launcher dies, and
    waits for :func:`stack_up`. Then it ``exec``-s ``PROGRAM --configure --mtu=65520 --disable-host-loopback
    --disable-dns --ready-fd=R --exit-fd=E [--userns-path=/proc/LAUNCHER/ns/user] LAUNCHER tap0``: a ``tap0`` with
    10.0.2.100 and a default route through 10.0.2.2, whose connections slirp4netns makes from the host as this
    user, except to the host's 127.0.0.1 (``--disable-host-loopback``: refused) and to its built-in DNS forwarder
    (``--disable-dns``: 10.0.2.3 would map to the host's resolver, which may listen on its loopback); the child
    asks the host's ``/etc/resolv.conf`` servers itself. The stack exits when the launcher does (``--exit-fd``: the
    launcher holds the pipe's other end; and ``PR_SET_PDEATHSIG``). Its stdout is ``/dev/null``, its stderr a
    memory file read only when it fails."""
    launcher = os.getpid()
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    exit_r, exit_w = os.pipe()  # exit_w stays open in the launcher (close-on-exec: not in the command) to its end
    log = os.memfd_create("fathom-network-stack", os.MFD_CLOEXEC)
    helper = os.fork()
    if helper == 0:
        try:
            os.close(go_w)
            os.close(ready_r)
            os.close(exit_w)
            _die_with_parent(_libc())
            word = os.read(go_r, 1) if os.getppid() == launcher else b""
            if word not in (b"u", b"n"):  # the launcher gave up (or died) before its namespaces were made
                os._exit(0)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.dup2(log, 2)
            os.set_inheritable(ready_w, True)
            os.set_inheritable(exit_r, True)
            low = 3  # nothing else of the launcher's (Fathom's relay socket: inheritable) reaches the stack
            for fd in sorted((ready_w, exit_r)):
                os.closerange(low, fd)
                low = fd + 1
            os.closerange(low, 65536)
            argv = [program, "--configure", "--mtu=65520", "--disable-host-loopback", "--disable-dns"]
            argv += [f"--ready-fd={ready_w}", f"--exit-fd={exit_r}"]
            argv += [f"--userns-path=/proc/{launcher}/ns/user"] if word == b"u" else []
            os.execv(program, [*argv, str(launcher), "tap0"])
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.write(2, f"cannot start {program}: {exc.strerror}\n".encode())
        os._exit(127)
    os.close(go_r)
    os.close(ready_w)
    os.close(exit_r)
    return Stack(program, helper, go_w, ready_r, log, exit_w)


def stack_up(stack: Stack, own_userns: bool) -> None:
    """Once the launcher is in its namespaces: let the helper of :func:`stack_fork` start the stack (joining the
    launcher's user namespace when it made one), and wait for it to be ready (:data:`STACK_READY_S`). OSError
    with the stack's last word when it is not: the child is not started without the network it was promised."""
    go_w, ready_r, log = stack.go, stack.ready, stack.log
    try:
        os.write(go_w, b"u" if own_userns else b"n")
        os.close(go_w)
        ready = select.select([ready_r], [], [], STACK_READY_S)[0]
        said = os.read(ready_r, 1) if ready else b""
    finally:
        os.close(ready_r)
    if said == b"1":
        os.close(log)
        return
    status = stack_down(stack, 0.0)
    size = os.fstat(log).st_size
    text = os.pread(log, 4096, max(0, size - 4096)).decode("utf-8", "replace")
    os.close(log)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    ended = f"it exited with code {os.waitstatus_to_exitcode(status)}" if ready and status is not None else ""
    reason = lines[-1][:300] if lines else ended or f"not ready within {STACK_READY_S:g} s"
    raise OSError(errno.ENETDOWN, f"{os.path.basename(stack.program)}, the network stack, did not start: {reason}")


def stack_down(stack: Stack, wait_s: float = 2.0) -> int | None:
    """End the stack (it exits on its ``--exit-fd``; SIGKILL after ``wait_s``) and reap it, so that no stack is
    left behind even as a zombie where nothing reaps orphans. Its wait status (None: already reaped)."""
    with contextlib.suppress(OSError):
        os.close(stack.exit)
    for _ in range(int(wait_s / 0.01)):
        try:
            pid, status = os.waitpid(stack.helper, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid:
            return status
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        os.kill(stack.helper, signal.SIGKILL)
    try:
        return os.waitpid(stack.helper, 0)[1]
    except ChildProcessError:
        return None


def _let_go(null: int = -1) -> None:
    """Hand the child's stdin and stdout back to /dev/null here: only the command holds them, so Fathom reads
    the end of its output when the command closes it, not when the launcher exits. ``null``: ``/dev/null``
    opened before the init forked (the launcher shares its mount namespace, and the init covers ``/dev`` with
    an empty tmpfs before it binds ``null`` there: opened then, it is not there)."""
    null = os.open(os.devnull, os.O_RDWR) if null < 0 else null
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


def _outbound(argv: list[str]) -> tuple[str | None, list[str]]:
    """``--outbound PROGRAM`` (right after ``--net``) taken out of ``argv``: the user-mode network stack to start
    (:func:`stack_fork`), or None."""
    if argv[1:3] == ["--net", "--outbound"] and len(argv) > 3:
        return argv[3], argv[:2] + argv[4:]
    return None, argv


def main(argv: list[str]) -> None:
    """``FATHOM_PID [--net [--outbound PROGRAM] [--relay FD]] [--hide DIR]... [--keep PATH]... -- COMMAND...`` or
    ``--probe [--net [--outbound PROGRAM]] [--hide DIR]...`` (``--net``: a network namespace of its own too, with
    only ``lo``, brought up; ``--outbound``: and a route out through ``PROGRAM``, slirp4netns, :func:`stack_fork`;
    ``--relay``: Fathom's connections into it, :func:`serve_relay`)."""
    outbound, argv = _outbound(argv)
    relay, argv = relay_option(argv)
    probe = argv[:1] == ["--probe"]
    net = argv[1:2] == ["--net"]
    if relay >= 0 and not net:
        raise SystemExit("fathom: namespace launcher: --relay needs --net")
    hidden, kept, nproc, command = _options(argv[1:] + ([] if not probe else ["--"]))
    if probe:
        command = []
    parent = os.getppid() if probe else int(argv[0])
    libc = _libc()
    try:
        _die_with_parent(libc)
        if os.getppid() != parent:  # Fathom died before the request took effect (it may be PID 1 itself)
            os._exit(137)
        own_userns = not (os.geteuid() == 0 and _can_mount())  # as enter() decides (read before it unshares)
        stack = stack_fork(outbound) if net and outbound else None
        mapped = enter(libc, net)
        if net:
            loopback_up()
        if stack is not None:
            stack_up(stack, own_userns)
    except OSError as exc:
        what = command[0] if command else "a child"
        print(f"fathom: cannot start {what} in a namespace of its own: {exc}", file=sys.stderr, flush=True)
        os._exit(NOT_STARTED)
    status_r, status_w = os.pipe()
    alive_r, alive_w = os.pipe()
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    init = os.fork()
    if init == 0:
        os.close(null)
        os.close(status_r)
        os.close(alive_w)
        if relay >= 0:  # Fathom's socket: never the child's
            os.close(relay)
        _init(libc, command, status_w, alive_r, hidden, kept, nproc, mapped)
    os.close(status_w)
    os.close(alive_r)
    _let_go(null)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(init, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    status = serve_relay(relay, init) if relay >= 0 else os.waitpid(init, 0)[1]
    data = os.read(status_r, 4)
    if stack is not None:
        stack_down(stack)
    _exit_as(struct.unpack("i", data)[0] if len(data) == 4 else status)


if __name__ == "__main__":
    main(sys.argv[1:])
