"""The ``fathom`` command line: parse, build a request, call ONE library function, render, set the exit code.

Every import beyond Typer and ``scanner.errors`` happens inside the command that needs it, so ``fathom --help``
starts fast. Errors are turned into output in ONE place, :class:`FathomGroup`.

Exit codes: one table per command in :mod:`scanner.exitcodes`; each command's ``--help`` ends with its rows,
``fathom --help`` lists them all, and a test holds the README to the same table.
"""

from __future__ import annotations

import contextlib
import enum
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from scanner import exitcodes  # the one table of exit codes (a light module)
from scanner.errors import FathomError

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    from scanner.models import ServerEntry


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
            if not command.short_help and command.help:
                command.short_help = _first_sentence(command.help)

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


SUMMARY_CHARS = 120  # a summary longer than this ends at its first clause (a colon or a semicolon)


def _first_sentence(text: str) -> str:
    """A command's summary in ``fathom --help``: its help's first sentence, whole (Click would cut it at the
    column's width with "..."; the list wraps it instead), or, when long, the sentence up to its first clause."""
    import re

    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    end = re.search(r"(?<!\.)\.(\s|$)", paragraph)
    sentence = paragraph if end is None else paragraph[: end.start() + 1]
    if len(sentence) > SUMMARY_CHARS:
        depth = 0
        for index, char in enumerate(sentence[:-1]):  # the first colon or semicolon outside parentheses
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and char in ":;" and sentence[index + 1] == " ":
                return sentence[:index] + "."
    return sentence


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
    """Give an option without a metavar of its own one from :data:`METAVARS`, else one from its type; a run id's
    range is said ``x>=1``, not ``1<=x<=9223372036854775807`` (the database's limit is still checked)."""
    if getattr(param, "max", None) == 2**63 - 1:  # Typer's own range text, per option
        param._get_number_range_help_str = lambda: f"x>={param.min}"
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


# Typer validates option values with pydantic; its wording ("Input should be ...", "Value error, ...") is
# rewritten into the CLI's own, so no library's phrasing reaches the user.
_PYDANTIC_WORDING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Value error, (.*?)\.?$"), r"\1"),
    (re.compile(r"Input should be less than or equal to (\S+)"), r"it must be at most \1"),
    (re.compile(r"Input should be greater than or equal to (\S+)"), r"it must be at least \1"),
    (re.compile(r"Input should be less than (\S+)"), r"it must be below \1"),
    (re.compile(r"Input should be greater than (\S+)"), r"it must be above \1"),
    (re.compile(r"Input should be a valid integer.*"), "it must be a whole number"),
    (re.compile(r"Input should be a valid number.*"), "it must be a number"),
    (re.compile(r"Input should be (.*)"), r"it must be \1"),
)

GLOBAL_OPTIONS = ("--quiet", "-q", "--color", "--version")
"""The options of ``fathom`` itself, which go before the command (``fathom --color always check``)."""


def usage_message(exc: Exception, command: str = "COMMAND") -> str:
    """A usage error's message in Fathom's words: pydantic's wording rewritten, and a global option given after
    the command told where it goes."""
    message = _one_line(exc.format_message())  # type: ignore[attr-defined]
    for pattern, replacement in _PYDANTIC_WORDING:
        message, done = pattern.subn(replacement, message, count=1)
        if done:
            break
    option = re.match(r"No such option: (\S+)", message)
    if option and option.group(1) in GLOBAL_OPTIONS:
        name = option.group(1)
        message = f"{name} is an option of fathom itself: give it before the command (fathom {name} ... {command} ...)"
    # Click writes "No such option", "Missing argument": Fathom's lines start lower case after "fathom:", as git's
    # and cargo's do (tests/cli/test_message_case.py); Click's words are plain English, never a name.
    return re.sub(r"^[A-Z](?=[a-z]+\b)", lambda first: first.group().lower(), message)


def _usage_exit(exc: Exception) -> NoReturn:
    context = getattr(exc, "ctx", None)
    where = context.command_path if context is not None else "fathom"
    command = where.split()[-1] if " " in where else "COMMAND"
    typer.echo(f"{where}: {usage_message(exc, command)} (see '{where} --help')", err=True)
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


