"""stdio: newline-delimited JSON-RPC with a spawned server process, and a shutdown that leaves nothing behind.

The server runs in its own process group (``start_new_session``) so the whole group (``npx`` and the node
process it starts, or a server that forks) can be signalled at the end: close stdin, wait, SIGTERM the group,
wait, SIGKILL the group. A descendant that left the group (``setsid``, a double fork) is found by a marker:
every child gets ``FATHOM_SCAN_MARK=<random>`` in its environment, which its descendants inherit, and at the end
every process of this user whose ``/proc/<pid>/environ`` holds that marker is SIGKILLed (with its group), until
none is left. (A descendant that both leaves the session and execs with a fresh, empty environment is not
found: that needs a cgroup.) stdout lines that are not JSON objects (banners, logging) are skipped and counted; a
line longer than ``max_line_bytes`` ends the scan as too_large. stderr is drained all the time (a full pipe
would block the server) and only its last ``max_stderr_bytes`` are kept.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from scanner import confine, wire
from scanner.mcp import jsonrpc
from scanner.mcp.failures import ScanFailure
from scanner.mcp.limits import ClientLimits
from scanner.mcp.transports.base import ClientTransport
from scanner.mcp.transports.pending import Pending
from scanner.models import Outcome, Transport

_READ_CHUNK = 64 * 1024
_STDERR_TAIL_LINES = 20
_KEPT_SKIPPED_LINES = 5
MARK_ENV = "FATHOM_SCAN_MARK"
_SWEEPS = 5  # rounds of "find marked processes, kill them": a forking escapee may make new ones meanwhile


class StdioTransport(ClientTransport):
    """A spawned server spoken to over its stdin and stdout."""

    name = Transport.STDIO.value

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None, limits: ClientLimits) -> None:
        """``env`` is the exact environment of the child (None: inherit this process's)."""
        self._command = list(command)
        self._env = dict(env) if env is not None else None
        self._limits = limits
        self._process: anyio.abc.Process | None = None
        self._pending = Pending()
        self._stderr_done = anyio.Event()
        self._stderr = bytearray()
        self._write_lock = anyio.Lock()
        self._skipped_lines = 0
        self._skipped_samples: list[str] = []
        self._mark = secrets.token_hex(12)
        self.escaped = 0  # descendants found outside the process group at the end, and killed

    async def open(self) -> None:
        if not self._command:
            raise ScanFailure(Outcome.SPAWN_ERROR, "no command to start")
        env = dict(os.environ if self._env is None else self._env)
        env[MARK_ENV] = self._mark
        kid = confine.CURRENT.get()  # run as root: the child's own user (scanner/confine/users.py)
        if kid is not None and kid.home is not None:
            env["HOME"], env["TMPDIR"] = str(kid.home), str(kid.home / "tmp")
        confine.announce_mark(self._mark)
        try:
            argv, options = confine.start(self._command, env)  # its own PID namespace where there are some
            self._process = await anyio.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
                **options,
            )
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ScanFailure(
                Outcome.SPAWN_ERROR, f"cannot start {self._command[0]!r}: {reason}", {"errno": exc.errno}
            ) from exc
        self.task_group.start_soon(self._pending.read_guarded, self._read_stdout, "reading stdout")
        self.task_group.start_soon(self._read_stderr)

    # --- reading -------------------------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        """Route every JSON object line; skip and count the rest. Runs under :meth:`Pending.read_guarded`."""
        assert self._process is not None and self._process.stdout is not None
        buffer = bytearray()
        searched = 0  # bytes of ``buffer`` known to hold no newline: a long line is scanned once, not per chunk
        while self._pending.failure is None:
            try:
                chunk = await self._process.stdout.receive(_READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            buffer += chunk
            while self._pending.failure is None:
                end = buffer.find(b"\n", searched)
                if end < 0:
                    searched = len(buffer)
                    break
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                searched = 0
                await self._line(line)
            if len(buffer) > self._limits.max_line_bytes:
                raise self._too_long()

    def _too_long(self) -> ScanFailure:
        limit = self._limits.max_line_bytes
        return ScanFailure(Outcome.TOO_LARGE, f"stdout line over {limit} bytes", {"limit_bytes": limit})

    async def _line(self, line: bytes) -> None:
        if len(line) > self._limits.max_line_bytes:
            raise self._too_long()
        text = line.strip()
        if not text:
            return
        try:
            message = jsonrpc.decode(text)
        except ScanFailure:  # not JSON: a banner or log line on stdout
            message = None
        if not isinstance(message, dict):
            self._skipped_lines += 1
            if len(self._skipped_samples) < _KEPT_SKIPPED_LINES:
                self._skipped_samples.append(wire.decode_bytes(text[:200]))
            return
        if jsonrpc.is_server_request(message):
            self.count_server_request(self._limits.max_server_requests)
            await self._write(jsonrpc.reply_to_server_request(message))
        elif jsonrpc.is_response(message):
            self._pending.route(message)
        # Anything else is a notification (logging, progress, list_changed): nothing to do.

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        keep = self._limits.max_stderr_bytes
        try:
            while True:
                try:
                    chunk = await self._process.stderr.receive(_READ_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                self._stderr += chunk
                if len(self._stderr) > keep:
                    del self._stderr[: len(self._stderr) - keep]
        except Exception:
            pass  # stderr is only diagnostics
        finally:
            self._stderr_done.set()

    def stderr_tail(self) -> list[str]:
        """The last lines the server wrote to stderr (at most ``max_stderr_bytes`` worth)."""
        return wire.decode_bytes(bytes(self._stderr)).splitlines()[-_STDERR_TAIL_LINES:]

    async def _exit_failure(self) -> ScanFailure:
        """The failure to report when stdout closed: normally the process exited (code + stderr tail)."""
        assert self._process is not None
        code: int | None = None
        with anyio.move_on_after(self._limits.shutdown_grace):
            code = await self._process.wait()
        with anyio.move_on_after(0.5):
            await self._stderr_done.wait()
        tail = self.stderr_tail()
        last = f": {tail[-1][:200]}" if tail else ""
        if code is None:
            return ScanFailure(Outcome.EXITED, f"server closed stdout{last}", {"stderr_tail": tail})
        return ScanFailure(
            Outcome.EXITED, f"server exited with code {code}{last}", {"exit_code": code, "stderr_tail": tail}
        )

    # --- writing -------------------------------------------------------------------------------------------

    async def _write(self, message: Mapping[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            async with self._write_lock:
                await self._process.stdin.send(jsonrpc.encode(message) + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            with anyio.move_on_after(self._limits.shutdown_grace):
                await self._pending.closed.wait()
            if self._pending.failure is not None:
                raise self._pending.failure from exc
            raise await self._exit_failure() from exc

    async def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        response = await self._pending.call(message["id"], lambda: self._write(message))
        if response is not None:
            return response
        if self._pending.failure is not None:
            raise self._pending.failure
        raise await self._exit_failure()

    async def notify(self, message: Mapping[str, Any]) -> None:
        if self._pending.failure is not None:
            raise self._pending.failure
        await self._write(message)

    # --- shutdown ------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            process = self._process
            if process is not None:
                await self._stop(process)
                with contextlib.suppress(Exception):
                    await process.aclose()
                with contextlib.suppress(Exception):
                    self.escaped = await anyio.to_thread.run_sync(kill_marked, self._mark, process.pid)

    async def _stop(self, process: anyio.abc.Process) -> None:
        await stop_process_group(process, self._limits.shutdown_grace)

    def details(self, failed: bool) -> dict[str, Any]:
        facts: dict[str, Any] = {}
        if failed and self._stderr:
            facts["stderr_tail"] = [line[:500] for line in self.stderr_tail()]
        if self.escaped:
            facts["escaped_processes_killed"] = self.escaped
        if self._skipped_lines:
            facts["skipped_stdout_lines"] = self._skipped_lines
            facts["skipped_stdout_samples"] = list(self._skipped_samples)
        return facts


async def stop_process_group(process: anyio.abc.Process, grace: float) -> None:
    """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group (always: children may outlive it).

    Also stops local-port packages (:mod:`scanner.packages.localport`), started in a process group the same way;
    :func:`kill_marked` afterwards finds descendants that left the group."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    with anyio.move_on_after(grace):
        await process.wait()
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with anyio.move_on_after(grace):
            await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    if process.returncode is None:
        with anyio.move_on_after(grace):
            await process.wait()


def marked_pids(mark: str) -> list[int]:
    """Every live process of this user whose initial environment carries ``FATHOM_SCAN_MARK=<mark>``."""
    needle = f"{MARK_ENV}={mark}".encode()
    found: list[int] = []
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                data = environ.read()
        except OSError:  # gone, or another user's process
            continue
        if needle + b"\0" in data or data.endswith(needle):
            found.append(int(name))
    return found


def kill_marked(mark: str, group: int) -> int:
    """SIGKILL every process carrying ``mark`` (and its process group), sweeping until none is found; how many
    were outside ``group`` (the server's own group, already killed: its members may still be exiting)."""
    killed: set[int] = set()
    escaped = 0
    ours = os.getpgrp()
    for _ in range(_SWEEPS):
        pids = [pid for pid in marked_pids(mark) if pid not in killed]
        if not pids:
            break
        for pid in pids:
            try:
                pgid = os.getpgid(pid)
            except OSError:
                pgid = None
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            if pgid is not None and pgid != ours:
                _signal_group(pgid, signal.SIGKILL)
            escaped += pgid != group
            killed.add(pid)
    return escaped


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
