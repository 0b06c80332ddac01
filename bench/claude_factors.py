"""Measure the Claude calibration factors (``scanner.providers.anthropic``) against ``ctok`` on real tool lists.

Not a test: it needs ``ctok`` (PyPI, MIT; declares Python >= 3.12 but runs on 3.11 when installed with
``pip install --ignore-requires-python ctok``) and tool lists saved from real servers with
``fathom check --stdio CMD --save DIR/NAME.json``. For each list it prints the o200k_base count of the
``<functions>`` block, ctok's counts for both generations ("3.0": Claude 3 to Opus 4.6; "4.7": Opus 4.7+), their
ratios, and the relative error of the factors Fathom uses, as docs/tokens.md reports them.

    python bench/claude_factors.py DIR [more lists.json ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import ctok  # type: ignore[import-not-found]

from scanner.measure import tokenizer
from scanner.providers.anthropic import CURRENT, EARLIER, Anthropic


def _tools(path: Path) -> list[Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return list(data["tools"] if isinstance(data, dict) else data)


def main(arguments: list[str]) -> None:
    paths: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        paths += sorted(path.glob("*.json")) if path.is_dir() else [path]
    rows = []
    for path in paths:
        tools = _tools(path)
        block = Anthropic().block(tools)
        o200k = tokenizer.count(block)
        counts = {
            g.key: ctok.token_count(block, g.ctok_version) - ctok.token_count("", g.ctok_version)
            for g in (CURRENT, EARLIER)
        }
        rows.append((path.name, len(tools), o200k, counts))
    for generation in (CURRENT, EARLIER):
        ratios = [counts[generation.key] / o200k for _, _, o200k, counts in rows]
        errors = [
            (round(o200k * generation.factor) - counts[generation.key]) / counts[generation.key]
            for _, _, o200k, counts in rows
        ]
        print(
            f"{generation.key} ({generation.models}): ratio median {statistics.median(ratios):.3f}, "
            f"range {min(ratios):.3f}-{max(ratios):.3f}; factor {generation.factor:.2f} errs "
            f"{min(errors) * 100:+.1f} % to {max(errors) * 100:+.1f} % on {len(rows)} lists"
        )
    for name, count, o200k, counts in rows:
        cells = "  ".join(f"{key} {value:>6} ({value / o200k:.3f})" for key, value in counts.items())
        print(f"{name:32} {count:>4} tools  o200k {o200k:>6}  {cells}")


if __name__ == "__main__":
    main(sys.argv[1:])
