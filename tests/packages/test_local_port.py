"""Packages that serve MCP on a local port run: started with a free port, waited for, scanned, stopped.

The package is the test-built ``fathom-test-server`` from the loopback npm registry (``server.js``: ``http``
serves Streamable HTTP at /mcp and HTTP+SSE at /sse on the port it is given; ``http-never`` never listens, ignores
SIGTERM and leaves a detached child behind it).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages import PackageSettings, run_package
from scanner.packages.localport import loopback_url
from scanner.registry.interface import Options
from scanner.registry.localport import PORT_SENTINEL
from scanner.registry.packages import resolve_packages
from tests.packages.local_registry import NPM_NAME
from tests.packages.test_package_runs import environ, registry  # noqa: F401 - the module-scoped fixture

NAME = "io.github.fathom-tests/local"
needs_npx = pytest.mark.skipif(not shutil.which("npx"), reason="npx not installed")


def local_package(mode: str = "http", transport: str = "streamable-http", **fields: Any) -> dict[str, Any]:
    """Like the registry's bytedance entries: ``{port}`` in the URL, a ``--port`` argument with a default."""
    return {
        "registryType": "npm",
        "identifier": NPM_NAME,
        "version": "1.0.0",
        "transport": {"type": transport, "url": f"http://localhost:{{port}}/{'sse' if transport == 'sse' else 'mcp'}"},
        "packageArguments": [
            {"type": "positional", "value": mode},
            {"type": "named", "name": "--port", "default": "8089", "isRequired": True, "format": "number"},
        ],
        **fields,
    }


def resolve(package: dict[str, Any], env: dict[str, str] | None = None, run: bool = True) -> ServerEntry:
    options = Options(run_packages=run, environ=env or {"PATH": os.environ.get("PATH", os.defpath)})
    return resolve_packages(NAME, "1.0.0", [package], source="test", options=options)


def scan(entry: ServerEntry, env: dict[str, str], cache: Path, timeout: float = 90) -> ScanOutcome:
    settings = PackageSettings(cache_dir=cache, environ=env)
    return anyio.run(run_package, entry, ClientLimits(timeout=timeout), "rich", settings)


# --- resolution --------------------------------------------------------------------------------------------


@needs_npx
def test_port_variable_in_the_url_is_set_through_the_argument_and_only_loopback_is_used():
    package = local_package()
    package["transport"]["url"] = "https://mcp.example.com:{port}/mcp"  # whatever host it names
    entry = resolve(package)
    assert entry.skip is None and entry.transport is Transport.STREAMABLE_HTTP and entry.url is None
    assert entry.command[-3:] == ("http", "--port", PORT_SENTINEL)
    assert entry.package["local_port"] == {
        "transport": "streamable-http",
        "url": "http://127.0.0.1:{port}/mcp",
        "declared_url": "https://mcp.example.com:{port}/mcp",
        "port_via": "argument --port",
    }


@needs_npx
def test_literal_port_is_set_through_the_variable_whose_default_it_is():
    package = local_package(
        transport="sse",
        packageArguments=[{"type": "positional", "value": "http"}],
        environmentVariables=[{"name": "FATHOM_TEST_PORT", "default": "3010"}, {"name": "LOG", "default": "3010"}],
    )
    package["transport"]["url"] = "http://localhost:3010/sse"
    entry = resolve(package)
    assert entry.skip is None and entry.transport is Transport.SSE
    assert entry.env["FATHOM_TEST_PORT"] == PORT_SENTINEL and entry.env["LOG"] == "3010"
    assert entry.package["local_port"]["url"] == "http://127.0.0.1:{port}/sse"
    assert entry.package["local_port"]["port_via"] == "environment FATHOM_TEST_PORT"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"packageArguments": [], "transport": {"type": "sse", "url": "http://localhost:4321/__mcp/sse"}},
            "package serves sse on port 4321 but declares no argument or variable to set the port through "
            "(a fixed port is not run)",
        ),
        (
            {"transport": {"type": "streamable-http", "url": "http://localhost/mcp"}},
            "package serves streamable-http at 'http://localhost/mcp' without a port to choose",
        ),
        (
            {"transport": {"type": "streamable-http", "url": "http://localhost:{port}/{path}"}},
            "package URL 'http://localhost:{port}/{path}' has variables in its path (not supported)",
        ),
        (
            {"registryType": "oci", "identifier": "docker.io/x/y:1"},
            "oci image serves streamable-http on a local port (container port mapping not supported)",
        ),
    ],
)
def test_what_cannot_run_on_a_port_of_ours_is_skipped_with_the_reason(change, reason):
    entry = resolve({**local_package(), **change})
    assert entry.skip == reason


