"""A database that cannot be written is one line and exit 4, never a traceback (issue 8, item 13).

Real failures, not mocks: a read-only SQLite file (a read-only mount when the tests run as root, file modes
otherwise, and SQLite's own read-only URI), a full disk (a tiny tmpfs filled to the brim, when the tests may
mount one; SQLite's ``max_page_count`` otherwise), and a folder that cannot exist. Each scan runs as a real
``fathom`` process against a real loopback server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event
from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo.server import DemoHost, synthetic_sites
from scanner.store import open_store

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Four demo servers of 30 tools each on loopback: a scan of them writes a few hundred KB."""
    sites = synthetic_sites(4, tools_per_server=30)
    with DemoHost(sites) as host:
        path = tmp_path_factory.mktemp("registry") / "servers.json"
        servers = [{"name": site.name, "url": host.url(site.name)} for site in sites]
        path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
        yield path


def fathom(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "scanner", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=90, env=env)


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == code, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("fathom: "), line
    for needle in needles:
        assert needle in line, line
    return line


def scan(registry: Path, db: str) -> subprocess.CompletedProcess[str]:
    return fathom("scan", str(registry), "--db", db, "--allow-private", "--timeout", "20")


def scan_here(registry: Path, db: str) -> Any:
    """The same scan in this process (faster, for the set-up and follow-up scans around the one that fails)."""
    return runner.invoke(app, ["scan", str(registry), "--db", db, "--allow-private", "--timeout", "20"])


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted under tmp_path (root only; skipped where mounting is not allowed)."""
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mount = tmp_path / "mnt"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_scan_into_a_full_disk_is_one_line_and_exit_4(registry: Path, tmpfs: Path) -> None:
    db = tmpfs / "f.db"
    open_store(f"sqlite:///{db}").close()  # schema in place; now leave no room for the scan
    filler = tmpfs / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(descriptor, b"\0" * 4096)
    except OSError:
        pass  # ENOSPC: the disk is full
    finally:
        os.close(descriptor)

    line = assert_one_line(scan(registry, str(db)), 4, "the disk is full")

    assert str(db) in line
    filler.unlink()  # room again: the data written before the failure is intact and a new scan works
    with open_store(f"sqlite:///{db}") as store:
        assert all(run.status != "running" for run in store.runs())
    assert scan_here(registry, str(db)).exit_code == 0


def test_a_scan_into_a_read_only_mount_is_one_line_and_exit_4(registry: Path, tmpfs: Path) -> None:
    db = tmpfs / "f.db"
    assert scan_here(registry, str(db)).exit_code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)

    assert_one_line(scan(registry, str(db)), 4, "read-only")

    # A WAL database cannot even be read where its -shm file cannot be made: said in one line too.
    reading = runner.invoke(app, ["runs", "--db", str(db)])
    assert reading.exit_code == 4 and len(reading.stderr.splitlines()) == 1 and "read-only" in reading.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes")
def test_a_scan_into_a_read_only_file_is_one_line_and_exit_4(registry: Path, tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    assert scan_here(registry, str(db)).exit_code == 0
    db.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        assert_one_line(scan(registry, str(db)), 4)
    finally:
        tmp_path.chmod(0o755)
        db.chmod(0o644)


def test_sqlites_read_only_mode_is_one_line_and_exit_4(registry: Path, tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    open_store(f"sqlite:///{db}").close()

    result = scan_here(registry, f"sqlite:///file:{db}?mode=ro&uri=true")

    assert result.exit_code == 4 and "read-only" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("fathom: database ")


def test_a_database_that_reaches_its_page_limit_mid_scan_is_one_line_and_exit_4(registry: Path, tmp_path: Path) -> None:
    """The full disk without a mount: SQLite's max_page_count stops the file growing past its migrated size."""
    db = tmp_path / "f.db"
    open_store(f"sqlite:///{db}").close()
    pages = db.stat().st_size // 4096 + 2

    def cap(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(Engine, "connect", cap)
    try:
        result = runner.invoke(app, ["scan", str(registry), "--db", str(db), "--allow-private"])
    finally:
        event.remove(Engine, "connect", cap)

    assert result.exit_code == 4, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    (line,) = result.stderr.splitlines()
    assert line.startswith("fathom: database ") and "the disk is full" in line, line


def test_a_database_folder_that_cannot_exist_is_one_line(registry: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")

    assert_one_line(scan(registry, str(blocker / "sub" / "f.db")), 4, "cannot create the folder")
    # A query on a database that is not there is a usage error (README: exit 2), and creates nothing.
    query = runner.invoke(app, ["runs", "--db", str(tmp_path / "missing" / "f.db")])
    assert query.exit_code == 2 and query.stderr.startswith("fathom: no database at")
    assert not (tmp_path / "missing").exists()
