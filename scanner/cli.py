"""The ``fathom`` command line: parse, build a request, call ONE library function, render, set the exit code.

Every import beyond Typer and ``scanner.errors`` happens inside the command that needs it, so ``fathom --help``
starts fast. Errors are turned into output in ONE place, :class:`FathomGroup`.

Exit codes: one table per command in :mod:`scanner.exitcodes`; each command's ``--help`` ends with its rows,
``fathom --help`` lists them all, and a test holds the README to the same table.
"""

from __future__ import annotations

import enum
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from scanner import exitcodes  # the one table of exit codes (a light module)
from scanner.errors import FathomError
from scanner.lanes import LaneChoice  # --lanes (a light module: models and the standard library)
from scanner.models import ProviderView  # the one table of provider names (a light module, no heavy imports)

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    from scanner.check import CheckResult
    from scanner.models import ScanOutcome, ServerEntry
    from scanner.scan import ScanConfig, ScanSummary

EXIT_CODES = exitcodes.epilog(exitcodes.TOP_LEVEL)


def _one_line(message: str) -> str:
    from scanner.textsafe import clean

    return clean(" ".join(message.split()))


# The usage error Typer's parser raises (Typer vendors Click since 0.26: find it from BadParameter, its subclass).
_UsageError: type[Exception] = next(k for k in typer.BadParameter.__mro__ if k.__name__ == "UsageError")


class FathomGroup(TyperGroup):
    """The one place errors become output: a :class:`FathomError` from any command, a usage error (bad flag
    value, missing argument, unknown command or option) and Ctrl-C each print ONE line on stderr and exit with
    the code documented in :data:`EXIT_CODES`. Commands never catch these themselves."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in (self.commands or {}).values():
            for param in command.params:
                _name_metavar(param)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except _UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare ``fathom``: the help, as before
                raise
            _usage_exit(exc)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except FathomError as exc:
            typer.echo(f"fathom: {_one_line(str(exc))}", err=True)
            raise typer.Exit(exc.exit_code) from exc
        except _UsageError as exc:
            _usage_exit(exc)
        except KeyboardInterrupt as exc:
            typer.echo("fathom: interrupted", err=True)
            raise typer.Exit(130) from exc


# What an option's value is, said in its help's metavar (``--url URL``) instead of the Python type (``<str>``).
METAVARS = {
    "tools_file": "PATH",
    "url": "URL",
    "stdio": "CMD",
    "select": "CODES",
    "ignore": "CODES",
    "header": "'NAME: VALUE'",
    "bearer_env": "VAR",
    "profile": "rich|full|bare",
    "save": "PATH",
    "db": "DB",
    "kind": "KIND",
    "updated_since": "TIME",
    "out": "DIR",
    "workdir": "DIR",
    "rule": "CODE|SLUG",
    "server": "NAME",
    "since": "DATE",
    "run": "RUN",
    "from_run": "RUN",
    "to_run": "RUN",
    "model": "PROVIDER:MODEL",
    "prompt": "TEXT",
    "cases": "PATH",
    "base_url": "URL",
    "name": "NAME",
}
ARGUMENT_METAVARS = {"command": "CMD"}
_BY_TYPE = {"int": "N", "float": "SECONDS", "str": "TEXT", "list[str]": "TEXT"}


def _name_metavar(param: Any) -> None:
    """Give an option without a metavar of its own one from :data:`METAVARS`, else one from its type."""
    if getattr(param, "param_type_name", "") == "argument":
        if param.metavar is None and param.name in ARGUMENT_METAVARS:
            param.metavar = ARGUMENT_METAVARS[param.name]
        param.display_type_rich = lambda ctx: None  # "server  The server's name", not "server <str>"
        return
    if getattr(param, "param_type_name", "") != "option" or param.metavar or param.is_flag:
        return
    if param.name in METAVARS:
        param.metavar = METAVARS[param.name]
        return
    described = getattr(param, "type_descriptor", None)
    if described is None or described.is_choice:
        return
    if param.name.endswith("_mb"):
        param.metavar = "MIB"
    elif param.name.endswith("_bytes"):
        param.metavar = "BYTES"
    elif described.is_path:
        param.metavar = "PATH"
    elif param.bare_type() in _BY_TYPE:
        param.metavar = _BY_TYPE[param.bare_type()]


def _usage_exit(exc: Exception) -> NoReturn:
    context = getattr(exc, "ctx", None)
    where = context.command_path if context is not None else "fathom"
    message = exc.format_message()  # type: ignore[attr-defined]
    typer.echo(f"{where}: {_one_line(message)} (see '{where} --help')", err=True)
    raise typer.Exit(2) from exc


app = typer.Typer(
    name="fathom",
    cls=FathomGroup,
    help="Measure what MCP servers' tool lists cost a model per turn, and what a model would stumble over.\n\n"
    + EXIT_CODES,
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from scanner import __version__

        typer.echo(f"fathom {__version__}")
        raise typer.Exit(0)


class ColorChoice(enum.StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


# What the top-level options chose for this invocation (set by :func:`_options` before any command runs).
_SETTINGS: dict[str, Any] = {"quiet": False, "color": ColorChoice.auto}


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No progress, spinner or notes on standard error; errors are still printed."
        ),
    ] = False,
    color: Annotated[
        ColorChoice,
        typer.Option(
            "--color",
            help="Colour in text output: auto (a terminal, unless NO_COLOR is set or TERM=dumb; FORCE_COLOR=1 forces "
            "it, for CI logs), always or never.",
        ),
    ] = ColorChoice.auto,
) -> None:
    """Measure what MCP servers' tool lists cost a model per turn, and what a model would stumble over."""
    _SETTINGS.update(quiet=quiet, color=color)


def _note(line: str) -> None:
    """A note on standard error (a warning, a hint): ``fathom: line``, unless --quiet."""
    if not _SETTINGS["quiet"]:
        typer.echo(f"fathom: {line}", err=True)


class CheckFormat(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"


class TransportChoice(enum.StrEnum):
    auto = "auto"
    streamable_http = "streamable-http"
    sse = "sse"


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"fathom: {_one_line(message)}", err=True)
    raise typer.Exit(code)


