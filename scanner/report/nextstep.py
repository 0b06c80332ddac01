"""Why a server was not ranked, in finer groups, and what to do about it: the next step as a command or a name.

The leaderboard groups unranked servers by cause (:data:`scanner.report.data.FAILURE_CAUSES`), then by reason:
"skipped by policy" splits by why (needs ``--run-packages``, a bundle format, NuGet, no remote, ...), and the
other causes by their one-line detail with the parts that differ per server (package names and specs, versions,
paths, a URL's path, quoted values, long numbers) blanked, so 200 servers whose host "did not resolve" are one line
with a count. Each server's page says the next step from the cause its detail names (the package's own output,
this host, Fathom's own budgets: :func:`scanner.report.census.fault`): the flag to add, the ``FATHOM_SECRET_...``
variable
Fathom really passes, or "the package's fault: tell its author" with the line that shows it.
"""

from __future__ import annotations

import re

from scanner.registry.secrets import secret_env_name
from scanner.report.census import SETUP, fault

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
_VARIES = re.compile(r"\([^()]*\)|'[^']*'|\"[^\"]*\"|`[^`]*`|\{[^{}]*\}|\b[0-9a-f]{8,}\b|\b\d{5,}\b")
# What names one package in a detail, blanked before the rest so a registry's 72 "not found" are one group: the
# spec the detail starts with, a URL's path (its host stays: it tells a mirror from the public index), a
# name@version or name==version, an npm scope, a version, a path, and the name uv puts before "was not found".
_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\S+ (?=not found:|provides no executable)"), "… "),
    (re.compile(r"(https?://[^/\s'\"`]+)/[^\s'\"`,;)]*"), r"\1/…"),
    (re.compile(r"(?<![\w/.-])(@[\w.-]+/)?[\w.-]+(?:\[[\w,.-]+\])?(@|===?|~=|>=|<=)[\w.+!*-]+"), "…"),
    (re.compile(r"@[\w.-]+/[\w.-]+"), "…"),
    (re.compile(r"(?<![\w.])v?\d+(\.\d+)+[\w.+-]*"), "…"),
    (
        re.compile(
            r"(?<![\w:/.])(?:~|<home>|<cache>|<tmp>)?(?:/[^\s'\"`:,;()]+){2,}|(?:~|<home>|<cache>|<tmp>)/[^\s'\"`:,;()]*"
        ),
        "…",
    ),
    (re.compile(r"\b(Because|of|package) [\w.-]+ (?=was not found|is not|are not|has no)", re.I), r"\1 … "),
    (re.compile(r"\b(no versions? of|versions? of) [\w.-]+", re.I), r"\1 …"),
)


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
    text = detail.strip()
    for pattern, blank in _NAMES:
        text = pattern.sub(blank, text)
    text = _VARIES.sub("…", text)[:160] or "(no detail)"
    return "detail:" + text, text


def next_step(server: str, outcome: str, detail: str) -> str:
    """What to do so that the next scan reads ``server``'s tool list, from the cause its detail names (the
    package's own output, this host, Fathom's own budgets), not from the outcome alone: the flag to give, the
    variable Fathom really passes, or "the package's fault: tell its author" with the line that shows it."""
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
    if outcome in ("runner_missing", "spawn_error") and detail.startswith(SETUP) and "; fix: " in detail:
        what, fix = detail.removeprefix(f"{SETUP}: ").rsplit("; fix: ", 1)
        return f"Not the package's fault: {what}. Fix the scanning machine: {fix[:300]}."
    if outcome in _PACKAGE_STEPS:
        return _PACKAGE_STEPS[outcome](server, detail)
    steps = {
        "timeout": "Scan again with a longer deadline: fathom scan … --timeout 60 (and --connect-timeout for a slow "
        "start).",
        "connect_error": "Check that the URL answers (it may be down, or its host may no longer resolve); fathom "
        "scan … --retries 2 retries a flaky host.",
        "http_error": "The server answered with an HTTP error: check its URL and whether it needs a header.",
        "spawn_error": "The command could not start: check that it exists on the scanning machine.",
        "protocol_error": "The server broke the MCP protocol: tell its author; fathom check --url URL shows the "
        "answer.",
        "invalid_response": "The server's answer was not valid MCP: tell its author; fathom check --url URL shows "
        "the answer.",
    }
    return steps.get(outcome, "Read the detail above; scan again with fathom scan … --retries 2.")


def _said(detail: str) -> str:
    """The evidence to quote: the detail, shortened (it is the package's or installer's own line)."""
    text = detail.strip() or "(nothing said)"
    return f"“{text[:200]}{'…' if len(text) > 200 else ''}”"


