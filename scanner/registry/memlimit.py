"""Wrap a package's command so the operating system caps its memory.

A registry package is a stranger's program; a leak or a hostile allocation must not take the scanner's host
down. ``RLIMIT_DATA`` is the limit that works for every runtime we start: Node.js reserves gigabytes of
*virtual* address space up front (V8's code range and pointer cage), so ``RLIMIT_AS`` kills it before it
prints a byte, while ``RLIMIT_DATA`` counts only writable private memory (heap, anonymous mappings) since Linux
4.7, which is what a leak grows. The limit is inherited by every child (``npx`` → ``node``, ``uvx`` →
``python``); each process gets its own allowance, so a server that forks many workers can use a multiple.

``prlimit`` (util-linux) applies it when present; otherwise the running Python applies it and ``exec``s the
command, so the wrapper never depends on Fathom being importable in the scrubbed environment.
"""

from __future__ import annotations

import shutil
import sys

DEFAULT_MEMORY_LIMIT_MB = 1024

_PY_WRAPPER = (
    "import os,resource,sys;n=int(sys.argv[1]);"
    "resource.setrlimit(resource.RLIMIT_DATA,(n,n));os.execvp(sys.argv[2],sys.argv[2:])"
)


def limit_command(command: list[str] | tuple[str, ...], memory_limit_mb: int) -> tuple[str, ...]:
    """``command`` prefixed so that it runs with at most ``memory_limit_mb`` MiB of data memory."""
    limit = int(memory_limit_mb) * 1024 * 1024
    prlimit = shutil.which("prlimit")
    if prlimit:
        return (prlimit, f"--data={limit}", "--", *command)
    return (sys.executable, "-I", "-c", _PY_WRAPPER, str(limit), *command)
