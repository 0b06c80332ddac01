"""``fathom scan REGISTRY --dry-run``: the registry slice resolved as a user sees it, connecting to nothing.

Uses a copy of the shared registry sample (65 server versions of the official registry API, 57 of them latest)
in ``tests/fixtures/registry``, with secrets supplied through the environment the way a nightly job would.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from scanner.cli import app
from scanner.registry import secret_env_name

SAMPLE = Path(__file__).parents[1] / "fixtures" / "registry" / "registry-sample.json"
SECRET = "sk-live-DRY-RUN-MUST-NOT-PRINT-9876"
ENV = {
    secret_env_name("ai.smithery/smithery-toolbox", "Authorization"): f"Bearer {SECRET}",
    secret_env_name("io.github.kontent-ai/mcp-server", "KONTENT_API_KEY"): SECRET,
    secret_env_name("io.github.VictoriaMetrics-Community/mcp-victorialogs", "VL_INSTANCE_BEARER_TOKEN"): SECRET,
}
runner = CliRunner()


def latest(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The sample's latest version of each server, by name (what a scan of the registry covers)."""
    result = {}
    for item in document["servers"]:
        if item["_meta"]["io.modelcontextprotocol.registry/official"].get("isLatest"):
            result[item["server"]["name"]] = item["server"]
    return result


def dry_run(tmp_path: Path, *extra: str) -> tuple[list[dict[str, Any]], str]:
    db = tmp_path / "never.db"
    args = ["scan", str(SAMPLE), "--db", str(db), "--dry-run", *extra]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert not db.exists()  # a dry run opens no database
    return (json.loads(result.stdout) if "json" in extra else []), result.stdout


def test_dry_run_lists_the_latest_version_of_every_server(tmp_path: Path) -> None:
    servers = latest(json.loads(SAMPLE.read_text(encoding="utf-8")))
    rows, out = dry_run(tmp_path, "--format", "json")
    assert len(servers) == 57 and len(rows) == len(servers)
    assert {row["name"] for row in rows} == set(servers)
    by_name = {row["name"]: row for row in rows}
    for name, server in servers.items():
        row = by_name[name]
        assert row["version"] == server["version"], name
        if server.get("remotes"):
            assert row["url"] in {remote.get("url") for remote in server["remotes"]} or row["skip"], name
        elif server.get("packages"):
            assert row["package"] is not None and row["command"], name
    assert SECRET not in out


def test_dry_run_says_why_each_skipped_entry_is_skipped(tmp_path: Path) -> None:
    rows, _ = dry_run(tmp_path, "--format", "json")
    skipped = [row for row in rows if row["skip"]]
    packages = [row for row in rows if row["package"] is not None and row["url"] is None]
    assert packages and all("--run-packages" in row["skip"] for row in packages)
    assert {row["name"] for row in skipped} >= {row["name"] for row in packages}
    assert all(row["skip"].strip() for row in skipped)
    # With --run-packages the packages are no longer skipped for that reason.
    rows_run, _ = dry_run(tmp_path, "--format", "json", "--run-packages")
    assert not any("--run-packages" in (row["skip"] or "") for row in rows_run)
    assert sum(bool(row["skip"]) for row in rows_run) < len(skipped)


def test_dry_run_names_secrets_and_never_prints_them(tmp_path: Path) -> None:
    rows, out = dry_run(tmp_path, "--format", "json", "--run-packages")
    assert SECRET not in out
    by_name = {row["name"]: row for row in rows}
    toolbox = by_name["ai.smithery/smithery-toolbox"]
    assert toolbox["header_names"] == ["Authorization"] and toolbox["anonymous"] is False
    assert toolbox["missing_secrets"] == []
    kontent = by_name["io.github.kontent-ai/mcp-server"]
    assert "KONTENT_API_KEY" in kontent["env_names"]
    # A server whose secret is not in the environment is listed as missing it, and scanned anonymously.
    missing = [row for row in rows if row["missing_secrets"]]
    assert missing and all(row["anonymous"] for row in missing)


def test_dry_run_table_shows_targets(tmp_path: Path) -> None:
    _, out = dry_run(tmp_path)
    assert out.splitlines()[0].split()[:4] == ["name", "transport", "target", "skip"]
    assert "https://server.smithery.ai/@smithery/toolbox/mcp" in out
    assert SECRET not in out


