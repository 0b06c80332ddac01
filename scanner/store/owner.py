"""Which process writes a run, so a run whose process is gone reads ``interrupted``, not ``running``.

A run started by one process (``fathom scan``) stores that process in its options under :data:`KEY`: the host
name, the pid and the process's start time (``/proc/<pid>/stat``'s 22nd field, so a pid reused by another
program is not taken for it). :func:`gone` says whether that process is certainly gone: same host, and no
process of that pid started at that time. On another host (a database shared between machines) or where the
start time cannot be read (not Linux), only the pid's absence counts, and only on the same host.

``fathom runs`` shows such a run ``interrupted``; the next ``fathom scan`` on that database marks it so
(:func:`scanner.store.lifecycle.mark_gone_runs_interrupted`); either way ``--resume`` picks it up.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

KEY = "_process"


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    try:
        return int(data[data.rindex(b")") + 2 :].split()[19])
    except (ValueError, IndexError):
        return None


def this_process() -> dict[str, object]:
    """What a run stores of the process writing it."""
    pid = os.getpid()
    return {"host": socket.gethostname()[:200], "pid": pid, "start": _start_time(pid)}


def gone(owner: object) -> bool:
    """Whether the process ``owner`` (as :func:`this_process` stored it) is certainly gone."""
    if not isinstance(owner, Mapping) or owner.get("host") != socket.gethostname()[:200]:
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    started = owner.get("start")
    now = _start_time(pid)
    return isinstance(started, int) and now is not None and now != started