class TransportChoice(enum.StrEnum):
    auto = "auto"
    streamable_http = "streamable-http"
    sse = "sse"


def invocation() -> str:
    """How to run Fathom again as this process was run, for hints a user copies: ``fathom`` when that name on
    PATH is this very program, else the path it was started by (``.venv/bin/fathom`` after the README's first
    command), or ``python -m scanner``."""
    import shlex
    import shutil

    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is None or started.name in ("__main__.py", "-c", "-m"):
        return f"{shlex.quote(sys.executable)} -m scanner"
    on_path = shutil.which("fathom")
    if on_path is not None and started.name == "fathom" and Path(on_path).resolve() == started.resolve():
        return "fathom"
    shown = (
        started if started.is_absolute() or started.parent != Path() else Path(shutil.which(str(started)) or started)
    )
    with contextlib.suppress(ValueError):  # outside the current folder: the full path
        shown = shown.resolve().relative_to(Path.cwd())
    return shlex.quote(str(shown))


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


def _known_profile(profile: str) -> str:
    from scanner.mcp import PROFILES

    if profile not in PROFILES:
        _fail(f"--profile {profile!r} is not one of {', '.join(PROFILES)}", 2)
    return profile


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


DB_HELP = "Database: a path or any SQLAlchemy URL (sqlite:///x.db, postgresql+psycopg://...)."


def _db_url(db: str, *, existing: bool = False) -> str:
    """A SQLAlchemy URL for ``--db``; with ``existing``, a SQLite file that is not there is an error (a query on
    a mistyped path must not create an empty database and answer "none")."""
    if "://" in db:
        from scanner.store.engine import missing_sqlite_file

        missing = missing_sqlite_file(db) if existing else None
        if missing is not None:  # sqlite:///missing/x.db: no folder made, no empty database
            _fail(f"no database at {missing} (fathom scan writes one; --db names another)", 2)
        return db
    if existing and not Path(db).is_file():
        _fail(f"no database at {db} (fathom scan writes one; --db names another)", 2)
    return f"sqlite:///{db}"


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
    from scanner.report.tabular import TableFormat, render_chunks

    rows = fetch()
    table_format = TableFormat(fmt.value)
    chosen = columns(rows) if callable(columns) else columns
    shown = chosen if table_format is TableFormat.table else None
    from scanner.report.queries import WRAP_COLUMNS

    width = None if wide else _table_width()
    _write(render_chunks(rows, table_format, columns=shown, width=width, optional=optional or (), wrap=WRAP_COLUMNS))


def _stream_table(
    fmt: QueryFormat,
    fetch: Callable[[], Iterable[dict[str, Any]]],
    columns: list[str] | Callable[[Iterable[dict[str, Any]]], list[str]],
    *,
    candidates: list[str] | None = None,
    wide: bool = False,
    optional: list[str] | None = None,
) -> None:
    """:func:`_table` for a query whose rows are read as they come, never held whole (``fetch`` returns a fresh
    iterator each call: a table reads it twice, once to measure its columns). ``candidates`` lists every column
    a callable ``columns`` may choose."""
    from scanner.report.queries import WRAP_COLUMNS
    from scanner.report.tabular import TableFormat, render_stream

    table_format = TableFormat(fmt.value)
    shown = columns if table_format is TableFormat.table else None
    width = None if wide else _table_width()
    chunks = render_stream(
        fetch,
        table_format,
        columns=shown,
        candidates=candidates or [],
        width=width,
        optional=optional or (),
        wrap=WRAP_COLUMNS,
    )
    _write(chunks)


def _write(chunks: Iterable[str]) -> None:
    pending: list[str] = []  # written about 1 MB at a time: the answer is never held whole a second time
    size = 0
    for chunk in chunks:
        pending.append(chunk)
        size += len(chunk)
        if size >= 1 << 20:
            typer.echo("".join(pending), nl=False)
            pending, size = [], 0
    typer.echo("".join(pending), nl=False)


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