_RUNNERS = {"npx": "Node.js", "bunx": "Bun", "pnpx": "pnpm", "uvx": "uv", "docker": "Docker", "podman": "Podman"}
_PYTHON_NEEDED = re.compile(r"needs Python (\S+) \(")
_NO_INTERPRETER = re.compile(r"No interpreter found for Python (\S+) in")
_UV_FIND_SAID = re.compile(r"`uv python find [^`]*` said: (.+?)\):")
_BROKEN_PYTHON = re.compile(r"Failed to (inspect|query) Python interpreter|failed with exit status|does not run")
_RUNNER_NAMED = re.compile(r"^(?:runner missing: )?([\w.-]+) (?:could not be started|is not on PATH)")


def _runner_step(_server: str, detail: str) -> str:
    needed = _PYTHON_NEEDED.search(detail) or _NO_INTERPRETER.search(detail)
    if needed and "the package's own user cannot reach" in detail:  # run as root: a Python only root can reach
        version = re.sub(r"^[<>=~!]+", "", needed.group(1).split(",", 1)[0])
        return (
            f"A Python {needed.group(1)} is installed, but where only root can reach it (a private HOME): run as "
            "root, Fathom runs each package as a user of its own, so it cannot reach that interpreter (not the "
            f"package's fault). Install one outside root's private folders: UV_PYTHON_INSTALL_DIR=<cache>/uv-python "
            f"uv python install {version} (the package cache's folder, /var/cache/fathom for root unless "
            f"--cache-dir says), or the system's python{version}; or run Fathom as an ordinary user. Then scan again."
        )
    uv_said = _UV_FIND_SAID.search(detail)
    if (needed or "no usable Python interpreter" in detail) and _BROKEN_PYTHON.search(detail):
        said = uv_said.group(1) if uv_said else detail.split(": ", 1)[-1]
        return (
            "This host's Python is broken, not the package: uv stopped at an interpreter it could not run "
            f"({said[:300]}). Fix or take that interpreter off PATH (a pyenv shim needs `pyenv global` to list "
            "the version), then scan again."
        )
    if needed:
        version = re.sub(r"^[<>=~!]+", "", needed.group(1).split(",", 1)[0])
        said = uv_said.group(1) if uv_said else detail.split(": ", 1)[-1] if "uv found" in detail else ""
        said = f" uv said: {said[:200]}." if said else ""
        return (
            f"This host has no Python {needed.group(1)}, which the package requires (not the package's fault): "
            f"install one (uv python install {version}, or a python{version} on PATH) and scan again.{said}"
        )
    if "daemon does not answer" in detail or "Docker daemon" in detail:
        return f"Start the container daemon on the scanning machine (not the package's fault): {_said(detail)}."
    named = _RUNNER_NAMED.search(detail)
    if named is not None:
        runner = named.group(1)
        source = _RUNNERS.get(runner)
        return f"Install {runner}{f' (from {source})' if source else ''} on the scanning machine, then scan again."
    return f"A runner this host lacks: {_said(detail)}; install it on the scanning machine."


_DISK = re.compile(r"(\d+) MiB disk budget")
_ANSWER = re.compile(r"more than (\d+) tools|after (\d+) pages|over (\d+) bytes")


def _too_large_step(_server: str, detail: str) -> str:
    disk = _DISK.search(detail)
    if disk is not None:
        budget = int(disk.group(1))
        return (
            f"Fathom's own disk budget ({budget:,} MiB) stopped the install, not the package: scan with fathom "
            f"scan … --run-packages --disk-limit-mb {budget * 2} (a larger budget installs it again; "
            "--retry-too-large retries it at the same budget)."
        )
    answer = _ANSWER.search(detail)
    flag = "--max-bytes"
    if answer is not None:
        flag = "--max-tools" if answer.group(1) else "--max-pages" if answer.group(2) else "--max-bytes"
    return (
        f"Its tool list is larger than a scan reads ({detail[:120]}): ask its author to trim it; fathom check "
        f"--url URL {flag} N reads a larger one."
    )


_MEMORY = re.compile(r"the (\d+) MiB memory limit")


def _memory_step(_server: str, detail: str) -> str:
    found = _MEMORY.search(detail)
    limit = int(found.group(1)) if found else 1024
    return (
        f"Fathom's own memory limit ({limit:,} MiB) stopped it, not this host: scan with fathom scan … "
        f"--run-packages --memory-limit-mb {limit * 2}; if it still runs out, tell its author "
        f"({_said(detail.split('): ', 1)[-1])})."
    )


_OWN_CODE = re.compile(
    r"\b(ImportError|ModuleNotFoundError|SyntaxError|IndentationError|AttributeError|TypeError|NameError|"
    r"ReferenceError|ERR_MODULE_NOT_FOUND|ERR_REQUIRE_ESM|ERR_PACKAGE_PATH_NOT_EXPORTED|Cannot find module|"
    r"is not a function|is not defined|undefined symbol|Cannot use import statement)\b"
)
_UNSET = re.compile(r" \(([\w.-]+(?:, [\w.-]+)*) not set\)$")


