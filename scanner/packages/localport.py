"""Run a package that serves MCP over HTTP on a local port: start it, wait for the port, scan it, stop it.

The resolver (:mod:`scanner.registry.localport`) left :data:`PORT_SENTINEL` where the port goes (an argument or
a variable) and the URL to connect to (always ``127.0.0.1``). Here, under the same runner, environment and
limits as a stdio package:

1. a free loopback port is chosen (the OS picks one for a socket bound to ``127.0.0.1:0``);
2. the command starts in its own process group with the port filled in, stdin a pipe and stdout and stderr
   drained (the last ``max_stderr_bytes`` of stderr kept, for :mod:`.diagnose`);
3. the port is polled until it accepts a connection, the process exits (``exited``, classified like a stdio
   package's) or the server's deadline passes (``timeout``: "did not listen on its port at 127.0.0.1"; the
   port, different every run, is in ``extra["local_port"]``, not the detail, so a failure reads the same every
   night);
4. the listener on the port must be the package's own (run as root: its own user's, see
   :mod:`scanner.confine.listeners`; else a socket open in its process tree): another program that took the port first
   is ``refused`` ("its port ... was taken by another program"), never scanned as the package;
5. the server is scanned over its declared transport by the ordinary HTTP client, with what is left of the
   deadline;
6. the process and its whole tree are stopped by the stdio transport's own teardown
   (:func:`~scanner.mcp.transports.stdio.stop_process_group`, then the ``FATHOM_SCAN_MARK`` sweep), whatever
   happened, cancellation included.

In a network namespace of its own (after its install, where :func:`scanner.confine.own_network` holds, as a
stdio package's run) the package listens on its own loopback, out of the host's and its siblings' reach, and
reaches nothing of the host's. Fathom then makes every connection through the namespace launcher
(:class:`scanner.confine.Relay`, :func:`scanner.confine.launcher.serve_relay`): the launcher connects inside the
namespace and hands the connected socket over, so steps 3 and 5 ask the launcher instead of the host's 127.0.0.1
(the HTTP client's :data:`~scanner.mcp.transports.httpclient.DIAL`), and step 4 has nothing to check (no other
program is there). Nothing of the package's listens on the host, and no relay listens there either. Where the
kernel refuses a network namespace, the steps run as above on the host's loopback.

``timings_ms`` gains ``listen`` (start until the port accepted) and ``total`` covers it; ``extra`` gains
``local_port`` (the port used) and, on failure, ``stderr_tail``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from scanner import confine, wire
from scanner.mcp import ClientLimits, scan_server
from scanner.mcp.transports import stdio_env
from scanner.mcp.transports.httpclient import DIAL
from scanner.mcp.transports.stdio import MARK_ENV, kill_marked, stop_process_group
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.registry.localport import PORT_SENTINEL

_POLL_S = 0.1
_READ_CHUNK = 64 * 1024
_TAIL_LINES = 20


def is_local_port(entry: ServerEntry) -> bool:
    """Whether ``entry`` is a resolved local-port package (run by :func:`scan_local_port`)."""
    return bool(entry.package and entry.package.get("local_port") and entry.command)


def free_port() -> int:
    """A port nothing listens on at 127.0.0.1 right now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Drain:
    """Read a pipe to its end (a full pipe would block the server); keep the last ``keep`` bytes."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.data = bytearray()

    async def run(self, stream: anyio.abc.ByteReceiveStream | None) -> None:
        if stream is None:
            return
        with contextlib.suppress(Exception):
            while True:
                try:
                    chunk = await stream.receive(_READ_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                self.data += chunk
                if len(self.data) > self.keep:
                    del self.data[: len(self.data) - self.keep]

    def tail(self) -> list[str]:
        return [line[:500] for line in wire.decode_bytes(bytes(self.data)).splitlines()[-_TAIL_LINES:]]


def loopback_url(template: str, port: int) -> str:
    """``http://127.0.0.1:<port>`` with the path and query of ``template``: checked here again, at run time, so an
    entry rebuilt from elsewhere (a queued job) cannot point the scan at another host."""
    parts = urlsplit(template.replace("{port}", str(port)))
    query = f"?{parts.query}" if parts.query else ""
    return f"http://127.0.0.1:{port}{parts.path or '/'}{query}"


async def _listening(port: int, process: anyio.abc.Process, relay: confine.Relay | None = None) -> bool:
    """Poll until 127.0.0.1:``port`` (the namespace's, through ``relay``) accepts a connection (True) or the
    process has exited (False)."""
    while True:
        if process.returncode is not None:
            return False
        with contextlib.suppress(OSError):
            with anyio.fail_after(1):
                if relay is not None:
                    (await relay.connect(port)).close()
                    return True
                stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.aclose()
            return True
        await anyio.sleep(_POLL_S)


def _not_its_own(port: int, group: int, mark: str) -> str | None:
    """None when the listener on ``port`` is the package's own: its user's (run as root, each package has one) or
    a socket open in its process tree (its process group and the processes carrying its mark). Not checked where
    there is no ``/proc`` (not Linux; docs/registry.md says so)."""
    if not sys.platform.startswith("linux"):
        return None
    tree = set(confine.marked(mark))
    for pid in confine.pids():
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == group:
                tree.add(pid)
    return confine.listener_owned(port, confine.CURRENT.get(), sorted(tree))


async def scan_local_port(
    entry: ServerEntry, limits: ClientLimits, profile: str, env: Mapping[str, str] | None
) -> ScanOutcome:
    """Start ``entry``'s package on a free port, scan it over HTTP, stop it and its children (module docstring).
    Never raises for the package's fault."""
    facts: Mapping[str, Any] = (entry.package or {}).get("local_port") or {}
    port = free_port()
    text = str(port)
    command = [word.replace(PORT_SENTINEL, text) for word in entry.command]
    child_env = {name: value.replace(PORT_SENTINEL, text) for name, value in stdio_env(entry, env).items()}
    via = str(facts.get("port_via") or "")
    if via.startswith("environment "):
        # Set by name too: a distributed worker rebuilds ``entry.env`` from its own environment, without it.
        child_env[via.removeprefix("environment ")] = text
    mark = secrets.token_hex(12)
    child_env[MARK_ENV] = mark
    confine.announce_mark(mark)
    transport = Transport(str(facts.get("transport") or Transport.STREAMABLE_HTTP.value))
    started = time.perf_counter()

    def outcome(kind: Outcome, detail: str, **extra: Any) -> ScanOutcome:
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        return ScanOutcome(
            outcome=kind,
            transport=transport.value,
            detail=detail,
            timings_ms={"total": elapsed},
            extra={"local_port": port, **extra},
        )

    relay = confine.Relay() if sys.platform.startswith("linux") else None
    try:
        # Its own PID namespace (no sibling reads its port), and its own network where it holds (module docstring).
        argv, options = confine.start(command, child_env, relay=relay)
        if relay is not None and not relay.held:
            relay = None
        process = await anyio.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            start_new_session=True,
            **options,
        )
    except OSError as exc:
        if relay is not None:
            relay.close()
        reason = exc.strerror or type(exc).__name__
        return outcome(Outcome.SPAWN_ERROR, f"cannot start {command[0]!r}: {reason}", errno=exc.errno)
    if relay is not None:
        relay.started()
    stderr = _Drain(limits.max_stderr_bytes)
    stdout = _Drain(4096)
    try:
        async with anyio.create_task_group() as readers:
            readers.start_soon(stderr.run, process.stderr)
            readers.start_soon(stdout.run, process.stdout)
            try:
                result = await _listen_and_scan(
                    entry, limits, profile, process, port, transport, facts, started, mark, relay
                )
            finally:
                readers.cancel_scope.cancel()
    finally:
        if relay is not None:
            relay.close()
        with anyio.CancelScope(shield=True):
            await stop_process_group(process, limits.shutdown_grace)
            with contextlib.suppress(Exception):
                await process.aclose()
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(kill_marked, mark, process.pid)
    if isinstance(result, ScanOutcome):
        if result.ok:
            return result
        return replace(result, extra={**result.extra, "stderr_tail": stderr.tail()})
    kind, detail, extra = result
    tail = stderr.tail()
    if kind is Outcome.EXITED and tail:
        detail = f"{detail}: {tail[-1][:200]}"
    elif kind is Outcome.TIMEOUT and tail:
        detail = f"{detail}; last stderr line: {tail[-1][:200]}"
    return outcome(kind, detail, stderr_tail=tail, **extra)


