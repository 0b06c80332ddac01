"""Fathom's package cache: one folder per package@version, state no package can write, a ceiling.

Layout under the cache folder (``--cache-dir``, default ``~/.cache/fathom``; ``/var/cache/fathom`` for root)::

    pkg/<registry type>/<identifier>@<version>-<hash>/   one package's own installer caches (npm/, uv/)
    state/<registry type>/<same name>.json              what Fathom remembers of it: size, last use, verdict
    homes/home-<pid>-<random>/                          each running entry's throwaway HOME and TMPDIR
    uv-python/                                          interpreters uv installed (read-only to packages)

Why one folder per package@version: a package is charged for exactly what its own process tree wrote (its
folder's growth and its HOME, nothing another package did at the same moment), and a package is confined to
write only into those two folders (:mod:`scanner.confine.landlock`), so it cannot rewrite another package's
install. The price is that two packages sharing a dependency keep a copy each; :func:`enforce_ceiling` keeps the
whole cache under ``--cache-max-mb`` by removing the least recently used packages' folders.

Sizes are disk use as ``du`` counts it (allocated blocks), each file once per ``(st_dev, st_ino)``: uv
hard-links installed environments from its archive, and a folder walk that counted every link would charge
them twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scanner.models import ServerEntry

_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]+")
_USED = ".fathom-used"
# Left-overs of an installer killed mid-install: uv's temporary folders, npm's temporary content.
_ORPHANS = (("uv", ".tmp"), ("npm/_cacache/tmp", ""))


def tree_bytes(roots: Iterable[Path], seen: set[tuple[int, int]] | None = None) -> int:
    """Disk used by the regular files under ``roots`` as ``du`` counts it (allocated blocks), each
    ``(st_dev, st_ino)`` once (hard links, and a file reachable from two roots), links not followed,
    unreadable parts counted as empty. Where the OS gives no block count, the file's size."""
    seen = set() if seen is None else seen
    total = 0
    stack = [str(root) for root in roots]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                for item in listing:
                    try:
                        if item.is_dir(follow_symlinks=False):
                            stack.append(item.path)
                        elif item.is_file(follow_symlinks=False):
                            info = item.stat(follow_symlinks=False)
                            key = (info.st_dev, info.st_ino)
                            if key not in seen:
                                seen.add(key)
                                blocks = getattr(info, "st_blocks", None)
                                total += info.st_size if blocks is None else blocks * 512
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def fingerprint(folder: Path) -> str:
    """A digest of every file and link under ``folder``: its path, size, mode, modification and change times.

    The change time (``st_ctime``) cannot be set by an unprivileged process, so a rewrite of any file, even one
    that puts the old size and modification time back, changes the digest; reading does not. A package@version's
    folder is sealed with it after its own run and checked before the next (see :func:`PackageCache.tampered`):
    without Landlock that is what stops one package from planting code in another's install.
    """
    rows: list[str] = []
    stack = [str(folder)]
    base = len(str(folder)) + 1
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                for item in listing:
                    try:
                        if item.is_dir(follow_symlinks=False):
                            stack.append(item.path)
                            continue
                        info = item.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    relative = item.path[base:]
                    if relative == _USED:
                        continue
                    rows.append(f"{relative}\0{info.st_size}\0{info.st_mode}\0{info.st_mtime_ns}\0{info.st_ctime_ns}")
        except OSError:
            continue
    digest = hashlib.sha256()
    for row in sorted(rows):
        digest.update(row.encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def folder_name(entry: ServerEntry) -> tuple[str, str]:
    """The registry type and the folder name of ``entry``'s package@version (readable, then a short hash of
    the exact spec so two specs never share a folder)."""
    package = entry.package or {}
    kind = _UNSAFE.sub("_", str(package.get("registryType") or "other")) or "other"
    spec = str(package.get("spec") or entry.name)
    readable = _UNSAFE.sub("_", spec).strip("._") or "package"
    digest = hashlib.sha256(f"{kind}\0{spec}".encode()).hexdigest()[:10]
    return kind, f"{readable[:80]}-{digest}"


@dataclass(frozen=True)
class PackageCache:
    """The cache folder and what Fathom keeps in it for one scan."""

    root: Path

    def package_dir(self, entry: ServerEntry) -> Path:
        kind, name = folder_name(entry)
        return self.root / "pkg" / kind / name

    def state_file(self, entry: ServerEntry) -> Path:
        kind, name = folder_name(entry)
        return self.root / "state" / kind / f"{name}.json"

    def homes(self) -> Path:
        return self.root / "homes"

    def python_dir(self) -> Path:
        return self.root / "uv-python"

    def prepare(self) -> None:
        for folder in (self.root / "pkg", self.root / "state", self.homes(), self.python_dir()):
            folder.mkdir(parents=True, exist_ok=True)

    # --- what Fathom remembers of a package ------------------------------------------------------------

    def state(self, entry: ServerEntry) -> dict[str, Any]:
        try:
            data = json.loads(self.state_file(entry).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def remember(self, entry: ServerEntry, **facts: Any) -> None:
        """Merge ``facts`` into the package's state (None removes a fact); written atomically."""
        path = self.state_file(entry)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {**self.state(entry), **facts, "spec": (entry.package or {}).get("spec")}
        data = {key: value for key, value in data.items() if value is not None}
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        partial.replace(path)

    def drop_install(self, entry: ServerEntry) -> None:
        """Remove the package's installed files (kept: its state, so a verdict outlives them)."""
        _remove(self.package_dir(entry))
        if self.state(entry).get("fingerprint"):
            self.remember(entry, fingerprint=None)

    def seal(self, entry: ServerEntry) -> None:
        """Record the package folder's :func:`fingerprint` as its own run left it."""
        self.remember(entry, fingerprint=fingerprint(self.package_dir(entry)))

    def tampered(self, entry: ServerEntry) -> bool:
        """Whether the package folder changed since it was sealed (by anything but its own run and Fathom)."""
        sealed = self.state(entry).get("fingerprint")
        folder = self.package_dir(entry)
        return bool(sealed) and folder.exists() and fingerprint(folder) != sealed

    def changed_since_sealed(self, folder: Path) -> bool:
        """Whether ``folder`` (a package@version's) differs from its seal: something but its own run changed it
        since (checked before every reseal, so a rewrite is never sealed in)."""
        state = self.root / "state" / folder.parent.name / f"{folder.name}.json"
        try:
            data = json.loads(state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        sealed = data.get("fingerprint") if isinstance(data, dict) else None
        return bool(sealed) and fingerprint(folder) != sealed

    def reseal(self, folder: Path) -> None:
        """Seal ``folder`` again after Fathom itself changed it (an installer's prune), keeping its other state."""
        state = self.root / "state" / folder.parent.name / f"{folder.name}.json"
        try:
            data = json.loads(state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or not data.get("fingerprint"):
            return
        data["fingerprint"] = fingerprint(folder)
        partial = state.with_name(f".{state.name}.{os.getpid()}")
        partial.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        partial.replace(state)

    # --- housekeeping ------------------------------------------------------------------------------------

    def remove_orphans(self) -> list[Path]:
        """Remove what killed runs left: homes of processes that are gone, installers' temporary folders, the
        shared ``npm``/``uv`` folders of Fathom versions before one folder per package. Returns what went."""
        removed: list[Path] = []
        for home in _children(self.homes()):
            pid = _pid_of(home.name)
            if pid is None or not _alive(pid):
                removed.append(home)
        for legacy in ("npm", "uv"):
            if (self.root / legacy).is_dir():
                removed.append(self.root / legacy)
        touched: list[Path] = []
        for package in self.package_dirs():
            for sub, prefix in _ORPHANS:
                for item in _children(package / sub):
                    if item.name.startswith(prefix):
                        removed.append(item)
                        touched.append(package)
        for path in removed:
            _remove(path)
        for package in dict.fromkeys(touched):
            self.reseal(package)  # Fathom's own change: not a tampering
        return removed

    def package_dirs(self) -> list[Path]:
        return [folder for kind in _children(self.root / "pkg") for folder in _children(kind)]

    def enforce_ceiling(self, max_mb: int, busy: Callable[[Path], bool] | None = None) -> list[Path]:
        """Remove the least recently used packages' folders until the cache holds at most ``max_mb`` MiB, never
        one ``busy`` says is in use (during a night: running, or used too recently to be sure it is not).
        Returns the folders removed (their verdicts stay)."""
        limit = int(max_mb) * 1024 * 1024
        seen: set[tuple[int, int]] = set()
        shared = tree_bytes([self.python_dir()], seen)
        sized = []
        for folder in self.package_dirs():
            used = _last_used(folder)
            sized.append((used, folder, tree_bytes([folder], seen)))
        total = shared + sum(size for _, _, size in sized)
        removed: list[Path] = []
        for _, folder, size in sorted(sized, key=lambda item: item[0]):
            if total <= limit:
                break
            if busy is not None and busy(folder):
                continue
            _remove(folder)
            total -= size
            removed.append(folder)
        return removed

    def size(self) -> int:
        return tree_bytes([self.root])


def touch(folder: Path) -> None:
    """Mark a package's folder as used now (its last use decides what the ceiling removes first)."""
    marker = folder / _USED
    with contextlib.suppress(OSError):
        marker.write_text(str(int(time.time())), encoding="utf-8")


def last_used(folder: Path) -> float:
    """When the package's folder was last used (its marker's time; the folder's own without one)."""
    return _last_used(folder)


def _last_used(folder: Path) -> float:
    try:
        return (folder / _USED).stat().st_mtime
    except OSError:
        try:
            return folder.stat().st_mtime
        except OSError:
            return 0.0


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _pid_of(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) >= 3 and parts[0] == "home" and parts[1].isdigit():
        return int(parts[1])
    return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: Path) -> None:
    def writable(function: Any, name: str, _exc: Any) -> None:
        # A package may leave read-only folders (Go's module cache does): make them writable, then retry once.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), 0o700)
            os.chmod(name, 0o700)
            function(name)

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onerror=writable)  # onexc is 3.12+
    else:
        with contextlib.suppress(OSError):
            path.unlink()
