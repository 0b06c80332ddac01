"""Small helpers for the client tests: run one scan synchronously, and tell whether a process is gone."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio

from scanner.mcp import ClientLimits, scan_server
from scanner.models import ScanOutcome, ServerEntry, Transport

# Short limits so every fault ends fast; shutdown grace is short too (a hung stdio server costs 3 × grace).
FAST = ClientLimits(timeout=2.0, connect_timeout=1.0, shutdown_grace=0.3)


def scan(entry: ServerEntry, limits: ClientLimits = FAST, profile: str = "rich", **options: Any) -> ScanOutcome:
    return anyio.run(lambda: scan_server(entry, limits, profile, **options))


def timed_scan(entry: ServerEntry, limits: ClientLimits = FAST, **options: Any) -> tuple[ScanOutcome, float]:
    start = time.monotonic()
    outcome = scan(entry, limits, **options)
    return outcome, time.monotonic() - start


def http_entry(url: str, transport: Transport = Transport.HTTP, **fields: Any) -> ServerEntry:
    return ServerEntry(name="test", transport=transport, url=url, **fields)


def stdio_entry(command: tuple[str, ...], **fields: Any) -> ServerEntry:
    return ServerEntry(name="test", transport=Transport.STDIO, command=command, **fields)


def names(outcome: ScanOutcome) -> list[str]:
    return [tool["name"] for tool in outcome.tools or ()]


GONE_PID = 2**31 - 1  # above any kernel's pid_max (at most 2**22): never a live process


def recorded_pids(pid_file: Path) -> list[int]:
    """The host pids of the processes that wrote their pids into ``pid_file``. Fathom starts each child in a PID
    namespace of its own where the kernel allows (scanner/confine/launcher.py), so a child writes its pid in that
    namespace: it is matched to the live host process whose innermost pid it is and whose command line names
    ``pid_file`` (a fork keeps its parent's); one gone already reads :data:`GONE_PID`."""
    inner = [int(word) for word in pid_file.read_text(encoding="utf-8").split()]
    found: dict[int, int] = {}
    needle = str(pid_file).encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="utf-8") as status:
                nspid = next((line.split()[1:] for line in status if line.startswith("NSpid:")), [name])
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                if needle in cmdline.read() and int(nspid[-1]) in inner:
                    found[int(nspid[-1])] = int(name)
        except (OSError, ValueError):
            continue
    return [found.get(pid, GONE_PID) for pid in inner]


def alive(pid: int) -> bool:
    """True if ``pid`` is a running process (a zombie waiting for a reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
