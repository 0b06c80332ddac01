"""Benchmark (not a test): nights of ``fathom scan --run-packages`` over the same local packages: each night's
wall time, the registry's downloads and the package cache's size (as ``du`` counts it).

The registry (loopback, ``--latency-ms`` per request like a real one) serves the npm reference server
``@modelcontextprotocol/server-everything`` with its 111-package tree (run ``npm ci`` in ``tests/npm`` first),
the tests' npm server at two versions (one of them crashing at start), a version that does not exist, and the
tests' PyPI wheel; each is one registry entry. Every night is a whole ``run_scan`` into the same SQLite file and
the same ``--cache-dir`` (orphan clean-up before, the installers' prune and the ceiling after), as a nightly
job runs it.

    .venv/bin/python bench/bench_package_nights.py [--nights 3] [--latency-ms 50] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_package_cache import EVERYTHING, TreeRegistry

from scanner.mcp import ClientLimits
from scanner.packages import PackageSettings
from scanner.packages.cache import tree_bytes
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, run_scan
from tests.packages.local_registry import NPM_NAME, PY_NAME


def _server(name: str, kind: str, identifier: str, version: str, *args: str) -> dict[str, Any]:
    package = {
        "registryType": kind,
        "identifier": identifier,
        "version": version,
        "transport": {"type": "stdio"},
        "packageArguments": [{"type": "positional", "value": arg} for arg in args],
    }
    return {
        "server": {"name": f"io.github.bench/{name}", "description": "d", "version": "1.0.0", "packages": [package]}
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--verbose", action="store_true", help="print each entry's outcome and detail per night")
    args = parser.parse_args()
    import json

    registry = TreeRegistry(latency_s=args.latency_ms / 1000)
    servers = [
        _server("everything", "npm", *EVERYTHING),
        _server("tiny-1", "npm", NPM_NAME, "1.0.0"),
        _server("tiny-2-crash", "npm", NPM_NAME, "2.0.0", "crash"),
        _server("gone", "npm", NPM_NAME, "9.9.9"),
        _server("python", "pypi", PY_NAME, "1.0.0"),
    ]
    environ = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "LANG": "C.UTF-8",
        "npm_config_registry": registry.npm_url,
        "UV_INDEX_URL": registry.simple_url,
    }
    os.environ["PATH"] = environ["PATH"]  # the resolver looks for the runners (uvx is beside this Python)
    with tempfile.TemporaryDirectory(prefix="fathom-bench-nights-") as folder:
        root = Path(folder)
        source = root / "registry.json"
        source.write_text(json.dumps({"servers": servers}), encoding="utf-8")
        cache = root / "cache"
        settings = CrawlSettings(
            concurrency=args.concurrency,
            limits=ClientLimits(timeout=180),
            packages=PackageSettings(cache_dir=cache, environ=environ),
        )
        config = ScanConfig(
            source=str(source), db_url=f"sqlite:///{root / 'bench.db'}", run_packages=True, crawl=settings
        )
        print(f"{len(servers)} entries; registry latency {args.latency_ms:g} ms per request")
        print("night   wall s   tarballs   wheels   cache MiB   outcomes")
        for night in range(1, args.nights + 1):
            tarballs, wheels = registry.downloads(".tgz"), registry.downloads(".whl")
            began = time.perf_counter()
            summary = run_scan(config)
            wall = time.perf_counter() - began
            size = tree_bytes([cache]) / (1024 * 1024)
            outcomes = " · ".join(f"{name} {count}" for name, count in sorted(summary.counts.items()))
            if args.verbose:
                from scanner.report import queries

                for row in queries.servers(config.db_url):
                    print(f"        {row['server']}: {row['last_outcome']} {row['detail']}")
            print(
                f"{night:5d}   {wall:6.1f}   {registry.downloads('.tgz') - tarballs:8d}   "
                f"{registry.downloads('.whl') - wheels:6d}   {size:9.1f}   {outcomes}"
            )
    registry.close()


if __name__ == "__main__":
    main()
