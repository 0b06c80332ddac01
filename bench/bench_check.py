"""Benchmark (not a test): push a large realistic tool list through provider views, token counts and rules.

Prints tools per second for ``scanner.measure.toollist.measure`` on 2 000 tools and on 100 tools, the CPU time of a
100-tool
check after start-up, and the start-up time of ``fathom --help``. Figures are given as ratios against baselines
run in the same process: serialising the same list to JSON (a floor for any work that reads every tool), and a
bare ``python -c pass`` start-up.

    .venv/bin/python bench/bench_check.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any

from scanner.measure import tokenizer
from scanner.measure.toollist import measure
from scanner.models import Toolset

VERBS = ["search", "get", "create", "update", "delete", "list", "export", "archive", "share", "summarize"]
THINGS = ["issue", "pull_request", "repository", "comment", "label", "milestone", "release", "workflow", "file", "user"]


def realistic_tool(index: int) -> dict[str, Any]:
    """A tool shaped like the big real servers' (GitHub, Notion, cloud consoles): several typed, described params."""
    verb, thing = VERBS[index % len(VERBS)], THINGS[(index // len(VERBS)) % len(THINGS)]
    return {
        "name": f"{verb}_{thing}_{index}",
        "description": f"{verb.capitalize()} a {thing.replace('_', ' ')} in the workspace. Returns the {thing} as "
        f"JSON with its id, title, state, author and timestamps. Use list_{thing} to find ids; needs the "
        f"'{thing}:write' scope for changes.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "owner": {"type": "string", "description": "Account that owns the repository, e.g. octocat."},
                "repo": {"type": "string", "description": "Repository name, e.g. hello-world."},
                "id": {"type": "integer", "minimum": 1, "description": f"The {thing} number."},
                "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "Filter by state."},
                "labels": {"type": "array", "items": {"type": "string"}, "description": "Label names to match."},
                "options": {
                    "type": "object",
                    "description": "Paging and sorting.",
                    "properties": {
                        "page": {"type": "integer", "description": "Page number, from 1."},
                        "per_page": {"type": "integer", "maximum": 100, "description": "Items per page (max 100)."},
                        "sort": {"type": "string", "enum": ["created", "updated"], "description": "Sort key."},
                    },
                },
            },
            "required": ["owner", "repo"],
        },
    }


def cpu_seconds(fn: Any, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.process_time()
        fn()
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def startup_seconds(argv: list[str], repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    load_started = time.perf_counter()
    tokenizer.encoding()
    load = time.perf_counter() - load_started
    print(f"one-off tokenizer load: {load:.3f} s")
    for size, repeat in ((2000, 3), (100, 15)):
        tools = [realistic_tool(index) for index in range(size)]
        toolset = Toolset.from_tools(tools)
        baseline = cpu_seconds(lambda tools=tools: json.dumps(tools), repeat)
        checked = cpu_seconds(lambda toolset=toolset: measure(toolset), repeat)
        print(
            f"{size:>5} tools: measure {checked * 1000:8.1f} ms CPU = {size / checked:8.0f} tools/s; "
            f"{checked / baseline:6.1f}x the time of json.dumps of the same list ({baseline * 1000:.2f} ms)"
        )
    python = startup_seconds([sys.executable, "-c", "pass"])
    helped = startup_seconds([sys.executable, "-m", "scanner", "--help"])
    print(
        f"fathom --help: {helped * 1000:.0f} ms wall = {helped / python:.1f}x "
        f"a bare python start ({python * 1000:.0f} ms)"
    )


if __name__ == "__main__":
    main()
