"""``fathom check``: one tool list, its cost, findings and score, with the CI gates."""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scanner import exitcodes  # the one table of exit codes (a light module)
from scanner.models import ProviderView  # the one table of provider names (a light module, no heavy imports)

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    from scanner.check import CheckResult
from scanner.cli.base import (
    _SETTINGS,
    ColorChoice,
    TransportChoice,
    _fail,
    _headers,
    _known_profile,
    _one_line,
    _seconds,
    _server_entry,
    app,
)


class CheckFormat(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"


def _codes(values: list[str] | None) -> tuple[str, ...]:
    """Rule code prefixes from repeatable, comma-separated flags (``--select MCP2,MCP401``)."""
    return tuple(part.strip().upper() for value in values or () for part in value.split(",") if part.strip())


def _colour() -> bool:
    """Colour for text output: --color always/never; for auto, FORCE_COLOR (not empty or 0) forces it, else a
    terminal without NO_COLOR or TERM=dumb gets it."""
    choice = _SETTINGS["color"]
    if choice is not ColorChoice.auto:
        return bool(choice is ColorChoice.always)
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if sys.stdout is None:  # a closed stdout: _out says so
        return False
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


@app.command(epilog=exitcodes.command_epilog("check"))
def check(
    tools_file: Annotated[
        str | None,
        typer.Option(
            "--tools-file",
            "-f",
            help="A tool list: a JSON array, {\"tools\": [...]}, or a JSON-RPC response. '-' reads standard input.",
            show_default=False,
        ),
    ] = None,
    url: Annotated[
        str | None, typer.Option(help="An MCP server URL (Streamable HTTP, falling back to legacy SSE).")
    ] = None,
    stdio: Annotated[
        str | None, typer.Option(help="A command that starts a stdio MCP server, e.g. 'npx -y pkg'.")
    ] = None,
    command: Annotated[
        list[str] | None, typer.Argument(help="Or the server command after '--': fathom check -- npx -y pkg")
    ] = None,
    example: Annotated[bool, typer.Option("--example", help="Check the bundled example tool list.")] = False,
    db: Annotated[
        str | None,
        typer.Option(
            "--db", help="With --server: a database written by fathom scan (a SQLite file or a SQLAlchemy URL)."
        ),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            metavar="NAME",
            help="Check this server's newest stored tool list in --db, as the leaderboard scores it.",
        ),
    ] = None,
    as_provider: Annotated[
        ProviderView | None,
        typer.Option(
            "--as",
            help="Print only the tools JSON this provider's API receives, and nothing else. gemini is what "
            "current Google-SDK clients send (parametersJsonSchema); gemini-openapi the parameters subset. A server "
            'that sends instructions gives {"tools": [...], "instructions": "..."} instead.',
        ),
    ] = None,
    fmt: Annotated[
        CheckFormat | None, typer.Option("--format", help="Output format (default text, or the config file's).")
    ] = None,
    strict: Annotated[bool, typer.Option(help="Exit 1 when there is at least one problem: --fail-on problem.")] = False,
    fail_on: Annotated[
        str | None,
        typer.Option(metavar="problem|warning|note", help="Exit 1 on a finding at this severity or worse (CI)."),
    ] = None,
    fail_on_new: Annotated[
        str | None,
        typer.Option(
            metavar="problem|warning|note",
            help="With --baseline: exit 1 on a finding new since the baseline at this severity or worse.",
        ),
    ] = None,
    fail_on_reject: Annotated[
        str | None,
        typer.Option(
            metavar="CLIENT[,CLIENT]",
            help="Exit 1 when a named client (claude-code, claude-desktop, anthropic-api, codex, cursor, gemini-cli, "
            "gemini-api, openai-api, vscode, windsurf; all: every one) would refuse the list or drop a tool.",
        ),
    ] = None,
    server_key: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="The server's name in a client's configuration: MCP809 checks the tool names clients build from "
            "it (mcp__NAME__tool). Default: the server's serverInfo.name.",
        ),
    ] = None,
    rules_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="Where docs/rules.md is published (absolute http(s) address): each SARIF rule links its section "
            "there (helpUri). Without it SARIF rules carry no helpUri.",
        ),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option(min=0, max=100, metavar="N", help="Exit 1 when the leaderboard score (0-100) is below N."),
    ] = None,
    max_tokens: Annotated[
        list[str] | None,
        typer.Option(
            metavar="N|PROVIDER=N|CLIENT:N",
            help="Exit 1 above N tokens per turn with the most expensive provider, with PROVIDER (anthropic, "
            "openai, ...), or sent at rest by CLIENT (codex, vscode, claude-code, ...: the 'Per client' rows) "
            "(repeatable).",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(help="Compare with this --save-baseline file; --fail-on then counts only new findings."),
    ] = None,
    max_increase: Annotated[
        str | None,
        typer.Option(metavar="PCT%|N", help="With --baseline: exit 1 when any provider's tokens grew more."),
    ] = None,
    save_baseline: Annotated[
        Path | None, typer.Option(help="Write the tool list, findings and costs here as a versioned JSON baseline.")
    ] = None,
    badge: Annotated[
        Path | None,
        typer.Option(help="Write a badge SVG here (score, tokens) and a shields.io endpoint .json beside it."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="A fathom.toml or pyproject.toml ([tool.fathom]); by default found from here upwards."),
    ] = None,
    write: Annotated[
        list[str] | None,
        typer.Option(
            metavar="FORMAT=PATH", help="Also write the check in this format to PATH (repeatable): sarif=fathom.sarif."
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="List every finding; by default a rule firing on more than 5 tools is shown once with its count "
            "(text and Markdown; JSON and SARIF always list every finding).",
        ),
    ] = False,
    all_tools: Annotated[
        bool,
        typer.Option(
            "--tools", help="List every tool's tokens per provider, most expensive first (not only the top five)."
        ),
    ] = False,
    preview: Annotated[
        bool,
        typer.Option(
            "--preview",
            help="Also show preview rules' findings, each marked preview (measured under 80 % right on real lists, "
            "or new). They never count in the score or a gate. Or preview = true in the config file.",
        ),
    ] = False,
    openai_strict: Annotated[
        bool,
        typer.Option(
            "--openai-strict",
            help='Also show whether OpenAI\'s strict mode ("strict": true) takes each tool, as sent and after the '
            "OpenAI Agents SDK's conversion (text, JSON, Markdown): a view, never a finding, in the score or a gate. "
            "Or openai-strict = true in the config file.",
        ),
    ] = False,
    select: Annotated[list[str] | None, typer.Option(help="Only these rule code prefixes (MCP2,MCP401).")] = None,
    ignore: Annotated[list[str] | None, typer.Option(help="Skip these rule code prefixes; wins over --select.")] = None,
    max_bytes: Annotated[
        int, typer.Option(min=1, max=1 << 30, help="Largest tool list or server answer read, in bytes.")
    ] = 32 << 20,
    timeout: Annotated[
        float,
        typer.Option(parser=_seconds, help="Deadline for the whole server check, in seconds (above 0, at most 86400)."),
    ] = 30.0,
    connect_timeout: Annotated[
        float, typer.Option(parser=_seconds, help="Deadline to connect or spawn, in seconds (above 0, at most 86400).")
    ] = 10.0,
    max_pages: Annotated[int, typer.Option(min=1, max=100_000, help="Most tools/list pages followed.")] = 100,
    max_tools: Annotated[int, typer.Option(min=1, max=1_000_000, help="Most tools accepted from one server.")] = 5000,
    max_line_bytes: Annotated[int, typer.Option(min=1, max=1 << 30, help="Longest stdio line read, in bytes.")] = 16
    << 20,
    header: Annotated[
        list[str] | None, typer.Option(help="An HTTP header 'Name: value' sent to the server (repeatable).")
    ] = None,
    bearer_env: Annotated[
        str | None,
        typer.Option(
            help="Send 'Authorization: Bearer <token>' with the token read from this environment "
            "variable (never printed or stored)."
        ),
    ] = None,
    env_names: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="NAME",
            help="Hand this environment variable to the stdio server (repeatable). A stdio server gets only what "
            "it is handed plus PATH, HOME, USER and the locale (docs/registry.md); the value is never printed.",
        ),
    ] = None,
    transport: Annotated[TransportChoice, typer.Option(help="HTTP transport to use.")] = TransportChoice.auto,
    profile: Annotated[
        str,
        typer.Option(
            help="Client-capability profile declared to the server: rich (roots, sampling, form elicitation; "
            "the default), full (also URL elicitation) or bare (nothing)."
        ),
    ] = "rich",
    save: Annotated[
        Path | None,
        typer.Option(help="Save the server's raw tools/list result here, for later --tools-file runs."),
    ] = None,
) -> None:
    """Check one tool list: tokens per turn per provider, the largest tools, and what a model would stumble over.

    The list comes from a file (--tools-file), a server URL (--url), a stdio command (--stdio or after '--'),
    a server's newest stored list (--db DB --server NAME), or the bundled example (--example). Every format
    shows the leaderboard's score and which clients load the list. For CI: gates (--fail-on, --fail-on-new,
    --min-score, --max-tokens, --fail-on-reject), a baseline (--save-baseline, --baseline, --max-increase),
    settings from [tool.fathom] in pyproject.toml or a fathom.toml, and a badge (--badge); see docs/ci.md.
    """
    from scanner.check import CheckRequest, GateRequest, run_gate
    from scanner.check.config import load_config, settings

    if all_tools and command and len(command) == 1 and _looks_like_tool_list(command[0]):
        _fail(f"--tools lists every tool's cost; did you mean --tools-file {command[0]}?", 2)
    if (db is None) != (server is None):
        _fail("--db and --server go together: --db DB --server NAME checks a stored tool list", 2)
    sources = [tools_file is not None, url is not None, stdio is not None, bool(command), example, server is not None]
    if sum(sources) != 1:
        _fail("give exactly one of --tools-file, --url, --stdio, '-- command ...', --example or --db/--server", 2)
    db_url = None
    if db is not None:
        from scanner.cli.base import _db_url

        db_url = _db_url(db, existing=True)
    if tools_file is not None:
        _readable_file("--tools-file", tools_file)
    for flag, path in (("--save", save), ("--save-baseline", save_baseline), ("--badge", badge)):
        if path is not None:
            _writable_file(flag, path)
    if badge is not None:
        from scanner.check.badge import endpoint_path

        _writable_file("--badge's endpoint JSON", endpoint_path(badge))
    entry = _server_entry(url, stdio, command, transport, _headers(header, bearer_env), env_names)
    if example:
        from importlib import resources

        tools_file = str(resources.files("scanner") / "examples" / "example-tools.json")
    from scanner.mcp import ClientLimits

    limits = ClientLimits(
        timeout=timeout,
        connect_timeout=connect_timeout,
        max_answer_bytes=max_bytes,
        max_pages=max_pages,
        max_tools=max_tools,
        max_line_bytes=max_line_bytes,
    )
    chosen = settings(
        load_config(config),
        select=_codes(select),
        ignore=_codes(ignore),
        fmt=fmt.value if fmt is not None else None,
        fail_on=fail_on,
        strict=strict,
        min_score=min_score,
        max_tokens=max_tokens,
        max_increase=max_increase,
        baseline=baseline,
        fail_on_new=fail_on_new,
        preview=preview,
        fail_on_reject=fail_on_reject,
        openai_strict=openai_strict,
        server_key=server_key,
        rules_url=rules_url,
    )
    request = CheckRequest(
        tools_file=tools_file,
        entry=entry,
        select=chosen.select,
        ignore=chosen.ignore,
        tool_ignores=chosen.tool_ignores,
        max_bytes=max_bytes,
        limits=limits,
        profile=_known_profile(profile),
        save=save,
        measure=as_provider is None,
        db_url=db_url,
        server=server,
        preview=chosen.preview,
        server_key=chosen.server_key,
    )
    from scanner.check import write as check_write

    files = [check_write.parse_spec(spec) for spec in write or ()]
    for fmt_name, path in files:
        _writable_file(f"--write {fmt_name}", path)
    _no_clash("--example" if example else "--tools-file", tools_file, chosen, save, save_baseline, badge, files)
    gate = GateRequest(request, chosen.gates, chosen.baseline, save_baseline, badge)
    if as_provider is not None and openai_strict:
        _fail("--as prints only the provider's JSON: it takes no --openai-strict", 2)
    if as_provider is not None:  # the config file's gates are not for --as; flags given with it are refused
        flags = (
            fail_on,
            fail_on_new,
            strict or None,
            min_score,
            max_tokens,
            max_increase,
            baseline,
            save_baseline,
            badge,
            fail_on_reject,
        )
        if any(flag is not None for flag in flags):
            _fail("--as prints only the provider's JSON: it takes no gate, baseline or badge", 2)
        gate = GateRequest(request)
    _say_if_every_rule_is_ignored(chosen, as_provider is None)
    if entry is not None and entry.command:  # its own network with a route out, else the host's: said so
        from scanner.packages.runners import check_network_line

        if (shared := check_network_line()) is not None:
            typer.echo(f"fathom: {shared}", err=True)
    from scanner.scan.progress import spinner

    waiting = None if entry is None else f"waiting for {entry.url or ' '.join(entry.command)} to list its tools"
    with spinner(waiting) if waiting is not None and not _SETTINGS["quiet"] else _nothing():
        result = run_gate(gate)
    if chosen.openai_strict and as_provider is None:  # a view over the tools read: nothing scored or gated changes
        result = replace(result, openai_strict=True)
    out_format = CheckFormat(chosen.format)
    if save_baseline is not None and result.report is not None and not _SETTINGS["quiet"]:
        typer.echo(f"fathom: wrote the baseline {save_baseline} ({_baseline_words(result)})", err=True)
    if as_provider is None:
        check_write.write(
            result, files, verbose=verbose, all_tools=all_tools, anchor=chosen.config, rules_url=chosen.rules_url
        )
    if result.report is not None and not _SETTINGS["quiet"]:  # say what was written, and where
        for fmt_name, path in files:
            typer.echo(f"fathom: wrote the check as {fmt_name} to {path}", err=True)
        if badge is not None:
            from scanner.check.badge import endpoint_path, message

            said = message(
                result.score.score if result.score is not None else None,
                result.report.max_tokens,
                no_tools=result.report.tools_count == 0,
            )
            typer.echo(f"fathom: wrote the badge {badge} and its endpoint {endpoint_path(badge)} ({said})", err=True)
    if result.tools is None:
        assert result.outcome is not None
        if out_format in (CheckFormat.json, CheckFormat.sarif):  # a parseable document even then (CI uploads)
            _out(_render_check(result, out_format, anchor=chosen.config, rules_url=chosen.rules_url))
        from scanner.check.next_step import check_next_step
        from scanner.textsafe import clean

        found = "".join(f"; {f.code} {f.rule}: {clean(f.message)}" for f in result.outcome_findings)
        step = check_next_step(result.outcome, url=url, timeout=timeout)
        step = f"; next: {step}" if step else ""
        _fail(f"{clean(result.source)}: {result.outcome.outcome.value}: {result.outcome.detail}{found}{step}", 3)
    if as_provider is not None:
        import json

        from scanner.providers import provider_view

        view: Any = provider_view(as_provider.value, list(result.tools))
        if result.instructions is not None:  # the server's instructions travel apart from the tools (docs/cli.md)
            view = {"tools": view, "instructions": result.instructions}
        _out(json.dumps(view, indent=2, ensure_ascii=True) + "\n")
        return
    rendered = _render_check(
        result, out_format, verbose=verbose, all_tools=all_tools, anchor=chosen.config, rules_url=chosen.rules_url
    )
    # color=: Click strips escapes off a terminal unless told; FORCE_COLOR and --color always want them kept.
    _out(rendered, colour=_colour())
    from scanner.check.gates import ungated_new
    from scanner.check.run import stale_ignores

    if not _SETTINGS["quiet"]:
        named = _shown(chosen.config) if chosen.config is not None else None
        notes = [f"config {named} applied"] if named is not None else []
        notes += [f"{named}: {stale}" for stale in stale_ignores(result, chosen.tool_ignores)]
        ungated = ungated_new(result, chosen.gates)
        notes += [ungated] if ungated is not None else []
        for note in notes:
            typer.echo(f"fathom: note: {_one_line(note)}", err=True)
    for failed in result.failed_gates:
        typer.echo(f"fathom: {_one_line(failed.line())}", err=True)
    if result.failed_gates:
        raise typer.Exit(1)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _render_check(
    result: CheckResult,
    fmt: CheckFormat,
    *,
    verbose: bool = False,
    all_tools: bool = False,
    anchor: Path | None = None,
    rules_url: str | None = None,
) -> str:
    from scanner.check import write as check_write

    colour = fmt is CheckFormat.text and _colour()
    return check_write.render(
        result, fmt.value, colour=colour, verbose=verbose, all_tools=all_tools, anchor=anchor, rules_url=rules_url
    )


