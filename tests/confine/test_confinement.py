"""A child reaches only what it was given (issue 42): its own ``/dev`` (never the host's terminals), its own
SysV IPC, a capped number of processes.

Each child is started the way Fathom starts one (:func:`scanner.confine.start`, the namespace launcher
:mod:`scanner.confine.launcher`): run as root, as a leased user of its own (:func:`confine.child`), and, to try
Fathom run as an ordinary user, the launcher run as ``nobody`` through ``su`` (as tests/confine/test_launcher.py
does); not root, as this user. Where the kernel refuses the namespaces the tests skip and say why.
"""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scanner import confine
from scanner.confine import spawn
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages.diagnose import NO_NETWORK, classify
from scanner.report.census import fault

HOLDS, WHY = confine.namespaces()
needs_namespaces = pytest.mark.skipif(not HOLDS, reason=f"the kernel refuses them here: {WHY}")
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists()), None)
_IPC_CREAT, _IPC_RMID = 0o1000, 0

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
_LIBC.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]

# What an attacking child tries (system python, no imports of Fathom); one JSON line of what it got.
PROBE = textwrap.dedent(
    r"""
    import ctypes, errno, json, os, sys

    out = {}
    try:
        fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
    except OSError as exc:
        out["terminal"] = errno.errorcode.get(exc.errno, str(exc.errno))
    else:
        os.write(fd, b"written by a child\r\n")
        os.close(fd)
        out["terminal"] = "opened"
    out["host_terminals"] = sorted(name for name in os.listdir("/dev/pts") if name.isdigit())
    with open("/dev/null", "wb") as null, open("/dev/urandom", "rb") as random:
        out["devices"] = null.write(b"x") == 1 and len(random.read(8)) == 8
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    out["host_segment"] = "seen" if libc.shmget(int(sys.argv[2]), 0, 0) >= 0 else "absent"
    out["own_segment"] = libc.shmget(int(sys.argv[3]), 4096, 0o1000 | 0o600) >= 0
    print(json.dumps(out))
    """
)