RUN_ID_MAX = 2**63 - 1  # the largest id a database integer column holds
SECONDS_MAX = 86_400.0  # a day: any longer deadline is a typo, and event loops refuse some larger ones


def _seconds(value: Any) -> float:
    """A positive, finite number of seconds, at most a day (``nan``, ``inf``, zero, negatives: exit 2)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise typer.BadParameter(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(number) or not 0 < number <= SECONDS_MAX:
        raise typer.BadParameter(f"{value!r} is not a number of seconds above 0 and at most {SECONDS_MAX:g}")
    return number


def _codes(values: list[str] | None) -> tuple[str, ...]:
    """Rule code prefixes from repeatable, comma-separated flags (``--select MCP2,MCP401``)."""
    return tuple(part.strip().upper() for value in values or () for part in value.split(",") if part.strip())


def _known_profile(profile: str) -> str:
    from scanner.mcp import PROFILES

    if profile not in PROFILES:
        _fail(f"--profile {profile!r} is not one of {', '.join(PROFILES)}", 2)
    return profile


def _colour() -> bool:
    """Colour for text output: --color always/never; for auto, FORCE_COLOR (not empty or 0) forces it, else a
    terminal without NO_COLOR or TERM=dumb gets it."""
    choice = _SETTINGS["color"]
    if choice is not ColorChoice.auto:
        return bool(choice is ColorChoice.always)
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def _headers(header: list[str] | None, bearer_env: str | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in header or ():
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            _fail(f"--header wants 'Name: value', got {item.split(':')[0]!r}", 2)
        headers[name.strip()] = value.strip()
    if bearer_env:
        token = os.environ.get(bearer_env)
        if not token:
            _fail(f"--bearer-env {bearer_env}: that environment variable is not set or empty", 2)
        headers["Authorization"] = f"Bearer {token}"
    return headers


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
    min_score: Annotated[
        float | None,
        typer.Option(min=0, max=100, metavar="N", help="Exit 1 when the leaderboard score (0-100) is below N."),
    ] = None,
    max_tokens: Annotated[
        list[str] | None,
        typer.Option(
            metavar="N|PROVIDER=N",
            help="Exit 1 above N tokens per turn with the most expensive provider, or with PROVIDER (repeatable).",
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
    or the bundled example (--example). Every format shows the leaderboard's score. For CI: gates (--fail-on,
    --min-score, --max-tokens), a baseline (--save-baseline, --baseline, --max-increase), settings from
    [tool.fathom] in pyproject.toml or a fathom.toml, and a badge (--badge); see docs/ci.md.
    """
    from scanner.check import CheckRequest
    from scanner.checkconfig import load_config, settings
    from scanner.gates import GateRequest, run_gate

    sources = [tools_file is not None, url is not None, stdio is not None, bool(command), example]
    if sum(sources) != 1:
        _fail("give exactly one of --tools-file, --url, --stdio, '-- command ...' or --example", 2)
    if tools_file is not None:
        _readable_file("--tools-file", tools_file)
    for flag, path in (("--save", save), ("--save-baseline", save_baseline), ("--badge", badge)):
        if path is not None:
            _writable_file(flag, path)
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
    )
    from scanner.report import check_write

    files = [check_write.parse_spec(spec) for spec in write or ()]
    for _, path in files:
        _writable_file("--write", path)
    gate = GateRequest(request, chosen.gates, chosen.baseline, save_baseline, badge)
    if as_provider is not None:  # the config file's gates are not for --as; flags given with it are refused
        flags = (fail_on, strict or None, min_score, max_tokens, max_increase, baseline, save_baseline, badge)
        if any(flag is not None for flag in flags):
            _fail("--as prints only the provider's JSON: it takes no gate, baseline or badge", 2)
        gate = GateRequest(request)
    from scanner.progress import spinner

    waiting = None if entry is None else f"waiting for {entry.url or ' '.join(entry.command)} to list its tools"
    with spinner(waiting) if waiting is not None and not _SETTINGS["quiet"] else _nothing():
        result = run_gate(gate)
    out_format = CheckFormat(chosen.format)
    if as_provider is None:
        check_write.write(result, files, verbose=verbose, all_tools=all_tools, anchor=chosen.config)
    if result.tools is None:
        assert result.outcome is not None
        if out_format in (CheckFormat.json, CheckFormat.sarif):  # a parseable document even then (CI uploads)
            typer.echo(_render_check(result, out_format, anchor=chosen.config), nl=False)
        from scanner.textsafe import clean

        found = "".join(f"; {f.code} {f.rule}: {clean(f.message)}" for f in result.outcome_findings)
        _fail(f"{clean(result.source)}: {result.outcome.outcome.value}: {result.outcome.detail}{found}", 3)
    if as_provider is not None:
        import json

        from scanner.providers import provider_view

        view: Any = provider_view(as_provider.value, list(result.tools))
        if result.instructions is not None:  # the server's instructions travel apart from the tools (docs/cli.md)
            view = {"tools": view, "instructions": result.instructions}
        typer.echo(json.dumps(view, indent=2, ensure_ascii=True))
        return
    rendered = _render_check(result, out_format, verbose=verbose, all_tools=all_tools, anchor=chosen.config)
    # color=: Click strips escapes off a terminal unless told; FORCE_COLOR and --color always want them kept.
    typer.echo(rendered, nl=False, color=_colour())
    for failed in result.failed_gates:
        typer.echo(f"fathom: {_one_line(failed.line())}", err=True)
    if result.failed_gates:
        raise typer.Exit(1)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _server_entry(
    url: str | None,
    stdio: str | None,
    command: list[str] | None,
    transport: TransportChoice,
    headers: dict[str, str],
    env_names: list[str] | None = None,
) -> ServerEntry | None:
    from scanner.models import ServerEntry, Transport

    if url is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            _fail(f"--url {url!r} is not an http:// or https:// URL with a host", 2)
        kind = {
            TransportChoice.auto: Transport.HTTP,
            TransportChoice.streamable_http: Transport.STREAMABLE_HTTP,
            TransportChoice.sse: Transport.SSE,
        }[transport]
        return ServerEntry(name=url, transport=kind, url=url, headers=headers, source="command line")
    argv: list[str] | None = None
    if stdio is not None:
        import shlex

        try:
            argv = shlex.split(stdio)
        except ValueError as exc:  # an unclosed quote or a trailing backslash
            _fail(f"--stdio {stdio!r} cannot be split into a command: {exc}", 2)
    elif command:
        argv = list(command)
    if argv is None:
        return None
    if not argv:
        _fail("--stdio needs a command", 2)
    env: dict[str, str] = {}
    for name in env_names or ():
        value = os.environ.get(name)
        if value is None:
            _fail(f"--env {name}: that environment variable is not set", 2)
        env[name] = value
    return ServerEntry(name=argv[0], transport=Transport.STDIO, command=tuple(argv), env=env, source="command line")


