"""The secret scrubber on its own: which values a scan knows as secret, and what an outcome looks like after it."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.scrub import MARK, Scrubber, ordinary, scan_secrets

TOKEN = "tok_9Zq+/abc=DEF"


def http_entry(**fields: Any) -> ServerEntry:
    return ServerEntry(name="io.example/srv", transport=Transport.HTTP, url="https://x.example/mcp", **fields)


def test_header_values_whole_and_after_their_scheme_and_basic_decoded() -> None:
    basic = base64.b64encode(b"alice:hunter2-very-secret").decode()
    scrubber = Scrubber.for_scan(
        http_entry(headers={"Authorization": f"Bearer {TOKEN}"}), {"Proxy-Authorization": f"Basic {basic}"}, environ={}
    )
    assert set(scrubber.secrets) == {
        f"Bearer {TOKEN}",
        TOKEN,
        f"Basic {basic}",
        basic,
        "alice:hunter2-very-secret",
        "hunter2-very-secret",
    }


def test_environment_values_a_scan_hands_a_stdio_server() -> None:
    entry = ServerEntry(
        name="pkg",
        transport=Transport.STDIO,
        command=("x",),
        env={"PATH": "/usr/bin:/bin", "DB_URL": "postgres://u:pw@h/db"},
    )
    environ = {"GITHUB_TOKEN": "ghp_abcdef123456", "EDITOR": "vim-the-editor", "FATHOM_SECRET_PKG_KEY": "from-env-999"}
    inherited = Scrubber.for_scan(entry, environ=environ)
    # The entry's own env (not PATH), and every secret this process holds (secret-named variables, FATHOM_SECRET_*).
    assert set(inherited.secrets) == {"postgres://u:pw@h/db", "ghp_abcdef123456", "from-env-999"}
    exact = Scrubber.for_scan(entry, env={"HOME": "/tmp/h", **entry.env}, environ=environ)
    assert set(exact.secrets) == set(inherited.secrets)  # a package's exact env too: HOME and EDITOR are not secret


def test_every_secret_the_process_holds_is_scrubbed_from_every_server() -> None:
    """Issue 17 (1): a package published another server's token and the worker's database password unscrubbed."""
    from scanner import scrub

    environ = {
        "FATHOM_SECRET_IO_EXAMPLE_SRV2_KEY": "not-for-this-one",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "PGPASSWORD": "pg-pass-123",
        "DATABASE_URL": "postgresql://fathom:db-pw-9876@db.internal/fathom",
        "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.1",  # a path is not a credential
        "EDITOR": "vim-the-editor",
    }
    scrub.hold("held-by-process-42")
    child = ServerEntry(name="io.example/srv", transport=Transport.STDIO, command=("srv",))
    try:
        scrubber = Scrubber.for_scan(child, environ=environ)
        # A remote server never ran here: it could not have read them, and its answers are not searched for them.
        assert not Scrubber.for_scan(http_entry(), environ=environ)
    finally:
        scrub._HELD.discard("held-by-process-42")
    assert set(scrubber.secrets) == {
        "not-for-this-one",
        "wJalrXUtnFEMI/K7MDENG",
        "pg-pass-123",
        "db-pw-9876",
        "fathom:db-pw-9876",
        "held-by-process-42",
    }
    leaky = ScanOutcome(outcome=Outcome.OK, transport="stdio", tools=({"description": str(environ)},))
    cleaned = scrubber.outcome(leaky).tools
    assert cleaned is not None
    text = json.dumps(cleaned)
    assert all(secret not in text for secret in scrubber.secrets) and "vim-the-editor" in text


def test_only_secret_headers_are_scrubbed() -> None:
    """Issue 17 (7): ``--header 'X-Tenant: default'`` turned the schema keyword ``default`` into the mark."""
    entry = http_entry(
        headers={"X-Tenant": "default", "X-From-Env": "tenant-credential-1"}, credential_headers=("X-From-Env",)
    )
    scrubber = Scrubber.for_scan(entry, {"X-Region": "eu-west-1", "X-Api-Key": "key-abcdef-1"}, environ={})
    assert set(scrubber.secrets) == {"tenant-credential-1", "key-abcdef-1"}
    tools = ({"name": "t", "inputSchema": {"properties": {"a": {"default": "eu-west-1"}}}},)
    assert scrubber.outcome(ScanOutcome(outcome=Outcome.OK, transport="streamable-http", tools=tools)).tools is tools


def test_what_is_not_promised_hex_and_reversed_echoes() -> None:
    """docs/lanes.md states the limit: a transformed echo (hex, reversed) is not recognised."""
    scrubber = Scrubber([TOKEN])
    for echo in (TOKEN.encode().hex(), TOKEN[::-1]):
        assert scrubber.text(f"got {echo}") == f"got {echo}"


def test_short_values_are_not_scrubbed() -> None:
    environ = {"FATHOM_SECRET_IO_EXAMPLE_SRV_KEY": "abc"}
    assert not Scrubber.for_scan(http_entry(headers={"Authorization": "abc12"}), environ=environ)


def test_every_echo_shape_and_a_cut_prefix_become_the_mark() -> None:
    scrubber = Scrubber([TOKEN])
    echoes = [
        TOKEN,
        json.dumps(TOKEN)[1:-1],
        quote(TOKEN, safe=""),
        quote_plus(TOKEN),
        base64.b64encode(TOKEN.encode()).decode(),
        base64.b64encode(b"x:" + TOKEN.encode()).decode(),  # inside a longer base64 text, another alignment
        base64.urlsafe_b64encode(b"ab" + TOKEN.encode()).decode(),
    ]
    for echo in echoes:
        assert TOKEN not in scrubber.text(f"got {echo}!") and MARK in scrubber.text(f"got {echo}!"), echo
    assert scrubber.text("reason: " + TOKEN[:9]) == f"reason: {MARK}"  # cut by a length cap
    assert scrubber.text("no secret here, just tok_ words") == "no secret here, just tok_ words"


def test_an_outcome_is_cleaned_everywhere_and_an_honest_tool_list_is_left_alone() -> None:
    scrubber = Scrubber([TOKEN])
    tools = ({"name": "a", "description": "plain"},)
    outcome = ScanOutcome(
        outcome=Outcome.HTTP_ERROR,
        transport="streamable-http",
        detail=f"HTTP 500: bad {TOKEN}",
        tools=tools,
        extra={"error": {"message": f"x {TOKEN}", TOKEN: 1}, "stderr_tail": [f"key={TOKEN}", "nul\x00 \ud800"]},
    )
    cleaned = scrubber.outcome(outcome)
    assert cleaned.tools is tools
    assert cleaned.detail == f"HTTP 500: bad {MARK}"
    assert cleaned.extra["error"] == {"message": f"x {MARK}", MARK: 1}
    assert cleaned.extra["stderr_tail"] == [f"key={MARK}", "nul\ufffd \ufffd"]
    assert cleaned.extra["secrets_scrubbed"] == 4
    leaky = scrubber.outcome(ScanOutcome(outcome=Outcome.OK, transport="stdio", tools=({"description": TOKEN},)))
    assert leaky.tools == ({"description": MARK},)


DUMP = Path(__file__).parent / "fixtures" / "registry" / "official-registry-2025-12-18.json.gz"


def test_ordinary_values_are_never_secrets_and_credentials_always_are() -> None:
    """Issue 33 (D8): ``127.0.0.1``, ``localhost``, ``qdrant``, ``WARNING`` became the mark in tool lists."""
    for value in ("127.0.0.1", "localhost", "qdrant", "WARNING", "3010", "1.2.3", "db.example.com:5432", "[::1]:8080"):
        assert ordinary(value), value
    for value in ("http://localhost:6333", "https://api.hackmd.io/v1", "/tmp/pulse-fetch/strategy.md", "info"):
        assert ordinary(value), value
    for value in (
        "ghp_abcdef123456",
        "sk-proj-Abc123",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Sfl",
        "postgres://u:pw-123456@h/db",
        "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXX",
        "https://x.example/mcp?key=abcdef",
        "hunter2-very-secret",
    ):
        assert not ordinary(value), value
    entry = ServerEntry(
        name="cfg",
        transport=Transport.STDIO,
        command=("srv",),
        env={"QDRANT_HOST": "qdrant", "LOG_LEVEL": "WARNING", "BIND": "127.0.0.1", "GH": "ghp_abcdef123456"},
    )
    assert set(Scrubber.for_scan(entry, environ={}).secrets) == {"ghp_abcdef123456"}
    # A secret name makes any value a secret; a URL's password is one whatever the name.
    named = ServerEntry(name="cfg", transport=Transport.STDIO, command=("srv",), env={"DB_PASSWORD": "qdrantdb"})
    assert set(Scrubber.for_scan(named, environ={}).secrets) == {"qdrantdb"}


def test_the_naming_rule_carries_ordinary_inputs_that_stay_unscrubbed() -> None:
    environ = {
        "FATHOM_SECRET_IO_X_SRV_QDRANT_HOST": "qdrant-host",
        "FATHOM_SECRET_IO_X_SRV_LOG_LEVEL": "WARNING",
        "FATHOM_SECRET_IO_X_SRV_API_KEY": "plainword",
        "FATHOM_SECRET_IO_X_SRV_SEED": "xK9-aa77-QQ",
    }
    child = ServerEntry(name="other", transport=Transport.STDIO, command=("srv",))
    assert set(Scrubber.for_scan(child, environ=environ).secrets) == {"plainword", "xK9-aa77-QQ"}


def test_no_ordinary_value_the_registry_declares_is_scrubbed() -> None:
    """Issue 33 (D8): servers of the registry dump declare ordinary values for their variables; none of them is a
    secret any more (only a variable the registry calls secret is), so their tool lists and counts are unchanged."""
    from scanner.registry.interface import Options
    from scanner.registry.serverjson import resolve_server

    declaring = 0
    for item in json.loads(gzip.decompress(DUMP.read_bytes()))["servers"]:
        server = item.get("server", item)
        entry = resolve_server(server, source="dump", options=Options(run_packages=True, environ={"PATH": "/none"}))
        if not any(len(value) >= 6 for key, value in entry.env.items() if key not in ("PATH", "LANG")):
            continue
        declaring += 1
        secrets = Scrubber.for_scan(entry, env=entry.env, environ={}).secrets
        declared = (entry.package or {}).get("secret_env_names") or ()
        assert set(secrets) <= {entry.env[name] for name in declared if name in entry.env}, (entry.name, secrets)
    assert declaring >= 20  # the dump's servers that declare such values (62 entries of 21 names)


def test_a_scans_entries_secrets_are_held_while_it_runs_and_only_then() -> None:
    """Issue 33: a config's command read another's token from ``/proc/<pid>/environ`` and published it."""
    sibling = ServerEntry(name="a", transport=Transport.STDIO, command=("a",), env={"TOKEN_X": "sibling-tok-123"})
    snoop = ServerEntry(name="b", transport=Transport.STDIO, command=("b",))
    local_port = ServerEntry(name="c", transport=Transport.STREAMABLE_HTTP, command=("c",), url=None)
    with scan_secrets([sibling, snoop]):
        assert "sibling-tok-123" in Scrubber.for_scan(snoop, environ={}).secrets
        assert "sibling-tok-123" in Scrubber.for_child(local_port, environ={}).secrets  # runs here too
        assert not Scrubber.for_scan(http_entry(), environ={})  # a remote never ran here
    assert "sibling-tok-123" not in Scrubber.for_scan(snoop, environ={}).secrets