def _shown(path: Path) -> str:
    """A path as a user reads it: relative to the current folder when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return str(path)


def _looks_like_tool_list(word: str) -> bool:
    """Whether a lone server command is really a data file (``--tools tools.json`` meant ``--tools-file``): a
    ``.json`` name, or a regular file that is not executable."""
    if word.lower().endswith(".json"):
        return True
    path = Path(word)
    return path.is_file() and not os.access(path, os.X_OK)


def _readable_file(flag: str, path: str) -> None:
    """Refuse at once an input that is not a regular file: reading a FIFO or a device would block or never end."""
    import stat

    if path == "-":
        return
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return  # missing or unreadable: the reader says so in its own words
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        _fail(f"{flag} {path}: not a regular file (a FIFO, socket or device is never read)", 2)


def _writable_file(flag: str, path: Path) -> None:
    """Refuse before any work an output path that cannot become a file: a directory, a missing folder, a symlink
    (or a symlink on the way), a relative path leading out of the working tree (scanner/safefile.py)."""
    from scanner import safefile

    safefile.check_target(path, label=flag)


def _no_clash(
    source: str,
    tools_file: str | None,
    chosen: Any,
    save: Path | None,
    save_baseline: Path | None,
    badge: Path | None,
    files: list[tuple[str, Path]],
) -> None:
    """Every output compared with every input and with each other before anything runs (docs/ci.md); ``source``
    names the flag the tools come from (``--example`` reads the example shipped in the package)."""
    from scanner import safefile
    from scanner.check.badge import endpoint_path
    from scanner.errors import InputError

    inputs = [(source, Path(tools_file))] if tools_file not in (None, "-") else []
    if chosen.config is not None:
        inputs.append(("config", chosen.config))
    if chosen.baseline is not None:
        inputs.append(("--baseline", chosen.baseline))
    outputs = [(flag, path) for flag, path in (("--save", save), ("--save-baseline", save_baseline)) if path]
    if badge is not None:
        outputs += [("--badge", badge), ("--badge's endpoint JSON", endpoint_path(badge))]
    outputs += [(f"--write {fmt}", path) for fmt, path in files]
    if save_baseline is not None and chosen.baseline is not None and safefile.same_file(save_baseline, chosen.baseline):
        raise InputError(
            f"--save-baseline {save_baseline} is the --baseline this check reads: to refresh the baseline, run "
            f"fathom check ... --save-baseline {save_baseline} without --baseline (after the gate passed)"
        )
    safefile.check_clashes(inputs, outputs)


def _say_if_every_rule_is_ignored(chosen: Any, measuring: bool) -> None:
    """Loudly, on stderr: a select/ignore (flag or config) that leaves no rule that can fire in check shows no
    finding, and --fail-on then fails (scanner.check.gates): a config's ``ignore = ["MCP"]`` or ``select =
    ["MCP7"]`` (registry-data rules) must never pass a gate silently."""
    from scanner.check.gates import nothing_can_fire, rules_left

    if measuring and nothing_can_fire(chosen.select, chosen.ignore) is not None:
        where = f" (config {chosen.config})" if chosen.config is not None else ""
        said = (
            "every rule is ignored by select/ignore"
            if not rules_left(chosen.select, chosen.ignore)
            else "select/ignore leave only rules that never fire in check (registry-data, lanes, history, preview)"
        )
        typer.echo(
            f"fathom: warning: {said}{where}: no finding is shown, and --fail-on fails because it compares nothing",
            err=True,
        )


def _baseline_words(result: CheckResult) -> str:
    report = result.report
    assert report is not None
    tools = f"{report.tools_count} tool{'' if report.tools_count == 1 else 's'}"
    found = len(report.findings)
    return f"{tools}, {found} finding{'' if found == 1 else 's'}, {len(result.ignored)} ignored"


def _out(text: str, *, colour: bool = False) -> None:
    """Write to standard output; a closed stdout or a full disk (/dev/full) is one line, exit 4, never a
    traceback (and the rest of the run's output goes nowhere rather than failing again at exit)."""
    from scanner.errors import OutputError

    stream = sys.stdout
    if stream is None:
        raise OutputError("standard output is closed: nothing can be written (redirect it to a file)")
    try:
        typer.echo(text, nl=False, color=colour)
        stream.flush()
    except (OSError, ValueError) as exc:
        try:  # the interpreter flushes stdout again at exit: point it somewhere that takes the bytes
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        reason = getattr(exc, "strerror", None) or exc
        raise OutputError(f"cannot write to standard output: {reason}") from exc
