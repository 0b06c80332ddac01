"""Benchmark (not a test): ``scanner.measure.toollist.measure`` of this tree against another commit's, A/B in one run.

Exports ``--base`` (a git ref, ``main`` by default) to a temporary directory, then times ``measure`` in child
processes, alternating the base tree and this one ``--rounds`` times, on the demo host's synthetic 8-tool lists
(a first-night scan's lists: every one new, but their tools all alike), on the saved real lists
(``tests/fixtures/real``, each made distinct as a new server's would be) and on realistic lists of 100 and
2,000 tools (``bench_check``'s).
Prints each side's median CPU milliseconds per list and the ratio base/new, with the load average, so a noisy
shared machine still gives a fair comparison. Also the CPU of loading the tokenizer in a fresh process.

    .venv/bin/python bench/bench_measure.py [--base main] [--rounds 5] [--lists 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in the child, with the tree under test first on sys.path.
CHILD = """
import json, pathlib, sys, time
sys.path.insert(0, {bench!r})
started = time.process_time()
import scanner
assert scanner.__file__.startswith({tree!r}), scanner.__file__  # the tree under test, not the editable install
from scanner.measure import tokenizer
tokenizer.encoding()
load = time.process_time() - started
from bench_check import realistic_tool
from scanner.measure.toollist import measure
from scanner.demo.server import synthetic_sites
from scanner.models import Toolset

def per_list(toolsets):
    started = time.process_time()
    for toolset in toolsets:
        measure(toolset)
    return (time.process_time() - started) * 1000 / len(toolsets)

small = [Toolset.from_tools(list(site.tools)) for site in synthetic_sites({lists})]
measure(small[0])
big = {{size: Toolset.from_tools([realistic_tool(i) for i in range(size)]) for size in (100, 2000)}}
real = [
    json.loads(path.read_text(encoding="utf-8"))["tools"]
    for path in sorted(pathlib.Path({root!r}, "tests", "fixtures", "real").glob("*.json"))
    if path.stem not in ("manifest", "labels")
]

def marked(tools, number):
    # A distinct copy, as a new server's list is: every description (and so every schema) differs.
    return json.loads(json.dumps(tools).replace('"description": "', f'"description": "[{{number}}] '))

fresh = [Toolset.from_tools(marked(tools, number)) for number in range(3) for tools in real]
out = {{"tokenizer load": load * 1000, "8 tools": per_list(small), "real lists, new": per_list(fresh)}}
out |= {{f"{{size}} tools": per_list([toolset] * (20 if size == 100 else 2)) for size, toolset in big.items()}}
print(json.dumps(out))
"""


def export(ref: str, into: Path, paths: tuple[str, ...] = ("scanner",)) -> None:
    """The tree of ``ref`` (its ``paths``: the scanner package by default) written under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, *paths], check=True, capture_output=True)
    tar_path = into / "tree.tar"
    tar_path.write_bytes(archive.stdout)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")


def run(tree: Path, lists: int) -> dict[str, float]:
    code = CHILD.format(bench=str(ROOT / "bench"), lists=lists, tree=str(tree), root=str(ROOT))
    env = os.environ | {"PYTHONPATH": str(tree)}
    # From inside the tree: ``python -c`` puts the working directory first on sys.path.
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env, cwd=str(tree)
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lists", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fathom-ab-") as scratch:
        base = Path(scratch)
        export(args.base, base)
        samples: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
        for _ in range(args.rounds):
            samples["base"].append(run(base, args.lists))
            samples["new"].append(run(ROOT, args.lists))
    print(f"base {args.base} vs this tree, {args.rounds} alternating rounds, load {os.getloadavg()[0]:.2f}")
    for key in samples["base"][0]:
        old = statistics.median(sample[key] for sample in samples["base"])
        new = statistics.median(sample[key] for sample in samples["new"])
        print(f"  {key:<16} base {old:9.2f} ms CPU   new {new:9.2f} ms CPU   {old / new:5.2f}x")


if __name__ == "__main__":
    main()
