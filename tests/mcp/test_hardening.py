"""Issue 8, the MCP client's side: each attack of the hardening report, reproduced with a loopback server.

Lone surrogates in error bodies and RFC 9728 metadata; a legacy-SSE ping flood; stacked ``Content-Encoding`` bombs
(memory measured); secrets echoed by servers in every shape; stdio children that leave their process group.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from typer.testing import CliRunner

from scanner import confine
from scanner.cli import app
from scanner.errors import InputError
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, Transport
from scanner.registry.interface import Options
from scanner.registry.official import fetch_rows
from tests.mcp.helpers import alive, http_entry, recorded_pids, stdio_entry, timed_scan
from tests.servers.hostile_http import BOMB
from tests.servers.launch import hostile_stdio_command

pytestmark = pytest.mark.timeout(60)

LIMITS = ClientLimits(timeout=4.0, connect_timeout=2.0, shutdown_grace=0.3, max_answer_bytes=1024 * 1024)
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

# An ASCII secret with characters that URL-encoding, base64 and JSON all change.
SECRET = "sk-live-Q7+f/Zr9=Xk\\w31"


def echo_shapes(secret: str) -> list[str]:
    """How the test servers echo a secret: as is, URL-encoded, base64 (whole and unpadded), JSON-escaped, cut."""
    encoded = base64.b64encode(secret.encode()).decode()
    return [
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        encoded,
        encoded.rstrip("="),
        json.dumps(secret)[1:-1],
        secret[:12],
        secret[-10:],
    ]


def outcome_text(outcome: ScanOutcome) -> str:
    """Everything of an outcome that is stored or printed, as text."""
    fields = [outcome.detail, outcome.server_name, outcome.server_version, outcome.tools, dict(outcome.extra)]
    return json.dumps(fields, ensure_ascii=False) + json.dumps(fields)


def assert_writable(value: Any) -> None:
    """Every string inside encodes as UTF-8 and holds no NUL (what SQLite, PostgreSQL and files need)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    text.encode("utf-8")
    assert "\x00" not in text and "\\u0000" not in text


def outcome_fields(outcome: ScanOutcome) -> list[Any]:
    return [outcome.detail, outcome.server_name, outcome.tools, dict(outcome.extra)]


# --- item 2: one decode path ------------------------------------------------------------------------------


def test_a_lone_surrogate_in_an_error_body_is_an_outcome(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/error500-surrogate")), LIMITS)
    assert result.outcome is Outcome.HTTP_ERROR, result.detail
    assert result.detail == "HTTP 500: boom \ufffd here"
    assert result.extra["reason"] == "boom \ufffd here"
    assert_writable(outcome_fields(result))


def test_a_lone_surrogate_and_nul_in_resource_metadata_are_replaced(hostile_http):
    result, _ = timed_scan(http_entry(hostile_http.url("/auth-surrogate")), LIMITS)
    assert result.outcome is Outcome.AUTH_REQUIRED, result.detail
    metadata = result.extra["resource_metadata"]
    assert metadata["authorization_servers"] == ["https://a.example/\ufffd"]
    assert metadata["n"] == "a\ufffdb"
    assert_writable(outcome_fields(result))


# --- item 3: a ping flood ---------------------------------------------------------------------------------


def test_a_legacy_sse_ping_flood_is_the_servers_protocol_error_at_once(hostile_http):
    # A deadline far away (a loaded machine is slow): the flood, not the deadline, ends the scan.
    limits = replace(LIMITS, timeout=60.0)
    result, elapsed = timed_scan(http_entry(hostile_http.url("/sse-ping-flood"), Transport.SSE), limits)
    assert result.outcome is Outcome.PROTOCOL_ERROR, result.detail
    assert result.extra["max_server_requests"] == LIMITS.max_server_requests
    assert "flood" in result.detail
    assert elapsed < limits.timeout


def test_a_stdio_ping_flood_is_the_servers_protocol_error():
    limits = replace(LIMITS, timeout=60.0)  # far away: the flood, not the deadline, ends the scan
    result, elapsed = timed_scan(stdio_entry(hostile_stdio_command("ping-flood")), limits)
    assert result.outcome is Outcome.PROTOCOL_ERROR, result.detail
    assert "flood" in result.detail
    assert elapsed < limits.timeout + 3 * limits.shutdown_grace + 1


def test_check_on_a_ping_flood_ends_within_its_deadline(hostile_http):
    started = time.monotonic()
    result = runner.invoke(
        app, ["check", "--url", hostile_http.url("/sse-ping-flood"), "--transport", "sse", "--timeout", "60"]
    )
    elapsed = time.monotonic() - started
    assert result.exit_code == 3, result.output
    assert "protocol_error" in result.stderr
    assert elapsed < 60


# --- item 4: content-coding bombs -------------------------------------------------------------------------


def peak_traced(action: Any) -> tuple[Any, int]:
    """Run ``action()`` under tracemalloc: its result and the peak bytes Python held meanwhile."""
    tracemalloc.start()
    try:
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("path", "transport", "outcome"),
    [
        ("/gzip-bomb", Transport.STREAMABLE_HTTP, Outcome.TOO_LARGE),  # the answer
        ("/gzip-bomb-500", Transport.STREAMABLE_HTTP, Outcome.HTTP_ERROR),  # an error body (64 KiB read)
        ("/gzip-bomb-html", Transport.STREAMABLE_HTTP, Outcome.NOT_MCP),  # a snippet (300 bytes read)
        ("/auth-gzip-bomb", Transport.HTTP, Outcome.AUTH_REQUIRED),  # RFC 9728 metadata (256 KiB cap)
    ],
)
def test_a_stacked_gzip_bomb_is_capped_after_decoding(hostile_http, path, transport, outcome):
    assert len(BOMB) < 8 * 1024  # 4 GiB of zeros, gzipped twice
    (result, elapsed), peak = peak_traced(lambda: timed_scan(http_entry(hostile_http.url(path), transport), LIMITS))
    assert result.outcome is outcome, result.detail
    assert peak < 16 * 1024 * 1024, peak  # before: the whole 4 GiB inflated in one step
    assert elapsed < 30  # generous: a loaded machine is slow, not wrong (the peak is the point)
    if path == "/gzip-bomb":
        assert result.extra["limit_bytes"] == LIMITS.max_answer_bytes
    if path == "/auth-gzip-bomb":
        assert "over 262144 bytes" in result.extra["resource_metadata_error"]


