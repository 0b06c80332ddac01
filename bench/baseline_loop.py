"""What the two baseline clients of bench_scan.py share: the server list, the bounded loop, the one JSON line.

Each baseline (floor_client.py, sdk_client_baseline.py) gives :func:`run` its ``list_tools(url) -> int``; every URL
of the list is handed to it at the given concurrency, each under a 30 s deadline, and one line is printed:
``{"answered": ..., "failed": ..., "tools": ...}``. The caller measures the process from outside.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable

import anyio

ListTools = Callable[[str], Awaitable[int]]


async def _main(list_tools: ListTools, urls: list[str], concurrency: int) -> None:
    limiter = anyio.CapacityLimiter(concurrency)
    answered, tools, failed = 0, 0, 0

    async def one(url: str) -> None:
        nonlocal answered, tools, failed
        async with limiter:
            try:
                with anyio.fail_after(30):
                    tools += await list_tools(url)
                answered += 1
            except Exception:
                failed += 1

    async with anyio.create_task_group() as group:
        for url in urls:
            group.start_soon(one, url)
    print(json.dumps({"answered": answered, "failed": failed, "tools": tools}))


def run(list_tools: ListTools) -> None:
    """``python bench/<baseline>.py servers.json [--concurrency 64]``: list every server's tools."""
    parser = argparse.ArgumentParser()
    parser.add_argument("servers")
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    with open(args.servers, encoding="utf-8") as handle:
        listed = json.load(handle)["servers"]
    anyio.run(_main, list_tools, [server["url"] for server in listed], args.concurrency)
