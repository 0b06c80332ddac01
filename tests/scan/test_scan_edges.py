"""Edges of ``fathom scan``: duplicate names in a list, ``--resume`` with nothing to resume, a run-fatal error.

Most entries here are refused by the address policy (no ``--allow-private``), so nothing is connected to and
each test takes a fraction of a second, while still going through the real CLI, crawl and store.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo.server import DemoHost, synthetic_sites

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def fathom_json(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def write_list(path: Path, servers: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    return path


def test_a_name_listed_twice_is_scanned_once_and_counted(tmp_path: Path) -> None:
    registry = write_list(
        tmp_path / "servers.json",
        [
            {"name": "twice", "url": "http://127.0.0.1:9/mcp"},
            {"name": "once", "url": "http://10.1.2.3/mcp"},
            {"name": "twice", "url": "http://10.9.9.9/mcp"},
        ],
    )
    db = f"sqlite:///{tmp_path}/f.db"
    collector = gc.get_threshold()
    summary = fathom_json("scan", str(registry), "--db", db)
    assert (summary["total"], summary["duplicates"], summary["counts"]) == (2, 1, {"refused": 2})
    assert gc.get_threshold() == collector and gc.get_freeze_count() == 0  # the crawl's collector tuning is undone
    (run,) = fathom_json("runs", "--db", db)
    assert run["servers_scanned"] == summary["total"]  # the summary and the database agree
    rows = {row["server"]: row for row in fathom_json("servers", "--db", db)}
    assert "loopback" in rows["twice"]["detail"]  # the first entry of the name is the one scanned


def test_resume_with_nothing_to_resume_is_an_error_and_starts_nothing(tmp_path: Path) -> None:
    registry = write_list(tmp_path / "servers.json", [{"name": "a", "url": "http://127.0.0.1:9/mcp"}])
    db = f"sqlite:///{tmp_path}/f.db"
    missing = runner.invoke(app, ["scan", "--resume", "--db", db])
    assert missing.exit_code == 2
    assert missing.stderr == f"fathom: nothing to resume: no database at {db} (--db names it).\n"
    assert not (tmp_path / "f.db").exists()  # not created by asking
    first = fathom_json("scan", str(registry), "--db", db)
    assert (first["run_id"], first["resumed"], first["total"]) == (1, False, 1)
    empty = runner.invoke(app, ["scan", "--resume", "--db", db])
    assert empty.exit_code == 2
    assert empty.stderr == (
        "fathom: nothing to resume: no interrupted run in this database. Run the scan without --resume.\n"
    )
    again = runner.invoke(app, ["scan", str(registry), "--db", db, "--resume"])  # run 1 is finished
    assert again.exit_code == 2 and "nothing to resume of " in again.stderr
    assert [run["status"] for run in fathom_json("runs", "--db", db)] == ["finished"]  # no silent new run


def test_scan_without_a_registry_needs_resume(tmp_path: Path) -> None:
    result = runner.invoke(app, ["scan", "--db", f"sqlite:///{tmp_path}/f.db"])
    assert result.exit_code == 2
    assert result.stderr == "fathom: name the registry to scan (only --resume may leave it out)\n"


def test_a_missing_tokenizer_stops_the_scan_before_it_connects(tmp_path: Path) -> None:
    # Its own process: the tokenizer is cached once loaded, and this one must never find its file.
    with DemoHost(synthetic_sites(2)) as host:
        servers = [{"name": site.name, "url": host.url(site.name)} for site in synthetic_sites(2)]
        registry = write_list(tmp_path / "servers.json", servers)
        db = tmp_path / "f.db"
        command = [sys.executable, "-m", "scanner", "scan", str(registry), "--db", str(db), "--allow-private"]
        env = {**os.environ, "FATHOM_TOKENIZER_DIR": str(tmp_path)}
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert result.returncode == 4, result.stderr
    assert result.stderr.startswith("fathom: ") and "tokenizer" in result.stderr
    assert "Traceback" not in result.stderr
    assert not db.exists()  # no run was started: nothing to resume, nothing half-done


def test_a_run_fatal_error_mid_scan_exits_cleanly_and_leaves_the_run_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A database that starts refusing writes mid-crawl cannot be produced for real as root: fake that one fault.
    from scanner.errors import StoreError
    from scanner.store import Store

    real_record = Store.record_scans  # what the crawl's writer calls, a batch at a time (one at concurrency 1)
    calls = []

    def record_then_fail(self: Store, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:
            raise StoreError("database is locked")
        return real_record(self, *args, **kwargs)

    monkeypatch.setattr(Store, "record_scans", record_then_fail)
    collector = gc.get_threshold()
    with DemoHost(synthetic_sites(3)) as host:
        servers = [{"name": site.name, "url": host.url(site.name)} for site in synthetic_sites(3)]
        registry = write_list(tmp_path / "servers.json", servers)
        db = f"sqlite:///{tmp_path}/f.db"
        result = runner.invoke(app, ["scan", str(registry), "--db", db, "--allow-private", "--concurrency", "1"])
    assert result.exit_code == 4
    assert result.stderr == "fathom: database is locked\n"
    assert gc.get_threshold() == collector and gc.get_freeze_count() == 0  # undone on a run-fatal error too
    monkeypatch.undo()
    (run,) = fathom_json("runs", "--db", db)
    assert run["status"] == "interrupted"  # --resume can finish it
    assert run["servers_scanned"] == 1  # the server written before the fault is kept, whole


def test_text_summary_and_no_progress_noise_off_a_terminal(tmp_path: Path) -> None:
    registry = write_list(tmp_path / "servers.json", [{"name": "a", "url": "http://127.0.0.1:9/mcp"}])
    result = runner.invoke(app, ["scan", str(registry), "--db", f"sqlite:///{tmp_path}/f.db"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "run 1 finished: 1 server · refused 1\n"
    # Standard error is not a terminal here: no progress bar drawn into a log; only the last line naming the flag
    # that would scan what was refused (a loopback address).
    assert result.stderr == (
        "fathom: 1 server was not scanned: 1 needs --allow-private (run again with the flag to scan them)\n"
    )


def test_the_last_lines_name_the_servers_not_read_and_the_next_command(tmp_path: Path) -> None:
    """Issue 46: a scan ended "run 2 finished: 6 servers · auth_required 1 · ..." without naming the servers
    that failed or what to run next."""
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
    registry = write_list(tmp_path / "servers.json", [{"name": n, "url": f"http://127.0.0.1:9/{n}"} for n in names])
    db = f"sqlite:///{tmp_path}/f.db"
    result = runner.invoke(app, ["scan", str(registry), "--db", db, "--allow-private"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "run 1 finished: 7 servers · connect_error 7\n"
    (line,) = result.stderr.splitlines()
    assert line.startswith("fathom: 7 servers not read: alpha (connect_error), bravo (connect_error), ")
    assert "and 2 more" in line and "golf" not in line
    assert line.endswith(f"why each failed and what to do: fathom servers --db {db}")


def test_only_and_limit_pick_what_a_real_scan_scans(tmp_path: Path) -> None:
    registry = write_list(
        tmp_path / "servers.json",
        [{"name": name, "url": f"http://127.0.0.1:9/{name}"} for name in ("a", "b", "c", "d")],
    )
    db = f"sqlite:///{tmp_path}/f.db"
    result = runner.invoke(app, ["scan", str(registry), "--db", db, "--only", "c", "--only", "a", "--limit", "1"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "run 1 finished: 1 server · refused 1\n"
    servers = runner.invoke(app, ["servers", "--db", db, "--format", "json"])
    assert [row["server"] for row in json.loads(servers.stdout)] == ["a"]


def test_the_skipped_line_reads_large_counts_with_separators() -> None:
    from scanner.scan.night import skipped_line

    assert skipped_line({"--run-packages": 1_234, "--allow-private": 2}) == (
        "1,236 servers were not scanned: 1,234 need --run-packages, 2 need --allow-private "
        "(run again with the flag to scan them)"
    )
