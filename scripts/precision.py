"""Per-rule precision on real tool lists, from hand labels kept in the repository.

Reads every saved list in ``tests/fixtures/real/`` and ``tests/fixtures/real/more/`` (``scripts/collect_real.py``
writes them), runs the current
catalogue over each (``scanner.measure.toollist.measure``: real token counts), and joins the findings with the labels in
``tests/fixtures/real/labels.json`` (``{code: {finding key: {"right": bool, "why": one line}}}``; the key is
``server|tool|pointer``, plus ``|other`` for pair rules and ``|sentence`` for MCP307) and, as counts apart,
``tests/fixtures/labels_elsewhere.json`` (labels on real lists not kept here, each with where it comes from).
Writes ``scanner/rules/precision.json``, which ``docs/rules.md`` is generated from, and prints up to 20
unlabelled findings per rule to label next.

    python scripts/precision.py            # recompute and write
    python scripts/precision.py --check    # exit 1 when precision.json is not what the labels say now
    python scripts/precision.py --todo MCP207   # print the unlabelled findings of one rule, for labelling

A rule needs at least 5 labelled findings to be measured; it is ``stable`` only at 80 % or more (rules.md).
Labels whose finding no longer fires are counted apart (``stale``): a catalogue change that removes a wrong
finding raises precision, and the label stays as the near miss it was.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
OUT = ROOT / "scanner" / "rules" / "precision.json"
SAMPLE = 20
MIN_LABELLED = 5
STABLE_AT = 0.8


def finding_key(server: str, finding: Any) -> str:
    """``server|tool|pointer``, plus ``|other`` for pair rules and ``|sentence`` (its first 80 characters) for a
    rule that reports each repeated sentence apart (MCP307): one label per finding, not one per first tool."""
    key = f"{server}|{finding.tool}|{finding.pointer}"
    details = finding.details if isinstance(finding.details, dict) else {}
    other = details.get("other")
    if other:
        return f"{key}|{other}"
    sentence = details.get("sentence")
    return f"{key}|{sentence[:80]}" if isinstance(sentence, str) else key


def real_findings() -> tuple[dict[str, dict[str, Any]], int, int]:
    """Every finding on the saved lists by code, then by key (with its message); and servers and tools counted."""
    sys.path.insert(0, str(ROOT))
    from scanner.measure.toollist import measure
    from scanner.models import Toolset

    found: dict[str, dict[str, Any]] = defaultdict(dict)
    servers = tools = 0
    # ``more/``: lists collected for catalogue 6's fresh labels, kept apart so the tests that read every list
    # in ``real/`` (provider oracles, 80-column output) are not changed by them.
    for path in [*sorted(REAL.glob("*.json")), *sorted((REAL / "more").glob("*.json"))]:
        if path.name in ("labels.json", "manifest.json"):
            continue
        listed = json.loads(path.read_text(encoding="utf-8")).get("tools") or []
        servers += 1
        tools += len(listed)
        for finding in measure(Toolset.from_tools(tuple(listed))).findings:
            found[finding.code][finding_key(path.stem, finding)] = finding
    return found, servers, tools


def summary(
    found: dict[str, dict[str, Any]],
    labels: dict[str, dict[str, Any]],
    servers: int,
    tools: int,
    elsewhere: dict[str, dict[str, Any]] | None = None,
) -> dict:
    elsewhere = elsewhere or {}
    rules: dict[str, Any] = {}
    for code in sorted(set(found) | set(labels) | set(elsewhere)):
        hits = found.get(code, {})
        marks = labels.get(code, {})
        live = {key: mark for key, mark in marks.items() if key in hits}
        right = sum(1 for mark in live.values() if mark["right"])
        entry: dict[str, Any] = {
            "findings": len(hits),
            "servers": len({key.split("|", 1)[0] for key in hits}),
            "labelled": len(live),
            "right": right,
            "stale": len(marks) - len(live),
        }
        entry["precision"] = round(right / len(live), 3) if len(live) >= MIN_LABELLED else None
        if code in elsewhere:  # labels on lists not kept here: counts and where they come from
            entry["elsewhere"] = {key: elsewhere[code][key] for key in ("right", "labelled", "where")}
        rules[code] = entry
    return {"servers": servers, "tools": tools, "min_labelled": MIN_LABELLED, "stable_at": STABLE_AT, "rules": rules}


def main(argv: list[str]) -> int:
    labels_path = REAL / "labels.json"
    labels = json.loads(labels_path.read_text(encoding="utf-8")) if labels_path.exists() else {}
    elsewhere_path = REAL.parent / "labels_elsewhere.json"
    elsewhere = json.loads(elsewhere_path.read_text(encoding="utf-8"))["rules"] if elsewhere_path.exists() else {}
    found, servers, tools = real_findings()
    if "--todo" in argv:
        code = argv[argv.index("--todo") + 1]
        todo = [(key, f) for key, f in found.get(code, {}).items() if key not in labels.get(code, {})]
        # Spread the sample over servers: one per server in turn.
        by_server: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        for key, finding in todo:
            by_server[key.split("|", 1)[0]].append((key, finding))
        picked: list[tuple[str, Any]] = []
        while len(picked) < SAMPLE and any(by_server.values()):
            for server in sorted(by_server):
                if by_server[server] and len(picked) < SAMPLE:
                    picked.append(by_server[server].pop(0))
        for key, finding in picked:
            print(json.dumps({"key": key, "message": finding.message[:400]}))
        return 0
    result = summary(found, labels, servers, tools, elsewhere)
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print("scanner/rules/precision.json is stale: run `python scripts/precision.py`")
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    for code, entry in result["rules"].items():
        shown = "-" if entry["precision"] is None else f"{entry['precision']:.0%}"
        counts = f"findings {entry['findings']:>4}  labelled {entry['labelled']:>2}  right {entry['right']:>2}"
        print(f"{code}  {counts}  {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
