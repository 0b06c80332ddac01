"""Proof (not a benchmark): ``scanner.measure.toollist.measure`` over a broad corpus, dumped whole, or compared with a
dump.

The corpus (``tests/check_corpus.py``, broad): the demo servers on both nights, every saved real tool list, every
rule fixture, hostile lists, synthetic and realistic lists of 1 to 2,000 tools; with ``--random N``, N random
lists more (``tests.check_corpus.random_lists``: random JSON, and real and synthetic lists with random parts). Record
the outputs before a speed change, then compare after each step; any difference in a finding, count, cost or field
is printed by list.

    .venv/bin/python bench/measure_corpus.py --write /tmp/before.json [--random 3000 --seed 7]
    .venv/bin/python bench/measure_corpus.py --compare /tmp/before.json [--random 3000 --seed 7]

Runs with ``PYTHONHASHSEED=0`` (it starts itself again so when unset): MCP105 names at most five relatives of a
tool, picked in an order that follows Python's string hashing, so two processes with different seeds can name
different ones on lists where a tool has more than five.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.check_corpus import outputs


def differences(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """The labels whose output differs, with the first differing key (missing or new lists included)."""
    found = []
    for label in sorted(set(before) | set(after)):
        old, new = before.get(label), after.get(label)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            keys = sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key))
            found.append(f"{label}: {', '.join(keys)}")
        else:
            found.append(f"{label}: {'missing' if new is None else 'new'}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="dump the outputs to this file")
    group.add_argument("--compare", type=Path, help="compare the outputs with this dump")
    parser.add_argument("--random", type=int, default=0, help="add this many random lists")
    parser.add_argument("--seed", type=int, default=7, help="the random lists' seed")
    args = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], os.environ | {"PYTHONHASHSEED": "0"})
    # Through a JSON round trip, so a dump read back and a fresh run compare like for like.
    current = json.loads(json.dumps(outputs(broad=True, random_count=args.random, seed=args.seed)))
    if args.write is not None:
        args.write.write_text(json.dumps(current, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(current)} lists written to {args.write}")
        return
    recorded = json.loads(args.compare.read_text(encoding="utf-8"))
    changed = differences(recorded, current)
    print("\n".join(changed) if changed else f"{len(current)} lists, all identical")
    sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
