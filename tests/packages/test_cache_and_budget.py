"""The package cache a nightly can trust: each entry is charged only for what its own process tree wrote, a hard
link counts once, no package can rewrite another's install or write outside its folders, and a too_large
package@version is remembered instead of installed again every night.

Real npx against the tests' loopback registry, real files; the confinement tests need Landlock (Linux 5.13+).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from scanner import confine
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages import PackageSettings, run_package
from scanner.packages.cache import PackageCache, tree_bytes
from scanner.store.tables import unkeyed
from tests.packages.local_registry import NPM_NAME, PY_NAME, LocalRegistry
from tests.packages.test_package_runs import environ, needs_npx, needs_uvx, npm_package, resolve, tool_names

MISSING = "fathom-test-missing"
needs_landlock = pytest.mark.skipif(confine.landlock_abi() == 0, reason="the kernel has no Landlock")


class SlowMissingRegistry(LocalRegistry):
    """The loopback registry, answering 404 for ``fathom-test-missing`` only after ``delay_s`` (as a slow
    registry does), so a 404 entry is still running while another entry writes."""

    delay_s = 8.0

    def answer(self, path: str) -> tuple[str, bytes] | None:
        if MISSING in path:
            time.sleep(self.delay_s)
            return None
        return super().answer(path)


@pytest.fixture(scope="module")
def registry() -> Iterator[LocalRegistry]:
    served = SlowMissingRegistry()
    yield served
    served.close()


def run(entry: ServerEntry, settings: PackageSettings, timeout: float = 90) -> ScanOutcome:
    return anyio.run(run_package, entry, ClientLimits(timeout=timeout), "rich", settings)


def test_a_hard_linked_tree_is_counted_once(tmp_path):
    archive = tmp_path / "cache" / "archive"
    archive.mkdir(parents=True)
    (archive / "lib.so").write_bytes(b"x" * 100_000)
    env = tmp_path / "home" / "env"
    env.mkdir(parents=True)
    for index in range(3):  # uv hard-links an environment's files from its archive
        os.link(archive / "lib.so", env / f"lib{index}.so")
    (env / "own.txt").write_bytes(b"y" * 1000)
    one = tree_bytes([tmp_path / "cache"])
    own = (env / "own.txt").stat().st_blocks * 512
    assert one == (archive / "lib.so").stat().st_blocks * 512 >= 100_000  # disk use, as du counts it
    assert tree_bytes([tmp_path / "home"]) == one + own  # three links, one file
    assert tree_bytes([tmp_path / "cache", tmp_path / "home"]) == one + own  # across two roots, still once


@needs_npx
def test_two_entries_at_once_only_the_writer_is_too_large(registry, tmp_path):
    """One entry writes 48 MB into its install cache under a 16 MB budget while another waits for a 404: the
    writer is too_large, the 404 is package_not_found (before: the shared cache's growth was charged to both)."""
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env, disk_limit_mb=16)
    writer = resolve(npm_package("1.0.0", "fill-cache", "48"), env)
    missing = resolve({**npm_package("1.0.0"), "identifier": MISSING}, env)
    results: dict[str, ScanOutcome] = {}

    async def both() -> None:
        async def one(key: str, entry: ServerEntry) -> None:
            results[key] = await run_package(entry, ClientLimits(timeout=90), "rich", settings)

        async with anyio.create_task_group() as group:
            group.start_soon(one, "missing", missing)
            await anyio.sleep(0.5)  # the 404 is in flight first, and still is while the writer writes
            group.start_soon(one, "writer", writer)

    anyio.run(both)
    assert results["writer"].outcome is Outcome.TOO_LARGE, results["writer"].detail
    assert results["writer"].extra["cache_mb"] > 16 and results["writer"].extra["home_mb"] == 0
    assert results["missing"].outcome is Outcome.PACKAGE_NOT_FOUND, results["missing"].detail


