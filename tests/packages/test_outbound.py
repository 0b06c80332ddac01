"""The children that shared the host's network (issue 42): a ``--run-commands`` command and ``check``'s server.

Each runs a real MCP stdio server (system python, no imports of Fathom) that first tries what listens on the
host: a TCP port on 127.0.0.1 (Fathom's PostgreSQL, a sibling's local-port server), an abstract unix socket, and
a server on the machine's own address (what outbound access reaches); its tool names say what it got. With
slirp4netns on the machine (``confine.outbound``) both get a network of their own with a route out; without
(``FATHOM_NETWORK_STACK=none``: a real condition, the stack is not started) a command has only its own loopback
and what fails for want of a network is recorded so, and ``check``'s server keeps the host's network, said in one
line on stderr. Run as root, a command runs as a leased user of its own and, with ``enabled`` off, as Fathom's
own user (as when Fathom is not root); the launcher itself as ``nobody`` is tried in test_confinement.py.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from scanner import confine
from scanner.cli import app
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages.commands import run_command
from scanner.packages.diagnose import NO_NETWORK
from scanner.report.census import fault
from tests.confine.test_confinement import ATTEMPT, host_listeners  # noqa: F401 - a fixture

SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists()), None)
NETWORK, NO_NETWORK_WHY = confine.own_network()
OUTBOUND, NO_OUTBOUND_WHY = confine.outbound()
pytestmark = [
    pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3"),
    pytest.mark.skipif(not NETWORK, reason=f"the kernel refuses a network namespace: {NO_NETWORK_WHY}"),
]
needs_stack = pytest.mark.skipif(not OUTBOUND, reason=f"no user-mode network stack here: {NO_OUTBOUND_WHY}")

# argv: dial PORT NAME ADDRESS OUTSIDE_PORT (tries each, lists what it got) | fetch ADDRESS PORT (needs it at start:
# a traceback when it cannot connect, as a server that fetches its configuration first).
SERVER = (
    "import errno, json, socket, sys\n"
    + ATTEMPT
    + textwrap.dedent(
        r"""

    if sys.argv[1] == "fetch":
        socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=10).close()
        tools = ["fetched"]
    else:
        tools = [
            "host_loopback_" + attempt(socket.AF_INET, ("127.0.0.1", int(sys.argv[2]))),
            "host_abstract_" + attempt(socket.AF_UNIX, "\0" + sys.argv[3]),
            "host_address_" + attempt(socket.AF_INET, (sys.argv[4], int(sys.argv[5]))),
        ]
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg.get("method") == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "dialer", "version": "1"},
            }
        elif msg.get("method") == "tools/list":
            result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in tools]}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()
    """
    )
)


@pytest.fixture(params=["leased-user", "own-user"])
def child_user(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A command as a user of its own (Fathom run as root) or as Fathom's own user (as when it is not root)."""
    if request.param == "own-user":
        monkeypatch.setattr(confine, "enabled", lambda: False)
    elif not confine.enabled():
        pytest.skip("a user of its own per child needs root on Linux")
    return str(request.param)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Path]:
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    script.chmod(0o644)
    tmp_path.chmod(0o755)
    yield script


def _command(script: Path, *args: object) -> ServerEntry:
    assert SYSTEM_PYTHON is not None
    return ServerEntry(
        name="io.github.t/dialer",
        transport=Transport.STDIO,
        command=(SYSTEM_PYTHON, "-I", str(script), *(str(arg) for arg in args)),
        env={"PATH": os.environ.get("PATH", os.defpath)},
    )


def _tools(outcome: ScanOutcome) -> list[str]:
    assert outcome.ok, (outcome.outcome, outcome.detail, outcome.extra)
    return [tool["name"] for tool in outcome.tools or ()]


def _scan(entry: ServerEntry) -> ScanOutcome:
    return anyio.run(run_command, entry, ClientLimits(timeout=60), "rich")


