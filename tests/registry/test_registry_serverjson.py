"""Choosing what to connect to for one server.json: remotes, URL variables, headers and secrets."""

from __future__ import annotations

import json

from registry_support import FIXTURES

from scanner.models import Transport
from scanner.registry import load_entries, secret_env_name


def server(**fields):
    return {"name": "com.example/s", "description": "d", "version": "1.0.0", **fields}


def load_one(write_json, document, environ=None, **kwargs):
    entries = load_entries(str(write_json("server.json", document)), environ=environ or {}, **kwargs)
    assert len(entries) == 1
    return entries[0]


def test_secret_env_name_rule():
    assert secret_env_name("ai.smithery/smithery-toolbox", "Authorization") == (
        "FATHOM_SECRET_AI_SMITHERY_SMITHERY_TOOLBOX_AUTHORIZATION"
    )
    assert secret_env_name("io.github.a--b/c_d", "x-api-key") == "FATHOM_SECRET_IO_GITHUB_A_B_C_D_X_API_KEY"


def test_streamable_http_preferred_over_sse(write_json):
    doc = server(
        remotes=[
            {"type": "sse", "url": "https://s.example.com/sse"},
            {"type": "streamable-http", "url": "https://s.example.com/mcp"},
        ]
    )
    entry = load_one(write_json, doc)
    assert (entry.transport, entry.url) == (Transport.STREAMABLE_HTTP, "https://s.example.com/mcp")


def test_url_variable_without_default_falls_back_to_next_remote():
    document = json.loads((FIXTURES / "server_variables.json").read_text(encoding="utf-8"))
    entry = load_entries(str(FIXTURES / "server_variables.json"), environ={})[0]
    # {tenant} has no default: the streamable-http remote is passed over; {region} defaults to "eu"
    assert (entry.transport, entry.url) == (Transport.SSE, "https://eu.example.com/sse")
    assert entry.headers == {"X-Region": "eu-1"}
    assert entry.anonymous is True
    assert entry.secret_header_names == ("X-Api-Key",)
    assert document["remotes"][0]["variables"]["tenant"]["isRequired"] is True


def test_url_variable_from_environment_and_secret_header():
    from scanner.registry.secrets import var_env_name

    env = {
        var_env_name("com.example/tenant", "tenant"): "acme",
        secret_env_name("com.example/tenant", "X-Api-Key"): "key-42",
    }
    entry = load_entries(str(FIXTURES / "server_variables.json"), environ=env)[0]
    assert (entry.transport, entry.url) == (Transport.STREAMABLE_HTTP, "https://acme.example.com/mcp")
    # the streamable remote declares no headers; the key belongs to the sse remote only
    assert entry.headers == {}
    assert entry.anonymous is False


def test_a_secret_value_never_goes_into_a_url(write_json):
    """Issue 17 (5): a FATHOM_SECRET_* value filled into a URL variable not marked secret was printed by --dry-run
    and stored in cleartext in the queued job."""
    from scanner.distributed.queue import entry_payload
    from scanner.registry.dryrun import entry_to_json
    from scanner.registry.secrets import var_env_name

    env = {secret_env_name("com.example/tenant", "tenant"): "tenant-secret-77"}
    (entry,) = load_entries(str(FIXTURES / "server_variables.json"), environ=env)
    assert entry.url == "https://eu.example.com/sse"  # the remote that needs it is passed over, said below
    doc = server(
        remotes=[{"type": "streamable-http", "url": "https://{tenant}.x.example/mcp", "variables": {"tenant": {}}}]
    )
    alone = load_one(write_json, doc, environ={secret_env_name(doc["name"], "tenant"): "tenant-secret-77"})
    assert alone.skip is not None and var_env_name(doc["name"], "tenant") in alone.skip
    for shown in (entry_to_json(entry), entry_payload(entry), entry_to_json(alone), entry_payload(alone)):
        assert "tenant-secret-77" not in json.dumps(shown)


def test_only_required_variable_without_default_skips(write_json):
    doc = server(
        remotes=[{"type": "streamable-http", "url": "https://{tenant}.x.example/mcp", "variables": {"tenant": {}}}]
    )
    entry = load_one(write_json, doc)
    assert entry.skip == "remote URL variable {tenant} has no default"


def test_secret_url_variable_is_never_filled(write_json):
    doc = server(
        remotes=[
            {
                "type": "streamable-http",
                "url": "https://x.example/mcp/{key}",
                "variables": {"key": {"isSecret": True, "default": "d"}},
            }
        ]
    )
    env = {secret_env_name("com.example/s", "key"): "top-secret"}
    entry = load_one(write_json, doc, env)
    assert entry.url is None
    assert "secret variable {key}" in (entry.skip or "")


def test_secret_header_from_env_vs_anonymous(write_json):
    doc = server(
        remotes=[
            {
                "type": "streamable-http",
                "url": "https://s.example.com/mcp",
                "headers": [
                    {"name": "Authorization", "value": "Bearer {token}", "isSecret": True, "isRequired": True},
                    {"name": "X-Plain", "value": "{mode}", "variables": {"mode": {"default": "fast"}}},
                    {"name": "X-Template", "value": "Bearer {unknown}"},
                    {"name": "X-Optional"},
                ],
            }
        ]
    )
    anonymous = load_one(write_json, doc)
    assert anonymous.headers == {"X-Plain": "fast"}
    assert anonymous.anonymous is True
    assert anonymous.secret_header_names == ("Authorization", "X-Template")
    assert anonymous.skip is None

    env = {
        secret_env_name("com.example/s", "Authorization"): "Bearer abc",
        secret_env_name("com.example/s", "X-Template"): "Bearer def",
    }
    with_secret = load_one(write_json, doc, env)
    assert with_secret.headers == {"Authorization": "Bearer abc", "X-Plain": "fast", "X-Template": "Bearer def"}
    assert with_secret.anonymous is False
    assert with_secret.secret_header_names == ()


def test_secret_with_newline_is_refused(write_json):
    doc = server(
        remotes=[
            {
                "type": "streamable-http",
                "url": "https://s.example.com/mcp",
                "headers": [{"name": "A", "isSecret": True}],
            }
        ]
    )
    entry = load_one(write_json, doc, {secret_env_name("com.example/s", "A"): "x\r\nHost: evil"})
    assert entry.headers == {}
    assert entry.anonymous is True


def test_no_remote_and_no_package(write_json):
    entry = load_one(write_json, server())
    assert entry.skip == "no remote and no package to run"


def test_header_placeholder_uses_the_remote_variable_value(write_json):
    doc = server(
        remotes=[
            {
                "type": "streamable-http",
                "url": "https://{region}.s.example/mcp",
                "variables": {"region": {"isRequired": True}},
                "headers": [{"name": "X-Region", "value": "{region}"}],
            }
        ]
    )
    from scanner.registry.secrets import var_env_name

    entry = load_one(write_json, doc, {var_env_name("com.example/s", "region"): "us"})
    assert entry.url == "https://us.s.example/mcp"
    assert entry.headers == {"X-Region": "us"}
