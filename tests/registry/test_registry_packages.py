"""Packages: skipped without --run-packages, exact commands and environments with it, memory capped by the OS."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

from scanner.models import ServerEntry, Transport
from scanner.packages.sandbox import confined_command
from scanner.registry import load_entries, secret_env_name

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/root", "AWS_SECRET_ACCESS_KEY": "leak"}
NAME = "io.github.example/pkg"


def server(*packages, **fields):
    return {"name": NAME, "description": "d", "version": "1.2.3", "packages": list(packages), **fields}


def npm(**fields):
    return {
        "registryType": "npm",
        "identifier": "@example/mcp",
        "version": "1.2.3",
        "transport": {"type": "stdio"},
        **fields,
    }


def load_one(write_json, document, environ=ENV, **kwargs):
    entries = load_entries(str(write_json("server.json", document)), environ=environ, **kwargs)
    assert len(entries) == 1
    return entries[0]


def unwrap(command):
    """The stored command: the runner's own, with no memory wrapper (the sandbox adds it when it starts, from
    ``package["memory_limit_mb"]``), so it reads the same on every host."""
    assert command[0] in ("npx", "bunx", "pnpx", "uvx"), command[:3]
    return command


def test_package_skipped_without_run_packages(write_json):
    entry = load_one(write_json, server(npm()))
    assert entry.skip == "package (npm @example/mcp): needs --run-packages"
    assert entry.transport is Transport.STDIO
    assert unwrap(entry.command) == ("npx", "-y", "@example/mcp@1.2.3")
    assert entry.env == {}


def test_npm_command_arguments_and_scrubbed_env(write_json):
    package = npm(
        runtimeHint="npx",
        runtimeArguments=[{"type": "named", "name": "--quiet", "isRequired": True, "format": "boolean"}],
        packageArguments=[
            {"type": "positional", "value": "stdio"},
            {"type": "named", "name": "--port", "value": "{port}", "variables": {"port": {"default": "8080"}}},
            {"type": "named", "name": "--read-only"},  # optional flag without value: not added
            {"type": "positional", "valueHint": "workspace"},  # optional, no value: not added
        ],
        environmentVariables=[
            {"name": "API_KEY", "isSecret": True, "isRequired": True},
            {"name": "REGION", "default": "eu"},
            {"name": "ACCOUNT", "isRequired": True},
            {"name": "OPTIONAL"},
            {"name": "PATH", "default": "/evil"},
        ],
    )
    env = {**ENV, secret_env_name(NAME, "API_KEY"): "s3cret"}
    entry = load_one(write_json, server(package), env, run_packages=True, memory_limit_mb=512)
    assert entry.skip is None
    assert unwrap(entry.command) == ("npx", "-y", "--quiet", "@example/mcp@1.2.3", "stdio", "--port", "8080")
    assert entry.package["memory_limit_mb"] == 512 and not any("536870912" in word for word in entry.command)
    assert entry.env == {"PATH": ENV["PATH"], "LANG": "C.UTF-8", "API_KEY": "s3cret", "REGION": "eu"}
    assert entry.anonymous is False
    assert entry.package == {
        "registryType": "npm",
        "identifier": "@example/mcp",
        "version": "1.2.3",
        "runner": "npx",
        "spec": "@example/mcp@1.2.3",
        "pinned": True,
        "memory_limit_mb": 512,
        "missing_inputs": ["ACCOUNT"],
        "secret_env_names": ["API_KEY"],
    }


def test_pypi_and_missing_secret_is_anonymous(write_json):
    package = {
        "registryType": "pypi",
        "identifier": "mcp-weather",
        "version": "0.1.0",
        "runtimeHint": "python",  # not a runner: uvx is used
        "transport": {"type": "stdio"},
        "environmentVariables": [{"name": "TOKEN", "isSecret": True, "isRequired": True}],
    }
    entry = load_one(write_json, server(package), run_packages=True)
    assert unwrap(entry.command) == ("uvx", "mcp-weather==0.1.0")
    assert entry.anonymous is True
    assert entry.secret_header_names == ("TOKEN",)
    assert "TOKEN" not in entry.env


def test_oci_command_passes_env_by_name_and_caps_memory(write_json):
    package = {
        "registryType": "oci",
        "identifier": "ghcr.io/example/mcp:1.0.0",
        "transport": {"type": "stdio"},
        "runtimeArguments": [{"type": "named", "name": "--init", "isRequired": True}],
        "environmentVariables": [{"name": "TOKEN", "isSecret": True, "isRequired": True}],
    }
    env = {**ENV, secret_env_name(NAME, "TOKEN"): "t0k"}
    entry = load_one(write_json, server(package), env, run_packages=True, memory_limit_mb=256)
    assert entry.command == (
        "docker", "run", "-i", "--rm", "--memory=256m", "--memory-swap=256m", "--init", "-e", "TOKEN",
        "ghcr.io/example/mcp:1.0.0",
    )  # fmt: skip
    assert "t0k" not in " ".join(entry.command)
    assert entry.env["TOKEN"] == "t0k"


def test_oci_dangerous_runtime_argument_refused(write_json):
    package = {
        "registryType": "oci",
        "identifier": "ghcr.io/example/mcp:1.0.0",
        "transport": {"type": "stdio"},
        "runtimeArguments": [{"type": "named", "name": "-v", "value": "/:/host", "isRequired": True}],
    }
    entry = load_one(write_json, server(package), run_packages=True)
    assert entry.skip == "oci runtime argument '-v' is not allowed"
    assert entry.command == ()


def test_secret_argument_refused_and_identifier_checked(write_json):
    secret_arg = npm(packageArguments=[{"type": "named", "name": "--token", "isSecret": True, "isRequired": True}])
    env = {**ENV, secret_env_name(NAME, "--token"): "abc"}
    entry = load_one(write_json, server(secret_arg), env, run_packages=True)
    assert entry.skip == "package takes secret --token on its command line (not supported)"
    assert "abc" not in repr(entry)
    flag_like = npm(identifier="--registry=https://evil.example")
    assert load_one(write_json, server(flag_like), run_packages=True).skip.startswith(
        "npm package identifier is not usable"
    )


def test_required_argument_without_value_skips(write_json):
    entry = load_one(
        write_json,
        server(npm(packageArguments=[{"type": "positional", "valueHint": "db_path", "isRequired": True}])),
        run_packages=True,
    )
    assert entry.skip == (
        "needs configuration: argument db_path has no value (set FATHOM_SECRET_IO_GITHUB_EXAMPLE_PKG_DB_PATH)"
    )
    # The skip keeps what was declared (issue 19): its registry type, identifier and version.
    assert entry.package == {
        "registryType": "npm",
        "identifier": "@example/mcp",
        "version": "1.2.3",
        "skip_outcome": "needs_configuration",
    }


def test_unsupported_kinds_and_local_http_servers(write_json):
    mcpb = {"registryType": "mcpb", "identifier": "https://x.example/a.mcpb", "transport": {"type": "stdio"}}
    http = npm(transport={"type": "streamable-http", "url": "http://localhost:3000/mcp"})
    entry = load_one(write_json, server(mcpb, http), run_packages=True)
    assert entry.skip == "mcpb bundles are not run (download and unpack not supported)"
    entry = load_one(write_json, server(http), run_packages=True)
    # A local-port server with a fixed port and no input to change it is not run (tests/packages/test_local_port).
    assert entry.skip == (
        "package serves streamable-http on port 3000 but declares no argument or variable to set the port "
        "through (a fixed port is not run)"
    )
    nuget = {"registryType": "nuget", "identifier": "Example.Mcp", "version": "1.0.0", "transport": {"type": "stdio"}}
    assert "nuget" in load_one(write_json, server(nuget), run_packages=True).skip


def test_remote_preferred_over_package(write_json):
    doc = server(npm(), remotes=[{"type": "streamable-http", "url": "https://r.example.com/mcp"}])
    entry = load_one(write_json, doc)
    assert (entry.transport, entry.url, entry.skip) == (Transport.STREAMABLE_HTTP, "https://r.example.com/mcp", None)


HOG = textwrap.dedent(
    """
    import sys
    chunks = []
    for _ in range(int(sys.argv[1])):
        chunks.append(bytearray(8 * 1024 * 1024))
    print("allocated", len(chunks) * 8, "MiB", flush=True)
    """
)


def limit_command(command: list[str], memory_limit_mb: int) -> tuple[str, ...]:
    """``command`` as a package's runner is started, under its memory cap (no folders to confine writes to)."""
    package = {"registryType": "npm", "memory_limit_mb": memory_limit_mb}
    entry = ServerEntry(name="t/mem", transport=Transport.STDIO, command=tuple(command), package=package)
    return confined_command(entry, [])


