"""The package resolver over every version of the real official registry (the 2025-12-18 dump, 2,794 rows).

For each npm, PyPI and OCI package of every row, resolved alone: the command runs exactly the declared package
at the declared version in the runner's package position (or ``latest``, flagged, where the row pins none),
nothing but the runner's own options comes before it, and every required argument either has its value on the
command line or the package is skipped with the reason.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scanner.registry.interface import Options
from scanner.registry.packages import resolve_packages

DUMP = Path(__file__).parents[1] / "fixtures" / "registry" / "official-registry-2025-12-18.json.gz"
RUNNERS = ("npx", "bunx", "pnpx", "uvx", "docker", "podman")
DOCKER_VALUE_FLAGS = {"-e", "--env", "-p", "--publish", "--platform", "-w", "--workdir"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    with gzip.open(DUMP, "rt", encoding="utf-8") as handle:
        document = json.load(handle)
    return [row["server"] for row in document["servers"]]


@pytest.fixture(scope="module")
def options(tmp_path_factory: pytest.TempPathFactory) -> Options:
    """Every runner on PATH (stubs), so a skip is never "runner missing" but always about the entry itself."""
    bin_dir = tmp_path_factory.mktemp("runners")
    for runner in RUNNERS:
        stub = bin_dir / runner
        stub.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        stub.chmod(0o755)
    return Options(run_packages=True, environ={"PATH": str(bin_dir), "LANG": "C.UTF-8"})


def unwrap(command: tuple[str, ...]) -> list[str]:
    """The stored command: the runner's own, with no memory wrapper (the sandbox adds it when it starts)."""
    assert os.path.basename(command[0]) in ("npx", "bunx", "pnpx", "uvx", "docker", "podman"), command[:3]
    return list(command)


# semver.org's own regular expression for a version (npm versions are semver).
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def exact_version(kind: str, version: str) -> bool:
    if kind == "npm":
        return bool(SEMVER.match(version))
    from packaging.version import InvalidVersion, Version

    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def expected_spec(kind: str, package: dict[str, Any]) -> tuple[str, bool]:
    identifier, version = package["identifier"], package.get("version")
    pinned = bool(version) and version != "latest"
    if kind == "npm":
        return f"{identifier}@{version if pinned else 'latest'}", pinned
    if kind == "pypi":
        return (f"{identifier}=={version}" if pinned else f"{identifier}@latest"), pinned
    last = identifier.rsplit("/", 1)[-1]
    if ":" in last or "@sha256:" in identifier:
        return identifier, True
    return f"{identifier}:{version if pinned else 'latest'}", pinned


def package_position(kind: str, words: list[str]) -> int:
    """Where the runner takes the package: the first word after the runner's options (and their values)."""
    index = 2 if kind == "oci" else 1  # docker run ... / npx ... / uvx ...
    while index < len(words):
        word = words[index]
        if not word.startswith("-"):
            return index
        takes_value = (kind == "oci" and word in DOCKER_VALUE_FLAGS) or (kind == "pypi" and word == "--python")
        index += 2 if takes_value else 1
    raise AssertionError(f"no package word in {words}")


def required_args(package: dict[str, Any]) -> list[dict[str, Any]]:
    args = (package.get("runtimeArguments") or []) + (package.get("packageArguments") or [])
    return [arg for arg in args if isinstance(arg, dict) and arg.get("isRequired") is True]


def test_every_package_of_the_real_dump_runs_exactly_what_it_declares(rows, options):
    tally: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for server in rows:
        for package in server.get("packages") or []:
            kind = package.get("registryType")
            if kind not in ("npm", "pypi", "oci"):
                continue
            entry = resolve_packages(server["name"], server.get("version"), [package], source="dump", options=options)
            if not entry.command:
                # Skipped: a readable reason, and "needs configuration" recorded as such.
                assert entry.skip, server["name"]
                assert entry.package is not None
                if entry.skip.startswith("needs configuration"):
                    assert entry.package["skip_outcome"] == "needs_configuration"
                reasons[entry.skip.split(":", 1)[0]] += 1
                tally[f"{kind} skipped"] += 1
                continue
            assert entry.skip is None, (server["name"], entry.skip)
            words = unwrap(entry.command)
            spec, pinned = expected_spec(kind, package)
            position = package_position(kind, words)
            assert words[position] == spec, (server["name"], words)
            assert entry.package is not None
            # Pinned means one exact release (issue 17: ranges and tags are not): judged by independent parsers.
            exact = kind == "oci" or exact_version(kind, package.get("version") or "")
            assert entry.package["spec"] == spec and entry.package["pinned"] is (pinned and exact), package
            if pinned and not exact:
                assert any("is a range or a tag" in note for note in entry.package.get("notes", [])), package
            if not pinned:
                assert any("no version pinned" in note for note in entry.package.get("notes", [])) or kind == "oci"
            # Nothing before the package but the runner's own options: no second package, no bare words.
            before = words[2 if kind == "oci" else 1 : position]
            for index, word in enumerate(before):
                assert word.startswith("-") or (index and before[index - 1].startswith("-")), (server["name"], words)
            notes = " ".join(entry.package.get("notes", []))
            for arg in required_args(package):
                value = arg.get("value") or arg.get("default")
                if arg.get("type") == "named" and arg.get("format") == "boolean" and not value:
                    assert arg["name"] in words, (server["name"], arg)
                elif value and "{" not in value:
                    # On the command line (a flag with its value), or dropped with a note saying why.
                    placed = value in words and (arg.get("type") != "named" or arg["name"] in words)
                    assert placed or repr(value[:80]) in notes, (server["name"], arg, words)
            tally[f"{kind} {'pinned' if pinned else 'latest'}"] += 1
    print("\nresolved:", dict(sorted(tally.items())), "\nskip reasons:", dict(reasons.most_common()))
    assert tally["npm pinned"] > 900 and tally["pypi pinned"] > 400 and tally["oci pinned"] > 300


