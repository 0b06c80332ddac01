"""The guard against the next speed regression: compare a fresh bench_scan.py run with the recorded ratios.

Not a timed test: the ratios are measured in one run of ``bench/bench_scan.py`` (the bare floor, the SDK client and
both Fathom scans side by side on the same machine at the same moment), so a slower or busier machine moves
every figure of the run and barely moves a ratio. This compares such a run's JSON with the figures recorded in
``bench/ratios.json`` (the newest release's row of the table in docs/benchmarks.md) and names every ratio, and the
database growth per unchanged server, that moved by more than ``--tolerance`` (20 % by default), saying which way.
Exit status 1 when something got worse by more than that, else 0 (a ratio that improved is named, not a failure:
record it with ``--record``).

    .venv/bin/python bench/bench_scan.py --json /tmp/fresh.json
    .venv/bin/python bench/check_ratios.py /tmp/fresh.json [--recorded bench/ratios.json] [--tolerance 0.2]
    .venv/bin/python bench/check_ratios.py /tmp/fresh.json --record RELEASE   # make it the new reference
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# Which way is better for each compared figure: Fathom against the floor (lower is better), the SDK against Fathom
# (higher is better), database growth (lower is better).
LOWER_IS_BETTER = {"first_vs_floor": True, "rescan_vs_floor": True, "sdk_vs_first": False, "sdk_vs_rescan": False}


def compared(figures: dict[str, Any]) -> dict[str, float]:
    """The figures a check compares: the ratios of Fathom's CPU per server, and the growth per unchanged server."""
    values = {name: float(figures["ratios"][name]) for name in LOWER_IS_BETTER}
    values["growth_bytes_per_server"] = float(figures["growth_bytes_per_server"])
    return values


def moved(recorded: dict[str, Any], fresh: dict[str, Any], tolerance: float) -> list[tuple[str, float, float, bool]]:
    """Every compared figure that moved by more than ``tolerance`` (a fraction of the recorded value): its name,
    the recorded and the fresh value, and whether the move is a regression."""
    before, after = compared(recorded), compared(fresh)
    found = []
    for name, old in before.items():
        new = after[name]
        if old == 0 or abs(new - old) / abs(old) <= tolerance:
            continue
        lower_better = LOWER_IS_BETTER.get(name, True)
        worse = new > old if lower_better else new < old
        found.append((name, old, new, worse))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fresh", type=Path, help="the JSON bench_scan.py --json wrote")
    parser.add_argument("--recorded", type=Path, default=HERE / "ratios.json")
    parser.add_argument("--tolerance", type=float, default=0.2)
    parser.add_argument("--record", metavar="RELEASE", help="write the fresh figures as the reference, for RELEASE")
    args = parser.parse_args(argv)
    fresh = json.loads(args.fresh.read_text(encoding="utf-8"))
    if args.record:
        args.recorded.write_text(json.dumps({"release": args.record, **fresh}, indent=2) + "\n", encoding="utf-8")
        print(f"recorded {args.fresh} as the reference for {args.record} in {args.recorded}")
        return 0
    recorded = json.loads(args.recorded.read_text(encoding="utf-8"))
    changes = moved(recorded, fresh, args.tolerance)
    reference = f"{recorded.get('release', '?')} ({args.recorded})"
    if fresh.get("servers") != recorded.get("servers"):
        print(f"note: {fresh.get('servers')} servers here, {recorded.get('servers')} in the reference")
    if not changes:
        print(f"no ratio moved by more than {args.tolerance:.0%} from {reference}")
        return 0
    for name, old, new, worse in changes:
        change = (new - old) / old
        print(f"{name}: {old:g} -> {new:g} ({change:+.0%}, {'WORSE' if worse else 'better'})")
    regressed = [name for name, _old, _new, worse in changes if worse]
    if regressed:
        print(f"regressed by more than {args.tolerance:.0%} against {reference}: {', '.join(regressed)}")
        return 1
    print(f"improved against {reference}; record it with --record RELEASE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
