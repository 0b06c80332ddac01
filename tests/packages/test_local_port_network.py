"""A local-port package runs in a network namespace of its own, and Fathom still scans it (issue 42).

A child connected to Fathom's PostgreSQL on the host's 127.0.0.1 and called a sibling's local-port server.
Now a local-port package's run (after its install) has only its own loopback: it reaches nothing that listens
on the host, its server is not on the host's loopback (a sibling cannot reach it), and Fathom reaches it through
the namespace launcher, which makes each connection inside the namespace and hands it over
(:class:`scanner.confine.Relay`, :func:`scanner.confine.launcher.serve_relay`).

Tried as Fathom runs: as root (each package and the sibling a leased user of its own) and as an ordinary user
(the whole scan run as ``nobody``, the launcher then making a user namespace). The package is the test-built
``fathom-test-server`` from the loopback npm registry (``server.js``: ``http-dial`` dials what it is given, then
serves; ``http-never`` never listens), and ``fathom-test-pyserver`` in ``http`` mode through uvx. Where the
kernel refuses a network namespace these tests skip and say why.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from scanner import confine
from scanner.confine.listeners import listeners, socket_inodes
from scanner.mcp import ClientLimits
from scanner.models import ServerEntry
from scanner.packages import PackageSettings, run_package
from scanner.packages.localport import _listening, free_port
from tests.packages.local_registry import PY_NAME
from tests.packages.test_local_port import local_package, processes_with, resolve, scan
from tests.packages.test_package_runs import environ, needs_uvx, registry  # noqa: F401 - the module-scoped fixture

NETWORK, WHY = confine.own_network()
pytestmark = [
    pytest.mark.skipif(not NETWORK, reason=f"the kernel refuses a network namespace here: {WHY}"),
    pytest.mark.skipif(not shutil.which("npx") or not shutil.which("node"), reason="npx not installed"),
]
ROOT = Path(__file__).resolve().parents[2]
SITE = next((Path(p) for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)), None)
"""This environment's packages, put on the path of the system's interpreter to run Fathom as nobody (None in that
interpreter, which imports this module too)."""
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists()), "python3")

ROUTE_OUT = confine.outbound()[0]
"""Whether a package's network of its own has a route out through slirp4netns here (``extra["offline"]`` is
then false)."""


def relay_sockets() -> int:
    """How many ``SOCK_SEQPACKET`` unix sockets this process holds (a relay's end is one)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            with socket.socket(fileno=os.dup(int(name))) as sock:
                count += sock.family == socket.AF_UNIX and sock.type == socket.SOCK_SEQPACKET
    return count


def own_listeners() -> set[int]:
    """The inodes of TCP sockets this process listens on (on any address)."""
    listening: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table, encoding="ascii") as rows:
            next(rows, None)
            listening |= {int(words[9]) for words in (row.split() for row in rows) if words[3] == "0A"}
    return listening & socket_inodes([os.getpid()])


def reaches(port: int) -> str:
    """Whether the host's 127.0.0.1:``port`` accepts a connection (else the errno's name)."""
    import errno

    with socket.socket() as sock:
        sock.settimeout(10)
        try:
            sock.connect(("127.0.0.1", port))
        except OSError as exc:
            return errno.errorcode.get(exc.errno or 0, str(exc))
        return "connected"


