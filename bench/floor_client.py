"""The bare floor for bench_scan.py: a plain httpx loop sending the HTTP requests ``fathom scan`` sends.

For each server of the list, with a fresh ``httpx.AsyncClient`` (as Fathom and the SDK client use: real servers
are on different hosts, so no connection is shared between them), exactly the exchanges Fathom has with a legacy
Streamable HTTP server: POST ``server/discover`` (the 2026 era probe, answered method-not-found), POST
``initialize``, POST ``notifications/initialized``, POST ``tools/list`` for every page, DELETE the session. Each
answer is parsed with ``json.loads`` and nothing else: no checks, no limits, no storage, no token counts. It is
what any Python client doing this work over httpx cannot go below. Prints one JSON line like
sdk_client_baseline.py.

``--bare`` sends only ``initialize`` and ``tools/list`` (each page), still a client per server: the bare loop issue
#47 measures against (no discovery probe, no ``notifications/initialized``, no session ``DELETE``).

    python bench/floor_client.py servers.json --concurrency 64 [--bare]
"""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
from baseline_loop import run

CLIENT = {"name": "floor", "version": "0"}
# One TLS context for every client (building one loads the CA bundle, ~20 ms): Fathom does the same.
TLS = httpx.create_ssl_context()


def message(number: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if number is not None:
        body["id"] = number
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode()


BARE = "--bare" in sys.argv
if BARE:
    sys.argv.remove("--bare")


async def list_tools(url: str) -> int:
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient(trust_env=False, verify=TLS) as client:
        if not BARE:
            await client.post(url, headers=base, content=message(1, "server/discover"))
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT}
        answer = await client.post(url, headers=base, content=message(2, "initialize", params))
        json.loads(answer.content)
        headers = {**base, "Mcp-Session-Id": answer.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        if not BARE:
            await client.post(url, headers=headers, content=message(None, "notifications/initialized"))
        count, cursor, number = 0, None, 3
        while True:
            page = message(number, "tools/list", {"cursor": cursor} if cursor else {})
            result = json.loads((await client.post(url, headers=headers, content=page)).content)["result"]
            count += len(result["tools"])
            cursor, number = result.get("nextCursor"), number + 1
            if not cursor:
                break
        if not BARE:
            await client.delete(url, headers=headers)
        return count


if __name__ == "__main__":
    run(list_tools)
