"""Misbehaving stdio MCP servers, one per ``--mode`` (see :data:`MODES`).

python tests/servers/hostile_stdio.py --mode banner
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

MODES = {
    "banner": "prints banner lines and a JSON number on stdout, then behaves as a legacy server",
    "exit": "writes to stderr and exits with code 3 after the first message",
    "hang": "reads messages and never answers",
    "fork-ignore-term": "ignores SIGTERM, forks a child that ignores it too (pid written to --pid-file), never answers",
    "huge-line": "answers with one 3 MiB line",
    "wrong-id": "answers every request with id 999",
    "big-list": "a legacy server listing 3000 tools in one 3 MB line",
    "noisy-stderr": "writes 1 MiB to stderr before answering as a legacy server",
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def legacy_server(tool_count: int = 2) -> None:
    """A minimal correct legacy server: -32601 to server/discover, initialize, two tools."""
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, request_id = message.get("method"), message["id"]
        if method == "initialize":
            result = {
                "protocolVersion": "2025-03-26",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-stdio", "version": "0.1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            tools: list[dict[str, Any]] = [
                {"name": "one", "inputSchema": {"type": "object"}},
                {"name": "two", "inputSchema": {}},
            ]
            if tool_count > 2:
                tools = [{"name": f"t{i}", "description": "d" * 1000, "inputSchema": {}} for i in range(tool_count)]
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(MODES), required=True)
    parser.add_argument("--pid-file", type=Path)
    args = parser.parse_args()
    if args.mode == "banner":
        print("Starting hostile server v0.1 ...", flush=True)
        print("42", flush=True)
        print("[info] listening on stdio", flush=True)
        legacy_server()
    elif args.mode == "big-list":
        legacy_server(tool_count=3000)
    elif args.mode == "noisy-stderr":
        for i in range(1024):
            sys.stderr.write(f"log line {i} " + "x" * 1000 + "\n")
        sys.stderr.write("last words\n")
        sys.stderr.flush()
        legacy_server()
    elif args.mode == "exit":
        sys.stdin.readline()
        sys.stderr.write("starting...\nerror: missing API_KEY\n")
        sys.stderr.flush()
        sys.exit(3)
    elif args.mode == "hang":
        for _line in sys.stdin:
            pass
        time.sleep(3600)
    elif args.mode == "fork-ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = os.fork()
        if child == 0:
            # The child also ignores SIGTERM (inherited), closes nothing and outlives its parent if allowed.
            time.sleep(3600)
            os._exit(0)
        if args.pid_file is not None:
            args.pid_file.write_text(f"{os.getpid()} {child}", encoding="utf-8")
        sys.stdin.close()  # stdin EOF from the client must not end it either
        time.sleep(3600)
    elif args.mode == "huge-line":
        sys.stdin.readline()
        sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": {"x": "' + "a" * (3 * 1024 * 1024) + '"}}\n')
        sys.stdout.flush()
        time.sleep(3600)
    elif args.mode == "wrong-id":
        for line in sys.stdin:
            if "id" in json.loads(line):
                send({"jsonrpc": "2.0", "id": 999, "result": {}})


if __name__ == "__main__":
    main()