def _render_check(
    result: CheckResult,
    fmt: CheckFormat,
    *,
    verbose: bool = False,
    all_tools: bool = False,
    anchor: Path | None = None,
) -> str:
    from scanner.report import check_write

    colour = fmt is CheckFormat.text and _colour()
    return check_write.render(result, fmt.value, colour=colour, verbose=verbose, all_tools=all_tools, anchor=anchor)


class DoctorFormat(enum.StrEnum):
    text = "text"
    json = "json"


@app.command(epilog=exitcodes.command_epilog("doctor"))
def doctor(
    config: Annotated[
        str | None,
        typer.Argument(help="A client config file (Claude Desktop, VS Code mcp.json): every HTTP server in it."),
    ] = None,
    url: Annotated[str | None, typer.Option(help="One MCP server URL.")] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(help="A header 'Name: value' (repeatable); together they form one credential lane."),
    ] = None,
    bearer_env: Annotated[
        list[str] | None,
        typer.Option(
            help="A lane that sends 'Authorization: Bearer <token>' with the token from this environment variable "
            "(repeatable: one lane each; the value is never printed)."
        ),
    ] = None,
    fmt: Annotated[DoctorFormat, typer.Option("--format", help="Output format.")] = DoctorFormat.text,
    timeout: Annotated[
        float,
        typer.Option(parser=_seconds, help="Deadline for each lane's connection, in seconds (above 0, at most 86400)."),
    ] = 30.0,
    connect_timeout: Annotated[
        float, typer.Option(parser=_seconds, help="Deadline to connect, in seconds (above 0, at most 86400).")
    ] = 10.0,
    profile: Annotated[str, typer.Option(help="Client-capability profile: rich, full or bare.")] = "rich",
) -> None:
    """Say which lane a configuration is in: what a server lists without a credential and with each one given.

    Connects once without a credential and once per credential (--bearer-env, the --header set, the headers the
    config file holds), collects the auth signals a caller without one gets (status, WWW-Authenticate, RFC 9728
    protected-resource metadata, the authorization server's metadata), and explains the difference. Never calls
    a tool. See docs/lanes.md.
    """
    from scanner.doctor import Credential, DoctorRequest, run_doctor
    from scanner.mcp import ClientLimits
    from scanner.models import ServerEntry, Transport
    from scanner.report import doctor_out

    if (config is None) == (url is None):
        _fail("give a client config file or --url, not both", 2)
    credentials = [Credential(name, _headers(None, name)) for name in bearer_env or ()]
    if header:
        credentials.append(Credential("--header", _headers(header, None)))
    if url is not None:
        entries = [ServerEntry(name=url, transport=Transport.HTTP, url=url, source="command line")]
    else:
        from scanner.registry import load_entries

        assert config is not None
        entries = load_entries(config)
    request = DoctorRequest(
        entries=entries,
        credentials=credentials,
        limits=ClientLimits(timeout=timeout, connect_timeout=connect_timeout),
        profile=_known_profile(profile),
    )
    diagnoses = run_doctor(request)
    render = doctor_out.render_json if fmt is DoctorFormat.json else doctor_out.render_text
    typer.echo(render(diagnoses), nl=False)
    raise typer.Exit(max((diagnosis.exit_code for diagnosis in diagnoses), default=0))


class ScanFormat(enum.StrEnum):
    text = "text"
    json = "json"


DB_HELP = "Database: a path or any SQLAlchemy URL (sqlite:///x.db, postgresql+psycopg://...)."


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
    """Refuse before any work an output path that cannot become a file: a directory, or a missing folder."""
    if path.is_dir():
        _fail(f"{flag} {path} is a directory; name a file", 2)
    if not path.parent.is_dir():
        _fail(f"{flag} {path}: the folder {path.parent} does not exist", 2)


def _db_url(db: str, *, existing: bool = False) -> str:
    """A SQLAlchemy URL for ``--db``; with ``existing``, a SQLite file that is not there is an error (a query on
    a mistyped path must not create an empty database and answer "none")."""
    if "://" in db:
        return db
    if existing and not Path(db).is_file():
        _fail(f"no database at {db} (fathom scan writes one; --db names another)", 2)
    return f"sqlite:///{db}"


def _kind_help() -> str:
    from scanner.registry.loader import kind_help

    return kind_help()


# Options ``scan`` and ``worker`` share: defined once, so their limits and help cannot drift apart.
ServerTimeout = Annotated[
    float,
    typer.Option(
        parser=_seconds,
        help="Deadline for each server, in seconds (above 0, at most 86400); it covers every retry and wait.",
    ),
]
ConnectTimeout = Annotated[
    float, typer.Option(parser=_seconds, help="Deadline to connect or spawn, in seconds (above 0, at most 86400).")
]
Retries = Annotated[int, typer.Option(min=0, max=10, help="Retries for 429, 503 and resets, within the deadline.")]
AllowPrivate = Annotated[
    bool, typer.Option(help="Connect to loopback, private and link-local addresses too (never cloud metadata).")
]