@needs_npx
def test_too_large_is_remembered_per_version_until_a_retry_is_asked(registry, tmp_path):
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env, disk_limit_mb=16)
    entry = resolve(npm_package("1.0.0", "fill-cache", "48"), env)
    cache = PackageCache(tmp_path / "cache")
    first = run(entry, settings)
    assert first.outcome is Outcome.TOO_LARGE
    assert not cache.package_dir(entry).exists()  # its files are gone, its verdict stays
    downloads = registry.downloads(f"{NPM_NAME}-1.0.0.tgz")
    second = run(entry, settings)
    assert second.outcome is Outcome.TOO_LARGE and second.extra["remembered"] is True
    assert second.detail == (
        f"wrote more than its 16 MiB disk budget (--disk-limit-mb); remembered for {NPM_NAME}@1.0.0: not installed "
        "again until its version changes (--retry-too-large installs it again)"
    )
    assert registry.downloads(f"{NPM_NAME}-1.0.0.tgz") == downloads  # nothing was downloaded again
    # Another version of the same package is its own package@version: it runs.
    assert tool_names(run(resolve(npm_package("2.0.0"), env), settings)) == ["version_2_0_0"]
    retry = PackageSettings(cache_dir=tmp_path / "cache", environ=env, disk_limit_mb=16, retry_too_large=True)
    again = run(entry, retry)
    assert again.outcome is Outcome.TOO_LARGE and "remembered" not in again.extra
    assert registry.downloads(f"{NPM_NAME}-1.0.0.tgz") == downloads + 1


@needs_npx
@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
def test_a_package_cannot_rewrite_another_package_install(registry, tmp_path, monkeypatch, landlock):
    """Held by Landlock (the write fails: ``refused``), by each package's namespace (the other installs' folders
    are not there) and, run as root, by each package's own user (the other install's folder is not even listable
    to it); without any (not root, no Landlock, no namespaces) it is not."""
    if landlock and confine.landlock_abi() == 0:
        pytest.skip("the kernel has no Landlock")
    if not landlock:
        if not confine.enabled() and not confine.namespaces()[0]:
            pytest.skip("without Landlock only a user of its own (run as root) or a namespace holds this")
        monkeypatch.setattr("scanner.confine.landlock_abi", lambda: 0)
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    victim = resolve(npm_package("1.0.0"), env)
    assert tool_names(run(victim, settings)) == ["version_1_0_0"]
    installed = list(PackageCache(tmp_path / "cache").package_dir(victim).rglob("server.js"))
    assert installed, "the victim's install is in its own folder"
    before = [path.read_bytes() for path in installed]
    attacker = run(resolve(npm_package("2.0.0", "poison"), env), settings)
    if confine.enabled() or confine.namespaces()[0]:  # the other install's folder is out of its sight
        assert attacker.outcome in (Outcome.OK, Outcome.REFUSED), (attacker.outcome, attacker.detail)
    else:
        assert attacker.outcome is Outcome.REFUSED, (attacker.outcome, attacker.detail)
        assert attacker.detail.startswith("refused: wrote outside its HOME and its own cache folder: Error: EACCES")
    assert [path.read_bytes() for path in installed] == before
    # The next night the victim still runs its own code.
    assert tool_names(run(victim, settings)) == ["version_1_0_0"]


@needs_npx
@needs_landlock
def test_a_package_cannot_write_outside_its_folders(registry, tmp_path):
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env, disk_limit_mb=16)
    outside = tmp_path / "outside.bin"
    outcome = run(resolve(npm_package("1.0.0", "spill", str(outside), "32"), env), settings)
    assert outcome.outcome is Outcome.REFUSED, (outcome.outcome, outcome.detail)
    assert "EACCES" in outcome.detail
    assert not outside.exists()


def test_orphans_and_the_ceiling(tmp_path):
    cache = PackageCache(tmp_path)
    cache.prepare()
    old, new = tmp_path / "pkg" / "npm" / "old-1", tmp_path / "pkg" / "npm" / "new-1"
    for folder, stamp in ((old, 1_000_000), (new, 2_000_000)):
        (folder / "npm").mkdir(parents=True)
        (folder / "npm" / "blob").write_bytes(b"z" * 600_000)
        (folder / ".fathom-used").write_text("x", encoding="utf-8")
        os.utime(folder / ".fathom-used", (stamp, stamp))
    (old / "uv" / ".tmpAbC").mkdir(parents=True)  # an installer killed mid-install
    (tmp_path / "homes" / "home-999999999-x").mkdir()  # a HOME whose process is gone
    live = tmp_path / "homes" / f"home-{os.getpid()}-y"
    live.mkdir()
    (tmp_path / "npm").mkdir()  # the shared folder of an older Fathom
    removed = cache.remove_orphans()
    assert set(removed) == {old / "uv" / ".tmpAbC", tmp_path / "homes" / "home-999999999-x", tmp_path / "npm"}
    assert live.exists()
    # 1.2 MB held, 1 MiB allowed: the least recently used package goes first.
    assert cache.enforce_ceiling(1) == [old]
    assert new.exists() and cache.size() <= 1024 * 1024


