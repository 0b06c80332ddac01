"""How much memory a package's runner may use and how many processes any child may have, and why they are
capped the way they are.

A registry package is a stranger's program; a leak or a hostile allocation must not take the scanner's host
down. ``RLIMIT_DATA`` is the limit that works for every runtime we start: Node.js reserves gigabytes of
*virtual* address space up front (V8's code range and pointer cage), so ``RLIMIT_AS`` kills it before it
prints a byte, while ``RLIMIT_DATA`` counts only writable private memory (heap, anonymous mappings) since Linux
4.7, which is what a leak grows. The limit is inherited by every child (``npx`` → ``node``, ``uvx`` →
``python``); each process gets its own allowance, so a server that forks many workers can use a multiple.
:mod:`scanner.confine.landlock` applies it, between Fathom and the runner.

The number of processes (:data:`MAX_PROCESSES`) is capped in every child started in a namespace of its own, by
the namespace launcher (:mod:`scanner.confine.launcher`, ``--nproc``).
"""

from __future__ import annotations

DEFAULT_MEMORY_LIMIT_MB = 1024

MAX_PROCESSES = 512
"""The most processes and threads a child started in a namespace may have at once (``RLIMIT_NPROC`` in its
user namespace, :func:`scanner.confine.launcher.cap_processes`): far above what npx, uvx and a server use (node
runs about a dozen threads), far below a fork bomb's (a package started 600 processes)."""
