"""Benchmark (not a test): what a child's route out through slirp4netns costs (issue 42: within 10 % of a child
without one).

One registry entry, the tests' one-server npm package, served by the tests' loopback registry; the package cache
is warmed by a first scan, then ``fathom scan --run-packages`` runs ``--runs`` times with slirp4netns and as many
without (``FATHOM_NETWORK_STACK=none``: only the child's own loopback), in turn (A B A B ...), each a whole
process into its own SQLite file. Printed: the median wall time and the median CPU of Fathom and its children
(``RUSAGE_CHILDREN``), each side's, and the median of the pairwise ratios.

    .venv/bin/python bench/bench_outbound.py [--runs 10]

``--serve SECONDS`` only starts the registry, warms the cache and prints the two commands and their environment
(for timing them with another tool), then keeps the registry up that long.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scanner import confine
from tests.packages.local_registry import NPM_NAME, LocalRegistry


def _entry() -> dict[str, object]:
    package = {"registryType": "npm", "identifier": NPM_NAME, "version": "1.0.0", "transport": {"type": "stdio"}}
    return {"server": {"name": "io.github.bench/one", "description": "d", "version": "1.0.0", "packages": [package]}}


def _scan(root: Path, env: dict[str, str], run: int) -> tuple[float, float]:
    """One whole ``fathom scan``: its wall seconds and its and its children's CPU seconds."""
    fathom = Path(sys.executable).with_name("fathom")
    command = [str(fathom), "scan", str(root / "registry.json"), "--run-packages", "--cache-dir", str(root / "c")]
    command += ["--db", f"sqlite:///{root / f'run-{run}.db'}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "not read" in done.stderr:
        raise SystemExit(f"the scan did not end ok:\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--serve", type=float, default=0.0)
    args = parser.parse_args()
    holds, why = confine.outbound()
    if not holds:
        raise SystemExit(f"no route out to measure: {why}")
    registry = LocalRegistry()
    with tempfile.TemporaryDirectory(prefix="fathom-bench-outbound-") as folder:
        root = Path(folder)
        root.chmod(0o755)  # run as root, the package's own user reaches the cache beneath it
        (root / "registry.json").write_text(json.dumps({"servers": [_entry()]}), encoding="utf-8")
        base = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
            "LANG": "C.UTF-8",
            "HOME": os.environ.get("HOME", "/"),
            "npm_config_registry": registry.npm_url,
        }
        without = {**base, confine.STACK_ENV: "none"}
        _scan(root, base, 0)  # the cache warmed: every measured run installs nothing
        if args.serve:
            fathom = Path(sys.executable).with_name("fathom")
            print(f"env: npm_config_registry={registry.npm_url} PATH={base['PATH']}")
            print(f"with:    {fathom} scan {root / 'registry.json'} --run-packages --cache-dir {root / 'c'}")
            print(f"without: {confine.STACK_ENV}=none and the same command", flush=True)
            time.sleep(args.serve)
            registry.close()
            return
        rows: list[tuple[float, float, float, float]] = []
        for run in range(1, args.runs + 1):
            with_wall, with_cpu = _scan(root, base, 2 * run)
            without_wall, without_cpu = _scan(root, without, 2 * run + 1)
            rows.append((with_wall, with_cpu, without_wall, without_cpu))
    registry.close()
    median = statistics.median
    print(f"{args.runs} pairs, one npm package from a warm cache (median; ratio: pairwise with/without)")
    print(f"wall s: with slirp4netns {median(r[0] for r in rows):.2f}, without {median(r[2] for r in rows):.2f}, "
          f"ratio {median(r[0] / r[2] for r in rows):.3f}")  # fmt: skip
    print(f"cpu s:  with slirp4netns {median(r[1] for r in rows):.2f}, without {median(r[3] for r in rows):.2f}, "
          f"ratio {median(r[1] / r[3] for r in rows):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
