"""A missing runner is said once before a scan (and in a dry run), and its entries are recorded runner_missing;
the new flags reach the crawl and the run's stored options."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from scanner import confine
from scanner.cli import app
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages import PackageSettings, default_cache_dir, runners
from scanner.packages.installnet import resolvers_on_loopback
from scanner.packages.runners import missing_runners, namespace_line, network_line, warning_lines
from scanner.packages.settings import ROOT_CACHE_DIR
from scanner.registry import load_entries
from scanner.scan.crawl import CrawlSettings, crawl
from scanner.scan.night import ScanConfig

SAMPLE = Path(__file__).parents[1] / "fixtures" / "registry" / "registry-sample.json"


def only_npx(tmp_path: Path) -> str:
    """A PATH holding a stub npx and nothing else."""
    stub = tmp_path / "npx"
    stub.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    stub.chmod(0o755)
    return str(tmp_path)


def test_missing_runners_are_recorded_runner_missing_without_connecting(tmp_path):
    entries = load_entries(str(SAMPLE), environ={"PATH": only_npx(tmp_path)}, run_packages=True)
    assert missing_runners(entries) == {"docker": 2, "uvx": 15}
    assert warning_lines(entries) == [
        "docker is not on PATH: 2 entries will be recorded runner_missing",
        "uvx is not on PATH: 15 entries will be recorded runner_missing",
    ]
    missing = [entry for entry in entries if entry.package and entry.package.get("skip_outcome") == "runner_missing"]
    seen: list[tuple[ServerEntry, ScanOutcome]] = []
    anyio.run(crawl, missing, CrawlSettings(concurrency=4), lambda entry, outcome: seen.append((entry, outcome)))
    assert {outcome.outcome for _, outcome in seen} == {Outcome.RUNNER_MISSING}
    assert {outcome.detail for _, outcome in seen} == {
        "runner missing: uvx is not on PATH (needed for pypi packages)",
        "runner missing: docker is not on PATH (needed for oci packages)",
    }
    # Without --run-packages nothing would run anyway: no warning, plain "needs --run-packages" skips.
    assert warning_lines(load_entries(str(SAMPLE), environ={"PATH": str(tmp_path)})) == []


def test_dry_run_says_each_missing_runner_once(tmp_path, monkeypatch):
    monkeypatch.setattr(confine, "namespaces", lambda: (True, "held"))  # its own line: the test below
    monkeypatch.setattr(confine, "own_network", lambda: (True, "held"))  # its own line: the test below
    monkeypatch.setattr(runners, "network_line", lambda entries: None)
    runner = CliRunner()
    result = runner.invoke(
        app,
        # A cache every user reaches: run as root, packages run as users of their own (said otherwise).
        ["scan", str(SAMPLE), "--dry-run", "--run-packages", "--format", "json", "--cache-dir", str(tmp_path / "c")],
        env={"PATH": only_npx(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "fathom: docker is not on PATH: 2 entries will be recorded runner_missing",
        "fathom: uvx is not on PATH: 15 entries will be recorded runner_missing",
    ]
    rows = json.loads(result.stdout)
    assert (
        sum(row["package"] is not None and row["package"].get("skip_outcome") == "runner_missing" for row in rows) == 17
    )


def test_a_host_without_pid_namespaces_is_said_once_before_a_child_would_start(tmp_path, monkeypatch):
    """Where the kernel refuses the namespaces (macOS, user namespaces switched off), the dry run says so in one
    line, with the reason; nothing is said when they hold, or when no child would start."""
    why = "unavailable (unshare: Operation not permitted): children share the host's PID namespace and /proc"
    monkeypatch.setattr(confine, "namespaces", lambda: (False, why))
    entries = load_entries(str(SAMPLE), environ={"PATH": only_npx(tmp_path)}, run_packages=True)
    line = namespace_line(entries)
    assert line is not None and line.startswith(f"PID namespaces {why}: a child can read its siblings'")
    result = CliRunner().invoke(
        app,
        ["scan", str(SAMPLE), "--dry-run", "--run-packages", "--format", "json", "--cache-dir", str(tmp_path / "c")],
        env={"PATH": only_npx(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines().count(f"fathom: {line}") == 1
    assert namespace_line(load_entries(str(SAMPLE), environ={"PATH": str(tmp_path)})) is None  # nothing runs
    monkeypatch.setattr(confine, "namespaces", lambda: (True, "held"))
    assert namespace_line(entries) is None


def test_a_packages_stdio_run_without_a_network_is_said_once_before_it_starts(tmp_path, monkeypatch):
    """A package run over stdio after its install, and a ``--run-commands`` command, each get a network of their
    own: the dry run says in one line whether it has a route out through slirp4netns or only its own loopback
    (``none:`` and why: here a PATH without slirp4netns, and ``FATHOM_NETWORK_STACK=none``), or, where the
    kernel refuses a network namespace, that it reaches what listens on the host's loopback; nothing is said
    when no such child runs."""
    monkeypatch.setattr(confine, "namespaces", lambda: (True, "held"))
    monkeypatch.setattr(confine, "own_network", lambda: (True, "held"))
    monkeypatch.setenv("PATH", only_npx(tmp_path))  # what Fathom finds slirp4netns on: not there
    entries = load_entries(str(SAMPLE), environ={"PATH": only_npx(tmp_path)}, run_packages=True)
    line = network_line(entries)
    assert line == (
        "a package's run (stdio or on a local port): a network of its own with only its own loopback, outbound "
        "none: no slirp4netns on PATH (Debian and Ubuntu: apt-get install slirp4netns): one that needs the "
        'internet at start is recorded "stopped for want of a network" (docs/registry.md, "Which platform '
        "isolates what\"); a package's install step keeps this machine's network, reaching what listens on its "
        "loopback (npx: no route out)"
    )
    result = CliRunner().invoke(
        app,
        ["scan", str(SAMPLE), "--dry-run", "--run-packages", "--format", "json", "--cache-dir", str(tmp_path / "c")],
        env={"PATH": only_npx(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines().count(f"fathom: {line}") == 1
    assert network_line(load_entries(str(SAMPLE), environ={"PATH": str(tmp_path)})) is None  # nothing runs
    command = ServerEntry(name="io.github.t/command", transport=Transport.STDIO, command=("python3", "server.py"))
    monkeypatch.setenv(confine.STACK_ENV, "none")
    said = network_line([command])
    assert said is not None and said.startswith(
        "a --run-commands command: a network of its own with only its own loopback, outbound none: "
        "FATHOM_NETWORK_STACK=none: "
    )
    why = "unavailable (unshare: Operation not permitted): children share the host's network"
    monkeypatch.setattr(confine, "own_network", lambda: (False, why))
    refused = network_line(entries)
    assert refused is not None and refused.startswith(
        f"network namespaces {why}: a package's run (stdio or on a local port) reaches"
    )


def test_with_the_stack_the_dry_run_says_a_child_reaches_out_never_the_hosts_loopback(tmp_path):
    """With slirp4netns on Fathom's PATH (and the kernel's network namespaces), the one line before the scan
    says a package's run and a command reach out through it, never the host's loopback."""
    holds, why = confine.outbound()
    if not holds:
        pytest.skip(f"no user-mode network stack here: {why}")
    command = ServerEntry(name="io.github.t/command", transport=Transport.STDIO, command=("python3", "server.py"))
    entries = [*load_entries(str(SAMPLE), environ={"PATH": only_npx(tmp_path)}, run_packages=True), command]
    if resolvers_on_loopback():
        pytest.skip(
            f"every nameserver here is on loopback: an install keeps the host's network ({resolvers_on_loopback()})"
        )
    assert network_line(entries, environ={}) == (
        "a package's install step and run (stdio or on a local port) and a --run-commands command: a network of its "
        "own, outbound through slirp4netns, never the host's loopback (what listens on this machine's other addresses "
        'answers it as it would any host; docs/registry.md, "Which platform isolates what")'
    )


def test_package_settings_defaults_and_stored_options(tmp_path):
    assert default_cache_dir({"XDG_CACHE_HOME": "/x/cache", "HOME": "/h"}) == Path("/x/cache/fathom")
    # Unset or relative: root on Linux gets /var/cache/fathom (its packages' own users cannot reach /root).
    fallback = ROOT_CACHE_DIR if sys.platform.startswith("linux") and os.geteuid() == 0 else Path("/h/.cache/fathom")
    assert default_cache_dir({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == fallback
    settings = PackageSettings(cache_dir=tmp_path, disk_limit_mb=512, pass_env=("CORP_TOKEN",))
    config = ScanConfig(source="x", run_packages=True, crawl=CrawlSettings(packages=settings))
    options = config.options()
    assert (options["cache_dir"], options["disk_limit_mb"], options["pass_env"]) == (str(tmp_path), 512, ["CORP_TOKEN"])


def test_a_pass_env_name_that_is_not_set_is_said(tmp_path):
    entries = load_entries(str(SAMPLE), environ={"PATH": only_npx(tmp_path)}, run_packages=True)
    settings = PackageSettings(pass_env=("CORP_CA", "CORP_TOKEN", "HOME"), environ={"CORP_CA": "/e", "HOME": "/h"})
    assert warning_lines(entries, settings)[-2:] == [
        "--pass-env CORP_TOKEN is not set: nothing passed",
        "--pass-env HOME: Fathom sets HOME for every package itself; not passed",
    ]


def test_a_skip_keeps_what_was_declared(tmp_path):
    """A package that cannot run keeps its registry type, identifier and version: in the dry run, in the store
    (``servers --format json``), so skips can be counted by registry type."""
    from scanner.report import queries

    declared = {"registryType": "nuget", "identifier": "Acme.Mcp", "version": "1.2.3", "transport": {"type": "stdio"}}
    document = {"servers": [{"server": {"name": "io.github.t/nuget", "version": "1.0.0", "packages": [declared]}}]}
    source = tmp_path / "registry.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    runner = CliRunner()
    dry = runner.invoke(app, ["scan", str(source), "--dry-run", "--run-packages", "--format", "json"])
    assert dry.exit_code == 0, dry.output
    [row] = json.loads(dry.stdout)
    assert row["package"] == {
        "registryType": "nuget",
        "identifier": "Acme.Mcp",
        "version": "1.2.3",
        "skip_outcome": "skipped",
    }
    db = tmp_path / "fathom.db"
    assert runner.invoke(app, ["scan", str(source), "--db", str(db)]).exit_code == 0
    [stored] = queries.servers(f"sqlite:///{db}")
    assert stored["last_outcome"] == "skipped"
    assert stored["package"] == {"registry_type": "nuget", "identifier": "Acme.Mcp", "version": "1.2.3"}
    assert stored["detail"] == "nuget packages are not run (dnx needs the .NET 10 SDK)"


def test_a_docker_daemon_that_does_not_answer_is_runner_missing_said_once(tmp_path):
    """docker is on PATH but its daemon is down: every OCI entry is runner_missing, said once in the dry run
    (and at the start of a scan), instead of one install_failed per image."""
    stub = tmp_path / "docker"
    stub.write_text(
        "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
        "Is the docker daemon running?' >&2\nexit 1\n",
        encoding="utf-8",
    )
    stub.chmod(0o755)
    only_npx(tmp_path)
    result = CliRunner().invoke(
        app,
        ["scan", str(SAMPLE), "--dry-run", "--run-packages", "--format", "json"],
        env={"PATH": str(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "docker" in line]
    assert said == [
        "fathom: docker daemon does not answer (Cannot connect to the Docker daemon at "
        "unix:///var/run/docker.sock. Is the docker daemon running?): 2 entries will be recorded runner_missing"
    ]
    oci = [row for row in json.loads(result.stdout) if row["package"] and row["package"].get("registryType") == "oci"]
    assert len(oci) == 2 and all(row["package"]["skip_outcome"] == "runner_missing" for row in oci)
    assert all(row["skip"].startswith("runner missing: docker daemon does not answer") for row in oci)


def test_dry_run_names_the_packages_remembered_too_large(tmp_path):
    """Issue 36: the dry run said nothing of the package versions a scan will record too_large without installing
    them (remembered from a night that went over the disk budget)."""
    from scanner.packages.cache import PackageCache

    big = {"registryType": "pypi", "identifier": "big-mcp", "version": "2.0.0", "transport": {"type": "stdio"}}
    small = {**big, "identifier": "small-mcp"}
    document = {
        "servers": [
            {"server": {"name": "io.github.t/big", "version": "2.0.0", "packages": [big]}},
            {"server": {"name": "io.github.t/small", "version": "2.0.0", "packages": [small]}},
        ]
    }
    source = tmp_path / "registry.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    path = {"PATH": only_npx(tmp_path)}
    (tmp_path / "npx").rename(tmp_path / "uvx")
    cache = tmp_path / "cache"
    entries = load_entries(str(source), environ=path, run_packages=True)
    PackageCache(cache).remember(
        entries[0],
        verdict="too_large",
        detail="wrote more than its 4096 MiB disk budget (--disk-limit-mb)",
        disk_limit_mb=4096,
    )
    runner = CliRunner()
    scan = ["scan", str(source), "--dry-run", "--run-packages", "--cache-dir", str(cache)]
    text = runner.invoke(app, scan, env=path)
    assert text.exit_code == 0, text.output
    assert (
        "will not install 1 remembered as too large (recorded too_large; a larger --disk-limit-mb or "
        "--retry-too-large installs them again): io.github.t/big"
    ) in text.stdout
    assert "big-mcp==2.0.0" in text.stdout and "big-mcp@2.0.0" not in text.stdout  # PyPI's spelling
    rows = {row["name"]: row for row in json.loads(runner.invoke(app, [*scan, "--format", "json"], env=path).stdout)}
    assert rows["io.github.t/big"]["remembered_too_large"].startswith("wrote more than its 4096 MiB disk budget")
    assert rows["io.github.t/small"]["remembered_too_large"] is None
    # a larger budget, or --retry-too-large, installs it again: then nothing is named
    for more in (["--disk-limit-mb", "8192"], ["--retry-too-large"]):
        again = runner.invoke(app, [*scan, *more], env=path)
        assert again.exit_code == 0 and "remembered as too large" not in again.stdout, more
