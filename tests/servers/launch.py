"""Start the test servers as subprocesses on 127.0.0.1 and get their URLs or stdio commands.

Other suites (a crawl test starting N servers, say) use these too::

    with sdk_http_server(tools_file=path) as server:      # change the file between two scans
        entry = ServerEntry(name="a", transport=Transport.HTTP, url=server.url("/mcp"))

Every server runs in its own process group and is killed (the whole group) when its ``with`` block ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NPM_DIR = HERE.parent / "npm"
EVERYTHING_JS = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@dataclass
class RunningServer:
    """A server process listening on ``127.0.0.1:port``."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/mcp") -> str:
        return self.base_url + path

    def stop(self) -> None:
        kill_group(self.process)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def start(
    command: Sequence[str], port: int, *, env: dict[str, str] | None = None, ready_timeout: float = 15.0
) -> RunningServer:
    """Spawn ``command`` (which must listen on ``port``) and wait until the port accepts connections."""
    return _listening(_spawn(command, env), command, port, ready_timeout)


def start_all(commands: Sequence[tuple[Sequence[str], int]], *, ready_timeout: float = 15.0) -> list[RunningServer]:
    """Spawn every ``(command, port)`` at once, then wait for each port: N servers start in about the time of one
    (each spends its start importing). All are killed when one fails to listen."""
    processes = [_spawn(command, None) for command, _port in commands]
    servers: list[RunningServer] = []
    try:
        for process, (command, port) in zip(processes, commands, strict=True):
            servers.append(_listening(process, command, port, ready_timeout))
    except BaseException:
        for process in processes:
            kill_group(process)
        raise
    return servers


def _spawn(command: Sequence[str], env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def _listening(
    process: subprocess.Popen[bytes], command: Sequence[str], port: int, ready_timeout: float
) -> RunningServer:
    """Wait until ``process`` accepts connections on ``port`` (killed when it exits or does not in time)."""
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{command[0]} exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return RunningServer(process, port)
        time.sleep(0.05)
    kill_group(process)
    raise RuntimeError(f"{command} did not listen on {port} within {ready_timeout} s")


@contextlib.contextmanager
def running(server: RunningServer) -> Iterator[RunningServer]:
    try:
        yield server
    finally:
        server.stop()


# --- the official-SDK server -------------------------------------------------------------------------------


def sdk_command(
    transport: str = "stdio",
    *,
    port: int = 0,
    tools_file: Path | None = None,
    page_size: int = 100,
    legacy_only: bool = False,
    instructions_file: Path | None = None,
) -> tuple[str, ...]:
    """The command line of :mod:`tests.servers.sdk_server` (for stdio entries, or to start it yourself)."""
    command = [sys.executable, str(HERE / "sdk_server.py"), "--transport", transport, "--page-size", str(page_size)]
    if port:
        command += ["--port", str(port)]
    if tools_file is not None:
        command += ["--tools", str(tools_file)]
    if legacy_only:
        command.append("--legacy-only")
    if instructions_file is not None:
        command += ["--instructions", str(instructions_file)]
    return tuple(command)


def start_sdk_http(
    *,
    tools_file: Path | None = None,
    page_size: int = 100,
    legacy_only: bool = False,
    sse: bool = False,
    instructions_file: Path | None = None,
) -> RunningServer:
    """The SDK server on a free port: Streamable HTTP at ``/mcp`` (both eras), or legacy SSE at ``/sse``."""
    return start(
        *sdk_http_command(
            tools_file=tools_file,
            page_size=page_size,
            legacy_only=legacy_only,
            sse=sse,
            instructions_file=instructions_file,
        )
    )


def sdk_http_command(
    *,
    tools_file: Path | None = None,
    page_size: int = 100,
    legacy_only: bool = False,
    sse: bool = False,
    instructions_file: Path | None = None,
) -> tuple[tuple[str, ...], int]:
    """The SDK server's command on a free port and that port (:func:`start_all` starts several at once)."""
    port = free_port()
    command = sdk_command(
        "sse" if sse else "http",
        port=port,
        tools_file=tools_file,
        page_size=page_size,
        legacy_only=legacy_only,
        instructions_file=instructions_file,
    )
    return command, port


@contextlib.contextmanager
def sdk_http_server(**options: object) -> Iterator[RunningServer]:
    with running(start_sdk_http(**options)) as server:  # type: ignore[arg-type]
        yield server


# --- hostile servers ---------------------------------------------------------------------------------------


def start_hostile_http() -> RunningServer:
    """The hostile HTTP app: one behaviour per path, see :data:`tests.servers.hostile_http.BEHAVIOURS`."""
    return start(*hostile_http_command())


def hostile_http_command() -> tuple[tuple[str, ...], int]:
    """The hostile HTTP app's command on a free port and that port (for :func:`start_all`)."""
    port = free_port()
    return (sys.executable, str(HERE / "hostile_http.py"), "--port", str(port)), port


def hostile_stdio_command(mode: str, *extra: str) -> tuple[str, ...]:
    """The command line of one :mod:`tests.servers.hostile_stdio` mode."""
    return (sys.executable, str(HERE / "hostile_stdio.py"), "--mode", mode, *extra)


# --- npm reference servers ---------------------------------------------------------------------------------


def everything_installed() -> bool:
    return EVERYTHING_JS.is_file() and shutil.which("node") is not None


def everything_command(mode: str = "stdio") -> tuple[str, ...]:
    """``@modelcontextprotocol/server-everything`` (installed by ``npm install`` in tests/npm)."""
    return ("node", "--import", (HERE / "loopback.mjs").as_uri(), str(EVERYTHING_JS), mode)


def start_everything(mode: str = "streamableHttp") -> RunningServer:
    """server-everything over ``streamableHttp`` (``/mcp``) or ``sse`` (``/sse``), bound to 127.0.0.1."""
    port = free_port()
    return start(everything_command(mode), port, env={"PORT": str(port)})