def test_memory_limit_kills_a_python_hog(tmp_path):
    hog = tmp_path / "hog.py"
    hog.write_text(HOG, encoding="utf-8")
    command = limit_command([sys.executable, str(hog)], 128)
    hungry = subprocess.run([*command, "64"], capture_output=True, text=True, timeout=60)  # 512 MiB
    assert hungry.returncode != 0
    assert "MemoryError" in hungry.stderr
    modest = subprocess.run([*command, "2"], capture_output=True, text=True, timeout=60)
    assert modest.returncode == 0, modest.stderr
    assert "allocated 16 MiB" in modest.stdout


@pytest.mark.skipif(not shutil.which("node"), reason="node not installed")
def test_memory_limit_lets_node_start_but_stops_its_hog():
    # RLIMIT_AS would kill node before it starts (it reserves GBs of address space); RLIMIT_DATA does not.
    script = "const a=[];for(let i=0;i<+process.argv[1];i++){a.push(Buffer.alloc(8<<20,1))};console.log('ok',a.length)"
    command = limit_command(["node", "-e", script], 256)
    assert subprocess.run([*command, "2"], capture_output=True, text=True, timeout=60).stdout.strip() == "ok 2"
    hog = subprocess.run([*command, "128"], capture_output=True, text=True, timeout=60)  # 1 GiB
    assert hog.returncode != 0
    assert "allocation failed" in hog.stderr or "out of memory" in hog.stderr.lower()


