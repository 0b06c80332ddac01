"""Why a package did not answer, in one line that reads the same every night.

A package's failure arrives from the MCP client as ``exited`` / ``spawn_error`` / ``timeout`` with the last
lines of its stderr. :func:`classify` turns that into the outcome a person can act on:

==========================  ===========================================================================
``runner_missing``          the runner (npx, uvx, docker) could not be started
``package_not_found``       the registry has no such package, or not at the declared version
``install_failed``          the package exists but could not be installed (network, TLS, build, no binary)
``needs_configuration``     it stopped asking for a variable, argument, subcommand or file, as its own
                            output says (argparse/click usage, pydantic "Field required", an error line);
                            a declared required input that is unset decides only when it said nothing
``crashed``                 it started and died: the most telling line (a traceback's last line, an
                            ``Error:`` line), never an npm notice or a pointer to a log file
``memory_limit``            it ran out of memory under Fathom's own cap (``--memory-limit-mb``)
``refused``                 it tried to write outside its HOME and its own cache folder (confined)
``crashed`` (no network)    its run had only its own loopback (no slirp4netns): a connection or name lookup
                            it needed failed for want of a network ("stopped for want of a network ...")
``timeout``                 no answer in time (kept; the detail gets the telling line when there is one)
==========================  ===========================================================================

:func:`normalise` takes the entry's temporary folder, the cache, other absolute paths under temporary or home
folders, temporary names, timestamps, durations and process ids out of a message, so one failure groups with
itself across nights. Secret values the package was given are blanked before anything is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from scanner import confine
from scanner.models import SETUP_FAULT, Outcome, ScanOutcome, ServerEntry

MAX_DETAIL = 300

# --- normalisation ---------------------------------------------------------------------------------------

# ISO times, and npm's log names (``2026-12-01T11_12_15_350Z-debug-0.log``: underscores for colons and dot).
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}[:_]\d{2}([:_]\d{2}([._]\d+)?)?(Z|[+-]\d{2}:?\d{2})?(?![\d])|"
    r"\b\d{2}:\d{2}:\d{2}(\.\d+)?\b"
)
# uv's cache entries are named by random ids (``archive-v0/zYBgjnV1wjGx3yKOQm5xq``), its temporary folders
# ``.tmpAbC123``.
_UV_ID = re.compile(r"\b((?:archive|builds|environments|sdists|wheels|interpreter)-v\d+)/[A-Za-z0-9_-]{6,}")
_TMP_NAME = re.compile(r"\.tmp[A-Za-z0-9_]{4,}\b")
_TEMP_PATH = re.compile(r"(/(?:private/)?(?:tmp|var/folders|var/tmp)/[^\s'\"():,]*)")
_HOME_PATH = re.compile(r"(/(?:home|Users)/[^/\s'\"():,]+|/root)(?=/|\b)")
_HEX_RUN = re.compile(r"\b[0-9a-f]{12,}\b")
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|s)\b")
_PID = re.compile(r"\b(pid|PID|process)\s*[:=]?\s*\d+\b")
_SPACES = re.compile(r"\s+")


def normalise(text: str, places: Iterable[tuple[str, str]] = ()) -> str:
    """``text`` without what changes from night to night: known folders become ``<home>`` / ``<cache>``, other
    temporary paths ``<tmp>``, home folders ``~``, timestamps ``<time>`` (npm's log names too), uv's random
    cache ids ``<id>``, durations ``<n>s``, hex runs
    (temporary and content hashes) ``<hash>``, process ids ``pid <n>``."""
    for path, label in sorted(places, key=lambda item: len(item[0]), reverse=True):
        if path:
            text = text.replace(path, label)
    text = _TIMESTAMP.sub("<time>", text)
    text = _UV_ID.sub(lambda m: f"{m.group(1)}/<id>", text)
    text = _TMP_NAME.sub(".tmp<id>", text)
    text = _TEMP_PATH.sub("<tmp>", text)
    text = _HOME_PATH.sub("~", text)
    text = _HEX_RUN.sub("<hash>", text)
    text = _DURATION.sub(lambda m: f"<n>{m.group(2)}", text)
    text = _PID.sub(lambda m: f"{m.group(1)} <n>", text)
    return _SPACES.sub(" ", text).strip()


# --- recognising causes ----------------------------------------------------------------------------------

# Lines that are never the cause: npm's notices, warnings and log pointers, stack frames, blank decoration.
_NOISE = re.compile(
    r"^(npm (notice|warn|WARN|http|timing|verb)\b|npm error (A complete log|code\b|errno\b|syscall\b|path\b|"
    r"command\b|signal\b|Log files)|npm ERR! (A complete log|code|errno)|\s*at\s|\s*\^+\s*$|node:internal|"
    r"Node\.js v\d|-+$|\s*File \"|Traceback \(most recent call last\)|\s*\.\.\.\s*$|  +\S)"
)
# Only the runners' own phrasing: a server that hits a 404 or a refused connection of its own at start-up has
# crashed (or needs configuration), it was not "not found" or "not installed".
_NOT_FOUND = re.compile(
    r"npm (error|ERR!) 404|E404|ETARGET|No matching version found|is not in (this|the npm) registry|"
    r"not found in the package registry|no version of [\w.\[\]-]+==|Because there is no version|"
    r"versions? of [\w.-]+ (is|are) not available|manifest unknown|pull access denied|repository does not exist",
    re.IGNORECASE,
)
_INSTALL = re.compile(
    r"npm (error|ERR!) (network|request to|code (ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENOSPC|"
    r"EACCES|EINTEGRITY|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN|CERT_\w+))|"
    r"npm (error|ERR!) .*(unable to get local issuer certificate|self[- ]signed certificate)|"
    r"npm (error|ERR!) (\w*Error: )?request to \S+ failed|"
    r"could not determine executable to run|An executable named .* is not provided|invalid peer certificate|"
    r"Failed to (download|fetch|build|prepare|install|resolve)|No solution found when resolving|gyp ERR|"
    r"subprocess-exited-with-error|requires a different Python|No interpreter found|"
    r"Cannot connect to the Docker daemon|error pulling image",
    re.IGNORECASE,
)
_CONFIG = re.compile(
    r"(environment variable|env var|API[_ ]?key|token|credential|config(uration)? file|\.env\b).{0,60}"
    r"(required|not set|missing|must be (set|provided)|is not defined|not found|not provided|undefined)|"
    r"(missing|required|no|please set|please provide|set the).{0,40}(environment variable|API[_ ]?key|token|"
    r"credential)|KeyError: '[A-Z][A-Z0-9_]+'|Field required|the following arguments are required|"
    r"missing required (argument|option)|required option|error: missing|ENOENT: no such file or directory, open|"
    r"No such file or directory: '[^']*\.(json|ya?ml|toml|env|ini|cfg|conf)'|"
    # An argument request in words: "Please provide a database URL as a command-line argument".
    r"(please|must|need to|you need to) (provide|pass|give|specify|supply)\b.{0,80}\b(argument|parameter)s?\b|"
    r"\b(as|via) an? command[- ]line argument",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"^(\w+\.)*\w*(Error|Exception|Exit|Interrupt|Fault)\b(:|$)|\bError:|^error(\[\w+\])?:|^fatal:|^panic:|"
    r"npm error (?!A complete log|code\b|errno\b|syscall\b|path\b|command\b|signal\b)\S",
    re.IGNORECASE,
)


def _meaningful(lines: Sequence[str]) -> list[str]:
    return [line.rstrip() for line in lines if line.strip() and not _NOISE.match(line)]


def telling_line(lines: Sequence[str]) -> str | None:
    """The line that says most: a traceback's last line, else the last ``Error:``-like line, else the last line
    that is not noise (npm notices, log pointers, stack frames)."""
    raw = [line.rstrip() for line in lines]
    for index in range(len(raw) - 1, -1, -1):
        if raw[index].startswith("Traceback (most recent call last)"):
            after = _meaningful(raw[index + 1 :])
            errors = [line for line in after if _ERROR_LINE.search(line.strip())]
            if errors:
                return errors[-1].strip()
            if after:
                return after[-1].strip()
    meaningful = _meaningful(raw)
    errors = [line for line in meaningful if _ERROR_LINE.search(line.strip())]
    if errors:
        # npm prints the cause first ("npm error 404 Not Found ...") and pointers after; keep the first of the
        # last run of error lines that says something.
        return errors[-1].strip() if not errors[-1].lower().startswith("npm error") else _npm_cause(errors)
    return meaningful[-1].strip() if meaningful else None


def _npm_cause(errors: list[str]) -> str:
    for line in errors:
        if _NOT_FOUND.search(line) or _INSTALL.search(line):
            return line.strip()
    return errors[0].strip()


_NPM_CHATTER = re.compile(r"^\s*npm (notice|warn|error (code|errno|A complete log|Log files))\b", re.IGNORECASE)


def _first(pattern: re.Pattern[str], lines: Sequence[str]) -> str | None:
    """The first line matching ``pattern`` that is not npm's chatter (a notice, a code, a log pointer), else the
    first matching line at all (``npm error code ENOTFOUND`` when npm said nothing more)."""
    matching = [line.strip() for line in lines if pattern.search(line)]
    said = [line for line in matching if not _NPM_CHATTER.match(line)]
    chosen = said or matching
    return chosen[0] if chosen else None


# --- Fathom's own setup ----------------------------------------------------------------------------------

SETUP = SETUP_FAULT
"""How a detail starts when a child failed because of where or how Fathom started it (issue 48): its runner,
the runner's interpreter or the package cache out of its user's reach. Such an outcome counts as this host's
(:func:`scanner.report.census.fault`) and its next step is the fix the detail names."""

REACH_FIX = "install it where every user can reach it (system-wide, not under a 0700 folder such as /root)"


def setup_detail(what: str, fix: str) -> str:
    """The detail of a failure that is Fathom's setup's: what the child could not reach, and the fix."""
    return f"{SETUP}: {what}; fix: {fix}"


# The launcher's, ``env``'s and the confinement's own words when the kernel refused to start a program for the
# child's user (a folder above it it may not enter): never the package's own doing.
_NOT_STARTED = re.compile(
    r"^(?:/usr/bin/env|/bin/env|env): ['‘]?([^'‘’:]+?)['’]?: Permission denied$|"
    r"^(?:confine: failed to execute|fathom: cannot start) (\S+): Permission denied$"
)


# Python's own words when the script it was handed is out of the child's user's reach (exit code 2).
_SCRIPT_DENIED = re.compile(r"^\S*python[\d.]*: can't open file '?([^']+?)'?: \[Errno 13\] Permission denied$")


def _setup_failure(tail: Sequence[str], code: object) -> str | None:
    """The setup detail when the child's user could not start a program (exit 126 or 127 with the line that
    says so) or open the script it was handed (Python's exit 2), else None."""
    for line in reversed(tail):
        text = line.strip()
        if code in (126, 127) and (found := _NOT_STARTED.match(text)):
            program = found.group(1) or found.group(2)
            what = f"the child's user cannot start {program} (Permission denied: out of its reach)"
            return setup_detail(what, REACH_FIX)
        if code == 2 and (found := _SCRIPT_DENIED.match(text)):
            what = f"the child's user cannot open {found.group(1)} (Permission denied: out of its reach)"
            return setup_detail(what, REACH_FIX)
    return None


# --- classification --------------------------------------------------------------------------------------

_CLASSIFIED = frozenset({Outcome.EXITED, Outcome.SPAWN_ERROR, Outcome.TIMEOUT})


def classify(
    entry: ServerEntry,
    outcome: ScanOutcome,
    *,
    places: Iterable[tuple[str, str]] = (),
    secrets: Iterable[str] = (),
) -> ScanOutcome:
    """``outcome`` of a package run, reclassified and with its detail and stderr tail normalised.

    ``places`` are (path, label) pairs to name in messages (the entry's HOME as ``<home>``, the cache as
    ``<cache>``); ``secrets`` are values the package was given that must not be kept. An ok outcome, or one the
    client already named precisely (too_large, auth_required, protocol-level failures after start), only gets
    its texts cleaned.
    """
    places = list(places)
    hidden = sorted((value for value in secrets if len(value) >= 6), key=len, reverse=True)

    def clean(text: str) -> str:
        for value in hidden:
            text = text.replace(value, "<secret>")
        return normalise(text, places)

    tail_raw = outcome.extra.get("stderr_tail")
    tail = [clean(str(line)) for line in tail_raw] if isinstance(tail_raw, list) else []
    extra: dict[str, Any] = {**outcome.extra}
    if tail:
        extra["stderr_tail"] = tail
    if outcome.ok or outcome.outcome not in _CLASSIFIED:
        return replace(outcome, detail=clean(outcome.detail)[:MAX_DETAIL], extra=extra)
    status, detail = _cause(entry, outcome, tail, clean)
    extra["client_outcome"] = outcome.outcome.value
    return replace(outcome, outcome=status, detail=detail[:MAX_DETAIL], extra=extra)


_NO_EXECUTABLE = re.compile(
    r"could not determine executable to run|An executable named .* is not provided|"
    r"does not provide any executables|The executable `?[\w.-]+`? was not found",
    re.IGNORECASE,
)
_UV_NO_SOLUTION = re.compile(r"No solution found when resolving", re.IGNORECASE)
# uv could not use an interpreter it found (a broken pyenv shim, a deleted venv) or found none at all.
_UV_INTERPRETER = re.compile(
    r"Failed to (inspect|query) Python interpreter|Querying Python at .* failed|No interpreter found for Python|"
    r"No Python interpreter found|No interpreter found",
    re.IGNORECASE,
)
# uv's own error lines: "error: ..." / "warning: ..." (never a package's "prog: error: ..."), and its causes.
_UV_ERROR = re.compile(r"^\W*(error|warning):\s+\S")
_UV_CAUSED = re.compile(r"^\s*(Caused by|cause):\s+\S")


def uv_error(lines: Sequence[str], skip: re.Pattern[str] | None = None) -> str | None:
    """uv's own last error (or warning) line with its last ``cause:`` line and the first line of the ``[stderr]``
    it quotes (``error: Failed to inspect Python interpreter ...; cause: Querying Python at ... failed ...;
    pyenv: python3.12: command not found``), or None when uv said none; ``skip`` leaves out lines already kept
    elsewhere (the "No solution found" head)."""
    for index in range(len(lines) - 1, -1, -1):
        text = lines[index].strip()
        if not _UV_ERROR.match(text) or (skip is not None and skip.search(text)):
            continue
        causes: list[str] = []
        quoted: str | None = None
        after = [line.strip() for line in lines[index + 1 :]]
        for position, line in enumerate(after):
            if _UV_CAUSED.match(line):
                causes.append(line)
            elif line == "[stderr]":
                quoted = next((said for said in after[position + 1 :] if said), None)
                break
            elif line:
                break
        parts = [re.sub(r"^\W*(?=(error|warning):)", "", text), *causes[-1:], *([quoted] if quoted else [])]
        return "; ".join(parts)
    return None


# uv's explanation under "No solution found": an indented "╰─▶ Because ..." line (arrows vary by terminal).
# uv's explanation under "No solution found": "╰─▶ Because ..." on a terminal, "cause: Because ..." otherwise.
_UV_BECAUSE = re.compile(r"^\W*(cause:\s*)?(Because|And because|the current Python version)\b", re.IGNORECASE)
_SPEC = r"([<>=!~][^\s,;]+(?:,\s*[<>=!~][^\s,;]+)*)"
_PYTHON_NEEDED = re.compile(
    rf"current Python version \(([\d.]+)\) does not satisfy Python\s*{_SPEC}|\brequires Python\s*{_SPEC}",
    re.IGNORECASE,
)
_MEMORY = re.compile(
    r"\bMemoryError\b|JavaScript heap out of memory|Fatal process out of memory|Allocation failed|"
    r"\bENOMEM\b|Cannot allocate memory|std::bad_alloc|out of memory",
    re.IGNORECASE,
)
# A fork or thread refused (EAGAIN) at the cap on a child's processes: Python's, node's, a shell's, Rust's words.
_PROCESSES = re.compile(
    r"\bspawn \S+ EAGAIN\b|\bCannot fork\b|\bfork: (retry: )?Resource temporarily unavailable|"
    r"can't start new thread|pthread_create\b.*(EAGAIN|Resource temporarily unavailable)|"
    r"(spawn|thread)\S*\b.*Resource temporarily unavailable \(os error 11\)",
    re.IGNORECASE,
)
# Python's EAGAIN is also a non-blocking socket's: it counts only with a fork or thread start in its traceback.
_PY_EAGAIN = re.compile(r"BlockingIOError: \[Errno 11\]")
_PY_FORKED = re.compile(r"\bos\.fork\(|_fork_exec\(|in _execute_child|\bos\.spawn|start_new_thread|\.start\(\)")


# A connection or lookup that failed because there is no network at all (a stdio child's run has only its own
# loopback): the kernel's "Network is unreachable" (ENETUNREACH), a name lookup with no server to ask (glibc's
# EAI_AGAIN "Temporary failure in name resolution", node's "getaddrinfo EAI_AGAIN"), node's "connect ENETUNREACH".
_NO_NETWORK = re.compile(
    r"ENETUNREACH|Network is unreachable|\bEAI_AGAIN\b|Temporary failure in name resolution|"
    r"\[Errno -3\]|No address associated with hostname",
    re.IGNORECASE,
)
NO_NETWORK = "stopped for want of a network (its run has only its own loopback)"
"""How a package's or a command's detail starts when it failed to reach the network in a network namespace of its
own with no route out (:func:`scanner.confine.own_network`, no :func:`scanner.confine.outbound`): Fathom's
policy, not the package's fault."""


def no_network(outcome: ScanOutcome) -> ScanOutcome:
    """A command's ``outcome`` (``--run-commands``: not classified as a package's) recorded as stopped for want of
    a network when it ran with only its own loopback (``extra["offline"]``) and failed on a connection or name
    lookup (:data:`NO_NETWORK`); else unchanged."""
    tail = outcome.extra.get("stderr_tail")
    if outcome.outcome is not Outcome.EXITED or not outcome.extra.get("offline") or not isinstance(tail, list):
        return outcome
    found = _first(_NO_NETWORK, [str(line) for line in tail])
    if found is None:
        return outcome
    extra = {**outcome.extra, "client_outcome": outcome.outcome.value}
    return replace(outcome, outcome=Outcome.CRASHED, detail=f"{NO_NETWORK}: {found}"[:MAX_DETAIL], extra=extra)


def _process_cap(tail: Sequence[str]) -> str | None:
    """The line that shows a fork or thread refused at the cap on a child's processes, or None."""
    if found := _first(_PROCESSES, tail):
        return found
    if (found := _first(_PY_EAGAIN, tail)) and any(_PY_FORKED.search(line) for line in tail):
        return found
    return None


_DENIED = re.compile(r"\bEACCES\b|\bEPERM\b|\bEROFS\b|PermissionError|Permission denied", re.IGNORECASE)
# argparse: "error: one of the arguments --a --b is required" / "the following arguments are required: x, y".
_ARGPARSE_ONE_OF = re.compile(r"error: one of the arguments (.+?) is required")
_ARGPARSE_REQUIRED = re.compile(r"error: the following arguments are required: (.+)$")
_USAGE = re.compile(r"^\s*Usage:\s", re.IGNORECASE)
# "Commands:" (click, argparse) or typer's boxed "╭─ Commands ───╮".
_COMMANDS = re.compile(
    r"^\s*(?:[╭┌+][─-]+\s*)?(Commands|Available commands|Subcommands)\b:?\s*[─-]*[╮┐+]?\s*$", re.IGNORECASE
)
_MISSING_COMMAND = re.compile(r"Missing command|No such command|requires a (sub)?command", re.IGNORECASE)
_FIELD_REQUIRED = re.compile(r"^\s*Field required\b")
_VALIDATION_HEAD = re.compile(r"validation errors? for (\w+)")


def _commands_listed(lines: Sequence[str]) -> list[str]:
    """The subcommand names a click/typer/argparse group printed under ``Commands:`` (one per line, up to a
    blank line or the next section; the tail's lines are already stripped of their indentation)."""
    names: list[str] = []
    listing = False
    for line in lines:
        text = line.strip().strip("│|").strip()
        if _COMMANDS.match(text):
            listing = True
            continue
        if not listing:
            continue
        if not text or text.endswith(":") or text.startswith(("╰", "└", "+-", "-")):
            if names:
                break
            continue
        word = text.split(" ", 1)[0]
        if not re.fullmatch(r"[A-Za-z][\w.-]*", word):
            break
        names.append(word)
    return names


def _pydantic_fields(lines: Sequence[str]) -> list[str]:
    """The fields pydantic reported as ``Field required`` (the line above each names the field)."""
    fields: list[str] = []
    for index, line in enumerate(lines):
        if _FIELD_REQUIRED.match(line) and index > 0:
            name = lines[index - 1].strip()
            if name and re.fullmatch(r"[\w.\[\]-]+", name) and name not in fields:
                fields.append(name)
    return fields


def _configuration(lines: Sequence[str], line: str | None) -> str | None:
    """What is missing, when the evidence (usage text, argparse, pydantic, the telling line) says so."""
    for text in reversed(lines):
        if found := _ARGPARSE_ONE_OF.search(text):
            options = ", ".join(found.group(1).split())
            return f"needs one of {options}: {text.strip()}"
        if found := _ARGPARSE_REQUIRED.search(text):
            return f"needs {found.group(1).strip()}: {text.strip()}"
    fields = _pydantic_fields(lines)
    if fields and any(_VALIDATION_HEAD.search(text) for text in lines):
        return f"needs {', '.join(fields)} (Field required): {line or 'validation error'}"
    usage = any(_USAGE.match(text) for text in lines)
    if (
        usage
        and (commands := _commands_listed(lines))
        and (line is None or not _ERROR_LINE.search(line) or _MISSING_COMMAND.search(line))
    ):
        return f"needs a command ({', '.join(commands[:8])}): printed its usage and stopped"
    if line is not None and _CONFIG.search(line):
        return line
    return None


def _cause(entry: ServerEntry, outcome: ScanOutcome, tail: list[str], clean: Any) -> tuple[Outcome, str]:
    """The cause, from evidence first: the runner's and installer's own messages, a memory error under Fathom's
    limit, a write refused by the confinement, usage text and configuration errors, then the telling line
    (a traceback's last line decides "crashed"); a declared input that is unset only speaks when the package
    said nothing at all."""
    package = entry.package or {}
    runner = str(package.get("runner") or (entry.command[0] if entry.command else "runner"))
    code = outcome.extra.get("exit_code")
    if setup := _setup_failure(tail, code):
        return Outcome.RUNNER_MISSING, setup
    if outcome.outcome is Outcome.SPAWN_ERROR or (
        code == 127 and any("failed to execute" in line or "No such file" in line for line in tail[-3:])
    ):
        return Outcome.RUNNER_MISSING, f"{runner} could not be started"
    line = telling_line(tail)
    if outcome.outcome is Outcome.TIMEOUT:
        base = clean(outcome.detail).split("; last stderr line:", 1)[0]
        return Outcome.TIMEOUT, f"{base}; {line}" if line else base
    spec = str(package.get("spec") or "the package")
    if outcome.extra.get("offline") and (found := _first(_NO_NETWORK, tail)):
        return Outcome.CRASHED, f"{NO_NETWORK}: {found}"
    if (said := uv_error(tail)) and said.startswith("error:") and _UV_INTERPRETER.search(said):
        # uv stopped at an interpreter (a broken pyenv shim) or found none: this host's, said in uv's words
        return Outcome.RUNNER_MISSING, f"uv found no usable Python interpreter on this host: {said}"
    if found := _first(_NOT_FOUND, tail):
        return Outcome.PACKAGE_NOT_FOUND, f"{spec} not found: {found}"
    if found := _first(_NO_EXECUTABLE, tail):
        return Outcome.INSTALL_FAILED, f"{spec} provides no executable to run: {found}"
    if found := _first(_UV_NO_SOLUTION, tail):
        return _no_solution(found, tail)
    if found := _first(_INSTALL, tail):
        return Outcome.INSTALL_FAILED, _with_installer_line(found, tail)
    if found := _first(_MEMORY, tail):
        limit = package.get("memory_limit_mb")
        cap = f"the {limit} MiB memory limit" if limit else "Fathom's memory limit"
        return Outcome.MEMORY_LIMIT, f"ran out of memory under {cap} (raise it with --memory-limit-mb): {found}"
    if confine.namespaces()[0] and (found := _process_cap(tail)):
        most = confine.MAX_PROCESSES
        return Outcome.CRASHED, f"stopped at Fathom's cap of {most} processes and threads per child: {found}"
    if outcome.extra.get("confined") and (found := _first(_DENIED, tail)):
        return Outcome.REFUSED, f"refused: wrote outside its HOME and its own cache folder: {found}"
    if needed := _configuration(tail, line):
        return Outcome.NEEDS_CONFIGURATION, needed
    missing = [*package.get("missing_inputs", []), *entry.secret_header_names]
    if line:
        unset = f" ({', '.join(map(str, missing))} not set)" if missing else ""
        return Outcome.CRASHED, f"{line}{unset}"
    if missing:
        return Outcome.NEEDS_CONFIGURATION, f"needs {', '.join(map(str, missing))} (not set)"
    ended = f"exited with code {code}" if code is not None else "closed its output"
    return Outcome.CRASHED, f"{ended} before answering, with nothing on stderr"


_NPM_ERROR = re.compile(
    r"^\s*npm (error|ERR!) (?!code\b|errno\b|syscall\b|A complete log|Log files|404 Note|404\s*$|at\s|[{}])\S"
)


def npm_error(lines: Sequence[str]) -> str | None:
    """npm's own last error line that says something (never its code, a log pointer or a 404 footnote)."""
    said = [line.strip() for line in lines if _NPM_ERROR.match(line)]
    return said[-1] if said else None


def _with_installer_line(found: str, tail: Sequence[str]) -> str:
    """``found`` with the installer's own last error line beside it when ``found`` is another tool's line (a
    compiler's, node-gyp's), so the detail keeps what npm or uv said; uv's own line with its last cause, so a TLS
    failure says which certificate check failed, not only "Failed to fetch"."""
    if _UV_ERROR.match(found):  # uv's line with its last cause ("invalid peer certificate: UnknownIssuer")
        return uv_error(tail) or found
    if _NPM_ERROR.match(found):
        return found
    own = npm_error(tail) or uv_error(tail)
    return f"{found}; {own}" if own and own not in found else found


def python_needed(outcome: ScanOutcome) -> str | None:
    """The ``requires-python`` that uv said the interpreter it took does not satisfy (``>=3.12``), or None."""
    tail = outcome.extra.get("stderr_tail")
    if not isinstance(tail, list):
        return None
    found = _PYTHON_NEEDED.search(" ".join(str(line) for line in tail))
    return (found.group(2) or found.group(3)).replace(" ", "") if found else None


def _no_solution(found: str, tail: list[str]) -> tuple[Outcome, str]:
    """uv could not resolve: keep its reason ("Because ..."), and say when a newer Python is what it needs."""
    start = next((index for index, text in enumerate(tail) if _UV_NO_SOLUTION.search(text)), 0)
    said = next((text.strip() for text in tail[start + 1 :] if _UV_BECAUSE.match(text.strip())), None)
    because = re.sub(r"^\W*(cause:\s*)?", "", said, flags=re.IGNORECASE) if said else None
    python = _PYTHON_NEEDED.search(" ".join(tail))
    if python:
        had = f"uv had {python.group(1)}; " if python.group(1) else ""
        needed = (python.group(2) or python.group(3)).replace(" ", "")
        said = uv_error(tail, skip=_UV_NO_SOLUTION)
        uv_said = f" (uv: {said})" if said else ""
        return Outcome.RUNNER_MISSING, (
            f"needs Python {needed} ({had}no installed interpreter satisfies it){uv_said}: {because or found}"
        )
    head = re.sub(r"^\W*(error:\s*)?", "", found, flags=re.IGNORECASE).rstrip(":")
    return Outcome.INSTALL_FAILED, f"{head}: {because}" if because else head