@needs_npx
def test_the_ceiling_holds_during_the_night_not_only_after_it(registry, tmp_path, monkeypatch):
    """Issue 36: the cache peaked far over --cache-max-mb during a cold night. After each package's run the
    ceiling is held (at most every five minutes): the least recently used folders go, never one in use or just used."""
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env, cache_max_mb=0)
    cache = PackageCache(tmp_path / "cache")
    first = resolve(npm_package("1.0.0"), env)
    monkeypatch.setattr("scanner.packages.sandbox._CEILING_CHECKED", {})
    assert tool_names(run(first, settings)) == ["version_1_0_0"]
    assert cache.package_dir(first).exists(), "just used: kept, over the ceiling or not"
    an_hour_ago = time.time() - 3600
    os.utime(cache.package_dir(first) / ".fathom-used", (an_hour_ago, an_hour_ago))
    monkeypatch.setattr("scanner.packages.sandbox._CEILING_CHECKED", {})
    second = resolve(npm_package("2.0.0"), env)
    assert tool_names(run(second, settings)) == ["version_2_0_0"]
    assert not cache.package_dir(first).exists(), "removed during the night, before the housekeeping after it"
    assert cache.package_dir(second).exists()
    assert tool_names(run(first, settings)) == ["version_1_0_0"]  # simply installed again when next scanned


def _server(name: str, package: dict[str, Any]) -> dict[str, Any]:
    return {"server": {"name": name, "description": "d", "version": "1.0.0", "packages": [package]}}


def _stored(db: Path, run_id: int) -> dict[str, tuple[Any, ...]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT servers.name, scans.outcome, scans.detail, scans.command, scans.extra FROM scans "
            "JOIN servers ON servers.id = scans.server_id WHERE scans.run_id = ?",
            (run_id,),
        ).fetchall()
    return {
        name: (outcome, detail, command, unkeyed(json.loads(extra or "{}")).get("stderr_tail"))
        for name, outcome, detail, command, extra in rows
    }


@needs_npx
@needs_uvx
@pytest.mark.timeout(600)  # three whole scans of five packages each (about 100 s on two busy cores)
def test_three_nights_keep_the_cache_bounded_and_the_stored_text_identical(registry, tmp_path):
    """``fathom scan --run-packages`` three nights in a row over the same local packages: the cache is no larger
    after nights 2 and 3 than after night 1, and what is stored (outcome, detail, command, stderr tail) is
    byte-identical from night to night (night 1's too_large becomes "remembered" on night 2, said once)."""
    from typer.testing import CliRunner

    from scanner.cli import app

    pypi = {"registryType": "pypi", "identifier": PY_NAME, "version": "1.0.0", "transport": {"type": "stdio"}}
    servers = [
        _server("io.github.t/good", npm_package("1.0.0")),
        _server("io.github.t/crash", npm_package("1.0.0", "crash")),
        _server("io.github.t/gone", npm_package("9.9.9")),
        _server("io.github.t/python", pypi),
        _server("io.github.t/big", npm_package("2.0.0", "fill-cache", "48")),
    ]
    source = tmp_path / "registry.json"
    source.write_text(json.dumps({"servers": servers, "metadata": {"count": len(servers)}}), encoding="utf-8")
    env = environ(registry)
    cache = tmp_path / "cache"
    db = tmp_path / "fathom.db"
    args = ["scan", str(source), "--db", str(db), "--run-packages", "--cache-dir", str(cache), "--timeout", "90"]
    args += ["--disk-limit-mb", "16", "--concurrency", "3"]
    nights: list[dict[str, tuple[Any, ...]]] = []
    sizes: list[int] = []
    wheels: list[int] = []
    for night in range(1, 4):
        result = CliRunner().invoke(app, args, env=env)
        assert result.exit_code == 0, result.output
        nights.append(_stored(db, night))
        sizes.append(tree_bytes([cache]))
        wheels.append(registry.downloads(".whl"))
    first, second, third = nights
    assert {name: row[0] for name, row in first.items()} == {
        "io.github.t/good": "ok",
        "io.github.t/crash": "crashed",
        "io.github.t/gone": "package_not_found",
        "io.github.t/python": "ok",
        "io.github.t/big": "too_large",
    }
    assert second["io.github.t/big"][1].endswith(
        "not installed again until its version changes (--retry-too-large installs it again)"
    )
    assert {name: row for name, row in first.items() if name != "io.github.t/big"} == {
        name: row for name, row in second.items() if name != "io.github.t/big"
    }
    assert second == third
    assert not any(
        word.startswith(("/usr/bin/prlimit", "--data=")) for row in first.values() for word in row[2].split()
    )
    assert sizes[1] <= sizes[0] and sizes[2] <= sizes[0], sizes
    assert wheels[0] == wheels[1] == wheels[2]  # the prune after a night kept what the next night needs


