"""One package's scan: its own throwaway HOME, its own package@version cache, confined writes, a disk budget.

How an entry is charged (``--disk-limit-mb``): the bytes in its HOME (with TMPDIR inside) plus what its own
package@version cache folder grew by since the run started (see :mod:`scanner.packages.cache`), each
``(st_dev, st_ino)`` once. Nothing another entry writes at the same time is in either folder, so which entries
are charged never depends on scheduling. Where the kernel has Landlock the package cannot write anywhere else
(:func:`scanner.confine.limited`; a write elsewhere fails and the entry is recorded ``refused``), so the two
folders are everything it can write.

Sizes are sampled in a worker thread about once a second (less often when a walk takes long) and once more
when the process has ended; a sample over the budget stops the scan (the client kills the process group) and
records ``too_large``, even for a package that answered in between. A package@version found ``too_large`` is
remembered: its files are removed and it is not installed again until its version changes, or the budget is
raised, or ``--retry-too-large`` is given. As the budget fills past half, it is sampled faster (down to ten
times a second near the limit), so a fast installer is stopped near the limit, not far past it.

``--cache-max-mb`` is held during the night too (:func:`_hold_ceiling`, after a run, at most every five minutes), not
only by the housekeeping after it.

Run as root, the package runs as a user of its own (:func:`scanner.confine.child`): its HOME and package folder are
handed to that user for the run (and its ``/dev/shm`` files count in its budget) and taken back after.

Two entries declaring the same package@version run one after the other (they share its folder). The folder
is sealed after its own run and checked before the next (:func:`scanner.packages.cache.fingerprint`): an
install changed in between is removed and installed afresh, so a package never runs code another one planted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
from anyio.lowlevel import RunVar

from scanner import confine
from scanner.mcp import ClientLimits, scan_server
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages.cache import PackageCache, last_used, touch, tree_bytes
from scanner.packages.diagnose import classify, python_needed, setup_detail
from scanner.packages.environment import package_env
from scanner.packages.install import install_command, run_install
from scanner.packages.interpreters import find_python, python_version, runner_version, why_no_python, with_python
from scanner.packages.localport import is_local_port, scan_local_port
from scanner.packages.runners import out_of_children_reach, unreachable_outcome
from scanner.packages.settings import PackageSettings

_MIN_INTERVAL = 1.0
_FASTEST = 0.1
_CEILING_EVERY_S = 300.0  # a whole cache walk: not more often (issue 36: housekeeping took 19-68 s)
_CEILING_CHECKED: dict[Path, float] = {}  # cache root -> when its ceiling was last held (monotonic)
_MB = 1024 * 1024
_OFFLINE_RUNNER = {"uvx": {"UV_OFFLINE": "1"}, "npx": {"npm_config_offline": "true"}}
"""An installed package's run reads only its cache: its runner is told so, or it asks the registry again (npx with an
unpinned ``@latest``) and retries for about 70 s before it reads its cache, past the default 30 s timeout."""
# One lock per package folder and event loop (a lock must not outlive the loop that may have left it held).
_LOCKS: RunVar[dict[Path, anyio.Lock]] = RunVar("fathom_package_locks")


@asynccontextmanager
async def _one_at_a_time(folder: Path) -> AsyncIterator[None]:
    try:
        locks = _LOCKS.get()
    except LookupError:
        locks = {}
        _LOCKS.set(locks)
    async with locks.setdefault(folder, anyio.Lock()):
        yield


def confined_command(
    entry: ServerEntry, writable: list[Path], command: tuple[str, ...] | None = None
) -> tuple[str, ...]:
    """``command`` (default ``entry.command``) as it is started: under the memory cap and, for npm and PyPI
    runners, confined to write beneath ``writable`` (an OCI image's writes happen in its container, and docker
    has its own limits; with no folders, writes are not confined). The stored command stays the plain one."""
    package = entry.package or {}
    command = entry.command if command is None else command
    limit = int(package.get("memory_limit_mb") or confine.DEFAULT_MEMORY_LIMIT_MB) * _MB
    if package.get("registryType") == "oci" or not command:
        return command
    return confine.limited(command, limit, writable)


def remembered_too_large(entry: ServerEntry, cache: PackageCache, settings: PackageSettings) -> ScanOutcome | None:
    """The remembered ``too_large`` of this package@version, unless a retry was asked for or the budget raised."""
    state = cache.state(entry)
    if state.get("verdict") != "too_large" or settings.retry_too_large:
        return None
    if int(settings.disk_limit_mb) > int(state.get("disk_limit_mb") or 0):
        return None  # a larger budget than the one it failed: try again
    spec = (entry.package or {}).get("spec") or entry.name
    detail = (
        f"{state.get('detail') or 'over the disk budget'}; remembered for {spec}: not installed again until its "
        "version changes (--retry-too-large installs it again)"
    )
    return ScanOutcome(
        outcome=Outcome.TOO_LARGE,
        transport=entry.transport.value,
        detail=detail,
        extra={"disk_limit_mb": settings.disk_limit_mb, "remembered": True},
    )


async def run_package(
    entry: ServerEntry, limits: ClientLimits, profile: str, settings: PackageSettings | None = None
) -> ScanOutcome:
    """Scan ``entry`` (a resolved registry package) and classify its failure, if any (see :mod:`.diagnose`)."""
    settings = settings or PackageSettings()
    cache = PackageCache(settings.cache())
    cache.prepare()
    remembered = remembered_too_large(entry, cache, settings)
    if remembered is not None:
        return remembered
    folder = cache.package_dir(entry)
    async with _one_at_a_time(folder):
        # Changed since its own last run (without Landlock another package could have): installed afresh.
        tampered = await anyio.to_thread.run_sync(cache.tampered, entry)
        if tampered:
            cache.drop_install(entry)
        folder.mkdir(parents=True, exist_ok=True)
        touch(folder)  # in use from now: the ceiling held during the night leaves it alone
        home = Path(tempfile.mkdtemp(prefix=f"home-{os.getpid()}-", dir=cache.homes()))
        (home / "tmp").mkdir()
        try:
            try:
                with confine.child() as kid:
                    refused = None
                    if kid is not None:
                        refused = await anyio.to_thread.run_sync(_hand_over, kid, cache, folder, home)
                    path = (entry.env or {}).get("PATH") or os.defpath
                    if refused is None and kid is not None and (what := out_of_children_reach(entry.command, path)):
                        outcome = unreachable_outcome(entry, what)
                    elif refused is not None:
                        outcome = ScanOutcome(
                            outcome=Outcome.SPAWN_ERROR, transport=entry.transport.value, detail=refused
                        )
                    else:  # in its namespace, the other packages' HOMEs and folders are not there
                        with confine.room(hide=[cache.homes(), cache.root / "pkg"], keep=[home, folder]):
                            outcome = await _with_python(entry, limits, profile, settings, cache, folder, home)
                if kid is not None:  # every process of its user is gone: the folder is Fathom's again
                    await anyio.to_thread.run_sync(_take_back, folder)
            except OSError as exc:  # a user of its own could not be set up (run as root): not run at all
                detail = f"could not run it as a user of its own: {exc.strerror or exc}"
                outcome = ScanOutcome(outcome=Outcome.SPAWN_ERROR, transport=entry.transport.value, detail=detail)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        if outcome.outcome is Outcome.TOO_LARGE and "disk_limit_mb" in outcome.extra:
            cache.remember(entry, verdict="too_large", detail=outcome.detail, disk_limit_mb=settings.disk_limit_mb)
            cache.drop_install(entry)
        else:
            cache.remember(entry, verdict=None, detail=None, disk_limit_mb=None)
            touch(folder)
            await anyio.to_thread.run_sync(cache.seal, entry)
        if tampered:
            note = "its cached install had changed since its last run (not by Fathom): removed and installed again"
            outcome = replace(outcome, extra={**outcome.extra, "reinstalled": note})
    await _hold_ceiling(cache, settings, grace=2 * limits.timeout + 60)
    return outcome


async def _hold_ceiling(cache: PackageCache, settings: PackageSettings, grace: float) -> None:
    """Hold ``--cache-max-mb`` during the night too (at most every :data:`_CEILING_EVERY_S` per cache): the least
    recently used folders go, never one running here or used within ``grace`` seconds (another process, a
    worker sharing the cache, may be running it)."""
    now = time.monotonic()
    if now - _CEILING_CHECKED.get(cache.root, -_CEILING_EVERY_S) < _CEILING_EVERY_S:
        return
    _CEILING_CHECKED[cache.root] = now
    try:
        locks = _LOCKS.get()
    except LookupError:
        locks = {}

    def busy(folder: Path) -> bool:
        lock = locks.get(folder)
        return (lock is not None and lock.locked()) or time.time() - last_used(folder) < grace

    await anyio.to_thread.run_sync(cache.enforce_ceiling, settings.cache_max_mb, busy)


def _hand_over(kid: confine.Child, cache: PackageCache, folder: Path, home: Path) -> str | None:
    """Give the package's own user its HOME and package folder (and the cache's folders above them searchable,
    not listable); why it cannot run, if its user cannot reach them."""
    for path in (cache.root, cache.root / "pkg", folder.parent, cache.homes()):
        os.chmod(path, 0o711)
    os.chmod(cache.python_dir(), 0o755)
    if not confine.reachable(cache.root):
        return setup_detail(
            f"run as root, packages run as an unprivileged user of their own, which cannot reach the package cache "
            f"{cache.root}",
            "give --cache-dir a folder every user can traverse (e.g. /var/cache/fathom)",
        )
    kid.give(home)
    kid.give(folder)
    return None


def _take_back(folder: Path) -> None:
    confine.chown_tree(folder, os.getuid(), os.getgid())
    os.chmod(folder, 0o700)


async def _with_python(
    entry: ServerEntry,
    limits: ClientLimits,
    profile: str,
    settings: PackageSettings,
    cache: PackageCache,
    folder: Path,
    home: Path,
) -> ScanOutcome:
    """Run ``entry``; a PyPI package whose ``requires-python`` excludes the interpreter uv took runs again on an
    installed one that satisfies it (remembered for its version), see :mod:`scanner.packages.interpreters`.
    The runner's version, and the interpreter chosen, are recorded in the outcome's extra."""
    path = (entry.env or {}).get("PATH") or os.defpath
    runner = shutil.which(entry.command[0], path=path) if entry.command else None
    facts: dict[str, str] = {}
    if runner and (version := await anyio.to_thread.run_sync(runner_version, runner)):
        facts["runner_version"] = version
    chosen = str(cache.state(entry).get("python") or "")
    run_entry = entry
    if chosen and Path(chosen).exists():
        run_entry = replace(entry, command=with_python(entry.command, chosen))
    outcome = await _run(run_entry, limits, profile, settings, cache, folder, home)
    needed = python_needed(outcome) if outcome.outcome is Outcome.RUNNER_MISSING else None
    if needed and run_entry is entry:
        find_env = {"PATH": path, "UV_PYTHON_INSTALL_DIR": str(cache.python_dir())}
        found = await anyio.to_thread.run_sync(find_python, needed, find_env)
        outcome = outcome if found is not None else why_no_python(outcome, needed, find_env)  # uv's own error
        if found is not None:
            outcome = await _run(
                replace(entry, command=with_python(entry.command, found[0])),
                limits,
                profile,
                settings,
                cache,
                folder,
                home,
            )
            cache.remember(entry, python=found[0])
            facts["python"] = found[1]
            facts["python_required"] = needed
    elif run_entry is not entry and (version := await anyio.to_thread.run_sync(python_version, chosen, {})):
        facts["python"] = version
    return replace(outcome, extra={**outcome.extra, **facts}) if facts else outcome


async def _run(
    entry: ServerEntry,
    limits: ClientLimits,
    profile: str,
    settings: PackageSettings,
    cache: PackageCache,
    folder: Path,
    home: Path,
) -> ScanOutcome:
    env = package_env(entry, home, settings)
    confined = confine.landlock_abi() > 0 and (entry.package or {}).get("registryType") != "oci"
    writable = [home, folder] if confine.landlock_abi() > 0 else []
    kid = confine.CURRENT.get()
    try:
        started_entry = replace(entry, command=confined_command(entry, writable))
    except OSError as exc:
        return ScanOutcome(outcome=Outcome.SPAWN_ERROR, transport=entry.transport.value, detail=str(exc))
    over: list[dict[str, float]] = []
    result: list[ScanOutcome] = []
    budget = int(settings.disk_limit_mb) * _MB
    before = await anyio.to_thread.run_sync(tree_bytes, [folder])

    async def scan(scope: anyio.CancelScope) -> None:
        # The install first, timed on its own (see .install); what is left of the deadline is the server's.
        run_limits, installed = limits, None
        step = install_command(entry)
        if step is not None:
            began = time.monotonic()
            done = await run_install(entry, confined_command(entry, writable, step), env, limits.timeout)
            if not done.ok:
                result.append(done)
                scope.cancel()
                return
            installed = done.timings_ms.get("install")
            left = max(1.0, limits.timeout - (time.monotonic() - began))
            run_limits = replace(limits, timeout=left, connect_timeout=min(limits.connect_timeout, left))
        if step is not None and confine.own_network()[0]:  # installed: its run needs nothing from the registry
            with confine.room(offline=True):  # a route out through slirp4netns where there is one
                offline_env = {**env, **_OFFLINE_RUNNER.get(os.path.basename(step[0]), {})}
                if is_local_port(entry):  # on a port of its own loopback, reached through its launcher
                    outcome = await scan_local_port(started_entry, run_limits, profile, offline_env)
                else:
                    outcome = await scan_server(started_entry, run_limits, profile, env=offline_env)
            outcome = replace(outcome, extra={**outcome.extra, "offline": not confine.outbound()[0]})
        elif is_local_port(entry):  # a server on a local port: started, waited for, scanned over HTTP
            outcome = await scan_local_port(started_entry, run_limits, profile, env)
        else:
            outcome = await scan_server(started_entry, run_limits, profile, env=env)
        if installed is not None:
            outcome = replace(outcome, timings_ms={**outcome.timings_ms, "install": installed})
        result.append(outcome)
        scope.cancel()

    async def over_budget() -> float:
        """The share of the budget used (over 1: stopped)."""
        seen: set[tuple[int, int]] = set()
        own = await anyio.to_thread.run_sync(tree_bytes, [home], seen)
        grown = max(0, await anyio.to_thread.run_sync(tree_bytes, [folder], seen) - before)
        if kid is not None:  # /dev/shm is memory the package's user fills: it counts (and is removed after)
            own += await anyio.to_thread.run_sync(kid.leftovers)
        if own + grown <= budget:
            return (own + grown) / budget if budget else 0.0
        over.append(
            {"written_mb": round((own + grown) / _MB), "home_mb": round(own / _MB), "cache_mb": round(grown / _MB)}
        )
        return 2.0

    async def watch(scope: anyio.CancelScope) -> None:
        interval = _MIN_INTERVAL
        while True:
            await anyio.sleep(interval)
            began = time.monotonic()
            used = await over_budget()
            if used > 1:
                scope.cancel()
                return
            # Sampled faster as the budget fills (a fast installer is stopped near the limit, not far past it).
            interval = max(_MIN_INTERVAL, 5 * (time.monotonic() - began))
            if used > 0.5:
                interval = max(_FASTEST, interval * 2 * (1 - used))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        group.start_soon(scan, group.cancel_scope)
        group.start_soon(watch, group.cancel_scope)
    if not over:
        await over_budget()  # what it wrote since the last sample counts too, however fast it answered
    if over:
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        # The sampled figures differ from night to night; they go to extra, the detail stays the same.
        outcome = ScanOutcome(
            outcome=Outcome.TOO_LARGE,
            transport=entry.transport.value,
            detail=f"wrote more than its {settings.disk_limit_mb} MiB disk budget (--disk-limit-mb)",
            timings_ms={"total": elapsed},
            extra={"disk_limit_mb": settings.disk_limit_mb, **over[0]},
        )
    else:
        outcome = result[0]
    if confined:
        outcome = replace(outcome, extra={**outcome.extra, "confined": True})
    places = [(str(home), "<home>"), (str(folder), "<pkg>"), (str(cache.root), "<cache>")]
    declared = set((entry.package or {}).get("secret_env_names") or ())
    secrets = [value for name, value in env.items() if name in declared or name in settings.pass_env]
    return classify(entry, outcome, places=places, secrets=secrets)
