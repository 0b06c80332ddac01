"""What was run is stored with each scan and shown: the registry version beside the server's own, the package or
URL, the command with secrets redacted, the stderr tail (escaped, scrubbed), and outcome changes in ``diff``.

The crash is a real process started by a real ``fathom scan --run-commands``; the registry-version history is
written through the store's own write path (a package run needs npx and the network), then read by the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from scanner.cli import app
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.store import open_store
from tests.store.conftest import local_measure, ok, tool

runner = CliRunner()
SECRETS = ("sk-live-TOPSECRET123", "tok-SECRET456", "envsecret-ABCDEF")
CRASH = (
    "import os, sys\n"
    "sys.stderr.write('starting with ' + os.environ['MY_TOKEN'] + ' \\x1b[31mred\\n')\n"
    "raise ValueError('config file /etc/x missing')\n"
)


def fathom(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def test_a_crashed_command_keeps_what_ran_and_its_stderr_without_a_secret(tmp_path: Path) -> None:
    crashy = {
        "name": "crashy",
        "command": [sys.executable, "-c", CRASH, "--api-key", SECRETS[0], f"--token={SECRETS[1]}"],
        "env": {"MY_TOKEN": SECRETS[2]},
    }
    registry = tmp_path / "servers.json"
    registry.write_text(json.dumps({"servers": [crashy]}), encoding="utf-8")
    db = tmp_path / "f.db"
    fathom("scan", str(registry), "--db", str(db), "--run-commands")

    table = fathom("history", "crashy", "--db", str(db))
    header, _rule, row, *tail = table.splitlines()
    assert header.split()[:5] == ["run", "scanned_at", "outcome", "registry_version", "version"]
    assert " 0 " not in row  # a scan that did not answer has no 0/0/0 findings
    *tail, step = tail
    assert step.startswith("next step (run 1, exited): It crashed: ")  # the server page's next step
    assert tail == [
        "stderr of run 1 (exited), last lines:",
        # The client's scrubber (or the store's, as a second line) blanks the value; the escape is shown, never sent.
        "  | starting with [secret] \\u001b[31mred",
        "  | Traceback (most recent call last):",
        '  |   File "<string>", line 3, in <module>',
        "  | ValueError: config file /etc/x missing",
    ]
    (scan,) = json.loads(fathom("history", "crashy", "--db", str(db), "--format", "json"))
    assert (scan["problems"], scan["warnings"], scan["notes"]) == (None, None, None)
    assert scan["command"].startswith(f"{sys.executable} -c ")
    assert scan["command"].endswith("--api-key '<secret>' '--token=<secret>'")
    (server,) = json.loads(fathom("servers", "--db", str(db), "--format", "json"))
    assert server["stderr_tail"][-1] == "ValueError: config file /etc/x missing"
    assert server["command"] == scan["command"] and server["package"] is None and server["url"] is None

    for path in tmp_path.glob("f.db*"):  # the database and any WAL beside it
        data = path.read_bytes()
        assert not any(secret.encode() in data for secret in SECRETS), path


def context7(version: str, **package: Any) -> ServerEntry:
    return ServerEntry(
        name="io.github.upstash/context7",
        transport=Transport.STDIO,
        command=("npx", "-y", f"@upstash/context7-mcp@{version}"),
        version=version,
        package={
            "registryType": "npm",
            "identifier": "@upstash/context7-mcp",
            "version": version,
            "pinned": True,
            "spec": f"@upstash/context7-mcp@{version}",
            "runner": "npx",
            "memory_limit_mb": 1024,
            **package,
        },
    )


def test_history_and_diff_show_the_registry_version_beside_the_servers_own(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    tools = [tool("resolve-library-id", "Find the library id for a package name.", libraryName="string")]
    with open_store(f"sqlite:///{db}") as store:
        for version, outcome in (
            ("1.0.30", ok(tools, version="1.0.13")),
            ("1.0.31", ok(tools, version="1.0.13")),
            ("1.0.31", ScanOutcome(Outcome.CRASHED, "stdio", detail="Error: boom")),
        ):
            run = store.start_run("registry.json", "1", {})
            store.record_scan(run, context7(version), outcome, local_measure)
            store.finish_run(run)

    history = json.loads(fathom("history", "io.github.upstash/context7", "--db", str(db), "--format", "json"))
    assert [(s["registry_version"], s["version"], s["outcome"]) for s in history] == [
        ("1.0.30", "1.0.13", "ok"),
        ("1.0.31", "1.0.13", "ok"),
        ("1.0.31", None, "crashed"),
    ]
    assert history[0]["package"] == {
        "registry_type": "npm",
        "identifier": "@upstash/context7-mcp",
        "version": "1.0.30",
        "pinned": True,
        "spec": "@upstash/context7-mcp@1.0.30",
        "runner": "npx",
    }
    assert history[0]["command"] == "npx -y @upstash/context7-mcp@1.0.30"

    # The default diff compares the last two answers: the server says 1.0.13 both times, the registry moved.
    rows = json.loads(fathom("diff", "io.github.upstash/context7", "--db", str(db), "--format", "json"))
    assert rows == [
        {
            "change": "runs",
            "tool": None,
            "detail": "run 1 (ok, version 1.0.13, registry 1.0.30) → run 2 (ok, version 1.0.13, registry 1.0.31)",
        },
        {"change": "registry version", "tool": None, "detail": "1.0.30 → 1.0.31"},
    ]
    # Up to the crash: the outcome change, and no tool comparison against a scan that did not answer.
    rows = json.loads(fathom("diff", "io.github.upstash/context7", "--to", "3", "--db", str(db), "--format", "json"))
    assert [(row["change"], row["detail"]) for row in rows[1:]] == [
        ("server version", "1.0.13 → -"),
        ("outcome", "run 3: ok → crashed"),
        ("tools not compared", "run 3 ended crashed"),
    ]


def test_a_pinned_flag_and_a_url_are_kept(tmp_path: Path) -> None:
    remote = ServerEntry(
        name="remote",
        transport=Transport.STREAMABLE_HTTP,
        url="https://mcp.example/mcp?api_key=k-SECRET-789&x=1",
        headers={"Authorization": "Bearer hdr-SECRET-000"},
        version="2.0.0",
    )
    unpinned = dataclasses.replace(context7("latest"), name="unpinned")
    unpinned = dataclasses.replace(unpinned, package={**(unpinned.package or {}), "pinned": False, "version": None})
    db = tmp_path / "f.db"
    with open_store(f"sqlite:///{db}") as store:
        run = store.start_run("registry.json", "1", {})
        failure = ScanOutcome(Outcome.AUTH_REQUIRED, "streamable-http", detail="401 for hdr-SECRET-000")
        store.record_scan(run, remote, failure, local_measure)
        store.record_scan(run, unpinned, ScanOutcome(Outcome.TIMEOUT, "stdio"), local_measure)
        store.finish_run(run)
    servers = {row["server"]: row for row in json.loads(fathom("servers", "--db", str(db), "--format", "json"))}
    assert servers["remote"]["url"] == "https://mcp.example/mcp?api_key=[redacted]&x=1"
    assert servers["remote"]["registry_version"] == "2.0.0" and servers["remote"]["detail"] == "401 for <secret>"
    assert servers["unpinned"]["package"]["pinned"] is False and "version" not in servers["unpinned"]["package"]
    data = db.read_bytes()
    assert b"SECRET-789" not in data and b"hdr-SECRET" not in data


def test_a_one_tool_server_reads_1_tool(tmp_path: Path) -> None:
    from scanner.demo.server import DemoHost, synthetic_sites

    sites = synthetic_sites(2, tools_per_server=1)
    sites[1] = dataclasses.replace(sites[1], tools=sites[1].tools * 2)
    with DemoHost(sites) as host:
        servers = [{"name": site.name, "url": host.url(site.name)} for site in sites]
        registry = tmp_path / "servers.json"
        registry.write_text(json.dumps({"servers": servers}), encoding="utf-8")
        fathom("scan", str(registry), "--db", str(tmp_path / "f.db"), "--allow-private")
    shown = json.loads(fathom("servers", "--db", str(tmp_path / "f.db"), "--format", "json"))
    assert sorted(row["detail"] for row in shown) == ["1 tool", "2 tools"]
