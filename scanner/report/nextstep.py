"""Why a server was not ranked, in finer groups, and what to do about it: the next step as a command or a name.

The leaderboard groups unranked servers by cause (:data:`scanner.report.data.FAILURE_CAUSES`), then by reason:
"skipped by policy" splits by why (needs ``--run-packages``, a bundle format, NuGet, no remote, ...), and the
other causes by their one-line detail with the parts that differ per server (package names, quoted values,
long numbers) blanked, so 200 servers whose host "did not resolve" are one line with a count. Each server's page
says the next step: the exact ``FATHOM_SECRET_...`` variable, the flag to add, or whom to tell.
"""

from __future__ import annotations

import re

from scanner.registry.secrets import secret_env_name

# (key, heading, pattern over the skip reason), first match wins.
SKIP_REASONS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("run_packages", "Needs --run-packages (a package Fathom may run)", re.compile(r"needs --run-packages")),
    ("run_commands", "Needs --run-commands (a command from a list)", re.compile(r"needs? --run-commands|run-commands")),
    ("bundle", "Bundle format (MCPB) is not run", re.compile(r"mcpb|bundle", re.I)),
    ("nuget", "NuGet packages are not run", re.compile(r"nuget", re.I)),
    ("local_port", "Package serves HTTP on a local port", re.compile(r"local port")),
    ("no_remote", "No remote and no package to run", re.compile(r"no remote and no package|no runnable package")),
    ("registry_data", "Registry data mistakes (the publisher's)", re.compile(r"registry data:")),
    ("needs_configuration", "Needs configuration", re.compile(r"needs configuration:")),
    ("not_allowed", "Refused by Fathom's runner policy", re.compile(r"not allowed|not supported")),
    ("remote", "Remote not usable", re.compile(r"remote")),
)
_VARIES = re.compile(r"\([^()]*\)|'[^']*'|\"[^\"]*\"|\{[^{}]*\}|\b[0-9a-f]{8,}\b|\b\d{5,}\b")


def skip_reason(detail: str) -> tuple[str, str]:
    """The (key, heading) of why a server was skipped, from its reason line; ``other`` when none matches."""
    for key, label, pattern in SKIP_REASONS:
        if pattern.search(detail):
            return key, label
    return "other", "Other reasons"


def reason_group(outcome: str, detail: str) -> tuple[str, str]:
    """The (key, heading) a failed server is listed under inside its cause: the skip reason for skipped or refused
    servers, else its detail with the parts that differ per server blanked (``…``)."""
    if outcome in ("skipped", "refused") and detail:
        return skip_reason(detail)
    text = _VARIES.sub("…", detail.strip())[:160] or "(no detail)"
    return "detail:" + text, text


def next_step(server: str, outcome: str, detail: str) -> str:
    """What to do so that the next scan reads ``server``'s tool list: a command, a flag or a variable name."""
    if outcome == "auth_required":
        name = secret_env_name(server, "Authorization")
        return (
            f"Set {name} to the whole header value (e.g. 'Bearer <token>'), or FATHOM_SECRET_… of the header its "
            "server.json names, then scan again."
        )
    if outcome in ("skipped", "refused"):
        return _skip_step(server, detail)
    if outcome == "needs_configuration":
        return _configure_step(server, detail)
    if outcome == "ok":  # read, and empty: no score until it lists a tool
        return (
            "The server answered with no tools, so it has no score: check that its build and configuration work "
            "(fathom check --url URL shows its answer)."
        )
    steps = {
        "timeout": "Scan again with a longer deadline: fathom scan … --timeout 60 (and --connect-timeout for a slow "
        "start).",
        "connect_error": "Check that the URL answers (it may be down, or its host may no longer resolve); fathom "
        "scan … --retries 2 retries a flaky host.",
        "http_error": "The server answered with an HTTP error: check its URL and whether it needs a header.",
        "runner_missing": "Install the runner the detail names (npx from Node.js, uvx from uv, or docker) on the "
        "scanning machine.",
        "package_not_found": "The registry names a package or version that does not exist: tell its publisher.",
        "install_failed": "Read the standard error below; a network or build fault may pass on a retry "
        "(fathom scan … --retries 2).",
        "crashed": "Read the standard error below: it usually names the variable or file the server needs "
        f"(set it as {secret_env_name(server, '<NAME>')}).",
        "exited": "Read the standard error below: it usually names what the server needs "
        f"(set it as {secret_env_name(server, '<NAME>')}).",
        "spawn_error": "The command could not start: check that it exists on the scanning machine.",
        "protocol_error": "The server broke the MCP protocol: tell its author; fathom check --url URL shows the "
        "answer.",
        "invalid_response": "The server's answer was not valid MCP: tell its author; fathom check --url URL shows "
        "the answer.",
        "too_large": "Its tool list is over the size cap: raise it with --max-input-mb, or ask the author to trim "
        "the list.",
    }
    return steps.get(outcome, "Read the detail above; scan again with fathom scan … --retries 2.")


def _skip_step(server: str, detail: str) -> str:
    key, _ = skip_reason(detail)
    if key == "run_packages":
        return "Scan with fathom scan … --run-packages (it runs the package in a memory-capped sandbox)."
    if key == "run_commands":
        return "Scan with fathom scan … --run-commands (it runs the command from your list)."
    if key == "needs_configuration":
        return _configure_step(server, detail)
    if detail.startswith("refused") or "private" in detail:
        return "Its URL is a private address: scan with --allow-private if you mean to reach it."
    return {
        "bundle": "Fathom does not run MCPB bundles; publish an npm, PyPI or OCI package or a remote to be ranked.",
        "nuget": "Fathom does not run NuGet packages; publish another package type or a remote to be ranked.",
        "local_port": "The package serves HTTP on a local port, which Fathom does not start; publish a remote.",
        "no_remote": "Its server.json lists no remote and no package: nothing to connect to (the publisher's fix).",
        "registry_data": "Its server.json is inconsistent (see the reason): the publisher's fix.",
        "not_allowed": "Fathom's runner policy refuses an argument it declares (see the reason).",
        "remote": "Its remote cannot be used as declared (see the reason).",
    }.get(key, "See the reason above.")


_NEEDED = re.compile(r"needs configuration:\s*(?:argument\s+)?(\S+?)\s+needs")
_NAMED = re.compile(r"\bset (FATHOM_SECRET_[A-Z0-9_]+)")


def _configure_step(server: str, detail: str) -> str:
    named = _NAMED.search(detail)
    if named is not None:  # the reason already names the variable (scanner.registry.packages)
        return f"Set {named.group(1)} and scan again."
    match = _NEEDED.search(detail)
    if match is None:
        return f"Set what the reason names as {secret_env_name(server, '<NAME>')} and scan again."
    return f"Set {secret_env_name(server, match.group(1))} and scan again."
