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
    # The entry's own env (not PATH), secret-named inherited variables, and this server's FATHOM_SECRET_* values.
    assert set(inherited.secrets) == {"postgres://u:pw@h/db", "ghp_abcdef123456", "from-env-999"}
    exact = Scrubber.for_scan(entry, env={"HOME": "/tmp/h", **entry.env}, environ=environ)
    assert set(exact.secrets) == {"postgres://u:pw@h/db", "from-env-999"}  # nothing inherited, HOME is not secret


def test_another_servers_secret_and_short_values_are_not_this_scans() -> None:
    environ = {"FATHOM_SECRET_IO_EXAMPLE_SRV2_KEY": "not-for-this-one", "FATHOM_SECRET_IO_EXAMPLE_SRV_KEY": "abc"}
    assert not Scrubber.for_scan(http_entry(headers={"X-Short": "abc12"}), environ=environ)


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