def test_dry_run_ends_with_totals_that_add_up(tmp_path: Path) -> None:
    rows, _ = dry_run(tmp_path, "--format", "json")
    _, out = dry_run(tmp_path)
    lines = out.splitlines()
    start = next(index for index, line in enumerate(lines) if " entries by transport: " in line)
    by_transport, by_registry, verdict, *reasons = lines[start:]
    transports: dict[str, int] = {}
    for row in rows:
        transports[row["transport"]] = transports.get(row["transport"], 0) + 1
    assert by_transport.startswith(f"{len(rows)} entries by transport: ")
    for transport, count in transports.items():
        assert f"{transport} {count}" in by_transport
    packaged = [row for row in rows if row["package"] and "identifier" in row["package"]]
    assert sum(int(part.rsplit(" ", 1)[1]) for part in by_registry.split(": ", 1)[1].split(" · ")) == len(packaged)
    skipped = [row for row in rows if row["skip"]]
    assert verdict.startswith(f"would scan {len(rows) - len(skipped)}; would skip {len(skipped)}, by reason:")
    assert "needs --run-packages" in reasons[0]  # the sample's packages, without --run-packages
    assert sum(int(line.split()[0]) for line in reasons) == len(skipped)


def test_the_official_registry_dry_run_fits_80_columns_its_skips_grouped(tmp_path: Path) -> None:
    """Issue 46: the dry run of the 1,108-entry registry ended with one ~2,000-character line of ~30 skip reasons,
    its findings column (MCP701-705) was hidden at 80 columns, and the `.json.gz` file read "not JSON"."""
    packed = SAMPLE.parent / "official-registry-2025-12-18.json.gz"
    refused = runner.invoke(app, ["scan", str(packed), "--dry-run", "--db", str(tmp_path / "x.db")])
    assert refused.exit_code == 2
    assert refused.stderr == f"fathom: {packed}: gzip-compressed, not JSON: decompress it first (gunzip -k {packed})\n"
    plain = tmp_path / "registry.json"
    plain.write_bytes(gzip.decompress(packed.read_bytes()))

    result = runner.invoke(
        app, ["scan", str(plain), "--dry-run", "--db", str(tmp_path / "x.db")], env={**ENV, "COLUMNS": "80"}
    )

    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["name", "target", "skip", "findings"]
    assert "MCP70" in result.stdout  # the registry-data findings are in the table
    assert max(len(line) for line in lines) <= 80
    verdict = next(index for index, line in enumerate(lines) if line.startswith("would scan "))
    skipped = int(lines[verdict].split("would skip ")[1].split(",")[0].replace(",", ""))
    *reasons, rest = lines[verdict + 1 :]
    counts = [int(found.group(1).replace(",", "")) for line in reasons if (found := re.match(r" +([\d,]+)  \S", line))]
    assert len(counts) == 8 and counts == sorted(counts, reverse=True)
    assert counts[0] > 500 and "needs --run-packages" in reasons[0]
    assert rest.startswith("  and ") and "other reasons" in rest and "--format json" in rest
    others = int(rest.split("(")[1].split()[0].replace(",", ""))
    assert sum(counts) + others == skipped


def test_limit_and_only_pick_entries_in_a_dry_run(tmp_path: Path) -> None:
    rows, _ = dry_run(tmp_path, "--format", "json")
    limited, _ = dry_run(tmp_path, "--format", "json", "--limit", "3")
    assert limited == rows[:3]
    names = [rows[5]["name"], rows[1]["name"]]
    only, _ = dry_run(tmp_path, "--format", "json", "--only", names[0], "--only", names[1])
    assert only == [rows[1], rows[5]]  # input order
    result = runner.invoke(app, ["scan", str(SAMPLE), "--dry-run", "--only", names[0] + "x"], env=ENV)
    assert result.exit_code == 2 and f"did you mean '{names[0]}'?" in result.stderr


def test_dry_run_table_fits_the_terminal_like_the_query_tables() -> None:
    """Seen on the real registry: at 80 columns the dry-run table was 600 characters wide (targets and skip
    reasons in full); it now fits $COLUMNS like every query table, its totals after it."""
    result = runner.invoke(app, ["scan", str(SAMPLE), "--dry-run", "--run-packages"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    table = lines[: next(i for i, line in enumerate(lines) if " entries by transport" in line)]
    assert table[0].split() == ["name", "target", "skip", "findings"]  # the transport goes first (the totals say it)
    assert max(len(line) for line in table) <= 80
