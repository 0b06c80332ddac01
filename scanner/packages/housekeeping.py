"""Keeping the package cache in bounds around a scan that runs packages.

Before the scan (or as a ``fathom worker --run-packages`` starts): what killed runs left behind goes (HOMEs of
processes that are gone, installers' temporary folders, the shared folders of older Fathom versions), see
:meth:`PackageCache.remove_orphans`.

After the scan (or as that worker stops; :func:`kept` serves both): each package folder used since is checked
against its seal first (one changed since its own run is left alone, sealed as it was, so its next run
reinstalls it with a note: a rewrite is never sealed in); each installer's own prune runs over the other
package folders used since (``uv cache prune``; ``npm cache verify``, which also collects content nothing refers
to; uv's interpreter facts, one file per ephemeral environment, are removed), then the least recently used
packages' folders are removed until the whole cache is under ``--cache-max-mb``
(:meth:`PackageCache.enforce_ceiling`).
Verdicts (a remembered ``too_large``) are kept; a removed package is simply installed again when next scanned.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scanner.packages.cache import PackageCache, tree_bytes
from scanner.packages.settings import PackageSettings

PRUNE_TIMEOUT_S = 120
_MB = 1024 * 1024


def before_scan(settings: PackageSettings) -> list[str]:
    """Remove orphans; one line saying what went, if anything."""
    cache = PackageCache(settings.cache())
    cache.prepare()
    removed = _orphans_sized(cache)
    if not removed:
        return []
    size = sum(bytes_ for _, bytes_ in removed)
    return [f"package cache: removed {len(removed)} left-over folder(s) of killed runs ({size / _MB:.0f} MiB)"]


def _orphans_sized(cache: PackageCache) -> list[tuple[Path, int]]:
    # Sized before removal, for the line above; remove_orphans decides what is an orphan.
    before = {path: tree_bytes([path]) if path.is_dir() else 0 for path in _candidates(cache)}
    return [(path, before.get(path, 0)) for path in cache.remove_orphans()]


def _candidates(cache: PackageCache) -> list[Path]:
    found = [*_list(cache.homes()), cache.root / "npm", cache.root / "uv"]
    for package in cache.package_dirs():
        found.extend(_list(package / "uv"))
        found.extend(_list(package / "npm" / "_cacache" / "tmp"))
    return found


def _list(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def after_scan(settings: PackageSettings, since: float, run: Callable[..., object] = subprocess.run) -> list[str]:
    """Prune the package folders used since ``since`` (a ``time.time()``), then hold the ceiling."""
    cache = PackageCache(settings.cache())
    # A folder changed since its own run sealed it (another package rewrote it, where nothing stopped that) is
    # neither pruned nor sealed again: its stale seal has the next run remove it and install afresh, with a note.
    used = [
        folder
        for folder in cache.package_dirs()
        if _used_since(folder, since) and not cache.changed_since_sealed(folder)
    ]
    path = settings.source().get("PATH") or os.defpath
    commands: list[list[str]] = []
    uv = shutil.which("uv", path=path)
    npm = shutil.which("npm", path=path)
    for folder in used:
        if uv and (folder / "uv").is_dir():
            commands.append([uv, "cache", "prune", "--cache-dir", str(folder / "uv")])
        if npm and (folder / "npm").is_dir():
            commands.append([npm, "cache", "verify", "--cache", str(folder / "npm")])
    # npm_config_logs_max=0: the verify would otherwise leave a log file in the cache every night.
    env = {
        "PATH": path,
        "HOME": str(cache.homes()),
        "NO_UPDATE_NOTIFIER": "1",
        "npm_config_logs_max": "0",
        "npm_config_update_notifier": "false",
        "UV_NO_PROGRESS": "1",
    }

    def prune(command: list[str]) -> None:
        # A prune that fails leaves the cache as it was; the ceiling still applies.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            run(command, env=env, capture_output=True, timeout=PRUNE_TIMEOUT_S, check=False)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(prune, commands))
    for folder in used:
        # uv's facts about each interpreter it met, one file per ephemeral environment and night: cheap to
        # learn again, and neither prune removes them.
        for facts in (folder / "uv").glob("interpreter-v*"):
            shutil.rmtree(facts, ignore_errors=True)
        cache.reseal(folder)  # the prune was Fathom's own change, not a tampering
    removed = cache.enforce_ceiling(settings.cache_max_mb)
    if not removed:
        return []
    return [
        f"package cache: over --cache-max-mb {settings.cache_max_mb}: removed the {len(removed)} least recently "
        "used package install(s)"
    ]


def kept(settings: PackageSettings, say: Callable[[str], None]) -> Callable[[], None]:
    """Clear the orphans now (:func:`before_scan`) and return what prunes the folders used from now on and holds
    ``--cache-max-mb`` (:func:`after_scan`): a scan calls it when it ends, a worker when it stops. Each line
    of what was done goes to ``say``."""
    import time

    since = time.time()
    for line in before_scan(settings):
        say(line)

    def after() -> None:
        for line in after_scan(settings, since):
            say(line)

    return after


def _used_since(folder: Path, since: float) -> bool:
    try:
        return (folder / ".fathom-used").stat().st_mtime >= since - 1
    except OSError:
        return False