def test_a_required_header_is_needs_configuration():
    package = local_package()
    package["transport"]["headers"] = [{"name": "X-API-Key", "isRequired": True, "isSecret": True}]
    entry = resolve(package)
    assert entry.skip.startswith("needs configuration: local server needs header X-API-Key")
    # The skip keeps what was declared (issue 19), and says what to record.
    assert entry.package is not None and entry.package["skip_outcome"] == "needs_configuration"
    assert entry.package["registryType"] == "npm" and entry.package["identifier"] == "fathom-test-server"


@needs_npx
def test_without_run_packages_it_is_skipped_like_any_package():
    entry = resolve(local_package(), run=False)
    assert entry.skip == f"package (npm {NPM_NAME}): needs --run-packages"
    assert entry.package["local_port"]["url"] == "http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize(
    ("template", "url"),
    [
        ("http://127.0.0.1:{port}/mcp", "http://127.0.0.1:4000/mcp"),
        ("https://attacker.example:{port}/x?y=1", "http://127.0.0.1:4000/x?y=1"),
        ("http://user@10.0.0.1:99/sse", "http://127.0.0.1:4000/sse"),
        ("", "http://127.0.0.1:4000/"),
    ],
)
def test_the_url_connected_to_is_loopback_whatever_the_entry_carries(template, url):
    assert loopback_url(template, 4000) == url


@needs_npx
def test_a_worker_without_run_packages_does_not_run_one():
    """A distributed worker decides what runs by the command, not the transport (this one's is HTTP)."""
    from types import SimpleNamespace

    from scanner.distributed.worker import WorkerConfig, _Job

    entry = resolve(local_package())
    job: Any = SimpleNamespace(config=WorkerConfig(db_url="sqlite://"))
    assert _Job.allowed(job, entry).skip == "this worker does not run packages (start it with --run-packages)"
    job.config = WorkerConfig(db_url="sqlite://", run_packages=True)
    assert _Job.allowed(job, entry).skip is None


# --- runs --------------------------------------------------------------------------------------------------


@needs_npx
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_local_port_package_is_started_scanned_over_its_transport_and_stopped(registry, tmp_path, transport):  # noqa: F811
    run_id = uuid.uuid4().hex
    env = environ(registry)
    package = local_package(transport=transport, environmentVariables=[{"name": "RUN_ID", "default": run_id}])
    outcome = scan(resolve(package, env), env, tmp_path)
    assert outcome.ok, (outcome.outcome, outcome.detail, outcome.extra.get("stderr_tail"))
    assert [tool["name"] for tool in outcome.tools or ()] == ["version_1_0_0"]
    assert outcome.transport == transport and outcome.server_version == "1.0.0"
    assert isinstance(outcome.extra["local_port"], int) and outcome.extra["local_port"] != 8089
    assert outcome.timings_ms["listen"] <= outcome.timings_ms["total"]
    assert processes_with(run_id) == []


@needs_npx
def test_sse_on_a_literal_port_set_through_a_variable_also_from_a_distributed_job(registry, tmp_path):  # noqa: F811
    """The URL says port 3010 and ``FATHOM_TEST_PORT`` defaults to it: the variable gets the free port, also when
    a worker rebuilds the entry from a queued job (variables by name, from the worker's own environment)."""
    from scanner.distributed.queue import entry_from_payload, entry_payload

    env = environ(registry)
    package = local_package(
        transport="sse",
        packageArguments=[{"type": "positional", "value": "http"}],
        environmentVariables=[{"name": "FATHOM_TEST_PORT", "default": "3010"}],
    )
    package["transport"]["url"] = "http://localhost:3010/sse"
    entry = entry_from_payload(entry_payload(resolve(package, env)), env)
    # The worker rebuilds the package from its description (issue 17): the port variable holds the placeholder the
    # run fills with a free port, never a value from the job.
    assert entry.env["FATHOM_TEST_PORT"] == "<free-port>"
    outcome = scan(entry, env, tmp_path)
    assert outcome.ok, (outcome.outcome, outcome.detail, outcome.extra.get("stderr_tail"))
    assert [tool["name"] for tool in outcome.tools or ()] == ["version_1_0_0"]
    assert outcome.transport == "sse" and outcome.extra["local_port"] != 3010


