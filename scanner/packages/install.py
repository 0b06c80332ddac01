"""The install, timed on its own: the runner installs the package before the server is started.

Without this the MCP handshake's time held the whole install (37.8 s on a cold cache, 8.3 s warm, for the same
server), so a chart of it swung with the cache. The runner is asked to install and run a no-op in the
package's environment first, under the same confinement, environment and deadline:

* npx: ``npx -y [options] -p <name>@<version> -c true`` (the same ``_npx`` folder ``npx -y <name>@<version>``
  uses: npx keys it by the package list);
* uvx: ``uvx [options] --from <name>==<version> python -c pass`` (the same cached environment).

Other runners (bunx, pnpx, docker) have no separate install step: their install stays in the handshake. The
install's time is stored as the ``install_ms`` metric; a failed install is the entry's outcome (classified
like any other run, from its stderr).

The step runs the package's code (npm's lifecycle scripts, a Python sdist's build): it gets a network of its own
with the route out through slirp4netns where that can reach the registry, and keeps the host's otherwise
(:func:`scanner.packages.installnet.install_network`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping

import anyio

from scanner import confine, wire
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages.installnet import install_network, runner_of

_TAIL_LINES = 20
_MAX_STDERR = 64 * 1024


def install_command(entry: ServerEntry) -> tuple[str, ...] | None:
    """The no-op run that installs ``entry``'s package, or None where the runner has no such step."""
    package = entry.package or {}
    spec = package.get("spec")
    command = entry.command
    if not command or not isinstance(spec, str) or spec not in command:
        return None
    runner = os.path.basename(command[0])
    options = command[1 : command.index(spec)]
    if runner == "npx":
        kept = [word for word in options if word not in ("-y", "--yes")]
        return (command[0], "-y", *kept, "-p", spec, "-c", "true")
    if runner == "uvx":
        return (command[0], *options, "--from", spec, "python", "-c", "pass")
    return None


async def run_install(
    entry: ServerEntry, command: tuple[str, ...], env: Mapping[str, str], timeout: float
) -> ScanOutcome:
    """Run the install step; ok (with ``timings_ms["install"]``), ``exited`` with the stderr tail, a
    ``spawn_error``, or a ``timeout``. The process group is killed when the step is cancelled or times out.
    In a network of its own with the route out where :func:`install_network` holds, else the host's."""
    started = time.perf_counter()
    transport = entry.transport.value
    stderr = bytearray()
    own_network = install_network(runner_of(entry.command), env)[0]
    try:
        with confine.room(offline=True) if own_network else contextlib.nullcontext():
            argv, options = confine.start(command, env)
        process = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
            **options,
        )
    except OSError as exc:
        return ScanOutcome(outcome=Outcome.SPAWN_ERROR, transport=transport, detail=f"could not start: {exc.strerror}")
    timed_out = False
    try:
        with anyio.move_on_after(timeout) as scope:
            assert process.stderr is not None
            async for chunk in process.stderr:
                stderr.extend(chunk)
                if len(stderr) > _MAX_STDERR:
                    del stderr[: len(stderr) - _MAX_STDERR]
            await process.wait()
        timed_out = scope.cancelled_caught
    finally:
        if process.returncode is None:
            _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                await process.wait()
    elapsed = round((time.perf_counter() - started) * 1000, 1)
    tail = wire.decode_bytes(bytes(stderr)).splitlines()[-_TAIL_LINES:]
    tail = [line[:500] for line in tail]
    if timed_out:
        return ScanOutcome(
            outcome=Outcome.TIMEOUT,
            transport=transport,
            detail=f"installing took longer than {timeout:g} s",
            timings_ms={"install": elapsed},
            extra={"stderr_tail": tail, "phase": "install"},
        )
    if process.returncode != 0:
        return ScanOutcome(
            outcome=Outcome.EXITED,
            transport=transport,
            detail=f"install exited with code {process.returncode}",
            timings_ms={"install": elapsed},
            extra={"exit_code": process.returncode, "stderr_tail": tail, "phase": "install"},
        )
    return ScanOutcome(outcome=Outcome.OK, transport=transport, timings_ms={"install": elapsed})


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