def test_a_stacked_gzip_bomb_costs_the_scanner_a_few_mb_of_rss(hostile_http):
    # A fresh interpreter so its high-water RSS mark is this scan's alone; RLIMIT_AS keeps a regression from
    # taking the machine down (it then fails with a MemoryError instead of passing).
    script = textwrap.dedent(
        f"""
        import resource, sys
        import anyio
        from scanner.mcp import ClientLimits, scan_server
        from scanner.models import ServerEntry, Transport
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))
        entry = ServerEntry(name="bomb", transport=Transport.STREAMABLE_HTTP, url={hostile_http.url("/gzip-bomb")!r})
        limits = ClientLimits(timeout=10)
        anyio.run(scan_server, entry, ClientLimits(timeout=1, connect_timeout=1), "rich")  # warm every import
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        outcome = anyio.run(scan_server, entry, limits, "rich")
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(outcome.outcome.value, before, after)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome, before, after = done.stdout.split()
    assert outcome == "too_large"
    growth_mb = (int(after) - int(before)) / 1024
    # The default 16 MiB answer cap is read in full before too_large: the growth is that, not gigabytes.
    assert growth_mb < 48, growth_mb


class _Registry(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip, gzip")
        self.send_header("Content-Length", str(len(BOMB)))
        self.end_headers()
        self.wfile.write(BOMB)


@pytest.fixture
def bomb_registry() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_registry_api_page_bomb_is_capped_after_decoding(bomb_registry):
    options = Options(max_page_bytes=2 * 1024 * 1024, timeout_s=10)

    def read() -> str:
        with pytest.raises(InputError) as raised:
            fetch_rows(bomb_registry, options)
        return str(raised.value)

    message, peak = peak_traced(read)
    assert "page 1 is larger than 2 MiB" in message
    assert peak < 12 * 1024 * 1024, peak


# --- items 5 and 6: secrets -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/echo-auth", "/echo-auth-401", "/echo-auth-rpc"])
@pytest.mark.parametrize("scheme", ["Bearer", "Basic", ""])
def test_an_echoed_header_is_scrubbed_in_every_shape(hostile_http, path, scheme):
    credential = base64.b64encode(f"user:{SECRET}".encode()).decode() if scheme == "Basic" else SECRET
    value = f"{scheme} {credential}".strip()
    result, _ = timed_scan(http_entry(hostile_http.url(path), headers={"Authorization": value}), LIMITS)
    assert result.outcome is not Outcome.OK, result.detail
    text = outcome_text(result)
    for shape in [*echo_shapes(credential), *echo_shapes(SECRET)]:
        assert shape not in text, (shape, text)
    assert "[secret]" in text and result.extra["secrets_scrubbed"] > 0


def test_check_json_never_prints_an_echoed_bearer_token(hostile_http, monkeypatch):
    monkeypatch.setenv("HARDEN_TOKEN", SECRET)
    for fmt in ("json", "text"):
        result = runner.invoke(
            app, ["check", "--url", hostile_http.url("/echo-auth-401"), "--bearer-env", "HARDEN_TOKEN", "--format", fmt]
        )
        assert result.exit_code == 3, result.output
        printed = result.stdout + result.stderr
        assert "auth_required" in printed
        for shape in echo_shapes(SECRET):
            assert shape not in printed, (shape, printed)


def test_check_json_never_prints_an_api_key_a_stdio_server_leaks_on_stderr(monkeypatch):
    monkeypatch.setenv("API_KEY", SECRET)
    command = " ".join(hostile_stdio_command("leak-env"))
    args = ["check", "--stdio", command, "--env", "API_KEY", "--format", "json", "--timeout", "10"]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["outcome"]["status"] == "exited"
    tail = data["outcome"]["extra"]["stderr_tail"]
    assert tail[0] == "starting with key [secret]"
    printed = result.stdout + result.stderr
    for shape in echo_shapes(SECRET):
        assert shape not in printed, (shape, printed)


def test_a_scan_stores_no_secret_a_server_echoed(hostile_http, tmp_path, monkeypatch):
    """The whole product: a client config whose header and env values come from the environment, scanned into
    SQLite; the servers echo them (a 401 body, a JSON-RPC error, stderr); the database file never holds them.
    The same scan has the lone-surrogate servers: the run finishes, every outcome stored, no resume needed."""
    monkeypatch.setenv("HARDEN_TOKEN", SECRET)
    monkeypatch.setenv("HARDEN_KEY", SECRET[::-1])
    leak = hostile_stdio_command("leak-env")
    config = {
        "mcpServers": {
            "echo401": {
                "url": hostile_http.url("/echo-auth-401"),
                "headers": {"Authorization": "Bearer ${HARDEN_TOKEN}"},
            },
            "echorpc": {"url": hostile_http.url("/echo-auth-rpc"), "headers": {"Authorization": "${HARDEN_TOKEN}"}},
            "leaky": {"command": leak[0], "args": list(leak[1:]), "env": {"API_KEY": "${HARDEN_KEY}"}},
            "surrogate500": {"url": hostile_http.url("/error500-surrogate")},
            "surrogate-metadata": {"url": hostile_http.url("/auth-surrogate")},
        }
    }
    config_file = tmp_path / "claude_desktop_config.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    db = tmp_path / "scan.db"
    args = ["scan", str(config_file), "--run-commands", "--db", f"sqlite:///{db}", "--allow-private"]
    result = runner.invoke(app, [*args, "--timeout", "10", "--format", "json"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    summary = json.loads(result.stdout)
    assert summary["total"] == 5 and not summary.get("interrupted"), summary
    servers = runner.invoke(app, ["servers", "--db", f"sqlite:///{db}", "--format", "json"])
    assert servers.exit_code == 0, servers.output
    listed = {row["server"]: row["last_outcome"] for row in json.loads(servers.stdout)}
    assert listed == {
        "echo401": "auth_required",
        "echorpc": "protocol_error",
        "leaky": "exited",
        "surrogate500": "http_error",
        "surrogate-metadata": "auth_required",
    }
    stored = b"".join(path.read_bytes() for path in tmp_path.iterdir() if path.name.startswith("scan.db"))
    printed = result.stdout + result.stderr + servers.stdout
    for secret in (SECRET, SECRET[::-1]):
        for shape in echo_shapes(secret):
            assert shape.encode() not in stored, shape
            assert shape not in printed, shape


# --- item 15: escaped stdio descendants -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["setsid", "double-fork"])
def test_a_child_that_leaves_the_process_group_does_not_survive_the_scan(tmp_path, mode):
    pid_file = tmp_path / "pids"
    result, elapsed = timed_scan(stdio_entry(hostile_stdio_command(mode, "--pid-file", str(pid_file))), LIMITS)
    assert result.outcome is (Outcome.OK if mode == "setsid" else Outcome.TIMEOUT), result.detail
    escaped = recorded_pids(pid_file)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in escaped) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in escaped)
    if not confine.namespaces()[0]:  # else it died with its PID namespace's init, before the sweep looked
        assert result.extra["escaped_processes_killed"] >= 1
    assert elapsed < LIMITS.timeout + 3 * LIMITS.shutdown_grace + 30  # generous: a loaded machine


def test_doctor_never_prints_a_credential_the_server_echoes_in_its_auth_signals(hostile_http, monkeypatch):
    """Issue 17 (6): a credential a server echoes in its 401 challenge or its auth metadata was printed by
    ``doctor`` (the auth-signal path bypassed the scrubber). The variable's name does not say secret, so only the
    doctor's own scrubber (the lanes' credential headers) can know the value."""
    monkeypatch.setenv("DOCTOR_INPUT_X", SECRET)
    for fmt in ("json", "text"):
        args = ["doctor", "--url", hostile_http.url("/remember-auth"), "--bearer-env", "DOCTOR_INPUT_X"]
        result = runner.invoke(app, [*args, "--format", fmt, "--timeout", "10", "--connect-timeout", "5"])
        printed = result.stdout + result.stderr
        assert "Traceback" not in printed, printed
        for shape in echo_shapes(SECRET):
            assert shape not in printed, (shape, printed)
        if fmt == "json":
            assert "[secret]" in printed  # the echo was there, and was scrubbed
