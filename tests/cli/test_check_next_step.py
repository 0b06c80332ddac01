"""A check that could not list a server's tools ends with the next step (issue 37, item 2): the reproductions
"auth_required: HTTP 401", "timeout: no complete answer within 2 s" and "http_error: HTTP 404" named no flag and
no check to make. Each runs against the hostile test server on loopback."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from scanner.cli import app

runner = CliRunner()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("path", "extra", "outcome", "step"),
    [
        ("/auth", [], "auth_required", "next: give it a credential: --bearer-env VAR"),
        ("/hang", ["--timeout", "2"], "timeout", "next: give it longer: --timeout 60"),
        ("/no/such", [], "http_error", "next: is the path right (this URL's is '/no/such')? Streamable HTTP"),
        ("/html", [], "not_mcp", "next: the URL answered a web page or an API, not MCP"),
    ],
)
def test_a_failed_check_ends_with_what_to_try(
    hostile_http: Any, path: str, extra: list[str], outcome: str, step: str
) -> None:
    result = runner.invoke(app, ["check", "--url", hostile_http.url(path), *extra], prog_name="fathom")

    assert result.exit_code == 3
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert f": {outcome}: " in lines[0] and step in lines[0]


def test_a_server_that_does_not_answer_at_all_says_to_check_the_url() -> None:
    result = runner.invoke(app, ["check", "--url", "http://127.0.0.1:9/mcp", "--timeout", "5"], prog_name="fathom")

    assert result.exit_code == 3
    assert "connect_error" in result.stderr and "next: check that the URL answers" in result.stderr
