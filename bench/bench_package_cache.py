"""Benchmark (not a test): a registry npm package started cold vs from Fathom's shared package cache.

The package is the npm reference server ``@modelcontextprotocol/server-everything`` with its whole dependency
tree (111 packages, as ``tests/npm/package-lock.json`` pins them), packed from ``tests/npm/node_modules`` and
served by a loopback npm registry (run ``npm ci`` in ``tests/npm`` first); ``--package tiny`` uses the tests'
dependency-free server instead. Each start goes through :func:`scanner.packages.run_package` exactly as a
nightly scan does (npx, throwaway HOME, memory limit, disk budget) and ends when the tool list is in. Cold: a
fresh cache folder each time. Cached: the same cache folder as the night before. A loopback registry answers in
microseconds where a real one takes tens of milliseconds per request, so ``--latency-ms`` (default 50) delays
each answer like a real registry's round trip; ``--latency-ms 0`` gives the loopback floor.

Prints the median wall time of each and the ratio (target: the cached start at least 3x faster).

    .venv/bin/python bench/bench_package_cache.py [--runs 5] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scanner.mcp import ClientLimits
from scanner.packages import PackageSettings, run_package
from scanner.registry.interface import Options
from scanner.registry.packages import resolve_packages
from tests.packages.local_registry import NPM_NAME, LocalRegistry

NPM_TREE = Path(__file__).resolve().parents[1] / "tests" / "npm"
EVERYTHING = ("@modelcontextprotocol/server-everything", "2026.8.31")


class TreeRegistry(LocalRegistry):
    """The loopback registry, also serving every package of ``tests/npm``'s lock file (packed on first use)."""

    def __init__(self, latency_s: float) -> None:
        lock = json.loads((NPM_TREE / "package-lock.json").read_text(encoding="utf-8"))
        self.tree: dict[str, dict[str, Path]] = {}
        for key, facts in lock["packages"].items():
            if key.startswith("node_modules/"):
                name = key.rsplit("node_modules/", 1)[1]
                self.tree.setdefault(name, {})[facts["version"]] = NPM_TREE / key
        self.packed: dict[tuple[str, str], bytes] = {}
        super().__init__(latency_s)

    def pack(self, name: str, version: str) -> bytes:
        if (name, version) not in self.packed:
            folder = self.tree[name][version]
            out = io.BytesIO()
            with tarfile.open(fileobj=out, mode="w:gz") as archive:
                for path in sorted(folder.rglob("*")):
                    relative = path.relative_to(folder)
                    if path.is_file() and "node_modules" not in relative.parts:
                        archive.add(path, arcname=f"package/{relative}", recursive=False)
            self.packed[name, version] = out.getvalue()
        return self.packed[name, version]

    def answer(self, path: str) -> tuple[str, bytes] | None:
        found = super().answer(path)
        if found is not None or not path.startswith("/npm/"):
            return found
        rest = path.split("?", 1)[0][len("/npm/") :].replace("%2f", "/").replace("%2F", "/")
        if "/-/" in rest:
            name, file = rest.split("/-/", 1)
            version = file.removesuffix(".tgz").rsplit("-", 1)[1]
            return (
                ("application/octet-stream", self.pack(name, version)) if version in self.tree.get(name, {}) else None
            )
        if rest not in self.tree:
            return None
        versions = {}
        for version, folder in self.tree[rest].items():
            manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
            data = self.pack(rest, version)
            keep = (
                "dependencies",
                "optionalDependencies",
                "peerDependencies",
                "peerDependenciesMeta",
                "bin",
                "os",
                "cpu",
            )
            versions[version] = {
                **{key: manifest[key] for key in keep if key in manifest},
                "name": rest,
                "version": version,
                "dist": {
                    "tarball": f"{self.npm_url}{rest}/-/{rest.rsplit('/', 1)[-1]}-{version}.tgz",
                    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
                },
            }
        latest = max(versions, key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split("-")[0].split(".")])
        document = {"name": rest, "dist-tags": {"latest": latest}, "versions": versions}
        return "application/json", json.dumps(document).encode()


def start(entry: object, settings: PackageSettings) -> float:
    began = time.perf_counter()
    outcome = anyio.run(run_package, entry, ClientLimits(timeout=120), "rich", settings)
    elapsed = time.perf_counter() - began
    if not outcome.ok:
        raise SystemExit(f"the package did not answer: {outcome.outcome} {outcome.detail}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--package", choices=("everything", "tiny"), default="everything")
    args = parser.parse_args()
    registry = TreeRegistry(latency_s=args.latency_ms / 1000)
    environ = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "LANG": "C.UTF-8",
        "npm_config_registry": registry.npm_url,
    }
    identifier, version = EVERYTHING if args.package == "everything" else (NPM_NAME, "1.0.0")
    package = {"registryType": "npm", "identifier": identifier, "version": version, "transport": {"type": "stdio"}}
    entry = resolve_packages("bench/pkg", "1.0.0", [package], source="bench", options=Options(True, environ))
    cold: list[float] = []
    cached: list[float] = []
    with tempfile.TemporaryDirectory(prefix="fathom-bench-cache-") as shared:
        start(entry, PackageSettings(cache_dir=Path(shared), environ=environ))  # fill the shared cache
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="fathom-bench-cold-") as fresh:
                cold.append(start(entry, PackageSettings(cache_dir=Path(fresh), environ=environ)))
            cached.append(start(entry, PackageSettings(cache_dir=Path(shared), environ=environ)))
    registry.close()
    cold_s, cached_s = statistics.median(cold), statistics.median(cached)
    print(f"{identifier}@{version}; registry latency {args.latency_ms:g} ms per request; {args.runs} runs each")
    print(f"registry served {registry.downloads('.tgz')} tarballs in all (median wall times below)")
    print(f"cold start (empty cache):    {cold_s * 1000:7.0f} ms")
    print(f"cached start (second night): {cached_s * 1000:7.0f} ms")
    print(f"ratio: cached start is {cold_s / cached_s:.1f}x faster (target >= 3x)")


if __name__ == "__main__":
    main()
