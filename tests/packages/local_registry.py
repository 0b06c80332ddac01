"""Packages the tests build, and a loopback registry that serves them to npx (npm) and uvx (PyPI simple index).

``fathom-test-server`` (npm, plain node, versions 1.0.0 and 2.0.0, ``latest`` = 2.0.0) and
``fathom-test-pyserver`` (a wheel, version 1.0.0) are built from ``server.js`` and ``server_py.py`` beside this
file. The registry counts what it served, so a test can tell a download from a cache hit.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import threading
import time
import zipfile
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
NPM_NAME = "fathom-test-server"
PY_NAME = "fathom-test-pyserver"
NPM_VERSIONS = ("1.0.0", "2.0.0")
PY_VERSION = "1.0.0"


def npm_tarball(version: str, scripts: dict[str, str] | None = None) -> bytes:
    """The npm tarball (``package/`` prefix) of the test server at ``version``, with these lifecycle ``scripts``
    (``postinstall``: run by its install step)."""
    manifest: dict[str, Any] = {"name": NPM_NAME, "version": version, "bin": {NPM_NAME: "server.js"}, "license": "MIT"}
    if scripts:
        manifest["scripts"] = scripts
    files = {
        "package/package.json": json.dumps(manifest).encode(),
        "package/server.js": (HERE / "server.js").read_bytes(),
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def wheel(version: str = PY_VERSION, name: str = PY_NAME, requires_python: str | None = None) -> tuple[str, bytes]:
    """The wheel's file name and bytes (console script named as the package; ``requires_python`` goes into
    its metadata)."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    needs = f"Requires-Python: {requires_python}\n" if requires_python else ""
    files = {
        f"{module}/__init__.py": (HERE / "server_py.py")
        .read_text(encoding="utf-8")
        .replace('VERSION = "0.0.0"', f'VERSION = "{version}"')
        .encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{needs}".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: fathom-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[console_scripts]\n{name} = {module}:main\n".encode(),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return f"{module}-{version}-py3-none-any.whl", out.getvalue()


class LocalRegistry:
    """npm registry at ``npm_url``, PyPI simple index at ``simple_url``, on 127.0.0.1 (or ``address``); ``hits``
    counts paths."""

    def __init__(
        self, latency_s: float = 0.0, address: str = "127.0.0.1", scripts: dict[str, str] | None = None
    ) -> None:
        """``latency_s`` delays every answer (the benchmark's stand-in for a real registry's round trip);
        ``address``: where it listens (the machine's own address: a registry off its loopback); ``scripts``: the
        npm package's lifecycle scripts."""
        self.hits: Counter[str] = Counter()
        self.latency_s = latency_s
        self.scripts = dict(scripts or {})
        self.tarballs = {version: npm_tarball(version, self.scripts) for version in NPM_VERSIONS}
        self.wheel_name, self.wheel_bytes = wheel()
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._reply(head=True)

            def do_GET(self) -> None:
                registry.hits[self.path] += 1
                self._reply(head=False)

            def _reply(self, head: bool) -> None:
                if registry.latency_s:
                    time.sleep(registry.latency_s)
                found = registry.answer(self.path)
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                    body = b'{"error":"Not found"}'
                else:
                    content_type, body = found
                    self.send_response(200)
                    self.send_header("Content-Type", content_type)
                    if self.path.endswith((".tgz", ".whl")):  # as files.pythonhosted.org and npm send them
                        self.send_header("Cache-Control", "max-age=365000000, immutable, public")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer((address, 0), Handler)
        self.base = f"http://{address}:{self.server.server_address[1]}"
        self.npm_url = f"{self.base}/npm/"
        self.simple_url = f"{self.base}/simple/"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def answer(self, path: str) -> tuple[str, bytes] | None:
        path = path.split("?", 1)[0]
        if path == f"/npm/{NPM_NAME}":
            versions = {}
            for version, data in self.tarballs.items():
                integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
                versions[version] = {
                    "name": NPM_NAME,
                    "version": version,
                    "bin": {NPM_NAME: "server.js"},
                    **({"scripts": self.scripts, "hasInstallScript": True} if self.scripts else {}),
                    "dist": {
                        "tarball": f"{self.npm_url}{NPM_NAME}/-/{NPM_NAME}-{version}.tgz",
                        "shasum": hashlib.sha1(data).hexdigest(),
                        "integrity": integrity,
                    },
                }
            document = {"name": NPM_NAME, "dist-tags": {"latest": NPM_VERSIONS[-1]}, "versions": versions}
            return "application/json", json.dumps(document).encode()
        for version, data in self.tarballs.items():
            if path == f"/npm/{NPM_NAME}/-/{NPM_NAME}-{version}.tgz":
                return "application/octet-stream", data
        if path.rstrip("/") == f"/simple/{PY_NAME}":
            digest = hashlib.sha256(self.wheel_bytes).hexdigest()
            link = f'<a href="{self.base}/files/{self.wheel_name}#sha256={digest}">{self.wheel_name}</a>'
            return "text/html", f"<!DOCTYPE html><html><body>{link}</body></html>".encode()
        if path == f"/files/{self.wheel_name}":
            return "application/octet-stream", self.wheel_bytes
        return None

    def downloads(self, suffix: str) -> int:
        """How many times a file ending in ``suffix`` (``.tgz``, ``.whl``) was served."""
        return sum(count for path, count in self.hits.items() if path.endswith(suffix))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