@app.command(epilog=exitcodes.command_epilog("scan"))
def scan(
    registry: Annotated[
        str | None,
        typer.Argument(
            help="What to scan: an official registry base URL (https://registry.modelcontextprotocol.io), a saved "
            'API response, a server.json, a list {"servers": [...]}, or a Claude Desktop / VS Code config file. '
            "With --resume it may be left out.",
            show_default=False,
        ),
    ] = None,
    db: Annotated[str, typer.Option(help=DB_HELP)] = "fathom.db",
    kind: Annotated[str | None, typer.Option(help=_kind_help())] = None,
    updated_since: Annotated[
        str | None, typer.Option(help="Registry API: only servers updated since this RFC 3339 time.")
    ] = None,
    run_packages: Annotated[
        bool,
        typer.Option(
            help="Also run npm/PyPI/OCI packages (strangers' code) in a scrubbed environment with their own "
            "HOME, a deadline and a memory limit. Off: recorded as skipped."
        ),
    ] = False,
    memory_limit_mb: Annotated[
        int,
        typer.Option(
            min=64, max=1 << 20, help="With --run-packages: the memory each package's process may use, in MiB."
        ),
    ] = 1024,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="With --run-packages: the package cache kept between nights, one folder per package@version "
            "(docs/registry.md). [default: $XDG_CACHE_HOME/fathom or ~/.cache/fathom]",
        ),
    ] = None,
    disk_limit_mb: Annotated[
        int,
        typer.Option(
            min=16,
            help="With --run-packages: what one package may write (its HOME, TMPDIR and "
            "its own cache folder's growth), in MiB; over it: too_large, remembered for that version.",
        ),
    ] = 4096,
    cache_max_mb: Annotated[
        int,
        typer.Option(
            min=64,
            help="With --run-packages: after the scan, remove the least recently used packages' installs until "
            "the package cache holds at most this many MiB.",
        ),
    ] = 20480,
    retry_too_large: Annotated[
        bool,
        typer.Option(help="With --run-packages: install again the package versions remembered as too_large."),
    ] = False,
    pass_env: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME",
            help="With --run-packages: also hand this variable to every package (repeatable). Proxies, "
            "CA bundles and npm/uv/pip index settings pass already (docs/registry.md).",
        ),
    ] = None,
    run_commands: Annotated[
        bool,
        typer.Option(
            help="Also run the commands written in a list or a Claude Desktop / VS Code config, each with only "
            "its declared env plus a short pass-through (PATH, HOME, USER, the locale). Off: recorded as skipped."
        ),
    ] = False,
    max_input_mb: Annotated[
        int, typer.Option(min=1, help="Most MiB read from the input: a file, a directory, or all API pages.")
    ] = 128,
    allow_private: AllowPrivate = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            help="List the resolved entries without connecting to anything, then totals by transport, package "
            "registry type and skip reason."
        ),
    ] = False,
    only: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME", help="Scan (or list) only the entry of this name (repeatable); an unknown name: exit 2."
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(metavar="N", min=1, help="Scan (or list) only the first N entries (after --only)."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            help="Finish the newest interrupted run in --db (of REGISTRY if given) with that run's own source and "
            "options (the options given here count only for a setting the run did not store). Nothing to resume: "
            "exit 2."
        ),
    ] = False,
    concurrency: Annotated[int, typer.Option(min=1, max=1024, help="Servers scanned at once.")] = 32,
    per_host: Annotated[int, typer.Option(min=1, max=1024, help="Servers scanned at once on one host.")] = 4,
    timeout: ServerTimeout = 30.0,
    connect_timeout: ConnectTimeout = 10.0,
    retries: Retries = 2,
    profile: Annotated[
        str, typer.Option(help="Client-capability profile declared to servers: rich (default), full or bare.")
    ] = "rich",
    lanes: Annotated[
        LaneChoice,
        typer.Option(
            help="For a server whose credential is set (FATHOM_SECRET_...): scan it without the credential, with "
            "it, or both and store each lane (docs/lanes.md). Servers without one are scanned once, as configured."
        ),
    ] = LaneChoice.both,
    fmt: Annotated[ScanFormat, typer.Option("--format", help="Output format of the summary.")] = ScanFormat.text,
    enqueue: Annotated[
        bool,
        typer.Option(
            help="PostgreSQL only: open the run and queue one job per server for `fathom worker`s "
            "(docs/distributed.md) instead of scanning here."
        ),
    ] = False,
) -> None:
    """Scan every server of a registry concurrently into the database, keeping history between runs."""
    from scanner.crawl import CrawlSettings
    from scanner.mcp import ClientLimits
    from scanner.packages import PackageSettings
    from scanner.packages.runners import warning_lines
    from scanner.scan import ScanConfig, resolve_entries, run_scan

    settings = CrawlSettings(
        concurrency=concurrency,
        per_host=per_host,
        limits=ClientLimits(timeout=timeout, connect_timeout=connect_timeout),
        profile=_known_profile(profile),
        retries=retries,
        allow_private=allow_private,
        packages=PackageSettings(
            cache_dir=cache_dir,
            disk_limit_mb=disk_limit_mb,
            cache_max_mb=cache_max_mb,
            retry_too_large=retry_too_large,
            pass_env=tuple(pass_env or ()),
        ),
        lanes=lanes,
    )
    config = ScanConfig(
        source=registry,
        db_url=_db_url(db),
        kind=kind,
        updated_since=updated_since,
        run_packages=run_packages,
        run_commands=run_commands,
        memory_limit_mb=memory_limit_mb,
        max_input_mb=max_input_mb,
        resume=resume,
        crawl=settings,
        only=tuple(only or ()),
        limit=limit,
    )
    if registry is None and not resume:
        _fail("name the registry to scan (only --resume may leave it out)", 2)
    if dry_run:
        entries = resolve_entries(config)
        for line in warning_lines(entries, settings.packages):
            _note(line)
        _print_entries(entries, fmt)
        if fmt is ScanFormat.text:
            from scanner.registry.dryrun import totals

            typer.echo("\n".join(totals(entries)))
        return
    if enqueue:
        from scanner.distributed import enqueue_scan

        queued = enqueue_scan(config)
        if fmt is ScanFormat.json:
            import dataclasses
            import json

            typer.echo(json.dumps(dataclasses.asdict(queued), indent=2))
            return
        typer.echo(
            f"run {queued.run_id} queued: {queued.queued} servers"
            + (f" ({queued.duplicates} duplicate names left out)" if queued.duplicates else "")
            + "; start `fathom worker --db ...` on any machine"
        )
        return
    needs: dict[str, int] = {}
    summary = _scan_with_progress(config, run_scan, needs)
    from scanner.scan import skipped_line

    skipped_note = skipped_line(needs)
    if fmt is ScanFormat.json:
        import dataclasses
        import json

        typer.echo(json.dumps({**dataclasses.asdict(summary), "scanned": summary.scanned}, indent=2))
    else:
        typer.echo(_scan_line(summary))
    if skipped_note:
        _note(skipped_note)
    if summary.interrupted:
        import shlex

        from scanner.scan import resume_flags
        from scanner.store.engine import url_without_password

        # The run keeps its source and options; its opt-ins must be given again (a resume never exceeds the
        # command line's), and stdin too.
        again = (" -" if summary.source == "-" else "") + "".join(f" {shlex.quote(f)}" for f in resume_flags(config))
        shown = url_without_password(db)
        password = " (with the database password in place of ***)" if shown != db else ""
        typer.echo(
            f"fathom: interrupted; `fathom scan{again} --resume --db {shlex.quote(shown)}` finishes the run{password}",
            err=True,
        )
        raise typer.Exit(130)