def _run_as(
    who: str, tmp_path: Path, *args: str, probe: str = PROBE, network: bool = True
) -> subprocess.CompletedProcess[str]:
    """The probe started as Fathom starts a child: ``leased`` (root: a user of its own), ``nobody`` (root
    trying Fathom as an ordinary user: the launcher run as nobody), ``self`` (not root); ``network=False`` as
    a stdio child's run (a network namespace of its own)."""
    assert SYSTEM_PYTHON is not None
    script = tmp_path / "probe.py"
    script.write_text(probe, encoding="utf-8")
    script.chmod(0o644)
    tmp_path.chmod(0o755)
    command = [SYSTEM_PYTHON, "-I", str(script), *args]
    if who == "nobody":
        launcher = tmp_path / "launcher.py"
        shutil.copy(spawn.PIDNS, launcher)
        launcher.chmod(0o644)
        line = shlex.join([SYSTEM_PYTHON, "-I", "-S", str(launcher)])
        return subprocess.run(
            [
                "su",
                "nobody",
                "-s",
                "/bin/sh",
                "-c",
                f'cd / && exec {line} "$PPID" {_net_words(network)}--nproc {confine.MAX_PROCESSES} -- '
                + shlex.join(command),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    env = {"PATH": os.defpath, "HOME": str(tmp_path)}
    with confine.child(private_home=True) if who == "leased" else _nothing() as kid:
        if kid is not None and kid.home is not None:
            env["HOME"] = str(kid.home)
        with _nothing() if network else confine.room(offline=True):  # as a stdio run: a route out where there is one
            argv, options = confine.start(command, env, network=network)
        assert argv != command, "the child was not started through the namespace launcher"
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env, **options)


def _net_words(network: bool) -> str:
    """The launcher's network words as :func:`confine.start` gives them: ``--net`` for a network of its own,
    with ``--outbound PROGRAM`` where :func:`confine.outbound` holds (the stack is not hidden)."""
    if network:
        return ""
    stack = confine.network_stack()[0] if confine.outbound()[0] else None
    return "--net " + (f"--outbound {shlex.quote(stack)} " if stack else "")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


@pytest.fixture(params=["leased", "nobody", "self"])
def who(request: pytest.FixtureRequest) -> str:
    root = os.geteuid() == 0
    if request.param == "self" and root:
        pytest.skip("run as root, children run as leased users (and nobody tries an ordinary user)")
    if request.param != "self" and not root:
        pytest.skip("needs root (a leased user of its own, or su to nobody)")
    if request.param == "nobody" and (shutil.which("su") is None or SYSTEM_PYTHON is None):
        pytest.skip("no su or system python3 to become nobody")
    return str(request.param)


@pytest.fixture
def host_terminal() -> Iterator[str]:
    """A terminal of the host's (``/dev/pts/N``, as the user's other terminal with a ``sudo`` prompt), open to
    every user (0666) so that only the child's own ``/dev`` keeps it out."""
    leader, follower = os.openpty()
    name = os.ttyname(follower)
    os.chmod(name, 0o666)
    try:
        yield name
    finally:
        os.close(leader)
        os.close(follower)


@pytest.fixture
def host_segment() -> Iterator[int]:
    """A SysV shared-memory segment of the host's, open to every user."""
    key = 0x46A70000 + os.getpid() % 0xFFFF
    segment = _LIBC.shmget(key, 4096, _IPC_CREAT | 0o666)
    if segment < 0:
        pytest.skip(f"no SysV shared memory here: {os.strerror(ctypes.get_errno())}")
    try:
        yield key
    finally:
        _LIBC.shmctl(segment, _IPC_RMID, None)


@needs_namespaces
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3")
def test_a_child_sees_only_its_own_devices_and_ipc(who, tmp_path, host_terminal, host_segment):
    """The child cannot open the host's terminal (it read a ``sudo`` prompt typed there), sees none of the
    host's ``/dev/pts`` (a fresh devpts instance), still has ``/dev/null`` and ``/dev/urandom``; it does not
    see the host's SysV segment, and the one it made does not outlive it (an IPC namespace of its own)."""
    own_key = host_segment + 1
    done = _run_as(who, tmp_path, host_terminal, str(host_segment), str(own_key))
    assert done.returncode == 0, (done.stdout, done.stderr)
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["terminal"] == "ENOENT", got
    assert got["host_terminals"] == [], got
    assert got["devices"] is True
    assert got["host_segment"] == "absent" and got["own_segment"] is True, got
    left = _LIBC.shmget(own_key, 0, 0)
    if left >= 0:
        _LIBC.shmctl(left, _IPC_RMID, None)
    assert left < 0, "the child's SysV segment outlived it on the host"


FORKS = textwrap.dedent(
    r"""
    import os, sys, time

    started = 0
    try:
        for _ in range(int(sys.argv[1])):
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            started += 1
    finally:
        print(started, flush=True)
    """
)


@needs_namespaces
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3")
def test_a_child_process_count_is_capped_and_its_outcome_says_so(who, tmp_path, monkeypatch):
    """A package started 600 processes and nothing stopped it. Its forks beyond the cap fail (``EAGAIN``), what
    it left dies with its namespace, and a package stopped there is recorded as stopped at Fathom's cap (with
    the line that shows it), counted against Fathom's budgets, not the package."""
    # The same cap as the default 512, cheaper to hit: the one the launcher is given and the one the outcome names.
    monkeypatch.setattr(spawn, "MAX_PROCESSES", 40)
    monkeypatch.setattr(confine, "MAX_PROCESSES", 40)
    done = _run_as(who, tmp_path, "100", probe=FORKS)
    started = int(done.stdout.split()[-1])
    assert 0 < started < 40, (done.stdout, done.stderr)
    assert "BlockingIOError: [Errno 11] Resource temporarily unavailable" in done.stderr
    package = ServerEntry(
        name="io.github.t/forks",
        transport=Transport.STDIO,
        command=("npx", "-y", "forks@1.0.0"),
        package={"registryType": "npm", "runner": "npx", "spec": "forks@1.0.0"},
    )
    failed = ScanOutcome(
        outcome=Outcome.EXITED,
        transport="stdio",
        detail="server exited with code 1",
        extra={"exit_code": 1, "stderr_tail": done.stderr.splitlines()},
    )
    outcome = classify(package, failed)
    assert outcome.outcome is Outcome.CRASHED
    assert outcome.detail.startswith("stopped at Fathom's cap of 40 processes and threads per child: BlockingIOError")
    assert fault(outcome.outcome.value, outcome.detail) == "policy"


def test_a_socket_eagain_is_not_the_process_cap():
    """Python's ``BlockingIOError: [Errno 11]`` is also a non-blocking socket's: without a fork or thread start
    in its traceback it is the package's own crash, never Fathom's cap."""
    package = ServerEntry(
        name="io.github.t/socket",
        transport=Transport.STDIO,
        command=("uvx", "socket==1.0.0"),
        package={"registryType": "pypi", "runner": "uvx", "spec": "socket==1.0.0"},
    )
    tail = [
        "Traceback (most recent call last):",
        '  File "/srv/app.py", line 9, in <module>',
        "    data = sock.recv(4096)",
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
    ]
    failed = ScanOutcome(
        outcome=Outcome.EXITED, transport="stdio", detail="x", extra={"exit_code": 1, "stderr_tail": tail}
    )
    outcome = classify(package, failed)
    assert outcome.outcome is Outcome.CRASHED
    assert outcome.detail == "BlockingIOError: [Errno 11] Resource temporarily unavailable"


# How a child's script dials an address: "connected", or the errno's name (ECONNREFUSED, ENETUNREACH...).
ATTEMPT = textwrap.dedent(
    """
    def attempt(family, address):
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            try:
                sock.connect(address)
            except OSError as exc:
                return errno.errorcode.get(exc.errno, str(exc.errno))
            return "connected"
    """
)

# What a child tries against what listens on the host (system python): one JSON line of what it got.
DIAL = (
    "import errno, json, socket, sys\n"
    + ATTEMPT
    + textwrap.dedent(
        r"""

    port = int(sys.argv[1])
    out = {
        "host_loopback": attempt(socket.AF_INET, ("127.0.0.1", port)),
        "host_abstract": attempt(socket.AF_UNIX, "\0" + sys.argv[2]),
        "host_address": attempt(socket.AF_INET, (sys.argv[3], int(sys.argv[4]))),
        "stack_gateway": attempt(socket.AF_INET, ("10.0.2.2", port)),
        "stack_dns": attempt(socket.AF_INET, ("10.0.2.3", port)),
    }
    with socket.create_server(("127.0.0.1", 0)) as own:
        out["own_loopback"] = attempt(socket.AF_INET, own.getsockname())
    print(json.dumps(out))
    """
    )
)


def host_address() -> str:
    """This machine's own address on its way out (not loopback): where a server reachable from other hosts
    listens. The test is skipped on a machine with none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        try:
            udp.connect(("192.0.2.1", 9))  # no packet is sent: the kernel only picks the route and its source
        except OSError as exc:
            pytest.skip(f"this machine has no route out: {exc}")
        address = str(udp.getsockname()[0])
    if address.startswith("127."):
        pytest.skip("this machine has no address but its loopback")
    return address


@pytest.fixture
def host_listeners() -> Iterator[tuple[int, str, str, int]]:
    """What listens on the host: a TCP port on 127.0.0.1 (Fathom's database, a sibling's local-port server, the
    user's own services), an abstract unix socket (no file mode guards it), and a TCP port on the machine's own
    address (a server on the network: what outbound access reaches)."""
    address = host_address()
    tcp = socket.create_server(("127.0.0.1", 0))
    outside = socket.create_server((address, 0))
    name = f"fathom-test-{os.getpid()}-{tcp.getsockname()[1]}"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + name)
    unix.listen()
    try:
        yield tcp.getsockname()[1], name, address, outside.getsockname()[1]
    finally:
        tcp.close()
        outside.close()
        unix.close()


NETWORK, NO_NETWORK_WHY = confine.own_network()
needs_network = pytest.mark.skipif(not NETWORK, reason=f"the kernel refuses a network namespace: {NO_NETWORK_WHY}")


def _dial(who: str, tmp_path: Path, listeners: tuple[int, str, str, int], network: bool) -> dict[str, str]:
    port, name, address, outside = listeners
    done = _run_as(who, tmp_path, str(port), name, address, str(outside), probe=DIAL, network=network)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return dict(json.loads(done.stdout.splitlines()[-1]))


@needs_namespaces
@needs_network
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3")
def test_without_a_stack_a_stdio_child_has_only_its_own_loopback(who, tmp_path, host_listeners, monkeypatch):
    """A child connected to Fathom's PostgreSQL on 127.0.0.1 and to a sibling's local-port server. With no
    user-mode network stack (hidden by ``FATHOM_NETWORK_STACK=none``), started as a package's stdio run is, it
    reaches nothing that listens on the host, has no route out, and its own loopback works; started as an install
    is (the host's network), it connects."""
    monkeypatch.setenv(confine.STACK_ENV, "none")
    assert confine.outbound() == (False, "none: FATHOM_NETWORK_STACK=none")
    got = _dial(who, tmp_path, host_listeners, network=True)
    assert got["host_loopback"] == "connected" and got["host_abstract"] == "connected", got  # an install's
    assert got["host_address"] == "connected", got
    got = _dial(who, tmp_path, host_listeners, network=False)
    assert got == {
        "host_loopback": "ECONNREFUSED",
        "host_abstract": "ECONNREFUSED",
        "host_address": "ENETUNREACH",
        "stack_gateway": "ENETUNREACH",
        "stack_dns": "ENETUNREACH",
        "own_loopback": "connected",
    }, got


OUTBOUND, NO_OUTBOUND_WHY = confine.outbound()
needs_stack = pytest.mark.skipif(not OUTBOUND, reason=f"no user-mode network stack here: {NO_OUTBOUND_WHY}")


@needs_namespaces
@needs_stack
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3")
def test_with_the_stack_a_stdio_child_reaches_out_but_never_the_hosts_loopback(who, tmp_path, host_listeners):
    """With slirp4netns on the machine, the child's network of its own has a route out: it reaches a server on
    the machine's own address (as it would any host), but not the one on the host's 127.0.0.1 (a real listener:
    refused), neither through slirp4netns's gateway (``--disable-host-loopback``) nor its DNS forwarder
    (``--disable-dns``), nor the host's abstract unix sockets."""
    got = _dial(who, tmp_path, host_listeners, network=False)
    assert got["host_address"] == "connected", got
    assert got["host_loopback"] == "ECONNREFUSED" and got["host_abstract"] == "ECONNREFUSED", got
    assert got["stack_gateway"] in ("ENETUNREACH", "ECONNREFUSED"), got
    assert got["stack_dns"] in ("ENETUNREACH", "ECONNREFUSED"), got
    assert got["own_loopback"] == "connected", got


@needs_namespaces
@needs_stack
@pytest.mark.skipif(SYSTEM_PYTHON is None or shutil.which("unshare") is None, reason="no system python3 or unshare")
def test_the_stack_never_forwards_to_a_resolver_on_the_hosts_loopback(tmp_path, host_listeners):
    """A host whose ``/etc/resolv.conf`` names a resolver on its own loopback (dnsmasq on 127.0.0.1): slirp4netns
    would forward its DNS address (10.0.2.3) there. Tried for real in a mount namespace whose resolv.conf says so
    (Fathom run as an ordinary user: the launcher as nobody): the host's 127.0.0.1 listener is reached by no
    address."""
    if os.geteuid() != 0 or shutil.which("su") is None:
        pytest.skip("needs root (a mount namespace with another resolv.conf, su to nobody)")
    port, name, address, outside = host_listeners
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n", encoding="utf-8")
    script = tmp_path / "probe.py"
    script.write_text(DIAL, encoding="utf-8")
    launcher = tmp_path / "launcher.py"
    shutil.copy(spawn.PIDNS, launcher)
    for path in (resolv, script, launcher):
        path.chmod(0o644)
    tmp_path.chmod(0o755)
    stack = confine.network_stack()[0]
    assert stack is not None
    child = shlex.join([SYSTEM_PYTHON or "python3", "-I", str(script), str(port), name, address, str(outside)])
    run = f'cd / && exec {shlex.join([SYSTEM_PYTHON or "python3", "-I", "-S", str(launcher)])} "$PPID" --net '
    run += f"--outbound {shlex.quote(stack)} -- {child}"
    inner = (
        f"mount --bind {shlex.quote(str(resolv))} /etc/resolv.conf && exec su nobody -s /bin/sh -c {shlex.quote(run)}"
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["host_address"] == "connected", got
    assert "connected" not in (got["host_loopback"], got["stack_gateway"], got["stack_dns"]), got


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, left where nothing reaps orphans, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stacks_of(launcher: int) -> list[int]:
    found = []
    for pid in confine.pids():
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == launcher and os.path.basename(command[0]) == b"slirp4netns":
            found.append(pid)
    return found


@needs_namespaces
@needs_stack
def test_the_stack_ends_with_its_child_and_with_a_killed_launcher(tmp_path):
    """Nothing outlives a child: its slirp4netns ends (and is reaped) when the child exits, and when the launcher
    is killed with SIGKILL (``--exit-fd`` and ``PR_SET_PDEATHSIG``)."""
    env = {"PATH": os.defpath, "HOME": str(tmp_path)}
    for ending in ("exit", "kill"):
        with confine.room(offline=True):
            argv, options = confine.start(["sleep", "30" if ending == "kill" else "1"], env)
        assert "--outbound" in argv
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, **options)
        try:
            deadline = time.monotonic() + 30
            while not (stacks := _stacks_of(process.pid)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert stacks, "no slirp4netns was started for the child"
            if ending == "kill":
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
            deadline = time.monotonic() + 30
            while any(_running(pid) for pid in stacks) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not any(_running(pid) for pid in stacks), f"slirp4netns outlived the child ({ending})"
        finally:
            process.kill()
            process.wait()


@needs_namespaces
@needs_network
def test_a_stack_that_does_not_start_is_said_and_starts_no_child(tmp_path, monkeypatch):
    """A stack that fails (here a ``slirp4netns`` that says why and exits) is never a silent fallback: the
    probe says ``none:`` with its words, and a launcher told to use it starts no child (exit 126, the reason)."""
    broken = tmp_path / "bin" / "slirp4netns"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'open(/dev/net/tun): No such device' >&2\nexit 1\n", encoding="utf-8")
    broken.chmod(0o755)
    for folder in (tmp_path, broken.parent):
        folder.chmod(0o755)
    monkeypatch.setenv(confine.STACK_ENV, str(broken))
    holds, why = confine.outbound()
    assert not holds and why.startswith("none: unavailable (")
    assert "slirp4netns, the network stack, did not start: open(/dev/net/tun): No such device" in why
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(spawn.PIDNS), str(os.getpid()), "--net", "--outbound", str(broken),
         "--", "true"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 126, done
    assert done.stderr.strip().endswith("did not start: open(/dev/net/tun): No such device"), done.stderr


def test_a_package_stopped_for_want_of_a_network_says_so_and_is_not_its_fault():
    """A package that fetches at start, run with only its own loopback, is recorded as stopped for want of a
    network (node's and Python's words for it), counted as Fathom's policy, never the package's crash; one that
    kept the host's network (a command; a local-port package where the kernel refuses a network namespace) is not."""
    if not NETWORK:
        pytest.skip(f"the kernel refuses a network namespace here: {NO_NETWORK_WHY}")
    package = ServerEntry(
        name="io.github.t/fetch",
        transport=Transport.STDIO,
        command=("npx", "-y", "fetch@1.0.0"),
        package={"registryType": "npm", "runner": "npx", "spec": "fetch@1.0.0"},
    )
    for line in (
        "Error: getaddrinfo EAI_AGAIN api.example.com",
        "Error: connect ENETUNREACH 192.0.2.1:443",
        "OSError: [Errno 101] Network is unreachable",
        "socket.gaierror: [Errno -3] Temporary failure in name resolution",
    ):
        failed = ScanOutcome(
            outcome=Outcome.EXITED,
            transport="stdio",
            detail="server exited with code 1",
            extra={
                "exit_code": 1,
                "stderr_tail": ["starting", "    at Socket.connect (node:net:1)", line],
                "offline": True,
            },
        )
        outcome = classify(package, failed)
        assert outcome.outcome is Outcome.CRASHED
        assert outcome.detail == f"{NO_NETWORK}: {line}", outcome.detail
        assert fault(outcome.outcome.value, outcome.detail) == "policy"
    local = replace(package, transport=Transport.STREAMABLE_HTTP)
    failed = ScanOutcome(
        outcome=Outcome.EXITED,
        transport="streamable-http",
        detail="server exited with code 1",
        extra={"exit_code": 1, "stderr_tail": ["Error: connect ENETUNREACH 192.0.2.1:443"]},
    )
    outcome = classify(local, failed)
    assert outcome.detail == "Error: connect ENETUNREACH 192.0.2.1:443"
    assert fault(outcome.outcome.value, outcome.detail) == "server"
