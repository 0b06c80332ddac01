"""One package's scan: its own throwaway HOME, the shared cache, a disk budget enforced while it runs.

The budget (``--disk-limit-mb``) counts what the package writes into its own folder (HOME and TMPDIR) plus
what the shared cache grew by while it ran. Sizes are sampled in a worker thread, about once a second (less
often when the cache is large enough that a walk takes long), and once more when the scan ends; a sample over
the budget stops the scan (the client then kills the process group) and records ``too_large`` with both
figures, even for a package that answered in between. With several packages
installing at once the cache's growth is shared out to none of them in particular: each sees the whole growth,
so keep the budget well above what one package needs (the default, 4 GiB, is meant to catch a package that
pulls a multi-gigabyte framework, not to meter ordinary ones).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

import anyio

from scanner.mcp import ClientLimits, scan_server
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages.diagnose import classify
from scanner.packages.environment import package_env
from scanner.packages.localport import is_local_port, scan_local_port
from scanner.packages.settings import PackageSettings

_MIN_INTERVAL = 1.0
_MB = 1024 * 1024


def folder_bytes(root: Path) -> int:
    """Bytes of the regular files under ``root`` (not following links; unreadable parts count as empty)."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                for item in listing:
                    try:
                        if item.is_dir(follow_symlinks=False):
                            stack.append(item.path)
                        elif item.is_file(follow_symlinks=False):
                            total += item.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total


class _Meter:
    """Sizes of the shared cache, shared by the packages running at once: one walk serves every entry that
    asks within ``fresh_s`` of it, so eight concurrent packages do not walk a large cache eight times."""

    def __init__(self, fresh_s: float = _MIN_INTERVAL) -> None:
        self.fresh_s = fresh_s
        self.lock = threading.Lock()
        self.samples: dict[Path, tuple[float, int]] = {}

    def size(self, root: Path) -> int:
        with self.lock:
            taken = self.samples.get(root)
            if taken is not None and time.monotonic() - taken[0] < self.fresh_s:
                return taken[1]
            size = folder_bytes(root)
            self.samples[root] = (time.monotonic(), size)
            return size


_CACHE_METER = _Meter()


async def run_package(
    entry: ServerEntry, limits: ClientLimits, profile: str, settings: PackageSettings | None = None
) -> ScanOutcome:
    """Scan ``entry`` (a resolved registry package) and classify its failure, if any (see :mod:`.diagnose`)."""
    settings = settings or PackageSettings()
    cache = settings.cache()
    for sub in ("npm", "uv"):
        (cache / sub).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fathom-home-", ignore_cleanup_errors=True) as folder:
        home = Path(folder)
        env = package_env(entry, home, settings)
        over: list[str] = []
        result: list[ScanOutcome] = []
        budget = int(settings.disk_limit_mb) * _MB
        cache_before = await anyio.to_thread.run_sync(_CACHE_METER.size, cache)

        async def scan(scope: anyio.CancelScope) -> None:
            if is_local_port(entry):  # a server on a local port: started, waited for, scanned over HTTP
                result.append(await scan_local_port(entry, limits, profile, env))
            else:
                result.append(await scan_server(entry, limits, profile, env=env))
            scope.cancel()

        async def over_budget() -> bool:
            own = await anyio.to_thread.run_sync(folder_bytes, home)
            grown = max(0, await anyio.to_thread.run_sync(_CACHE_METER.size, cache) - cache_before)
            if own + grown <= budget:
                return False
            over.append(
                f"wrote {(own + grown) / _MB:.0f} MiB, over the {settings.disk_limit_mb} MiB disk budget "
                f"({own / _MB:.0f} MiB in its own folder, {grown / _MB:.0f} MiB into the shared cache)"
            )
            return True

        async def watch(scope: anyio.CancelScope) -> None:
            interval = _MIN_INTERVAL
            while True:
                await anyio.sleep(interval)
                started = time.monotonic()
                if await over_budget():
                    scope.cancel()
                    return
                interval = max(_MIN_INTERVAL, 5 * (time.monotonic() - started))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(scan, group.cancel_scope)
            group.start_soon(watch, group.cancel_scope)
        if not over:
            await over_budget()  # what it wrote since the last sample counts too, however fast it answered
        if over:
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            outcome = ScanOutcome(
                outcome=Outcome.TOO_LARGE,
                transport=entry.transport.value,
                detail=over[0],
                timings_ms={"total": elapsed},
                extra={"disk_limit_mb": settings.disk_limit_mb},
            )
        else:
            outcome = result[0]
        places = [(str(home), "<home>"), (str(cache), "<cache>")]
        declared = set((entry.package or {}).get("secret_env_names") or ())
        secrets = [value for name, value in env.items() if name in declared or name in settings.pass_env]
        return classify(entry, outcome, places=places, secrets=secrets)
