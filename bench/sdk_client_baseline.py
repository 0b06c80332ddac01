"""Baseline for bench_scan.py: the official ``mcp`` SDK client doing initialize + every tools/list page.

Reads the same server list ``fathom scan`` reads and connects to every URL with the SDK's Streamable HTTP client
and ClientSession, at the same concurrency. Prints one JSON line with the number of servers that answered and the
tools listed. Stores nothing and measures nothing (the caller measures this process from outside).

    python bench/sdk_client_baseline.py servers.json --concurrency 64
"""

from __future__ import annotations

from baseline_loop import run
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def list_tools(url: str) -> int:
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        count, cursor = 0, None
        while True:
            result = await session.list_tools(params={"cursor": cursor} if cursor else None)  # type: ignore[arg-type]
            count += len(result.tools)
            cursor = result.next_cursor
            if not cursor:
                return count


if __name__ == "__main__":
    run(list_tools)
