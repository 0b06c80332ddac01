"""The secret scrubber on its own: which values a scan knows as secret, and what an outcome looks like after it."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote, quote_plus

from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.scrub import MARK, Scrubber

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
