"""How much memory a package's runner may use, and why it is capped the way it is.

A registry package is a stranger's program; a leak or a hostile allocation must not take the scanner's host
down. ``RLIMIT_DATA`` is the limit that works for every runtime we start: Node.js reserves gigabytes of
*virtual* address space up front (V8's code range and pointer cage), so ``RLIMIT_AS`` kills it before it
prints a byte, while ``RLIMIT_DATA`` counts only writable private memory (heap, anonymous mappings) since Linux
4.7, which is what a leak grows. The limit is inherited by every child (``npx`` → ``node``, ``uvx`` →
``python``); each process gets its own allowance, so a server that forks many workers can use a multiple.
:mod:`scanner.confine.landlock` applies it, between Fathom and the runner.
"""

from __future__ import annotations

DEFAULT_MEMORY_LIMIT_MB = 1024