def test_argument_values_from_the_naming_rule_and_publisher_mistakes(write_json):
    flag = npm(packageArguments=[{"type": "named", "name": "--api-key", "isRequired": True}])
    entry = load_one(write_json, server(flag), run_packages=True)
    variable = secret_env_name(NAME, "--api-key")
    assert entry.skip == f"needs configuration: --api-key needs a value (set {variable})"
    entry = load_one(write_json, server(flag), {**ENV, variable: "k-123"}, run_packages=True)
    assert unwrap(entry.command)[-2:] == ("--api-key", "k-123")
    no_dash = npm(packageArguments=[{"type": "named", "name": "engine", "value": "v8", "isRequired": True}])
    entry = load_one(write_json, server(no_dash), run_packages=True)
    assert entry.skip.startswith("registry data: named argument 'engine' has no leading dash")
    # A positional runtime argument would be the package npx runs: the declared package never becomes another.
    positional = npm(runtimeArguments=[{"type": "positional", "value": "other-pkg"}])
    entry = load_one(write_json, server(positional), run_packages=True)
    assert entry.command == () and "runtimeArguments put 'other-pkg' before the package" in entry.skip
    # The runner's own -y and the package again (at another version) are dropped, with notes.
    repeated = npm(
        runtimeArguments=[{"type": "named", "name": "-y"}, {"type": "positional", "value": "@example/mcp@latest"}]
    )
    entry = load_one(write_json, server(repeated), run_packages=True)
    assert unwrap(entry.command) == ("npx", "-y", "@example/mcp@1.2.3")
    assert len(entry.package["notes"]) == 1  # the optional valueless -y was never a word; the package was


# --- issue 17 (12): runner inputs that cannot carry code ----------------------------------------------------------


