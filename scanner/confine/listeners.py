"""The local port's listener: a package that serves on a local port is trusted only when what listens there is
its own (its user's, run as root; else a socket open in its own process tree), never a sibling or another program
that took the port first (:mod:`scanner.packages.localport` asks).
"""

from __future__ import annotations

import contextlib
import os

from scanner.confine.users import Child


def listeners(port: int) -> list[tuple[int, int]]:
    """``(uid, socket inode)`` of every TCP socket listening on ``port`` at 127.0.0.1 or any address."""
    found: list[tuple[int, int]] = []
    wanted = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    wanted6 = {
        f"00000000000000000000000000000000:{port:04X}",
        f"0000000000000000FFFF00000100007F:{port:04X}",
        f"00000000000000000000000001000000:{port:04X}",
    }
    for table, addresses in (("/proc/net/tcp", wanted), ("/proc/net/tcp6", wanted6)):
        try:
            with open(table, encoding="ascii") as rows:
                next(rows, None)
                for row in rows:
                    words = row.split()
                    if len(words) > 9 and words[3] == "0A" and words[1].upper() in addresses:
                        found.append((int(words[7]), int(words[9])))
        except (OSError, ValueError):
            continue
    return found


def socket_inodes(pids: list[int]) -> set[int]:
    """The socket inodes open in ``pids``."""
    inodes: set[int] = set()
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for name in names:
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{name}")
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


def listener_owned(port: int, kid: Child | None, tree: list[int]) -> str | None:
    """None when whatever listens on ``port`` is the child's own (its user, or a socket open in ``tree``, the
    child's processes); else why not, in a few words."""
    found = listeners(port)
    if not found:
        return "nothing listens on its port"
    if kid is not None:
        strangers = [uid for uid, _ in found if uid != kid.uid]
        return f"another user's process (uid {strangers[0]}) listens on its port" if strangers else None
    own = socket_inodes(tree)
    if all(inode in own for _, inode in found):
        return None
    return "a process outside the package's own process tree listens on its port"