@needs_npx
def test_an_install_changed_between_nights_is_installed_again(registry, tmp_path):
    """Without Landlock (or by hand) a package's cached install can be rewritten between nights; the folder is
    sealed after its own run, so the next night sees the change, removes the install and runs its own code."""
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    victim = resolve(npm_package("1.0.0"), env)
    assert tool_names(run(victim, settings)) == ["version_1_0_0"]
    [installed] = [
        path
        for path in PackageCache(tmp_path / "cache").package_dir(victim).rglob("server.js")
        if "node_modules" in path.parts
    ]
    original = installed.stat()
    installed.write_text('console.error("planted"); process.exit(3);\n', encoding="utf-8")
    os.utime(installed, ns=(original.st_atime_ns, original.st_mtime_ns))  # size and mtime put back do not hide it
    again = run(victim, settings)
    assert tool_names(again) == ["version_1_0_0"]
    assert again.extra["reinstalled"].startswith("its cached install had changed since its last run")
    third = run(victim, settings)  # sealed again after its own run: nothing to say the next night
    assert tool_names(third) == ["version_1_0_0"] and "reinstalled" not in third.extra


@needs_npx
def test_housekeeping_is_a_step_of_the_run_and_finished_at_comes_after_it(registry, tmp_path, monkeypatch):
    """Issue 36: the run's ``finished_at`` was stamped before the housekeeping after the last server (19-68 s on
    a real night); the step is said on its own (``on_phase``) and the run finishes after it."""
    from datetime import UTC, datetime

    from scanner.packages import housekeeping
    from scanner.report import queries
    from scanner.scan.crawl import CrawlSettings
    from scanner.scan.night import HOUSEKEEPING, ScanConfig, run_scan

    for name, value in environ(registry).items():
        monkeypatch.setenv(name, value)
    real_after = housekeeping.after_scan
    ended: list[datetime] = []

    def after_scan(settings: PackageSettings, since: float) -> list[str]:
        said = real_after(settings, since)  # the real prune (npm cache verify), then a mark of when it ended
        time.sleep(0.05)
        ended.append(datetime.now(UTC))
        return said

    monkeypatch.setattr(housekeeping, "after_scan", after_scan)
    source = tmp_path / "registry.json"
    servers = [_server("io.github.t/good", npm_package("1.0.0"))]
    source.write_text(json.dumps({"servers": servers, "metadata": {"count": 1}}), encoding="utf-8")
    db_url = f"sqlite:///{tmp_path / 'fathom.db'}"
    settings = CrawlSettings(
        concurrency=1, limits=ClientLimits(timeout=90), packages=PackageSettings(cache_dir=tmp_path / "cache")
    )
    phases: list[tuple[str, datetime]] = []
    summary = run_scan(
        ScanConfig(source=str(source), db_url=db_url, run_packages=True, crawl=settings),
        on_phase=lambda what: phases.append((what, datetime.now(UTC))),
    )
    assert summary.counts == {"ok": 1}
    assert [what for what, _ in phases] == [HOUSEKEEPING]
    (run,) = queries.runs(db_url)
    finished = run["finished_at"] if run["finished_at"].tzinfo else run["finished_at"].replace(tzinfo=UTC)
    assert run["status"] == "finished" and len(ended) == 1
    assert phases[0][1] <= ended[0] <= finished, (phases, ended, finished)