def test_the_cases_the_nightly_scan_got_wrong(rows, options):
    """firebase's ``mcp`` and haiku-rag's ``serve`` are not run as packages; mirror-mcp runs its declared
    version; the OCI entries that repeat ``run`` and the image run the declared image."""

    def resolve(name: str, version: str | None = None) -> Any:
        server = next(
            row
            for row in reversed(rows)
            if row["name"] == name and row.get("packages") and version in (None, row["version"])
        )
        return resolve_packages(name, server["version"], server["packages"], source="dump", options=options)

    firebase = resolve("io.github.firebase/firebase-mcp")
    assert firebase.command == ()
    assert firebase.skip.startswith("registry data: runtimeArguments put 'mcp' before the package")
    assert "publisher's mistake" in firebase.skip
    haiku = resolve("io.github.ggozad/haiku-rag")
    assert haiku.command == () and "'serve'" in haiku.skip
    mirror = resolve("io.github.toby/mirror-mcp")
    assert unwrap(mirror.command) == ["npx", "-y", "mirror-mcp@0.0.8"]
    assert any("mirror-mcp@latest" in note for note in mirror.package["notes"])
    # runtimeArguments: run, -i, --rm, -e, BUILDKITE_API_TOKEN, the image again: docker's own words, the
    # ``-e NAME`` pair and the image are dropped with notes (a declared variable with a value is passed by name).
    buildkite = resolve("io.github.buildkite/buildkite-mcp-server", "0.7.0")
    words = unwrap(buildkite.command)
    assert words[:4] == ["docker", "run", "-i", "--rm"] and words.count("run") == 1 and words.count("-i") == 1
    assert words[package_position("oci", words)] == "ghcr.io/buildkite/buildkite-mcp-server:0.7.0" == words[-1]
    assert len(buildkite.package["notes"]) == 5
    # A secret inside a runtime argument's value would be on the command line: not supported, said so.
    github = resolve("io.github.github/github-mcp-server")
    assert github.skip == "package takes a secret in -e on its command line (not supported)"


def test_the_declared_stdio_transport_wins_over_argument_defaults(rows, options):
    """Issue 36: codeweaver's PyPI package declares stdio, yet its ``--transport`` argument defaults to
    streamable-http and ``--host``/``--port`` have defaults: it was run as an HTTP server Fathom never reached."""
    (row,) = [row for row in rows if row["name"] == "com.knitli/codeweaver"]
    pypi = [package for package in row["packages"] if package["registryType"] == "pypi"]
    entry = resolve_packages(row["name"], row["version"], pypi, source="dump", options=options)
    assert entry.skip is None and entry.package is not None
    command = unwrap(entry.command)
    assert command[:3] == ["uvx", "code-weaver==0.1.0a3", "server"]
    assert command[command.index("--transport") + 1] == "stdio"
    assert "streamable-http" not in command and "--port" not in command and "--host" not in command
    notes = entry.package["notes"]
    assert any("--transport 'streamable-http' set to 'stdio'" in note for note in notes)
    assert any("--port left out" in note for note in notes)
    # Every stdio package of the dump: no argument default turns it into an HTTP server.
    for server in rows:
        for package in server.get("packages") or []:
            if (package.get("transport") or {}).get("type") != "stdio" or package.get("registryType") not in (
                "npm",
                "pypi",
            ):
                continue
            resolved = resolve_packages(server["name"], server.get("version"), [package], source="d", options=options)
            if resolved.command and resolved.skip is None:
                words = list(resolved.command)
                for flag in ("--transport", "--transport-type"):
                    if flag in words:
                        assert words[words.index(flag) + 1] == "stdio", (server["name"], words)