@needs_npx
def test_a_package_that_never_listens_is_a_timeout_and_leaves_no_process(registry, tmp_path):  # noqa: F811
    run_id = uuid.uuid4().hex
    env = environ(registry)
    package = local_package("http-never", environmentVariables=[{"name": "RUN_ID", "default": run_id}])
    entry = resolve(package, env)
    scan(resolve(local_package(), env), env, tmp_path)  # install once, so the deadline below is all waiting
    outcome = scan(entry, env, tmp_path, timeout=8)
    assert outcome.outcome is Outcome.TIMEOUT
    # The port (new every run) is in extra, not in the detail, which reads the same every night.
    assert outcome.detail == "did not listen on its port at 127.0.0.1 within <n>s; warming up forever"
    assert isinstance(outcome.extra["local_port"], int)
    # The server ignored SIGTERM and started a child outside its process group: both are gone.
    assert processes_with(run_id) == []


@needs_npx
def test_a_package_that_exits_before_listening_is_classified(registry, tmp_path):  # noqa: F811
    env = environ(registry)
    outcome = scan(resolve(local_package("crash"), env), env, tmp_path)
    assert outcome.outcome is Outcome.CRASHED
    assert outcome.detail == "Error: cannot open the index at /var/lib/fathom-test/index.db"
    assert outcome.extra["client_outcome"] == "exited"


@needs_npx
def test_fathom_scan_runs_it_and_dry_run_says_it_would(registry, tmp_path):  # noqa: F811
    from typer.testing import CliRunner

    from scanner.cli import app
    from scanner.report import queries

    source = tmp_path / "registry.json"
    doc = {"server": {"name": NAME, "description": "d", "version": "1.0.0", "packages": [local_package()]}}
    source.write_text(json.dumps({"servers": [doc], "metadata": {"count": 1}}), encoding="utf-8")
    node_dir = str(Path(shutil.which("npx") or "/usr/bin/npx").parent)
    env = {"PATH": f"{node_dir}{os.pathsep}/bin", "npm_config_registry": registry.npm_url}
    common = [str(source), "--run-packages", "--cache-dir", str(tmp_path / "cache")]
    dry = CliRunner().invoke(app, ["scan", *common, "--dry-run", "--format", "json"], env=env)
    assert dry.exit_code == 0, dry.output
    (row,) = json.loads(dry.stdout)
    assert row["skip"] is None and row["transport"] == "streamable-http"
    assert row["command"][-2:] == ["--port", PORT_SENTINEL]
    assert row["package"]["local_port"]["url"] == "http://127.0.0.1:{port}/mcp"
    db = tmp_path / "fathom.db"
    result = CliRunner().invoke(app, ["scan", *common, "--db", str(db), "--timeout", "60"], env=env)
    assert result.exit_code == 0, result.output
    (server,) = queries.servers(f"sqlite:///{db}")
    assert server["server"] == NAME and server["last_outcome"] == "ok"


def processes_with(value: str) -> list[int]:
    """Live processes whose environment holds ``value`` (every descendant of the package inherits it)."""
    needle = value.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if needle in handle.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def test_the_real_dumps_local_port_packages_connect_only_to_loopback(tmp_path):
    """Every local-port npm/PyPI/OCI row of the 2025-12-18 dump: run with the port input set and a 127.0.0.1 URL,
    or skipped with a reason; measured: 71 of 151 rows run (70 through ``MCP_HTTP_PORT``), none of them OCI."""
    import gzip

    from tests.packages.test_resolver_dump import DUMP

    for runner in ("npx", "uvx", "docker"):
        stub = tmp_path / runner
        stub.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        stub.chmod(0o755)
    options = Options(run_packages=True, environ={"PATH": str(tmp_path)})
    with gzip.open(DUMP, "rt", encoding="utf-8") as handle:
        rows = [row["server"] for row in json.load(handle)["servers"]]
    ran = skipped = 0
    for server in rows:
        for package in server.get("packages") or []:
            transport = package.get("transport")
            if not isinstance(transport, dict) or transport.get("type") not in ("streamable-http", "sse"):
                continue
            if package.get("registryType") not in ("npm", "pypi", "oci"):
                continue
            entry = resolve_packages(server["name"], server.get("version"), [package], source="d", options=options)
            if entry.skip is not None:
                skipped += 1
                continue
            ran += 1
            assert entry.package["local_port"]["url"].startswith("http://127.0.0.1:{port}/")
            assert PORT_SENTINEL in " ".join(entry.command) or PORT_SENTINEL in entry.env.values()
            assert entry.package["registryType"] != "oci"
    assert (ran, skipped) == (71, 80)
