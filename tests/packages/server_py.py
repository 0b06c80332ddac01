"""A stdlib-only MCP server for Fathom's package tests, shipped as the wheel ``fathom_test_pyserver``.

Its one tool is named after its version. ``argv[1]`` picks a behaviour: serve (default) or crash (a traceback
from a nested call, as a real server's import-time failure prints).
"""

import json
import sys

VERSION = "0.0.0"


def _load_index(path: str) -> None:
    raise RuntimeError(f"index {path} is corrupt")


def _start() -> None:
    _load_index("/var/lib/fathom-test/index.db")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "crash":
        print("starting fathom-test-pyserver", file=sys.stderr, flush=True)
        _start()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        if request.get("method") == "initialize":
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fathom-test-pyserver", "version": VERSION},
            }
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        elif request.get("method") == "tools/list":
            tool = {"name": "version_" + VERSION.replace(".", "_"), "inputSchema": {"type": "object"}}
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [tool]}}
        else:
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "not found"}}
        print(json.dumps(reply), flush=True)