def test_variables_that_load_code_never_reach_the_runner(write_json):
    """A declared ``NODE_OPTIONS=--import=data:...`` ran inline JavaScript inside npx; LD_PRELOAD and PYTHONPATH
    passed too, and the stored command showed none of it."""
    declared = [
        {"name": "NODE_OPTIONS", "default": "--import=data:text/javascript,console.log(1)"},
        {"name": "LD_PRELOAD", "default": "/tmp/evil.so"},
        {"name": "PYTHONPATH", "default": "/tmp/evil"},
        {"name": "node_path", "default": "/tmp/evil"},
        {"name": "BASH_ENV", "default": "/tmp/evil.sh"},
        {"name": "GIT_SSH_COMMAND", "default": "sh -c id"},
        {"name": "LOG_LEVEL", "default": "debug"},
        {"name": "PYTHONUNBUFFERED", "default": "1"},
    ]
    entry = load_one(write_json, server(npm(environmentVariables=declared)), run_packages=True)
    assert entry.skip is None or entry.skip.startswith("runner missing"), entry.skip
    assert set(entry.env) == {"PATH", "LANG", "LOG_LEVEL", "PYTHONUNBUFFERED"}
    notes = entry.package["notes"]
    for name in ("NODE_OPTIONS", "LD_PRELOAD", "PYTHONPATH", "node_path", "BASH_ENV", "GIT_SSH_COMMAND"):
        assert f"registry data: variable {name} left out (it changes how the runtime loads code)" in notes


@pytest.mark.parametrize("words", [["--python", "/tmp/evil"], ["--python=./evil"], ["--python", "~/x"]])
def test_uvx_python_never_takes_a_path(write_json, words):
    """The allowed uvx option ``--python /path`` made uv execute that file."""
    runtime = [{"type": "positional", "value": word} for word in words]
    package = {
        "registryType": "pypi",
        "identifier": "example-mcp",
        "version": "1.0.0",
        "transport": {"type": "stdio"},
        "runtimeArguments": runtime,
    }
    entry = load_one(write_json, server(package), run_packages=True)
    assert entry.skip is not None and "is not a Python version request" in entry.skip
    assert "/tmp/evil" not in " ".join(entry.command)


@pytest.mark.parametrize("request_text", ["3.12", ">=3.11", "cpython3.12", "pypy@3.10", "3.13t"])
def test_uvx_python_version_requests_still_pass(write_json, request_text):
    package = {
        "registryType": "pypi",
        "identifier": "example-mcp",
        "version": "1.0.0",
        "transport": {"type": "stdio"},
        "runtimeArguments": [{"type": "named", "name": "--python", "value": request_text}],
    }
    entry = load_one(write_json, server(package), run_packages=True)
    assert entry.skip is None or entry.skip.startswith("runner missing"), entry.skip
    assert request_text in entry.command


@pytest.mark.parametrize(
    ("kind", "version", "pinned"),
    [
        ("npm", "1.2.3", True),
        ("npm", "1.2.3-beta.1", True),
        ("npm", "1.x", False),
        ("npm", "next", False),
        ("pypi", "1.0.0", True),
        ("pypi", "2.0rc1", True),
        ("pypi", "next", False),
    ],
)
def test_ranges_and_tags_are_unpinned_and_flagged(write_json, kind, version, pinned):
    identifier = "@example/mcp" if kind == "npm" else "example-mcp"
    package = {"registryType": kind, "identifier": identifier, "version": version, "transport": {"type": "stdio"}}
    entry = load_one(write_json, server(package), run_packages=True)
    assert entry.package["pinned"] is pinned
    flagged = any("is a range or a tag, not a pinned version" in note for note in entry.package.get("notes", []))
    assert flagged is not pinned


@pytest.mark.parametrize(
    "image",
    [
        "127.0.0.1:5000/x",
        "169.254.169.254/latest",
        "2130706433:80/x",
        "10.0.0.7/x",
        "localhost/x",
        "reg:5000/x",
        "registry.internal/x",
    ],
)
def test_oci_images_from_local_or_private_hosts_are_not_pulled(write_json, image):
    package = {"registryType": "oci", "identifier": f"{image}:1.0.0", "transport": {"type": "stdio"}}
    entry = load_one(write_json, server(package), run_packages=True)
    assert entry.skip is not None and "names a registry host that is" in entry.skip, entry.skip


@pytest.mark.parametrize("image", ["ghcr.io/example/mcp", "example/mcp", "docker.io/example/mcp"])
def test_oci_images_from_public_registries_still_run(write_json, image):
    package = {"registryType": "oci", "identifier": f"{image}:1.0.0", "transport": {"type": "stdio"}}
    entry = load_one(write_json, server(package), run_packages=True)
    assert entry.skip is None or entry.skip.startswith("runner missing"), entry.skip