def _scan_line(summary: ScanSummary) -> str:
    """``run 3 interrupted: 57 of 120 servers scanned · ok 50 · timeout 7``; after a resume, the whole run's
    totals (what was done before it, and what it did)."""
    before = summary.already_done if summary.resumed else 0
    shown = summary.run_counts if summary.resumed and summary.run_counts else summary.counts
    counts = " · ".join(f"{name} {count}" for name, count in sorted(shown.items()))
    total = summary.total + before
    servers = "server" if total == 1 else "servers"
    if summary.interrupted:
        head = f"run {summary.run_id} interrupted: {summary.scanned + before} of {total} {servers} scanned"
    else:
        head = f"run {summary.run_id} finished: {total} {servers}"
    if summary.resumed:
        head += f" ({summary.already_done} done before this resume)"
    return f"{head} · {counts or 'nothing scanned'}"


def _scan_with_progress(
    config: ScanConfig, run_scan: Callable[..., ScanSummary], needs: dict[str, int] | None = None
) -> ScanSummary:
    """Run the scan with a progress display from the first second, turning SIGTERM into the same clean stop as
    Ctrl-C; ``needs`` counts the servers left unscanned by the opt-in flag that would scan them."""
    import signal

    from scanner.progress import Progress
    from scanner.scan import opt_in_flags

    def stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    # A scan started as a background job of a non-interactive shell inherits SIGINT ignored (Python then installs
    # no handler): take it back, so `kill -INT` stops a scan the same clean way wherever it was started.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    quiet = bool(_SETTINGS["quiet"])
    progress = Progress(None, enabled=False, interval=math.inf) if quiet else Progress(None)
    if not quiet:
        progress.start_ticking()

    def on_result(entry: ServerEntry, outcome: ScanOutcome) -> None:
        progress.advance(outcome.outcome, entry.name)
        if needs is not None:
            for flag in opt_in_flags(outcome.detail)[:1]:
                needs[flag] = needs.get(flag, 0) + 1

    def on_warning(line: str) -> None:
        if not quiet:
            progress.message(f"fathom: {line}")

    try:
        return run_scan(
            config,
            on_start=lambda _run_id, total: progress.set_total(total),
            on_result=on_result,
            on_warning=on_warning,
            on_begin=lambda entry: progress.begin(entry.name),
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        progress.close()


def _print_entries(entries: list[ServerEntry], fmt: ScanFormat) -> None:
    import json

    from scanner.registry import entries_to_json

    rows = entries_to_json(entries)
    if fmt is ScanFormat.json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=True))
        return
    from scanner.tabular import TableFormat, render_rows

    columns = ["name", "transport", "target", "skip", "findings"]
    table = [
        {
            **row,
            "target": row.get("url") or " ".join(row.get("command") or []),
            "findings": " ".join(finding["code"] for finding in row["findings"]),
        }
        for row in rows
    ]
    typer.echo(render_rows(table, TableFormat.table, columns=columns), nl=False)


def _table(
    fmt: QueryFormat,
    fetch: Callable[[], list[dict[str, Any]]],
    columns: list[str] | Callable[[list[dict[str, Any]]], list[str]],
    *,
    wide: bool = False,
    optional: list[str] | None = None,
) -> None:
    """Run one query and print its rows in the chosen format (every column for JSON and CSV); ``columns`` may
    be chosen from the rows. A table fits the terminal (:func:`_table_width`) unless ``wide``."""
    from scanner.tabular import TableFormat, render_rows

    rows = fetch()
    table_format = TableFormat(fmt.value)
    chosen = columns(rows) if callable(columns) else columns
    shown = chosen if table_format is TableFormat.table else None
    from scanner.queries import WRAP_COLUMNS

    width = None if wide else _table_width()
    text = render_rows(rows, table_format, columns=shown, width=width, optional=optional or (), wrap=WRAP_COLUMNS)
    typer.echo(text, nl=False)


def _table_width() -> int | None:
    """The width a table fits: ``$COLUMNS`` when set, else the terminal's; None (no limit) when piped."""
    import shutil

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


class QueryFormat(enum.StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


class SeverityChoice(enum.StrEnum):
    problem = "problem"
    warning = "warning"
    note = "note"


FormatOption = Annotated[QueryFormat, typer.Option("--format", help="Output format.")]
WideOption = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Table: keep every column and never wrap (by default a table fits $COLUMNS or the terminal, "
        "wrapping its widest text; piped output is never wrapped or cut).",
    ),
]
DbOption = Annotated[str, typer.Option(help=DB_HELP)]


