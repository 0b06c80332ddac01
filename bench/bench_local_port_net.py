"""Benchmark (not a test): the cost of a local-port package's network namespace of its own (issue 42).

One local-port package (the tests' dependency-free ``fathom-test-server`` in ``http`` mode, from the loopback npm
registry) is scanned ``--runs`` times from a warm cache through :func:`scanner.packages.run_package`, exactly as a
nightly scan runs it: npx's install step (a cache hit), then the server in its namespaces, reached through its
launcher (``--relay``: every connection made inside its namespace and handed over). ``--shared`` runs it as
before (the host's network: the port polled and scanned on the host's 127.0.0.1), by making
:func:`scanner.confine.own_network` say no, as where the kernel refuses a network namespace.

Prints one line of JSON: the median wall time per scan and the CPU of this process and its children per scan,
after one warm-up scan (the install) that is not counted.

    .venv/bin/python bench/bench_local_port_net.py [--runs 5] [--shared]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scanner.confine import spawn
from scanner.mcp import ClientLimits
from scanner.packages import PackageSettings, run_package
from scanner.registry.interface import Options
from scanner.registry.packages import resolve_packages
from tests.packages.local_registry import NPM_NAME, LocalRegistry


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shared", action="store_true", help="the host's network, as before")
    args = parser.parse_args()
    if args.shared:
        spawn._NETWORK[:] = [(False, "shared for the benchmark")]
    registry = LocalRegistry()
    cache = Path(tempfile.mkdtemp(prefix="fathom-bench-netport-"))
    cache.chmod(0o755)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "npm_config_registry": registry.npm_url,
    }
    package = {
        "registryType": "npm",
        "identifier": NPM_NAME,
        "version": "1.0.0",
        "transport": {"type": "streamable-http", "url": "http://localhost:{port}/mcp"},
        "packageArguments": [
            {"type": "positional", "value": "http"},
            {"type": "named", "name": "--port", "default": "8089", "isRequired": True, "format": "number"},
        ],
    }
    options = Options(run_packages=True, environ=env)
    entry = resolve_packages("io.github.fathom-bench/local", "1.0.0", [package], source="bench", options=options)
    settings = PackageSettings(cache_dir=cache, environ=env)
    try:
        walls, cpus = [], []
        for run in range(args.runs + 1):
            began, cpu = time.perf_counter(), _cpu()
            outcome = anyio.run(run_package, entry, ClientLimits(timeout=120), "rich", settings)
            if not outcome.ok:
                raise SystemExit(f"not ok: {outcome.outcome.value}: {outcome.detail}")
            if run:  # the first run installs
                walls.append(time.perf_counter() - began)
                cpus.append(_cpu() - cpu)
        print(
            json.dumps(
                {
                    "network": "shared" if args.shared else "own",
                    "offline": bool(outcome.extra.get("offline")),
                    "wall_ms": round(statistics.median(walls) * 1000, 1),
                    "cpu_ms": round(statistics.median(cpus) * 1000, 1),
                    "runs": args.runs,
                }
            )
        )
    finally:
        registry.close()
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
