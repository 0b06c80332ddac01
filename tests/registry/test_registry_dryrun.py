"""What ``--dry-run --format json`` shows: targets and names, never a secret value."""

from __future__ import annotations

import json

from registry_support import FIXTURES, SAMPLE

from scanner.registry import entries_to_json, load_entries, secret_env_name

SECRET = "sk-live-THIS-MUST-NOT-LEAK-1234"


def test_entries_to_json_never_contains_a_secret(write_json):
    env = {
        "PATH": "/usr/bin",
        secret_env_name("ai.smithery/smithery-toolbox", "Authorization"): f"Bearer {SECRET}",
        secret_env_name("io.github.kontent-ai/mcp-server", "KONTENT_API_KEY"): SECRET,
        secret_env_name("io.github.VictoriaMetrics-Community/mcp-victorialogs", "VL_INSTANCE_BEARER_TOKEN"): SECRET,
        "FIXTURE_TOKEN": SECRET,
        "NOTION_TOKEN": SECRET,
    }
    entries = load_entries(str(SAMPLE), environ=env, run_packages=True)
    entries += load_entries(str(FIXTURES / "claude_desktop_config.json"), environ=env)
    # the secrets did reach the entries (so the test can fail) ...
    assert any(SECRET in value for entry in entries for value in entry.headers.values())
    assert sum(SECRET in entry.env.values() for entry in entries) == 3
    # ... and none of them reaches the dry-run output
    rendered = json.dumps(entries_to_json(entries))
    assert SECRET not in rendered

    rows = {row["name"]: row for row in entries_to_json(entries)}
    toolbox = rows["ai.smithery/smithery-toolbox"]
    assert toolbox["header_names"] == ["Authorization"]
    assert toolbox["anonymous"] is False
    assert toolbox["transport"] == "streamable-http"
    victoria = rows["io.github.VictoriaMetrics-Community/mcp-victorialogs"]
    assert victoria["env_names"] == ["VL_INSTANCE_BEARER_TOKEN"]
    assert victoria["missing_inputs"] == ["VL_INSTANCE_ENTRYPOINT"]
    assert victoria["command"][:2] == ["docker", "run"]
    assert rows["filesystem"]["env_names"] == ["API_TOKEN", "LOG_LEVEL"]


def test_entries_to_json_fields():
    entries = load_entries(str(FIXTURES / "server_variables.json"), environ={})
    assert entries_to_json(entries) == [
        {
            "name": "com.example/tenant",
            "version": "2.0.0",
            "transport": "sse",
            "url": "https://eu.example.com/sse",
            "command": None,
            "header_names": ["X-Region"],
            "env_names": [],
            "anonymous": True,
            "missing_secrets": ["X-Api-Key"],
            "credential_headers": [],
            "missing_inputs": [],
            "package": None,
            "skip": None,
            "source": str(FIXTURES / "server_variables.json"),
            "findings": [  # the first remote's {tenant} has no default (MCP701; tests/census)
                {
                    "code": "MCP701",
                    "rule": "url-placeholder",
                    "severity": "problem",
                    "tool": None,
                    "message": "Remote 0 URL 'https://{tenant}.example.com/mcp' has {tenant} with no value or default.",
                    "hint": "Publish the URL a client should use, or declare the variable with a default.",
                    "pointer": "/remotes/0/url",
                    "details": {"url": "https://{tenant}.example.com/mcp", "variables": ["tenant"]},
                }
            ],
        }
    ]


def test_a_header_filled_from_the_environment_is_a_credential():
    from scanner.registry.secrets import secret_env_name

    environ = {secret_env_name("com.example/tenant", "X-Api-Key"): "k-123"}
    (entry,) = load_entries(str(FIXTURES / "server_variables.json"), environ=environ)
    assert entry.credential_headers == ("X-Api-Key",)  # scanned without and with it (docs/lanes.md)
    (row,) = entries_to_json([entry])
    assert row["credential_headers"] == ["X-Api-Key"] and row["header_names"] == ["X-Api-Key", "X-Region"]
    assert "k-123" not in json.dumps(row)


def test_a_dry_run_never_counts_as_scanned_what_the_address_policy_refuses(tmp_path):
    """Issue 37: "would scan 5" for loopback URLs that the real scan then refused without --allow-private."""
    from typer.testing import CliRunner

    from scanner.cli import app

    servers = tmp_path / "servers.json"
    servers.write_text(
        json.dumps(
            {
                "servers": [
                    {"name": "a/loop", "url": "http://127.0.0.1:9/mcp"},
                    {"name": "a/name", "url": "http://localhost:9/mcp"},
                    {"name": "a/lan", "url": "http://10.1.2.3/mcp"},
                    {"name": "a/meta", "url": "http://169.254.169.254/latest"},
                    {"name": "a/public", "url": "https://example.com/mcp"},
                ]
            }
        ),
        encoding="utf-8",
    )
    db = str(tmp_path / "x.db")

    plain = CliRunner().invoke(app, ["scan", str(servers), "--dry-run", "--db", db])
    allowed = CliRunner().invoke(app, ["scan", str(servers), "--dry-run", "--allow-private", "--db", db])

    assert plain.exit_code == 0 and allowed.exit_code == 0, plain.stderr + allowed.stderr
    assert "would scan 1; would skip 4, by reason:" in plain.stdout
    assert "  3  address refused: --allow-private permits it\n" in plain.stdout
    assert "address refused (127.0.0.1 is a loopback address)" in plain.stdout
    # with the opt-in, only the cloud metadata address stays refused, as in the real scan
    assert "would scan 4; would skip 1, by reason:\n  1  address refused\n" in allowed.stdout