@app.command(epilog=exitcodes.command_epilog("worker"))
def worker(
    db: Annotated[str, typer.Option(help="The PostgreSQL of the distributed run: postgresql+psycopg://user@host/db.")],
    concurrency: Annotated[int, typer.Option(min=1, max=1024, help="Servers this worker scans at once.")] = 32,
    per_host: Annotated[int, typer.Option(min=1, max=1024, help="Servers this worker scans at once on one host.")] = 4,
    timeout: ServerTimeout = 30.0,
    connect_timeout: ConnectTimeout = 10.0,
    retries: Retries = 2,
    profile: Annotated[str, typer.Option(help="Client-capability profile: rich (default), full or bare.")] = "rich",
    allow_private: AllowPrivate = False,
    run_packages: Annotated[
        bool, typer.Option(help="Run the queued npm/PyPI/OCI packages. Off: they are recorded as skipped.")
    ] = False,
    run_commands: Annotated[
        bool, typer.Option(help="Run the queued commands of lists and client configs. Off: recorded as skipped.")
    ] = False,
    cache_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="With --run-packages: this machine's npm/uv cache.")
    ] = None,
    disk_limit_mb: Annotated[
        int, typer.Option(min=16, help="With --run-packages: what one package may write, in MiB.")
    ] = 4096,
    memory_limit_mb: Annotated[
        int,
        typer.Option(
            min=64, max=1 << 20, help="With --run-packages: the memory each package's process may use, in MiB."
        ),
    ] = 1024,
    pass_env: Annotated[
        list[str] | None,
        typer.Option(metavar="NAME", help="With --run-packages: also hand this variable to every package."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="This worker's name in `fathom runs`. [default: host:pid]")] = None,
    stall_timeout: Annotated[
        float,
        typer.Option(
            parser=_seconds, help="Seconds without a worker's heartbeat before its jobs are taken again (above 0)."
        ),
    ] = 60.0,
    until_idle: Annotated[bool, typer.Option(help="Stop when no job is left, instead of waiting for more.")] = False,
) -> None:
    """Take servers of distributed runs (`fathom scan --enqueue`) from the queue, scan and write them, and close
    each run after its last server. Ctrl-C hands this worker's running jobs back to the queue."""
    from scanner.crawl import CrawlSettings
    from scanner.distributed import WorkerConfig, run_worker
    from scanner.distributed.worker import default_name
    from scanner.mcp import ClientLimits
    from scanner.packages import PackageSettings

    config = WorkerConfig(
        db_url=_db_url(db),
        crawl=CrawlSettings(
            concurrency=concurrency,
            per_host=per_host,
            limits=ClientLimits(timeout=timeout, connect_timeout=connect_timeout),
            profile=_known_profile(profile),
            retries=retries,
            allow_private=allow_private,
            packages=PackageSettings(cache_dir=cache_dir, disk_limit_mb=disk_limit_mb, pass_env=tuple(pass_env or ())),
        ),
        name=name or default_name(),
        stall_timeout=stall_timeout,
        until_idle=until_idle,
        run_packages=run_packages,
        run_commands=run_commands,
        memory_limit_mb=memory_limit_mb,
    )
    done = run_worker(config, on_closed=lambda run_id: typer.echo(f"run {run_id} finished"))
    counts = " · ".join(f"{outcome} {count}" for outcome, count in sorted(done.counts.items()))
    typer.echo(f"worker {done.name} stopped: {done.written} servers written · {counts or 'nothing scanned'}")


@app.command(epilog=exitcodes.command_epilog("runs"))
def runs(db: DbOption = "fathom.db", fmt: FormatOption = QueryFormat.table, wide: WideOption = False) -> None:
    """The scan runs in the database: when, their status, how many servers were scanned and answered (and for
    a distributed run, how many were queued and which workers took part)."""
    from scanner import queries

    optional = queries.OPTIONAL_COLUMNS["runs"]
    _table(fmt, lambda: queries.runs(_db_url(db, existing=True)), queries.run_columns, wide=wide, optional=optional)


@app.command(epilog=exitcodes.command_epilog("servers"))
def servers(db: DbOption = "fathom.db", fmt: FormatOption = QueryFormat.table, wide: WideOption = False) -> None:
    """Every server with its last outcome, and the tools, leaderboard score, problem/warning/note counts and tokens
    per turn of its last successful scan; JSON and CSV add what its last scan ran (registry version, package, URL,
    command) and that scan's stderr tail."""
    from scanner import queries

    fetch = lambda: queries.servers(_db_url(db, existing=True))  # noqa: E731
    _table(fmt, fetch, queries.SERVER_COLUMNS, wide=wide, optional=queries.OPTIONAL_COLUMNS["servers"])


@app.command(epilog=exitcodes.command_epilog("history"))
def history(
    server: Annotated[str, typer.Argument(help="The server's name as the registry lists it.")],
    db: DbOption = "fathom.db",
    fmt: FormatOption = QueryFormat.table,
    wide: WideOption = False,
) -> None:
    """One server's scans over time: outcome, registry and server version, tools, tokens per provider, score, findings,
    a column per per-scan metric (handshake and list times, tools/list pages), what was run (JSON/CSV) and, under
    the table, the newest scan's stderr tail."""
    from scanner import queries

    found: list[dict[str, Any]] = []

    def fetch() -> list[dict[str, Any]]:
        found.extend(queries.history(_db_url(db, existing=True), server))
        return found

    _table(fmt, fetch, queries.history_columns, wide=wide, optional=queries.OPTIONAL_COLUMNS["history"])
    if fmt is QueryFormat.table:
        typer.echo(queries.stderr_note(found), nl=False)


@app.command(epilog=exitcodes.command_epilog("findings"))
def findings(
    rule: Annotated[str | None, typer.Option(help="Only this rule, by code (MCP205) or slug.")] = None,
    server: Annotated[str | None, typer.Option(help="Only this server.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Only findings that first appeared at or after this date (YYYY-MM-DD[THH:MM]).")
    ] = None,
    run: Annotated[
        int | None, typer.Option(min=1, max=RUN_ID_MAX, help="Exactly the findings present in this run.")
    ] = None,
    severity: Annotated[SeverityChoice | None, typer.Option(help="Only findings of this severity.")] = None,
    still_open: Annotated[
        bool,
        typer.Option("--open", help="Only findings not gone: present in their server's newest scan that listed tools."),
    ] = False,
    db: DbOption = "fathom.db",
    fmt: FormatOption = QueryFormat.table,
    wide: WideOption = False,
) -> None:
    """Findings over time, with the run each first appeared in and the run it went away in (if it did).

    An unknown rule code or slug is an error (exit 2) that names the nearest one."""
    from datetime import datetime

    from scanner import queries
    from scanner.models import Severity

    try:
        when = datetime.fromisoformat(since) if since else None
    except ValueError:
        _fail(f"--since wants a date like 2026-11-01 or 2026-11-01T18:00, got {since!r}", 2)
    _table(
        fmt,
        lambda: queries.findings(
            _db_url(db, existing=True),
            rule=rule,
            server=server,
            since=when,
            run=run,
            severity=Severity.parse(severity.value) if severity is not None else None,
            still_open=still_open,
        ),
        queries.FINDING_COLUMNS,
        wide=wide,
        optional=queries.OPTIONAL_COLUMNS["findings"],
    )


