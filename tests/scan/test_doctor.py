"""``fathom doctor`` against loopback servers that register tools by scope (the demo host's ``lanes`` mode).

Each variant of the issue: anonymous callers get a subset with a 200 and no sign (a silent lane); the same with
protected-resource metadata (healthy); a 401 with a challenge and metadata (healthy); a 401 with neither
(undiscoverable); and a server that is not there (exit 3). A token's value never appears in any output.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.demo.server import DemoHost, Site

runner = CliRunner()
MEMBER = "member-token-5f1c9a7e"
ADMIN = "admin-token-0b6d2e44"
NAMES = [f"tool_{index:02d}" for index in range(15)]
TOOLS = [
    {
        "name": name,
        "description": f"Does task {name} for the team and returns the result as JSON.",
        "inputSchema": {"type": "object", "properties": {}},
    }
    for name in NAMES
]


def _site(name: str, **kwargs: Any) -> Site:
    return Site(
        name=name,
        version="1.0.0",
        tools=TOOLS,
        mode="lanes",
        tokens={MEMBER: NAMES[:14], ADMIN: NAMES},
        public=NAMES[:3],
        **kwargs,
    )


@pytest.fixture(scope="module")
def host() -> Iterator[DemoHost]:
    sites = [
        _site("silent", metadata=False),
        _site("told", metadata=True),
        _site("challenged", anonymous="401", challenge=True, metadata=True),
        _site("undiscoverable", anonymous="401", challenge=False, metadata=False),
    ]
    with DemoHost(sites) as running:
        yield running


@pytest.fixture(autouse=True)
def tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBER_TOKEN", MEMBER)
    monkeypatch.setenv("ADMIN_TOKEN", ADMIN)


def _doctor(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["doctor", *args, "--timeout", "10", "--connect-timeout", "5"])
    assert MEMBER not in result.output and ADMIN not in result.output
    return result.exit_code, result.stdout


def _json(*args: str) -> tuple[int, list[dict[str, Any]]]:
    code, out = _doctor(*args, "--format", "json")
    return code, json.loads(out)


def test_a_silent_lane_is_diagnosed_in_plain_words(host: DemoHost) -> None:
    code, out = _doctor("--url", host.url("silent"), "--bearer-env", "MEMBER_TOKEN")
    assert code == 1, out
    assert "verdict: a silent lane" in out
    # A --url has no configuration: the diagnosis starts with what each lane saw (not "the anonymous lane").
    assert "diagnosis: the server answers 3 tools without a credential; with MEMBER_TOKEN it lists 14 tools;" in out
    assert "this configuration is in" not in out
    assert "it gives callers without a credential no sign that they see less" in out
    assert "MCP601 silent-lane (warning)" in out
    assert "only in this lane: tool_03, tool_04" in out


def test_silent_lane_json_has_every_lane_and_the_tools_only_each_sees(host: DemoHost) -> None:
    code, (diagnosis,) = _json(
        "--url", host.url("silent"), "--bearer-env", "MEMBER_TOKEN", "--bearer-env", "ADMIN_TOKEN"
    )
    assert code == 1
    lanes = {lane["lane"]: lane for lane in diagnosis["lanes"]}
    assert [lanes[name]["tools"] for name in ("anonymous", "MEMBER_TOKEN", "ADMIN_TOKEN")] == [3, 14, 15]
    assert lanes["ADMIN_TOKEN"]["only_this_lane"] == NAMES[3:]
    assert diagnosis["auth_signals"]["status"] == 200
    assert diagnosis["auth_signals"]["www_authenticate"] is None
    assert diagnosis["auth_signals"]["resource_metadata"] is None
    assert [finding["code"] for finding in diagnosis["findings"]] == ["MCP601", "MCP601"]
    assert diagnosis["findings"][1]["details"]["only_with_credential"] == NAMES[3:]


def test_metadata_at_the_well_known_url_is_a_sign(host: DemoHost) -> None:
    code, (diagnosis,) = _json("--url", host.url("told"), "--bearer-env", "MEMBER_TOKEN")
    assert code == 0, diagnosis
    assert diagnosis["verdict"] == "healthy" and diagnosis["findings"] == []
    signals = diagnosis["auth_signals"]
    assert signals["resource_metadata_url"] == f"{host.base_url}/.well-known/oauth-protected-resource/told/mcp"
    assert signals["resource_metadata"]["scopes_supported"] == ["tools:read", "tools:admin"]
    # the authorization server the document names, found at its RFC 8414 location
    assert signals["authorization_server_url"] == f"{host.base_url}/.well-known/oauth-authorization-server/as/told"
    assert signals["authorization_server"]["issuer"] == f"{host.base_url}/as/told"
    assert "callers without a credential are told how to authenticate" in diagnosis["explanation"]


def test_a_401_with_challenge_and_metadata_is_healthy(host: DemoHost) -> None:
    code, out = _doctor("--url", host.url("challenged"), "--bearer-env", "MEMBER_TOKEN")
    assert code == 0, out
    assert "anonymous" in out and "auth_required" in out
    assert "anonymous answer: HTTP 401; WWW-Authenticate: Bearer resource_metadata=" in out
    assert "with MEMBER_TOKEN it lists 14 tools" in out


def test_a_401_without_any_way_to_discover_auth(host: DemoHost) -> None:
    code, (diagnosis,) = _json("--url", host.url("undiscoverable"))
    assert code == 1
    assert diagnosis["verdict"] == "auth-undiscoverable"
    assert [finding["code"] for finding in diagnosis["findings"]] == ["MCP602"]
    assert diagnosis["auth_signals"]["www_authenticate"] == {"scheme": "Bearer", "params": {"realm": "demo"}}


def test_a_closed_port_exits_3() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, out = _doctor("--url", f"http://127.0.0.1:{port}/mcp")
    assert code == 3
    assert "verdict: could not connect" in out


def test_a_config_file_that_forgot_its_token(host: DemoHost, tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "team": {"url": host.url("silent")},
                    "team-with-token": {
                        "url": host.url("silent"),
                        "headers": {"Authorization": "Bearer ${MEMBER_TOKEN}"},
                    },
                }
            }
        ),
        encoding="utf-8",
    )
    code, diagnoses = _json(str(config), "--bearer-env", "ADMIN_TOKEN")
    assert code == 1
    by_name = {diagnosis["server"]: diagnosis for diagnosis in diagnoses}
    forgot, configured = by_name["team"], by_name["team-with-token"]
    assert forgot["configured_lane"] == "anonymous"
    assert forgot["explanation"].startswith("this configuration is in the anonymous lane: no credential was sent")
    assert configured["configured_lane"] == "the configuration's headers"
    assert [lane["tools"] for lane in configured["lanes"]] == [3, 14, 15]


def test_url_and_config_together_are_a_usage_error(host: DemoHost, tmp_path: Path) -> None:
    result = runner.invoke(app, ["doctor", str(tmp_path / "x.json"), "--url", host.url("silent")])
    assert result.exit_code == 2
    result = runner.invoke(app, ["doctor", "--url", host.url("silent"), "--bearer-env", "NOT_SET_ANYWHERE_X"])
    assert result.exit_code == 2 and "NOT_SET_ANYWHERE_X" in result.output


def test_no_argument_says_what_to_give_and_lines_fit_columns(host: DemoHost) -> None:
    """Issue 46: with no argument doctor said "give a client config file or --url, not both"; its lines ignored
    $COLUMNS (170 characters at 80)."""
    bare = runner.invoke(app, ["doctor"])
    assert bare.exit_code == 2
    assert "not both" not in bare.stderr
    assert "give a client config file (fathom doctor claude_desktop_config.json) or --url URL" in bare.stderr

    result = runner.invoke(
        app,
        ["doctor", "--url", host.url("silent"), "--bearer-env", "MEMBER_TOKEN", "--timeout", "10"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 1, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80, result.stdout
    said = " ".join(result.stdout.split())
    assert "diagnosis: the server answers 3 tools without a credential; with MEMBER_TOKEN it lists 14 tools;" in said
    # a wrapped line keeps its place: under its own text, never at the left edge
    assert all(line.startswith("  ") for line in result.stdout.splitlines()[1:] if line.strip())


def test_check_says_mcp602_on_a_401_a_client_cannot_learn_to_answer(host: DemoHost) -> None:
    """``fathom check`` connects in one lane: on a bare 401 it still says MCP602 (one line on stderr; JSON too)."""
    text = runner.invoke(app, ["check", "--url", host.url("undiscoverable"), "--timeout", "10"])
    assert text.exit_code == 3
    (line,) = text.stderr.strip().splitlines()
    assert line.endswith(
        "auth_required: HTTP 401: authorization required (unauthorized); MCP602 auth-undiscoverable: The server "
        "answers 401 without a resource_metadata parameter in WWW-Authenticate (challenge scheme: Bearer) and "
        "without protected-resource metadata at the well-known URL.; next: give it a credential: --bearer-env VAR "
        "(a token in that variable) or --header 'NAME: VALUE'"
    ), line
    data = json.loads(runner.invoke(app, ["check", "--url", host.url("undiscoverable"), "--format", "json"]).stdout)
    assert [finding["code"] for finding in data["findings"]] == ["MCP602"]
    told = json.loads(runner.invoke(app, ["check", "--url", host.url("challenged"), "--format", "json"]).stdout)
    assert told["outcome"]["status"] == "auth_required" and "findings" not in told


def test_a_server_with_no_credential_to_compare_is_not_called_healthy(host: DemoHost) -> None:
    code, (diagnosis,) = _json("--url", host.url("silent"))
    assert code == 0
    assert diagnosis["verdict"] == "not-compared" and diagnosis["findings"] == []
    assert diagnosis["explanation"].startswith("the server answers 3 tools without a credential;")
    assert "no credential was given to compare" in diagnosis["explanation"]
    code, out = _doctor("--url", host.url("silent"))
    assert "verdict: answered; not compared (no credential given)" in out and "healthy" not in out


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/mcp", "http://[::1/mcp"])
def test_a_url_that_cannot_be_used_is_a_verdict_not_a_traceback(url: str) -> None:
    """Issue 17 (low): ``doctor --url http://127.0.0.1:99999/mcp`` ended in a traceback."""
    code, out = _doctor("--url", url)
    assert code == 3, out
    assert "the URL cannot be used" in out and "Traceback" not in out


def test_the_auth_probe_stays_within_the_servers_deadline() -> None:
    """Issue 17 (low): the lanes' auth probe ran outside the server's deadline (29 s under --timeout 5): a server
    that accepts and never answers held the POST and then every metadata GET for the connect timeout each."""
    import threading

    import anyio

    from scanner.mcp import ClientLimits
    from scanner.scan.doctor import probe_signals

    held: list[socket.socket] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        port = listener.getsockname()[1]

        def accept() -> None:
            while True:
                try:
                    held.append(listener.accept()[0])
                except OSError:
                    return

        threading.Thread(target=accept, daemon=True).start()
        limits = ClientLimits(timeout=2.0, connect_timeout=1.5)
        signals = anyio.run(probe_signals, f"http://127.0.0.1:{port}/mcp", limits)
    for connection in held:
        connection.close()
    # Without the bound the probe takes its POST and three metadata GETs, 1.5 s each, and says nothing of it.
    assert any("the probe stopped at the server's 2 s deadline" in note for note in signals.notes), signals.notes
