"""Small helpers for the client tests: run one scan synchronously, and tell whether a process is gone."""

from __future__ import annotations

import os
import time
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