async def scenario(kind: str, env: dict[str, str], cache: str, host_port: int, abstract: str) -> dict[str, Any]:
    """Run as Fathom runs: ``dial``: a sibling's local-port server (an HTTP server on its port, run as Fathom runs a
    local-port package: its own user as root, its own namespaces and launcher) up, then the package that
    dials the host's listener, its abstract socket and the sibling; ``never``: a package that never listens.
    What a user would check, as JSON-ready data (also run as ``nobody``, in a process of its own)."""
    got: dict[str, Any] = {"relays_before": relay_sockets(), "listeners_before": sorted(own_listeners())}
    run_id = uuid.uuid4().hex
    settings = PackageSettings(cache_dir=Path(cache), environ=env)
    with confine.child(private_home=True) as kid:  # the sibling (run as root: a leased user of its own)
        sibling_env = {"PATH": env["PATH"], "HOME": str(kid.home) if kid and kid.home else cache}
        sibling_port = free_port()
        relay = confine.Relay()
        command = [SYSTEM_PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(sibling_port)]
        argv, options = confine.start(command, sibling_env, network=False, relay=relay)
        assert options.get("pass_fds") == (relay.fd,), argv
        null = subprocess.DEVNULL
        sibling = await anyio.open_process(
            argv, env=sibling_env, start_new_session=True, stdin=null, stdout=null, stderr=null, **options
        )
        relay.started()
        try:
            with anyio.fail_after(60):
                got["sibling_through_its_relay"] = await _listening(sibling_port, sibling, relay)
            got["sibling_from_the_host"] = reaches(sibling_port)
            if kind == "dial":
                args = ["http-dial", str(host_port), abstract, str(sibling_port)]
                package = local_package(environmentVariables=[{"name": "RUN_ID", "default": run_id}])
                package["packageArguments"][0]["value"] = args[0]
                package["packageArguments"][1:1] = [{"type": "positional", "value": arg} for arg in args[1:]]
                outcome = await run_package(resolve(package, env), ClientLimits(timeout=120), "rich", settings)
            else:
                await run_package(resolve(local_package(), env), ClientLimits(timeout=120), "rich", settings)
                package = local_package("http-never", environmentVariables=[{"name": "RUN_ID", "default": run_id}])
                outcome = await run_package(resolve(package, env), ClientLimits(timeout=8), "rich", settings)
        finally:
            relay.close()
            with contextlib.suppress(ProcessLookupError):
                sibling.kill()
            await sibling.wait()
    entry: ServerEntry = resolve(package, env)
    assert entry.package is not None
    got.update(
        outcome=outcome.outcome.value,
        detail=outcome.detail,
        tools=sorted(tool["name"] for tool in outcome.tools or ()),
        offline=outcome.extra.get("offline"),
        port=outcome.extra.get("local_port"),
        stderr=outcome.extra.get("stderr_tail"),
        left=processes_with(run_id),
        relays_after=relay_sockets(),
        listeners_after=sorted(own_listeners()),
    )
    got["port_on_the_host"] = listeners(int(got["port"])) if got["port"] else None
    return got


AS_NOBODY = """
import json, sys
import anyio
from tests.packages.test_local_port_network import scenario
print(json.dumps(anyio.run(scenario, *json.loads(sys.argv[1]))))
"""


@pytest.fixture(params=["leased", "nobody", "self"])
def who(request: pytest.FixtureRequest) -> str:
    root = os.geteuid() == 0
    if request.param == "self" and root:
        pytest.skip("run as root, children run as leased users (and nobody tries an ordinary user)")
    if request.param != "self" and not root:
        pytest.skip("needs root (a leased user of its own, or a process run as nobody)")
    if request.param == "nobody" and not (
        SITE and confine.reachable(ROOT / "scanner" / "__init__.py") and confine.reachable(SITE)
    ):
        pytest.skip(
            "this checkout or its venv is out of nobody's reach (a 0700 folder above it): "
            "Fathom cannot run as nobody from it"
        )
    return str(request.param)


@pytest.fixture
def host_listeners() -> Iterator[tuple[int, str]]:
    """A real listener on the host's 127.0.0.1 (standing for Fathom's database) and an abstract unix socket."""
    tcp = socket.create_server(("127.0.0.1", 0))
    name = f"fathom-test-{os.getpid()}-{tcp.getsockname()[1]}"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + name)
    unix.listen()
    try:
        yield tcp.getsockname()[1], name
    finally:
        tcp.close()
        unix.close()


