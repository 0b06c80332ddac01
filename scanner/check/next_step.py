"""What to try next when ``fathom check`` could not list a server's tools: one clause per outcome, naming the flag
or the check to make (``--bearer-env``, ``--timeout 60``, "is the path /mcp?"), appended to the one error line.

The site's next steps for a registry night (:mod:`scanner.report.nextstep`) name ``fathom scan`` flags and
registry variables; these name ``fathom check``'s own, since the author runs it by hand or in CI.
"""

from __future__ import annotations

import re

from scanner.models import Outcome, ScanOutcome

_STATUS = re.compile(r"\bHTTP (\d{3})\b")


def _http_step(detail: str, url: str | None) -> str:
    found = _STATUS.search(detail)
    status = int(found.group(1)) if found else 0
    if status == 404:
        path = "" if url is None else f" (this URL's is {_path(url)!r})"
        return (
            f"is the path right{path}? Streamable HTTP servers usually answer at /mcp, legacy SSE ones at /sse: "
            "--url https://HOST/mcp"
        )
    if status in (405, 406):
        return "a legacy SSE server answers GET at its /sse path: --url https://HOST/sse --transport sse"
    if status in (401, 403):
        return "it wants a credential: --bearer-env VAR (a token in that variable) or --header 'NAME: VALUE'"
    if status >= 500:
        return "the server failed on its side: try again, and tell its operator if it lasts"
    return "check the URL, and whether the server wants a header (--header 'NAME: VALUE')"


def _path(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return "?"


def check_next_step(outcome: ScanOutcome, *, url: str | None = None, timeout: float | None = None) -> str:
    """The next step for a check that ended in ``outcome`` (empty when there is nothing to suggest)."""
    detail = outcome.detail or ""
    longer = f"--timeout {max(60, int((timeout or 30) * 2))}"
    steps = {
        Outcome.AUTH_REQUIRED: "give it a credential: --bearer-env VAR (a token in that variable) or "
        "--header 'NAME: VALUE'",
        Outcome.PAYMENT_REQUIRED: "it asks for payment (HTTP 402): check it with a paying credential "
        "(--bearer-env VAR or --header)",
        Outcome.TIMEOUT: f"give it longer: {longer} (--connect-timeout for a slow start)",
        Outcome.CONNECT_ERROR: "check that the URL answers: the host, the port and http or https; a local server "
        "must be running",
        Outcome.HTTP_ERROR: _http_step(detail, url),
        Outcome.NOT_MCP: "the URL answered a web page or an API, not MCP: give the server's MCP endpoint "
        "(often /mcp, or /sse for legacy SSE)",
        Outcome.PROTOCOL_ERROR: "the server broke the MCP protocol: tell its author; --profile bare declares no "
        "client capabilities, which some servers need",
        Outcome.INVALID_RESPONSE: "the server's answer was not valid MCP: tell its author",
        Outcome.TOO_LARGE: "raise the cap it met: --max-bytes, --max-tools or --max-pages",
        Outcome.SPAWN_ERROR: "the command did not start: is it installed and on PATH? (--stdio 'CMD ARGS')",
        Outcome.EXITED: "the command exited before it answered: run it yourself to see why; --env NAME passes "
        "a variable it needs",
        Outcome.CRASHED: "the command crashed before it answered: run it yourself to see why",
        Outcome.NEEDS_CONFIGURATION: "it needs configuration: --env NAME passes a variable of yours to it",
        Outcome.RATE_LIMITED: "it is rate limiting: try again later",
        Outcome.REFUSED: "the address policy refused it (cloud metadata or a non-http URL)",
    }
    return steps.get(outcome.outcome, "")