@app.command(epilog=exitcodes.command_epilog("diff"))
def diff(
    server: Annotated[str, typer.Argument(help="The server's name.")],
    from_run: Annotated[
        int | None,
        typer.Option(
            "--from",
            min=1,
            max=RUN_ID_MAX,
            help="The earlier run (default: the successful scan before --to; the scan before it if --to failed).",
        ),
    ] = None,
    to_run: Annotated[
        int | None,
        typer.Option(
            "--to", min=1, max=RUN_ID_MAX, help="The later run (default: the latest success, else the latest scan)."
        ),
    ] = None,
    db: DbOption = "fathom.db",
    fmt: FormatOption = QueryFormat.table,
    wide: WideOption = False,
) -> None:
    """What changed on a server between two runs: registry and server versions, outcome changes, tools added,
    removed and changed, tokens, findings. A server that never answered shows its outcomes."""
    from scanner import queries

    fetch = lambda: queries.diff(_db_url(db, existing=True), server, from_run, to_run)  # noqa: E731
    _table(fmt, fetch, queries.DIFF_COLUMNS, wide=wide)


@app.command(epilog=exitcodes.command_epilog("rescore"))
def rescore(
    db: DbOption = "fathom.db",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; write nothing.")] = False,
) -> None:
    """Recompute findings and token counts of every stored tool list, and every scan's own findings (MCP5xx,
    MCP6xx, instructions), under the current rule catalogue; print findings added/removed per rule."""
    from scanner.check import measure
    from scanner.rules import RULES_VERSION
    from scanner.store import open_store
    from scanner.store.lock import writer_lock

    with open_store(_db_url(db, existing=True)) as store, writer_lock(store.engine, "rescore"):
        result = store.rescore_history(RULES_VERSION, measure, dry_run=dry_run)
    typer.echo(result.text())


@app.command(epilog=exitcodes.command_epilog("report"))
def report(
    out: Annotated[Path, typer.Option(help="Folder the site is written to.")] = Path("reports"),
    run: Annotated[
        int | None, typer.Option(min=1, max=RUN_ID_MAX, help="Report this run (default: the latest finished run).")
    ] = None,
    db: DbOption = "fathom.db",
) -> None:
    """Build the static report site: leaderboard, trends, a page per server, the rule catalogue, and
    Markdown/JSON/CSV exports of the leaderboard. It opens from file:// with no network."""
    from scanner.report import build_report
    from scanner.report.text import plural
    from scanner.store import open_store

    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file; the report is a folder of pages (name a new or existing folder)", 2)
    with open_store(_db_url(db, existing=True)) as store:
        result = build_report(store, out, run_id=run)
    typer.echo(
        f"run {result.run_id}: {plural(result.servers_ranked, 'server')} ranked, {result.servers_unranked} listed "
        f"apart, {plural(result.server_pages, 'server page')}, {plural(result.runs_in_trends, 'run')} in trends"
    )
    typer.echo(f"open {(out / 'index.html').resolve().as_uri()}")


@app.command(epilog=exitcodes.command_epilog("demo"))
def demo(
    workdir: Annotated[Path, typer.Option(help="Folder for the demo's database, server list and site.")] = Path(
        "fathom-demo"
    ),
) -> None:
    """Start example MCP servers of varied quality on 127.0.0.1, scan them twice with a change in between,
    and build the report. Needs nothing of yours; its database is recreated on every run."""
    from scanner.demo import run_demo

    if workdir.exists() and not workdir.is_dir():
        _fail(f"--workdir {workdir} is a file; the demo needs a folder (a new or existing one)", 2)
    result = run_demo(workdir)
    for number, summary in enumerate(result.scans, start=1):
        counts = " · ".join(f"{name} {count}" for name, count in sorted(summary.counts.items()))
        typer.echo(f"scan {number} (run {summary.run_id}): {summary.total} servers · {counts}")
    database = result.database
    typer.echo(f"database: {database}  (try: fathom servers --db {database}; fathom findings --db {database})")
    typer.echo(f"report:   {result.report_index.resolve().as_uri()}")


@app.command(epilog=exitcodes.command_epilog("rules"))
def rules(fmt: FormatOption = QueryFormat.table, wide: WideOption = False) -> None:
    """List the rule catalogue in code order: code, severity, status (stable, preview, deprecated, removed),
    slug and the fix (JSON and CSV add the scope and the whole doc).

    `fathom rule CODE` explains one; `fathom check --select/--ignore` take code prefixes (MCP2, MCP401)."""
    from scanner import queries

    _table(fmt, queries.rules, queries.RULE_COLUMNS, wide=wide, optional=queries.OPTIONAL_COLUMNS["rules"])


@app.command(epilog=exitcodes.command_epilog("rule"))
def rule(
    code: Annotated[str, typer.Argument(metavar="CODE", help="A rule code or slug, e.g. MCP205 or param-untyped.")],
) -> None:
    """Explain one rule: what it checks, why a model stumbles over it, and how to fix it.

    An unknown code or slug is an error (exit 2) that names the nearest one."""
    from scanner import queries
    from scanner.rules import RULES

    found = RULES[queries.rule_code(code)]
    typer.echo(
        f"{found.code} {found.slug} ({found.severity.label}, {found.status})\n\n{found.doc}\n\nFix: {found.hint}"
    )


