"""Findings per rule and leaderboard order on the same real lists, under an older catalogue and this one.

    git archive <old-commit> scanner | tar -x -C /tmp/old      # the older catalogue's code
    python scripts/before_after.py /tmp/old > /tmp/before-after.md

Each side runs in its own interpreter (``PYTHONPATH`` = the older checkout for "before") over every list in
``tests/fixtures/real/``; the score is each side's own (``scanner.measure.score.score``: version 1 counted every rule,
version 2 only stable ones, version 3 adds the tokens per turn). Prints a Markdown section for ``docs/real-servers.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"

_DUMP = """
import json, sys
from pathlib import Path
from scanner.measure.toollist import measure
from scanner.models import Toolset
from scanner.rules import RULES_VERSION
from scanner.measure.score import SCORE_VERSION, score
out = {"rules": RULES_VERSION, "score": SCORE_VERSION, "servers": {}}
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    if path.name in ("labels.json", "manifest.json"):
        continue
    tools = json.loads(path.read_text(encoding="utf-8")).get("tools") or []
    report = measure(Toolset.from_tools(tuple(tools)))
    try:  # score v3 reads the tokens per turn too
        value = score(len(tools), report.findings, tokens=report.max_tokens)
    except TypeError:  # versions 1 and 2: the findings and the tool count only
        value = score(len(tools), report.findings)
    out["servers"][path.stem] = {
        "codes": [f.code for f in report.findings],
        "score": value,
        "tokens": max(c.tokens for c in report.tokens.values()),
    }
print(json.dumps(out))
"""


def run(pythonpath: str | None) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # Run outside the checkout: with `-c` the working directory comes first on sys.path.
    done = subprocess.run(
        [sys.executable, "-c", _DUMP, str(REAL)], capture_output=True, text=True, env=env, check=True, cwd="/"
    )
    return json.loads(done.stdout)


def order(side: dict) -> list[str]:
    rows = side["servers"]
    # A list with no tools has no score (v3): it sorts last.
    return sorted(
        rows,
        key=lambda name: (
            -(rows[name]["score"] if rows[name]["score"] is not None else -1.0),
            rows[name]["tokens"],
            name,
        ),
    )


def main(old: str) -> None:
    before, after = run(old), run(None)
    precision = json.loads((ROOT / "scanner" / "rules" / "precision.json").read_text(encoding="utf-8"))["rules"]
    old_counts = Counter(code for row in before["servers"].values() for code in row["codes"])
    new_counts = Counter(code for row in after["servers"].values() for code in row["codes"])
    print(f"### Findings per rule: catalogue {before['rules']} → {after['rules']} ({len(after['servers'])} servers)\n")
    print("| code | before | after | precision after (labelled) |")
    print("|---|---|---|---|")
    for code in sorted(set(old_counts) | set(new_counts)):
        entry = precision.get(code)
        shown = "—"
        if entry and entry["precision"] is not None:
            shown = f"{round(entry['precision'] * 100)} % ({entry['right']}/{entry['labelled']})"
        elif entry and entry["labelled"]:
            shown = f"not measured ({entry['right']}/{entry['labelled']})"
        print(f"| {code} | {old_counts[code]} | {new_counts[code]} | {shown} |")
    print(f"| total | {sum(old_counts.values())} | {sum(new_counts.values())} | |\n")
    print(f"### Leaderboard order: score v{before['score']} → v{after['score']}\n")
    print("| server | rank before | score before | rank after | score after |")
    print("|---|---|---|---|---|")
    ranks_before = {name: rank for rank, name in enumerate(order(before), 1)}
    for rank, name in enumerate(order(after), 1):
        was = before["servers"].get(name, {})
        now = after["servers"][name]
        print(f"| {name} | {ranks_before.get(name, '—')} | {was.get('score', '—')} | {rank} | {now['score']} |")


if __name__ == "__main__":
    main(sys.argv[1])
