"""Start a package's runner confined: a memory cap, and (where the kernel has Landlock) writes only into the
folders Fathom budgets for it.

This file is run as a script (``python -I landlock.py LIMIT N DIR... -- COMMAND...``) between Fathom and the
runner, so it imports nothing of Fathom: the package's environment is scrubbed and need not find Fathom.

* ``RLIMIT_DATA`` caps writable private memory (see :mod:`scanner.confine.limits` for why not
  ``RLIMIT_AS``); it is inherited by every child (``npx`` → ``node``, ``uvx`` → ``python``).
* Landlock (Linux 5.13+, unprivileged) handles every *write* right (create, write, truncate, remove, rename,
  link, make device/socket/fifo/symlink) and grants them only beneath the ``DIR`` arguments (the entry's own
  HOME and its own package@version cache) and ``/dev`` (``/dev/null``, ``/dev/tty``, ``/dev/shm``). Reading and
  executing stay allowed everywhere. The restriction is inherited and cannot be lifted by the package, so it
  cannot rewrite another package's cached install, nor fill a disk outside its budget: such a write fails with
  ``EACCES``, and the scan records the entry ``refused``.

* ``PR_SET_PDEATHSIG``: the runner is sent SIGKILL when its parent dies, however it dies (its descendants are
  the reaper's, see :mod:`scanner.confine.reaper`). Set here, after the switch to the child's own user (a change of
  user clears it). Where children get a PID namespace of their own, that parent is the namespace's init
  (:mod:`scanner.confine.launcher`, PID 1 there), itself killed when Fathom dies.

Without Landlock (another OS, an older kernel) only the memory cap applies; :func:`landlock_abi` lets Fathom
say so once before a scan. Given no folders, no Landlock rule is applied (how Fathom runs a package where the
kernel has none).
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
from typing import Any

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same numbers on every Linux architecture
_VERSION_FLAG = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9

# Write rights by the ABI version that introduced them (1: the core set; 2: REFER; 3: TRUNCATE).
_WRITE_V1 = (
    (1 << 1)  # WRITE_FILE
    | (1 << 4)  # REMOVE_DIR
    | (1 << 5)  # REMOVE_FILE
    | (1 << 6)  # MAKE_CHAR
    | (1 << 7)  # MAKE_DIR
    | (1 << 8)  # MAKE_REG
    | (1 << 9)  # MAKE_SOCK
    | (1 << 10)  # MAKE_FIFO
    | (1 << 11)  # MAKE_BLOCK
    | (1 << 12)  # MAKE_SYM
)
_REFER, _TRUNCATE = 1 << 13, 1 << 14


def _syscall() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    return getattr(libc, "syscall", None)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when there is none (not Linux, too old, or switched off)."""
    call = _syscall()
    if call is None:
        return 0
    version = call(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION_FLAG))
    return max(0, int(version))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def restrict_writes(folders: list[str]) -> bool:
    """Allow this process and its children to write only beneath ``folders`` and ``/dev``. False when the
    kernel has no Landlock (nothing is changed); raises OSError when it has one and the restriction fails."""
    abi = landlock_abi()
    call = _syscall()
    if abi < 1 or call is None:
        return False
    handled = _WRITE_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = ctypes.c_uint64(handled)
    ruleset = call(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for folder in [*folders, "/dev"]:
            fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(handled, fd)
                done = call(
                    ctypes.c_long(_ADD_RULE),
                    ctypes.c_int(ruleset),
                    ctypes.c_int(_RULE_PATH_BENEATH),
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                )
                if done < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {folder}")
            finally:
                os.close(fd)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if call(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return True


def _under_own_init() -> bool:
    """Whether PID 1 is the init of a PID namespace of the child's own (:mod:`scanner.confine.launcher`), a legitimate
    parent, not the host's init that adopted an orphan."""
    try:
        with open("/proc/1/cmdline", "rb") as cmdline:
            return b"launcher.py\0" in cmdline.read()
    except OSError:
        return False


def main(argv: list[str]) -> None:
    """``LIMIT_BYTES N DIR1 .. DIRN -- COMMAND ...``: cap memory, confine writes, exec the command."""
    limit = int(argv[0])
    count = int(argv[1])
    folders = argv[2 : 2 + count]
    command = argv[2 + count + 1 :]
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
        orphan = parent == 1 and not _under_own_init()
        if os.getppid() != parent or orphan:  # Fathom died before the request took effect
            sys.exit(137)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    if folders:
        restrict_writes(folders)
    try:
        os.execvp(command[0], command)
    except OSError as exc:  # said as prlimit says it, and with the shell's exit code for "not found"
        print(f"confine: failed to execute {command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