class TryFormat(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


@app.command("try", epilog=exitcodes.command_epilog("try"))
def try_model(
    model: Annotated[
        str,
        typer.Option(
            help="anthropic:MODEL, openai:MODEL, gemini:MODEL, or MODEL with --base-url for an OpenAI-compatible "
            "server (Ollama, llama.cpp, vLLM, LM Studio)."
        ),
    ],
    prompt: Annotated[
        str | None, typer.Option(help="What someone might ask an agent; without it (and --cases), standard input.")
    ] = None,
    cases: Annotated[
        str | None, typer.Option(help="A YAML or JSONL file of cases: prompt, the expected tool, expected values.")
    ] = None,
    tools_file: Annotated[
        str | None, typer.Option("--tools-file", "-f", help="A tool list file, as for check.", show_default=False)
    ] = None,
    url: Annotated[str | None, typer.Option(help="An MCP server URL to take the tool list from.")] = None,
    stdio: Annotated[str | None, typer.Option(help="A command that starts a stdio MCP server.")] = None,
    command: Annotated[list[str] | None, typer.Argument(help="Or the server command after '--'.")] = None,
    example: Annotated[bool, typer.Option("--example", help="Use the bundled example tool list.")] = False,
    db: Annotated[str | None, typer.Option(help="A database: take --server's newest stored tool list.")] = None,
    server: Annotated[str | None, typer.Option(help="The server's name in --db.")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="The provider's base URL (a gateway, proxy or local server).")
    ] = None,
    key_env: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Send the key in this variable (a --base-url or compatible server gets none otherwise).",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Consent to sending to a remote provider.")] = False,
    repeat: Annotated[
        int, typer.Option(min=1, max=100, help="Ask each prompt this many times, to see how stable the choice is.")
    ] = 1,
    max_tokens: Annotated[int, typer.Option(min=1, max=1_000_000, help="Output limit of each answer.")] = 1024,
    timeout: Annotated[
        float,
        typer.Option(
            parser=_seconds, help="Deadline of each request to the provider, in seconds (above 0, at most 86400)."
        ),
    ] = 120.0,
    strict: Annotated[bool, typer.Option(help="Exit 1 when a case is missed (for CI).")] = False,
    fmt: Annotated[TryFormat, typer.Option("--format", help="Output format.")] = TryFormat.text,
    save: Annotated[Path | None, typer.Option(help="Save a transcript: requests (without keys) and answers.")] = None,
    header: Annotated[list[str] | None, typer.Option(help="An HTTP header 'Name: value' for the MCP server.")] = None,
    bearer_env: Annotated[str | None, typer.Option(help="Bearer token variable for the MCP server.")] = None,
) -> None:
    """Ask a real model which tool it would call for a prompt, with which arguments, at what cost.

    Nothing is called: each call is shown with its arguments checked against the tool's schema. The tools sent
    are exactly what `check --as PROVIDER` prints. A remote provider is asked for consent first (or --yes).
    Keys come from ANTHROPIC_API_KEY, OPENAI_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY; base URLs from --base-url,
    ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL. See docs/try.md.
    """
    from scanner import trial
    from scanner.check import CheckRequest
    from scanner.errors import FathomError

    sources = [tools_file is not None, url is not None, stdio is not None, bool(command), example, db is not None]
    if sum(sources) != 1:
        _fail("give exactly one tool list: --tools-file, --url, --stdio, '-- command ...', --example or --db", 2)
    if (db is None) != (server is None):
        _fail("--db and --server go together (the server whose newest stored tool list is tried)", 2)
    if example:
        from importlib import resources

        tools_file = str(resources.files("scanner") / "examples" / "example-tools.json")
    entry = _server_entry(url, stdio, command, TransportChoice.auto, _headers(header, bearer_env))
    try:
        request = trial.TrialRequest(
            target=trial.resolve(model, base_url, key_env=key_env),
            cases=_trial_cases(prompt, cases, tools_file == "-"),
            check=None if db else CheckRequest(tools_file=tools_file, entry=entry, measure=False),
            db_url=_db_url(db, existing=True) if db else None,
            server=server,
            repeat=repeat,
            max_tokens=max_tokens,
            limits=trial.Limits(timeout=timeout),
            save=save,
        )
        plan = trial.prepare(request)
        if plan.needs_consent and not yes:
            if not sys.stdin.isatty():
                _fail(f"{plan.consent_text} Pass --yes to send (no terminal to ask in).", 2)
            typer.echo(plan.consent_text, err=True)
            if not typer.confirm("Send?", default=False, err=True):
                _fail("nothing was sent", 2)
        report = trial.run(plan)
    except FathomError as exc:
        _fail(str(exc), exc.exit_code)
    render = {TryFormat.json: trial.render_json, TryFormat.markdown: trial.render_markdown}
    typer.echo(render.get(fmt, trial.render_text)(report), nl=False)
    if strict and any(summary.missed for summary in report.summaries):
        raise typer.Exit(1)


def _trial_cases(prompt: str | None, cases: str | None, stdin_taken: bool) -> tuple[Any, ...]:
    from scanner.errors import InputError
    from scanner.trial import Case, load_cases
    from scanner.trial.cases import read_cases

    if prompt is not None and cases is not None:
        raise InputError("give --prompt or --cases, not both")
    if cases is not None:
        return tuple(load_cases(cases, read_cases(cases)))
    if prompt is None:
        if stdin_taken or sys.stdin.isatty():
            raise InputError("give --prompt TEXT, --cases FILE, or pipe the prompt on standard input")
        from scanner import wire

        prompt = wire.decode_bytes(sys.stdin.buffer.read(1 << 20))
    if not prompt.strip():
        raise InputError("the prompt is empty")
    return (Case(name="prompt", prompt=prompt.strip()),)


def main() -> None:
    """Console-script entry point."""
    from scanner.envguard import protect_environment

    protect_environment()  # children cannot read this process's environment (scanner/envguard.py)
    try:
        app(prog_name="fathom")  # usage lines say "fathom", also when run as ``python -m scanner``
    except KeyboardInterrupt:
        typer.echo("fathom: interrupted", err=True)
        sys.exit(130)
