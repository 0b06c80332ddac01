"""``fathom check --url / --stdio / -- command``: the same report, headed by the server, against real servers."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from tests.servers.launch import RunningServer, hostile_stdio_command, sdk_command

runner = CliRunner()


def test_url_against_the_sdk_server_heads_the_report_with_the_server(sdk_http: RunningServer) -> None:
    result = runner.invoke(app, ["check", "--url", sdk_http.url("/mcp"), "--timeout", "10"])
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("Server: ")
    assert "streamable-http" in result.stdout and "client profile rich" in result.stdout
    assert "Tokens per turn" in result.stdout


def test_url_json_adds_server_and_outcome(sdk_http: RunningServer) -> None:
    result = runner.invoke(app, ["check", "--url", sdk_http.url("/mcp"), "--format", "json", "--timeout", "10"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["outcome"]["status"] == "ok"
    server = data["server"]
    assert server["transport"] == "streamable-http" and server["capability_profile"] == "rich"
    assert server["era"] in ("legacy", "stateless") and server["protocol_version"]
    assert server["name"] and server["timings_ms"]["total"] > 0
    assert data["tools_count"] == 3 and data["tokens"]["openai"]["tokens"] > 0


def test_stdio_and_double_dash_give_the_same_list(tmp_path: Path) -> None:
    command = sdk_command("stdio")
    via_option = runner.invoke(
        app,
        [
            "check",
            "--stdio",
            shlex.join(command),
            "--format",
            "json",
            "--timeout",
            "20",
            "--save",
            str(tmp_path / "s.json"),
        ],
    )
    assert via_option.exit_code == 0, via_option.output
    via_dash = runner.invoke(app, ["check", "--format", "json", "--timeout", "20", "--", *command])
    assert via_dash.exit_code == 0, via_dash.output
    first, second = json.loads(via_option.stdout), json.loads(via_dash.stdout)
    assert first["server"]["transport"] == "stdio"
    assert first["toolset_sha256"] == second["toolset_sha256"]
    # --save keeps the raw tools/list result, and checking it offline gives the same list
    saved = runner.invoke(app, ["check", "--tools-file", str(tmp_path / "s.json"), "--format", "json"])
    assert json.loads(saved.stdout)["toolset_sha256"] == first["toolset_sha256"]


@pytest.mark.parametrize(
    ("path", "status"),
    [("/error500", "http_error"), ("/html", "not_mcp"), ("/auth", "auth_required")],
)
def test_a_server_that_cannot_be_listed_is_one_line_and_exit_3(
    hostile_http: RunningServer, path: str, status: str
) -> None:
    result = runner.invoke(app, ["check", "--url", hostile_http.url(path), "--timeout", "5"])
    assert result.exit_code == 3
    assert f": {status}: " in result.stderr and len(result.stderr.strip().splitlines()) == 1
    as_json = runner.invoke(app, ["check", "--url", hostile_http.url(path), "--timeout", "5", "--format", "json"])
    assert as_json.exit_code == 3
    assert json.loads(as_json.stdout)["outcome"]["status"] == status


def test_exited_stdio_server_reports_exit_code() -> None:
    result = runner.invoke(app, ["check", "--format", "json", "--timeout", "5", "--", *hostile_stdio_command("exit")])
    assert result.exit_code == 3
    outcome = json.loads(result.stdout)["outcome"]
    assert outcome["status"] == "exited"


def test_bearer_token_is_sent_but_never_printed(hostile_http: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-do-not-print-0123456789"
    monkeypatch.setenv("FATHOM_TEST_TOKEN", secret)
    for fmt in ("text", "json"):
        result = runner.invoke(
            app,
            ["check", "--url", hostile_http.url("/auth"), "--bearer-env", "FATHOM_TEST_TOKEN", "--format", fmt],
        )
        assert secret not in result.output
    missing = runner.invoke(app, ["check", "--url", hostile_http.url("/ok"), "--bearer-env", "FATHOM_NOT_SET_X"])
    assert missing.exit_code == 2 and "FATHOM_NOT_SET_X" in missing.stderr


def test_auth_required_json_keeps_the_challenge(hostile_http: RunningServer) -> None:
    result = runner.invoke(app, ["check", "--url", hostile_http.url("/auth"), "--timeout", "5", "--format", "json"])
    outcome = json.loads(result.stdout)["outcome"]
    assert outcome["status"] == "auth_required" and outcome["extra"]["status"] == 401
    assert "resource_metadata" in json.dumps(outcome["extra"])
