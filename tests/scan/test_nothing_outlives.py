"""Nothing outlives Fathom (issue 36): a scan killed with SIGKILL (the OOM killer, ``timeout -s KILL`` in cron)
leaves no process it started behind, and its run reads ``interrupted`` (resumable), not ``running``.

The servers are :mod:`tests.servers.hostile_stdio` commands that ignore SIGTERM and fork (one a child in its
process group, one a grandchild that left it with ``setsid`` after a double fork), started by a real
``fathom scan --run-commands``. Started with Fathom's own interpreter they run as Fathom's user (the reaper finds
them by their mark); with the system's, run as root, each runs as a user of its own (the reaper kills its
user's processes). See :mod:`scanner.confine.reaper`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner import confine
from scanner.cli import app
from scanner.confine import users as leases
from scanner.store import open_store
from tests.mcp.helpers import recorded_pids
from tests.scan.test_interrupted_scan import ROOT, alive, start_scan

HOSTILE = ROOT / "tests" / "servers" / "hostile_stdio.py"
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists()), None)


def started_by(needle: str) -> list[int]:
    """Every live process whose command line mentions ``needle``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if needle.encode() in cmdline and alive(int(name)):
            found.append(int(name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper and /proc are Linux's")
@pytest.mark.parametrize("python", ["fathom", "system"])
def test_a_scan_killed_with_sigkill_leaves_no_child_and_its_run_reads_interrupted(tmp_path: Path, python: str):
    interpreter = sys.executable if python == "fathom" else SYSTEM_PYTHON
    if interpreter is None:
        pytest.skip("no system-wide python3")
    pids = tmp_path / "pids"
    pids.mkdir()
    pids.chmod(0o777)  # a child running as a user of its own writes its pid here
    servers = [
        {
            "name": f"stubborn/{mode}",
            "command": [interpreter, str(HOSTILE), "--mode", mode, "--pid-file", str(pids / mode)],
        }
        for mode in ("fork-ignore-term", "double-fork")
    ]
    registry = tmp_path / "servers.json"
    registry.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    db = tmp_path / "f.db"
    homes_before = set(Path("/tmp").glob("fathom-home-*"))
    process = start_scan(registry, db)
    deadline = time.monotonic() + 120
    while not all(
        (pids / mode).exists() and (pids / mode).read_text().strip() for mode in ("fork-ignore-term", "double-fork")
    ):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    recorded = {pid for mode in ("fork-ignore-term", "double-fork") for pid in recorded_pids(pids / mode)}
    children = set(started_by(str(pids))) | recorded
    assert len(children) >= 4 and all(alive(pid) for pid in recorded)
    users = {uid for pid in recorded for uid in leases.users_of(pid)} - {os.geteuid()}
    process.kill()
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in children if alive(pid)]
    for pid in left:  # never leave them behind, whatever the verdict
        os.kill(pid, signal.SIGKILL)
    assert left == [], "processes the killed scan started are still running"

    def homes_left() -> set[Path]:
        """The private HOMEs of this scan's commands (their users' own) still there; other tests' come and go."""
        found = set()
        for home in set(Path("/tmp").glob("fathom-home-*")) - homes_before:
            with contextlib.suppress(OSError):
                if home.stat().st_uid in users:
                    found.add(home)
        return found

    while homes_left() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not homes_left(), "the commands' private HOMEs are removed"

    result = CliRunner().invoke(app, ["runs", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    [run] = json.loads(result.stdout)
    assert run["status"] == "interrupted"
    # The next scan on the database marks it so in the store too (its process is gone, however recent).
    store = open_store(f"sqlite:///{db}")
    try:
        assert store.mark_gone_runs_interrupted() == [run["run"]]
        assert [row.status for row in store.runs()] == ["interrupted"]
        assert store.resumable_run(None) == run["run"]
    finally:
        store.close()


def _fathom(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scanner", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="namespaces and /proc are Linux's")
@pytest.mark.parametrize("end", ["normal", "kill-9"])
@pytest.mark.parametrize("path", ["command-out-of-reach", "check-stdio"])
def test_a_loop_that_leaves_its_session_and_its_mark_does_not_outlive_fathom(tmp_path: Path, path: str, end: str):
    """Issue 42: a command out of the children's users' reach (run as root: its script under a 0700 folder) and
    ``check --stdio``'s server ran as Fathom's user without a namespace, and a loop they left (``setsid``, then
    ``exec`` with an empty environment: no process group, no ``FATHOM_SCAN_MARK``) kept running after a normal
    end and after ``kill -9`` of Fathom. Each now runs in a PID namespace of its own (run as root, in a user
    namespace left unmapped), which ends with it."""
    if not confine.namespaces()[0]:
        pytest.skip(f"the kernel refuses namespaces here: {confine.namespaces()[1]}")
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    server = private / "hostile_stdio.py"
    shutil.copy(HOSTILE, server)
    marker = tmp_path / f"loop-{path}-{end}"  # named in the loop's command line: how the test finds it
    mode = "vanish" if end == "normal" else "vanish-hang"
    command = [sys.executable, str(server), "--mode", mode, "--pid-file", str(marker)]
    if path == "check-stdio":
        process = _fathom("check", "--format", "json", "--timeout", "300", "--", *command)
    else:
        registry = tmp_path / "servers.json"
        registry.write_text(json.dumps({"servers": [{"name": "vanishing/loop", "command": command}]}), encoding="utf-8")
        process = start_scan(registry, tmp_path / "f.db")
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and started_by(str(marker))):
            assert process.poll() is None or end == "normal", process.communicate()
            assert time.monotonic() < deadline, "the loop never started"
            time.sleep(0.05)
        loop = started_by(str(marker))
        if end == "kill-9":
            process.kill()
        process.communicate(timeout=120)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in loop) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in loop if alive(pid)]
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=60)
        for pid in started_by(str(marker)):  # never leave it behind, whatever the verdict
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert left == [], f"the loop outlived Fathom ({end})"