async def _listen_and_scan(
    entry: ServerEntry,
    limits: ClientLimits,
    profile: str,
    process: anyio.abc.Process,
    port: int,
    transport: Transport,
    facts: Mapping[str, Any],
    started: float,
    mark: str,
    relay: confine.Relay | None = None,
) -> ScanOutcome | tuple[Outcome, str, dict[str, Any]]:
    """The scan's outcome once the port listens, or (outcome, detail, extra) for a server that never did."""
    with anyio.move_on_after(limits.timeout):
        if not await _listening(port, process, relay):
            with anyio.move_on_after(limits.shutdown_grace):
                await process.wait()
            code = process.returncode
            said = f"exited with code {code}" if code is not None else "closed"
            return Outcome.EXITED, f"server {said} before listening on its port", {"exit_code": code}
        stranger = None if relay else await anyio.to_thread.run_sync(_not_its_own, port, process.pid, mark)
        if stranger is not None:
            detail = f"its port at 127.0.0.1 was taken by another program ({stranger}): not scanned"
            return Outcome.REFUSED, detail, {"port_taken": True}
        listen_ms = round((time.perf_counter() - started) * 1000, 1)
        left = max(limits.timeout - (time.perf_counter() - started), 0.1)
        url = loopback_url(str(facts.get("url") or ""), port)
        target = replace(entry, url=url, command=(), env={}, package=None, transport=transport)
        scan_limits = replace(limits, timeout=left, connect_timeout=min(limits.connect_timeout, left))
        dialled = DIAL.set(relay.dial if relay is not None else None)
        try:
            result = await scan_server(target, scan_limits, profile)
        finally:
            DIAL.reset(dialled)
        timings = {**result.timings_ms, "listen": listen_ms, "total": round((time.perf_counter() - started) * 1000, 1)}
        return replace(result, timings_ms=timings, extra={**result.extra, "local_port": port})
    return Outcome.TIMEOUT, f"did not listen on its port at 127.0.0.1 within {limits.timeout:g} s", {}
