"""Reading a 25 000-server registry under the default limits: input size, time and peak memory.

Builds a registry response of N servers (default 25 000) from the real official registry dump's rows
(tests/fixtures/registry/official-registry-2025-12-18.json.gz, every version row of 1 108 servers): the rows are
cycled, each copy renamed and its remote URLs made its own, so the fixture has the real shapes (remotes, packages,
arguments, headers, schema versions) in the real proportions. Then, each in a fresh process so peak RSS is its
own, it reads the registry the way ``fathom scan`` does (``load_entries``: detection, latest-version choice,
resolution, MCP701-705 with the schema validation) from a file and from a loopback registry API serving pages of
100, under the default ``--max-input-mb``. Not a test: it asserts nothing, it prints. Run:

    python bench/bench_registry_scale.py [--servers 25000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "tests" / "fixtures" / "registry" / "official-registry-2025-12-18.json.gz"


def build_rows(servers: int) -> list[dict[str, Any]]:
    """``servers`` latest rows, each a renamed copy of a real latest row."""
    rows = json.loads(gzip.decompress(DUMP.read_bytes()))["servers"]
    latest = [row for row in rows if row["_meta"]["io.modelcontextprotocol.registry/official"].get("isLatest")]
    out = []
    for index in range(servers):
        row = json.loads(json.dumps(latest[index % len(latest)]))
        server = row["server"]
        server["name"] = f"{server['name']}-{index:05d}"
        for remote in server.get("remotes") or []:
            if isinstance(remote.get("url"), str):
                remote["url"] = remote["url"].replace("://", f"://s{index:05d}.", 1)
        out.append(row)
    return out


# ru_maxrss survives exec on Linux (a child would report this big parent's peak): read the process's own VmHWM.
PEAK = """
def peak():
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
"""


def measure_child(source: str) -> dict[str, Any]:
    """Run in a fresh process: read ``source`` as ``fathom scan`` does; time, peak RSS, entries, findings."""
    code = (
        PEAK
        + f"""
import json, time
started = time.perf_counter()
from scanner.registry import load_entries
entries = load_entries({source!r}, environ={{}})
elapsed = time.perf_counter() - started
print(json.dumps({{
    "seconds": round(elapsed, 2),
    "peak_rss_mb": peak(),
    "entries": len(entries),
    "findings": sum(len(entry.findings) for entry in entries),
}}))
"""
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return dict(json.loads(done.stdout))


def serve(rows: list[dict[str, Any]]) -> tuple[ThreadingHTTPServer, str]:
    pages = {}
    for start in range(0, len(rows), 100):
        cursor = str(start + 100) if start + 100 < len(rows) else None
        pages[str(start) if start else ""] = json.dumps(
            {"servers": rows[start : start + 100], "metadata": {"nextCursor": cursor, "count": 100}}
        ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            cursor = parse_qs(urlsplit(self.path).query).get("cursor", [""])[0]
            body = pages.get(cursor, b'{"servers": []}')
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    args = parser.parse_args()
    from scanner.registry.interface import DEFAULT_MAX_INPUT_MB

    rows = build_rows(args.servers)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "registry.json"
        path.write_text(json.dumps({"servers": rows, "metadata": {"count": len(rows)}}), encoding="utf-8")
        size_mb = path.stat().st_size / 1024 / 1024
        print(
            f"{args.servers} servers: {size_mb:.1f} MiB as one response "
            f"({size_mb * 1024 * 1024 / args.servers:.0f} B a "
            f"server); default --max-input-mb {DEFAULT_MAX_INPUT_MB} ({DEFAULT_MAX_INPUT_MB / size_mb:.1f}x headroom)"
        )
        baseline = subprocess.run(
            [sys.executable, "-c", PEAK + "import scanner.registry, scanner.rules\nprint(peak())"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        print(f"baseline (imports only): peak RSS {float(baseline.stdout):.1f} MB")
        print(f"file: {measure_child(str(path))}")
        server, url = serve(rows)
        try:
            started = time.perf_counter()
            print(f"API, pages of 100: {measure_child(url)} ({time.perf_counter() - started:.1f} s with the process)")
        finally:
            server.shutdown()
    print(
        f"this process (fixture building): peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