def run(who: str, kind: str, registry: Any, host_listeners: tuple[int, str]) -> dict[str, Any]:  # noqa: F811
    port, name = host_listeners
    assert reaches(port) == "connected"  # the host's listener is real
    env = environ(registry)
    cache = tempfile.mkdtemp(prefix="fathom-test-netcache-")
    try:
        if who != "nobody":
            return dict(anyio.run(scenario, kind, env, cache, port, name))
        shutil.chown(cache, "nobody")
        # Root's interpreter may be out of nobody's reach (under /root): the system's, with this environment's
        # packages on its path (the same Python minor version), runs Fathom as nobody.
        done = subprocess.run(
            [SYSTEM_PYTHON, "-c", AS_NOBODY, json.dumps([kind, env, cache, port, name])],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            cwd=ROOT,
            env={**env, "PYTHONPATH": f"{ROOT}{os.pathsep}{SITE}", "PYTHONDONTWRITEBYTECODE": "1", "HOME": cache},
            user="nobody",
            extra_groups=[],
        )
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-4000:])
        return dict(json.loads(done.stdout.splitlines()[-1]))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_a_local_port_package_scans_in_its_own_network_and_reaches_nothing_of_the_hosts(
    who,
    registry,  # noqa: F811
    host_listeners,
):
    """The package scans ``ok`` with its tools through its launcher; from inside, the host's listener and
    abstract socket are refused and a sibling's local-port server (reached by Fathom through its own launcher,
    absent from the host's loopback) is not there, while a listener of its own on its loopback answers. After the
    scan nothing is left: no process, no relay socket in Fathom, no listener of Fathom's, nothing on its port."""
    got = run(who, "dial", registry, host_listeners)
    assert got["sibling_through_its_relay"] is True and got["sibling_from_the_host"] == "ECONNREFUSED", got
    assert got["outcome"] == "ok", got
    assert got["tools"] == [
        "host_abstract_ECONNREFUSED",
        "host_loopback_ECONNREFUSED",
        "own_loopback_connected",
        "sibling_ECONNREFUSED",
        "version_1_0_0",
    ], got
    assert got["offline"] is not ROUTE_OUT  # only its own loopback, or a route out through slirp4netns
    assert got["left"] == [] and got["port_on_the_host"] == [], got
    assert got["relays_after"] == got["relays_before"] == 0, got
    assert got["listeners_after"] == got["listeners_before"], got


def test_a_local_port_package_that_never_listens_in_its_own_network_times_out_as_before(
    who,
    registry,  # noqa: F811
    host_listeners,
):
    got = run(who, "never", registry, host_listeners)
    assert got["outcome"] == "timeout", got
    assert got["detail"] == "did not listen on its port at 127.0.0.1 within <n>s; warming up forever", got
    assert got["offline"] is not ROUTE_OUT and isinstance(got["port"], int)
    assert got["left"] == [] and got["relays_after"] == got["relays_before"] == 0, got


# What a package sees of descriptors: its own and its namespace's init's (PID 1, the same user), as link targets.
FDS = """
import json, os
seen = {}
for pid in ("self", "1"):
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError as exc:
        seen[pid] = exc.strerror
        continue
    seen[pid] = []
    for name in names:
        try:
            seen[pid].append(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:  # the listing's own descriptor, closed by now
            continue
print(json.dumps(seen))
"""


def test_the_launchers_end_of_the_relay_is_never_the_packages(tmp_path):
    """The launcher's end of the relay would let a package answer Fathom's requests with sockets of its own
    choosing: neither the package nor its namespace's init holds it (no socket at all among their descriptors),
    and the launcher answers Fathom through it."""
    relay = confine.Relay()
    env = {"PATH": os.defpath, "HOME": str(tmp_path)}
    tmp_path.chmod(0o755)
    with confine.child(private_home=True) as kid:
        if kid is not None and kid.home is not None:
            env["HOME"] = str(kid.home)
        argv, options = confine.start([SYSTEM_PYTHON, "-I", "-c", FDS], env, network=False, relay=relay)
        assert "--relay" in argv and options["pass_fds"] == (relay.fd,)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env, **options)
    relay.close()
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert isinstance(seen["self"], list) and not any(target.startswith("socket:") for target in seen["self"]), seen
    assert seen["1"] == "Permission denied" or not any(target.startswith("socket:") for target in seen["1"]), seen


@needs_uvx
def test_a_pypi_local_port_package_scans_in_its_own_network(registry, tmp_path):  # noqa: F811
    """A PyPI package (the test-built ``fathom-test-pyserver`` in ``http`` mode, through uvx, run offline from
    what its install put in the cache) serves on its own loopback and scans ``ok`` through its launcher."""
    package = {
        "registryType": "pypi",
        "identifier": PY_NAME,
        "version": "1.0.0",
        "transport": {"type": "streamable-http", "url": "http://localhost:{port}/mcp"},
        "packageArguments": [
            {"type": "positional", "value": "http"},
            {"type": "named", "name": "--port", "default": "8089", "isRequired": True, "format": "number"},
        ],
    }
    env = environ(registry)
    tmp_path.chmod(0o755)
    outcome = scan(resolve(package, env), env, tmp_path)
    assert outcome.ok, (outcome.outcome, outcome.detail, outcome.extra.get("stderr_tail"))
    assert [tool["name"] for tool in outcome.tools or ()] == ["version_1_0_0"]
    assert outcome.extra["offline"] is not ROUTE_OUT and isinstance(outcome.extra["local_port"], int)
    assert listeners(outcome.extra["local_port"]) == [] and relay_sockets() == 0