def _crash_step(server: str, detail: str) -> str:
    unset = _UNSET.search(detail)
    line = detail[: unset.start()] if unset else detail
    if "with nothing on stderr" in detail:
        return f"It stopped before answering and said nothing: the package's fault, tell its author ({detail})."
    if _OWN_CODE.search(line):
        return f"It crashed in its own code: the package's fault, tell its author: {_said(line)}."
    if unset is not None:
        names = unset.group(1).split(", ")
        variables = ", ".join(secret_env_name(server, name) for name in names)
        return (
            f"It crashed: {_said(line)}. Its registry entry declares {', '.join(names)}, not set: if the line is "
            f"about it, set {variables} and scan again; otherwise it is the package's fault: tell its author."
        )
    return (
        f"It crashed: {_said(line)}. The package's fault unless the line names something this host lacks (a "
        "program, a file, a service): tell its author."
    )


_NO_EXECUTABLE = re.compile(r"provides no executable to run|could not determine executable|executable named")
_BUILD = re.compile(r"gyp ERR|Failed to build|subprocess-exited-with-error|build backend|error: command", re.I)
_NO_SOLUTION = re.compile(r"No solution found when resolving|we can conclude", re.I)
_URL_HOST = re.compile(r"https?://([A-Za-z0-9.-]+)")


def _mirror_step(detail: str) -> str:
    host = next(iter(_URL_HOST.findall(detail)), "the mirror")
    return (
        f"The package index mirror this host uses ({host}) lacks it or failed, not the package: check the mirror "
        f"(npm_config_registry, UV_INDEX_URL) and scan again: {_said(detail)}."
    )


def _install_step(_server: str, detail: str) -> str:
    whose = fault("install_failed", detail)
    if whose == "mirror":
        return _mirror_step(detail)
    if whose == "host":
        return (
            "The network or TLS between this host and the package index failed, not the package: check this "
            f"host's network, proxy and CA bundle (they pass to the installer already), then scan again: "
            f"{_said(detail)}."
        )
    if _NO_EXECUTABLE.search(detail):
        return (
            "It installs, but has no executable of its name for the runner to start: the package's fault, tell its "
            f"author (the registry entry's identifier, or the package's bin/scripts): {_said(detail)}."
        )
    if _NO_SOLUTION.search(detail):
        return (
            f"Its dependencies cannot be resolved as published: the package's fault, tell its author: {_said(detail)}."
        )
    if _BUILD.search(detail):
        return (
            "A build step failed: the package's fault unless the line names a compiler or library this host lacks; "
            f"tell its author: {_said(detail)}."
        )
    return (
        f"Installing it failed: {_said(detail)}. The package's fault unless the line names this host: tell its author."
    )


def _not_found_step(_server: str, detail: str) -> str:
    if fault("package_not_found", detail) == "mirror":
        return _mirror_step(detail)
    return (
        "Its registry entry names a package or version the index does not have: the publisher's fault, tell its "
        f"author to fix server.json: {_said(detail)}."
    )


_PACKAGE_STEPS = {
    "runner_missing": _runner_step,
    "too_large": _too_large_step,
    "memory_limit": _memory_step,
    "crashed": _crash_step,
    "exited": _crash_step,
    "install_failed": _install_step,
    "package_not_found": _not_found_step,
}


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
_DECLARED_UNSET = re.compile(r"^needs ([\w.-]+(?:, [\w.-]+)*) \(not set\)$")
_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b")
_ARGUMENT = re.compile(
    r"\bargument|^needs one of |^needs a command \(|^needs -|\bUsage:|the following arguments are required", re.I
)


def _configure_step(server: str, detail: str) -> str:
    named = _NAMED.search(detail)
    if named is not None:  # the reason already names the variable (scanner.registry.packages)
        return f"Set {named.group(1)} and scan again."
    declared = _DECLARED_UNSET.match(detail.strip())
    if declared is not None:  # declared inputs left unset: Fathom passes them from these variables
        variables = ", ".join(secret_env_name(server, name) for name in declared.group(1).split(", "))
        return f"Set {variables} and scan again."
    match = _NEEDED.search(detail)
    if match is not None:  # the registry entry's own argument, resolved by Fathom
        return f"Set {secret_env_name(server, match.group(1))} and scan again."
    # The package's own output asks for it: an input its registry entry does not declare, which no
    # FATHOM_SECRET_… variable reaches.
    variable = next((name for name in _VARIABLE.findall(detail) if not name.startswith("FATHOM_")), None)
    if _ARGUMENT.search(detail):
        return (
            "It asks for a command-line argument its registry entry does not declare: the package's fault, tell "
            f"its author to declare it in server.json's packageArguments: {_said(detail)}."
        )
    if variable is not None:
        return (
            f"It asks for {variable}, which its registry entry does not declare: the package's fault, tell its "
            f"author to declare it in server.json ({_said(detail)}). To try now: set {variable} and scan with "
            f"--pass-env {variable}."
        )
    return (
        "It needs configuration its registry entry does not declare: the package's fault, tell its author: "
        f"{_said(detail)}."
    )
