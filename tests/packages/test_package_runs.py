"""Registry packages run for real: npx and uvx install test-built packages from a loopback registry.

The right package at the declared version answers; a second night starts from the shared cache without
downloading again; failures are classified (crashed with the traceback's last line, needs_configuration,
package_not_found, too_large under the disk budget); installer settings reach the runner, secrets do not.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from scanner import confine
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages import PackageSettings, run_package
from scanner.packages.cache import PackageCache
from scanner.packages.diagnose import NO_NETWORK
from scanner.registry.interface import Options
from scanner.registry.packages import resolve_packages
from scanner.report.census import fault
from tests.packages.local_registry import NPM_NAME, PY_NAME, LocalRegistry

NAME = "io.github.fathom-tests/pkg"
needs_npx = pytest.mark.skipif(not shutil.which("npx"), reason="npx not installed")
needs_uvx = pytest.mark.skipif(
    not (shutil.which("uvx") or (Path(sys.executable).parent / "uvx").exists()), reason="uvx not installed"
)


@pytest.fixture(scope="module")
def registry() -> Iterator[LocalRegistry]:
    served = LocalRegistry()
    yield served
    served.close()


_REACHABLE_BIN: list[Path] = []


def runners_bin() -> Path:
    """Where the tests' own runners (the virtual environment's ``uv`` and ``uvx``) are on PATH: the environment's
    folder, or, run as root with the checkout out of the children's users' reach (a clone in a ``mktemp -d``
    folder, issue 48), a copy of them in a folder every user can traverse, removed at exit."""
    own = Path(sys.executable).parent
    if not confine.enabled() or confine.reachable(own / "uvx") or not (own / "uvx").exists():
        return own
    if not _REACHABLE_BIN:
        folder = Path(tempfile.mkdtemp(prefix="fathom-test-runners-"))
        folder.chmod(0o755)
        for name in ("uv", "uvx"):
            if (own / name).exists():
                shutil.copy2(own / name, folder / name)
                (folder / name).chmod(0o755)
        atexit.register(shutil.rmtree, folder, True)
        _REACHABLE_BIN.append(folder)
    return _REACHABLE_BIN[0]


def environ(registry: LocalRegistry, **more: str) -> dict[str, str]:
    """Fathom's environment in these tests: the runners on PATH, the installers pointed at the loopback
    registry (allow-listed settings), and a secret-looking variable that must not reach any package."""
    return {
        "PATH": f"{runners_bin()}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "LANG": "C.UTF-8",
        "npm_config_registry": registry.npm_url,
        "UV_INDEX_URL": registry.simple_url,
        "UV_PYTHON_DOWNLOADS": "never",
        "AWS_SECRET_ACCESS_KEY": "must-not-leak",
        **more,
    }


def npm_package(version: str = "1.0.0", *args: str, **fields: Any) -> dict[str, Any]:
    return {
        "registryType": "npm",
        "identifier": NPM_NAME,
        "version": version,
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "positional", "value": arg} for arg in args],
        **fields,
    }


def resolve(package: dict[str, Any], env: dict[str, str]) -> ServerEntry:
    entry = resolve_packages(NAME, "1.0.0", [package], source="test", options=Options(run_packages=True, environ=env))
    assert entry.skip is None, entry.skip
    return entry


def run(entry: ServerEntry, settings: PackageSettings, timeout: float = 90) -> ScanOutcome:
    return anyio.run(run_package, entry, ClientLimits(timeout=timeout), "rich", settings)


def tool_names(outcome: ScanOutcome) -> list[str]:
    assert outcome.ok, (outcome.outcome, outcome.detail, outcome.extra.get("stderr_tail"))
    return [tool["name"] for tool in outcome.tools or ()]


@needs_npx
def test_npm_runs_the_declared_version_and_the_second_night_uses_the_cache(registry, tmp_path):
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    entry = resolve(npm_package("1.0.0"), env)
    first = run(entry, settings)
    # 1.0.0 answered although the registry's latest is 2.0.0: the declared version, not another.
    assert tool_names(first) == ["version_1_0_0"]
    assert first.server_version == "1.0.0"
    assert registry.downloads(f"{NPM_NAME}-1.0.0.tgz") == 1
    # installed into the package@version's own cache folder, not the throwaway HOME
    assert (PackageCache(tmp_path / "cache").package_dir(entry) / "npm" / "_npx").is_dir()
    second = run(entry, settings)
    assert tool_names(second) == ["version_1_0_0"]
    assert registry.downloads(f"{NPM_NAME}-1.0.0.tgz") == 1  # the second night did not download again
    # The install is timed on its own (the install_ms metric), so the handshake does not carry it.
    assert first.timings_ms["install"] > 0 and second.timings_ms["install"] > 0
    assert "handshake" in first.timings_ms and "handshake" in second.timings_ms


@needs_npx
def test_unpinned_npm_entry_runs_latest_flagged(registry, tmp_path):
    env = environ(registry)
    package = npm_package()
    del package["version"]
    entry = resolve(package, env)
    assert entry.package["spec"] == f"{NPM_NAME}@latest" and entry.package["pinned"] is False
    # Its run has no network: npx is told to read its cache, or it asked the registry for @latest again and
    # retried for about 70 s first (a timeout at the default 30 s). 60 s is far more than a local package needs.
    outcome = run(entry, PackageSettings(cache_dir=tmp_path, environ=env), timeout=60)
    assert tool_names(outcome) == ["version_2_0_0"]


@needs_npx
def test_version_not_in_the_registry_is_package_not_found(registry, tmp_path):
    env = environ(registry)
    outcome = run(resolve(npm_package("9.9.9"), env), PackageSettings(cache_dir=tmp_path, environ=env))
    assert outcome.outcome is Outcome.PACKAGE_NOT_FOUND
    assert outcome.detail.startswith(f"{NPM_NAME}@9.9.9 not found: npm error")
    assert "ETARGET" in outcome.detail or "No matching version" in outcome.detail
    assert str(tmp_path) not in outcome.detail and "complete log" not in outcome.detail


@needs_npx
def test_crash_at_start_reports_the_error_line_normalised(registry, tmp_path):
    env = environ(registry)
    outcome = run(resolve(npm_package("1.0.0", "crash"), env), PackageSettings(cache_dir=tmp_path, environ=env))
    assert outcome.outcome is Outcome.CRASHED
    assert outcome.detail == "Error: cannot open the index at /var/lib/fathom-test/index.db"
    assert outcome.extra["client_outcome"] == "exited"
    tail = "\n".join(outcome.extra["stderr_tail"])
    assert str(tmp_path) not in tail and "fathom-home-" not in tail


@needs_npx
def test_missing_variable_is_needs_configuration_and_secrets_stay_home(registry, tmp_path):
    env = environ(registry)
    package = npm_package(
        "1.0.0", "needs-key", environmentVariables=[{"name": "FATHOM_TEST_API_KEY", "isRequired": True}]
    )
    entry = resolve(package, env)
    assert entry.package["missing_inputs"] == ["FATHOM_TEST_API_KEY"]
    assert "AWS_SECRET_ACCESS_KEY" not in entry.env
    outcome = run(entry, PackageSettings(cache_dir=tmp_path, environ=env))
    assert outcome.outcome is Outcome.NEEDS_CONFIGURATION
    assert outcome.detail == "Error: environment variable FATHOM_TEST_API_KEY is required"


@needs_npx
def test_a_package_that_fills_the_disk_is_stopped_as_too_large(registry, tmp_path):
    env = environ(registry)
    entry = resolve(npm_package("1.0.0", "fill", "48"), env)
    outcome = run(entry, PackageSettings(cache_dir=tmp_path, environ=env, disk_limit_mb=16))
    assert outcome.outcome is Outcome.TOO_LARGE
    assert outcome.detail == "wrote more than its 16 MiB disk budget (--disk-limit-mb)"
    assert outcome.extra["written_mb"] > 16 and outcome.extra["home_mb"] > 16


@needs_npx
def test_a_stdio_package_reaches_nothing_that_listens_on_the_host(registry, tmp_path):
    """A package connected to Fathom's database on 127.0.0.1 and to a sibling's local-port server. Run over
    stdio, it is installed from the loopback registry (the install keeps the host's network) and then finds
    nothing listening on the host's loopback nor its abstract unix sockets (it lists what it got as tools)."""
    if not confine.own_network()[0]:
        pytest.skip(f"no network namespace here: {confine.own_network()[1]}")
    env = environ(registry)
    with socket.create_server(("127.0.0.1", 0)) as tcp, socket.socket(socket.AF_UNIX) as unix:
        name = f"fathom-test-{os.getpid()}-{tcp.getsockname()[1]}"
        unix.bind("\0" + name)
        unix.listen()
        entry = resolve(npm_package("1.0.0", "dial", str(tcp.getsockname()[1]), name), env)
        outcome = run(entry, PackageSettings(cache_dir=tmp_path, environ=env))
    assert tool_names(outcome) == ["version_1_0_0", "host_loopback_ECONNREFUSED", "host_abstract_ECONNREFUSED"]


@needs_npx
def test_a_package_that_needs_the_internet_at_start_is_stopped_for_want_of_a_network(registry, tmp_path, monkeypatch):
    """Without a user-mode network stack (``FATHOM_NETWORK_STACK=none``), a package that fetches at start dies on
    ``connect ENETUNREACH``: recorded as stopped for want of a network, Fathom's policy, not the package's crash."""
    if not confine.own_network()[0]:
        pytest.skip(f"no network namespace here: {confine.own_network()[1]}")
    monkeypatch.setenv(confine.STACK_ENV, "none")
    env = environ(registry)
    outcome = run(resolve(npm_package("1.0.0", "offline"), env), PackageSettings(cache_dir=tmp_path, environ=env))
    assert outcome.outcome is Outcome.CRASHED
    assert outcome.detail == f"{NO_NETWORK}: Error: connect ENETUNREACH 192.0.2.1:443 - Local (0.0.0.0:0)"
    assert fault(outcome.outcome.value, outcome.detail) == "policy"


@pytest.mark.parametrize("stack", ["slirp4netns", "none"])
@pytest.mark.parametrize("registry_type", ["npm", "pypi"])
def test_a_package_scans_ok_with_and_without_the_network_stack(registry, tmp_path, monkeypatch, stack, registry_type):
    """A real npm and a real PyPI package, installed from the loopback registry (the install step keeps the host's
    network), scan ``ok`` in their network of their own with a route out through slirp4netns and with none (only
    their own loopback): the run needs nothing from the registry. ``extra["offline"]`` says which it had."""
    if not confine.own_network()[0]:
        pytest.skip(f"no network namespace here: {confine.own_network()[1]}")
    if stack == "none":
        monkeypatch.setenv(confine.STACK_ENV, "none")
    elif not confine.outbound()[0]:
        pytest.skip(f"no user-mode network stack here: {confine.outbound()[1]}")
    if registry_type == "npm" and not shutil.which("npx"):
        pytest.skip("npx not installed")
    if registry_type == "pypi" and not (shutil.which("uvx") or (Path(sys.executable).parent / "uvx").exists()):
        pytest.skip("uvx not installed")
    env = environ(registry)
    package: dict[str, Any] = npm_package("1.0.0")
    if registry_type == "pypi":
        package = {"registryType": "pypi", "identifier": PY_NAME, "version": "1.0.0", "transport": {"type": "stdio"}}
    outcome = run(resolve(package, env), PackageSettings(cache_dir=tmp_path / "cache", environ=env))
    assert tool_names(outcome) == ["version_1_0_0"]
    assert outcome.extra["offline"] is (stack == "none")


@needs_uvx
def test_pypi_wheel_through_uvx_runs_then_crash_reports_the_traceback(registry, tmp_path):
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    package = {"registryType": "pypi", "identifier": PY_NAME, "version": "1.0.0", "transport": {"type": "stdio"}}
    assert tool_names(run(resolve(package, env), settings)) == ["version_1_0_0"]
    fetched = registry.downloads(".whl")  # uv may read a wheel's metadata by range first, then the whole
    assert fetched >= 1 and any((PackageCache(tmp_path / "cache").package_dir(resolve(package, env)) / "uv").iterdir())
    crash = {**package, "packageArguments": [{"type": "positional", "value": "crash"}]}
    outcome = run(resolve(crash, env), settings)
    assert outcome.outcome is Outcome.CRASHED
    assert outcome.detail == "RuntimeError: index /var/lib/fathom-test/index.db is corrupt"
    assert registry.downloads(".whl") == fetched  # the second start came from the shared uv cache


@needs_npx
def test_fathom_scan_end_to_end_with_cache_dir_and_runner_check(registry, tmp_path):
    """``fathom scan --run-packages --cache-dir`` into a real SQLite file: the right package is credited, a crash
    and a missing runner are recorded by cause, and the missing runner is said once before the scan."""
    from typer.testing import CliRunner

    from scanner.cli import app
    from scanner.report import queries

    def server(name: str, package: dict[str, Any]) -> dict[str, Any]:
        return {"server": {"name": name, "description": "d", "version": "1.0.0", "packages": [package]}}

    pypi = {"registryType": "pypi", "identifier": PY_NAME, "version": "1.0.0", "transport": {"type": "stdio"}}
    rows_in = [
        server("io.github.t/good", npm_package("1.0.0")),
        server("io.github.t/crash", npm_package("1.0.0", "crash")),
        server("io.github.t/python", pypi),
    ]
    source = tmp_path / "registry.json"  # a saved registry API response
    source.write_text(json.dumps({"servers": rows_in, "metadata": {"count": 3}}), encoding="utf-8")
    node_dir = str(Path(shutil.which("npx") or "/usr/bin/npx").parent)
    env = {"PATH": f"{node_dir}{os.pathsep}/bin", "npm_config_registry": registry.npm_url}  # no uvx on PATH
    db = tmp_path / "fathom.db"
    cache = tmp_path / "cache"
    args = ["scan", str(source), "--db", str(db), "--run-packages", "--cache-dir", str(cache), "--timeout", "60"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert result.stderr.count("uvx is not on PATH: 1 entry will be recorded runner_missing") == 1
    rows = {row["server"]: row for row in queries.servers(f"sqlite:///{db}")}
    assert rows["io.github.t/good"]["last_outcome"] == "ok" and rows["io.github.t/good"]["version"] == "1.0.0"
    assert rows["io.github.t/crash"]["last_outcome"] == "crashed"
    assert rows["io.github.t/crash"]["detail"] == "Error: cannot open the index at /var/lib/fathom-test/index.db"
    assert rows["io.github.t/python"]["last_outcome"] == "runner_missing"
    assert list((cache / "pkg" / "npm").glob(f"{NPM_NAME}@1.0.0-*/npm/_npx"))


@needs_npx
def test_check_reproduces_a_scan_of_a_package(registry, tmp_path):
    """``fathom check -- npx ...`` runs the package as a scan does: the allow-listed installer settings reach
    npx (here the loopback registry; behind a proxy, the CA bundle), and the failure is the scan's cause with its
    telling line, not the last line of stderr. Its npx fetches from a registry on this machine's loopback, which
    a network of its own never reaches: ``FATHOM_NETWORK_STACK=none`` keeps the host's network for ``check``'s
    server (said in one line)."""
    from typer.testing import CliRunner

    from scanner.cli import app

    env = {**environ(registry), "HOME": str(tmp_path), "npm_config_cache": str(tmp_path / "npm")}
    env[confine.STACK_ENV] = "none"
    command = ["npx", "-y", f"{NPM_NAME}@1.0.0", "crash"]
    result = CliRunner().invoke(app, ["check", "--timeout", "90", "--", *command], env=env)
    assert result.exit_code == 3, result.output
    assert registry.downloads(f"{NPM_NAME}-1.0.0.tgz") >= 1  # npx was pointed at the loopback registry
    assert result.stderr.strip().endswith(
        "crashed: Error: cannot open the index at /var/lib/fathom-test/index.db; next: the command crashed before "
        "it answered: run it yourself to see why"
    ), result.stderr
    assert "fathom: the server keeps this machine's network (no user-mode network stack: " in result.stderr
    missing = CliRunner().invoke(app, ["check", "--timeout", "90", "--", "npx", "-y", f"{NPM_NAME}@9.9.9"], env=env)
    assert f"package_not_found: {NPM_NAME}@9.9.9 not found: npm error" in missing.stderr, missing.stderr