@needs_stack
def test_a_command_reaches_out_through_the_stack_never_the_hosts_loopback(server, host_listeners, child_user):  # noqa: F811
    """A ``--run-commands`` command (a registry's or a config's: untrusted) shared the host's network: it
    connected to Fathom's database on 127.0.0.1. Now, with slirp4netns, it reaches a server on the machine's own
    address, and nothing on the host's loopback nor its abstract unix sockets."""
    port, name, address, outside = host_listeners
    outcome = _scan(_command(server, "dial", port, name, address, outside))
    assert _tools(outcome) == ["host_loopback_ECONNREFUSED", "host_abstract_ECONNREFUSED", "host_address_connected"]


def test_without_a_stack_a_command_has_only_its_own_loopback_and_says_why_it_stopped(
    server,
    host_listeners,  # noqa: F811
    child_user,
    monkeypatch,
):
    """Without a stack (hidden: ``FATHOM_NETWORK_STACK=none``) a command still gets a network of its own, with
    only its own loopback: it reaches nothing on the host, and one that needs the internet at start is recorded
    "stopped for want of a network", counted as Fathom's policy, not the server's fault."""
    monkeypatch.setenv(confine.STACK_ENV, "none")
    port, name, address, outside = host_listeners
    outcome = _scan(_command(server, "dial", port, name, address, outside))
    assert _tools(outcome) == ["host_loopback_ECONNREFUSED", "host_abstract_ECONNREFUSED", "host_address_ENETUNREACH"]
    stopped = _scan(_command(server, "fetch", address, outside))
    assert stopped.outcome is Outcome.CRASHED
    assert stopped.detail == f"{NO_NETWORK}: OSError: [Errno 101] Network is unreachable", stopped
    assert fault(stopped.outcome.value, stopped.detail) == "policy"


@needs_stack
def test_with_the_stack_a_command_that_fetches_at_start_answers(server, host_listeners, child_user):  # noqa: F811
    """The same command with slirp4netns on the machine reaches the server it fetches from and answers."""
    _, _, address, outside = host_listeners
    assert _tools(_scan(_command(server, "fetch", address, outside))) == ["fetched"]


def _check(script: Path, *args: object) -> tuple[list[str], list[str]]:
    assert SYSTEM_PYTHON is not None
    command = [SYSTEM_PYTHON, "-I", str(script), *(str(arg) for arg in args)]
    result = CliRunner().invoke(app, ["check", "--format", "json", "--timeout", "60", "--", *command])
    assert result.exit_code == 0, result.output
    tools = [tool["name"] for tool in json.loads(result.stdout)["tools"]]
    return tools, result.stderr.splitlines()


@needs_stack
def test_check_server_gets_a_network_of_its_own_with_a_route_out(server, host_listeners):  # noqa: F811
    """``check -- CMD`` (the user's own command, in their project) gets a network of its own with a route out
    through slirp4netns: a server that fetches at start still answers, and it reaches nothing on the host's
    loopback; nothing is said about the network."""
    port, name, address, outside = host_listeners
    tools, said = _check(server, "dial", port, name, address, outside)
    assert tools == ["host_loopback_ECONNREFUSED", "host_abstract_ECONNREFUSED", "host_address_connected"]
    assert not [line for line in said if "network" in line], said


def test_without_a_stack_check_server_keeps_the_hosts_network_and_says_so(server, host_listeners, monkeypatch):  # noqa: F811
    """Without a stack ``check``'s server keeps the host's network (its own command may need the internet), and
    one line on stderr says so, with why."""
    monkeypatch.setenv(confine.STACK_ENV, "none")
    port, name, address, outside = host_listeners
    tools, said = _check(server, "dial", port, name, address, outside)
    assert tools == ["host_loopback_connected", "host_abstract_connected", "host_address_connected"]
    line = (
        "fathom: the server keeps this machine's network (no user-mode network stack: FATHOM_NETWORK_STACK=none): "
        "it reaches what listens on this machine's loopback and its abstract unix sockets (docs/registry.md, "
        '"Which platform isolates what")'
    )
    assert said.count(line) == 1, said
