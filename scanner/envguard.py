"""Keep this process's environment (and memory) out of reach of the programs it starts.

Fathom holds secrets in its environment (``FATHOM_SECRET_*`` values, provider keys, ``PGPASSWORD``, cloud keys)
and starts strangers' programs: registry packages, commands from lists, servers under ``check --stdio``. On Linux
any process of the same user may read another's ``/proc/<pid>/environ`` and ``/proc/<pid>/mem`` (or attach with
``ptrace``) unless that process is *not dumpable*. :func:`protect_environment` marks this process so with
``prctl(PR_SET_DUMPABLE, 0)``: its ``/proc/<pid>`` files then belong to root, and reading ``environ`` or ``mem``
or attaching a debugger needs ``CAP_SYS_PTRACE``, which an ordinary child does not have.

What it does not do (docs/registry.md, "Children cannot read Fathom's environment"):

* a child's *own* environment stays readable to it and its descendants (it holds only that child's declared
  variables, ``PATH``, ``LANG`` and a temporary ``HOME``): ``exec`` makes the child dumpable again;
* ``/proc/<pid>/cmdline`` stays world-readable (the kernel does not guard it): give a database password in
  ``PGPASSWORD`` or a ``.pgpass`` file, not in ``--db`` on the command line;
* run as root, the flag alone does not stop a child, which would have root's capabilities (``CAP_SYS_PTRACE``
  and, on the kernels tried, others override it); so :func:`protect_environment` also empties the capability
  bounding set: every program Fathom starts runs as uid 0 *without capabilities* (Fathom keeps its own). Such a
  child still owns every file root owns: root is no boundary, run Fathom as an ordinary user;
* processes above Fathom (the shell that started it, ``uv run``, a CI runner) are not protected, and their
  environment usually holds the same secrets: run Fathom from a process that holds only what it needs, or as a
  separate user (the stronger boundary, and the only one against a child that reads the user's files);
* a core dump is no longer written for this process (the same flag governs it);
* only Linux has the flag; elsewhere :func:`protect_environment` does nothing and says so.

Every ``fathom`` process calls it before it parses its command line (``scanner.cli.main``); a program using the
library that starts servers should call it too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
CAP_SYS_PTRACE = 19


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def protect_environment() -> bool:
    """Make this process non-dumpable (Linux); True when it is afterwards, False where that is not possible."""
    libc = _libc()
    if libc is None:
        return False
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return False
    if os.geteuid() == 0 or libc.prctl(PR_CAPBSET_READ, CAP_SYS_PTRACE, 0, 0, 0) == 1:
        # Run as root: a child would inherit capabilities that override the flag (CAP_SYS_PTRACE, and on the
        # kernels tried others too). Out of the bounding set, no program this process starts gets any back; this
        # process keeps its own. Dropping needs CAP_SETPCAP; where that fails is_protected() says so.
        for cap in range(_last_cap() + 1):
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    return is_protected()


def _last_cap() -> int:
    try:
        return int(open("/proc/sys/kernel/cap_last_cap", encoding="utf-8").read())
    except (OSError, ValueError):
        return 63


def is_protected() -> bool:
    """Whether this process is non-dumpable and its children cannot get ``CAP_SYS_PTRACE`` (so its environment is
    unreadable to them)."""
    libc = _libc()
    if libc is None or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        return False
    if os.geteuid() == 0:
        return not any(libc.prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 for cap in range(_last_cap() + 1))
    return libc.prctl(PR_CAPBSET_READ, CAP_SYS_PTRACE, 0, 0, 0) == 0
