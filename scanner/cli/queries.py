"""The query commands over the database: runs, servers, history, findings, diff, rescore."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scanner import exitcodes  # the one table of exit codes (a light module)

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    pass
from scanner.cli.base import (
    RUN_ID_MAX,
    DbOption,
    FormatOption,
    QueryFormat,
    WideOption,
    _db_url,
    _fail,
    _stream_table,
    _table,
    _table_width,
    app,
)

PreviewOption = Annotated[
    bool,
    typer.Option(
        "--preview",
        help="Also show (and count) preview rules' findings, each marked preview with its rule's measured "
        "precision; or preview = true in the config file (as `fathom check` reads it).",
    ),
]


def _preview(flag: bool) -> bool:
    """``--preview``, else ``preview = true`` in the config file found from the current directory."""
    if flag:
        return True
    from scanner.check.config import load_config

    return bool(load_config().preview)


class SeverityChoice(enum.StrEnum):
    problem = "problem"
    warning = "warning"
    note = "note"


@app.command(epilog=exitcodes.command_epilog("runs"))
def runs(db: DbOption = "fathom.db", fmt: FormatOption = QueryFormat.table, wide: WideOption = False) -> None:
    """The scan runs in the database: when, their status, how many servers were scanned and answered (and for
    a distributed run, how many were queued and which workers took part)."""
    from scanner.report import queries

    optional = queries.OPTIONAL_COLUMNS["runs"]
    _table(fmt, lambda: queries.runs(_db_url(db, existing=True)), queries.run_columns, wide=wide, optional=optional)


@app.command(epilog=exitcodes.command_epilog("servers"))
def servers(
    db: DbOption = "fathom.db",
    fmt: FormatOption = QueryFormat.table,
    wide: WideOption = False,
    preview: PreviewOption = False,
    client: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            help="Only the servers this client (claude-desktop, openai-api, ...: `fathom check --help`) does not load "
            "whole in their last successful scan, with its verdict, the rules and the run since which it is so.",
        ),
    ] = None,
    state: Annotated[
        str | None, typer.Option(metavar="refuses|drops", help="With --client: only servers in this state.")
    ] = None,
) -> None:
    """Every server with its last outcome, and the tools, leaderboard score, problem/warning/note counts and tokens
    per turn of its last successful scan; JSON and CSV add what its last scan ran (registry version, package, URL,
    command), that scan's stderr tail and "clients" (what each client sends per turn at rest). Counts and "will it
    load" are the stable rules' unless --preview. With --client (and --state), the servers a client refuses or
    drops tools of, and since which run."""
    from scanner.report import queries

    if client is None:
        if state is not None:
            _fail("--state goes with --client: --client KEY --state refuses|drops", 2)
        url, shown = _db_url(db, existing=True), _preview(preview)
        # a table shows no client costs: only JSON and CSV measure them
        fetch = lambda: queries.server_rows(url, shown, clients=fmt is not QueryFormat.table)  # noqa: E731
        _stream_table(fmt, fetch, queries.SERVER_COLUMNS, wide=wide, optional=queries.OPTIONAL_COLUMNS["servers"])
        return
    from scanner.errors import InputError
    from scanner.measure.verdicts import parse_clients

    try:
        chosen = parse_clients(client, "--client")
    except InputError as exc:
        _fail(str(exc), 2)
    if len(chosen) != 1:
        _fail("--client takes one client key", 2)
    key = chosen[0]
    if state is not None and state not in ("refuses", "drops"):
        _fail(f"--state must be refuses or drops, not {state!r}", 2)
    fetch_client = lambda: queries.servers_for_client(_db_url(db, existing=True), key, state, _preview(preview))  # noqa: E731
    _table(
        fmt, fetch_client, queries.CLIENT_SERVER_COLUMNS, wide=wide, optional=queries.OPTIONAL_COLUMNS["client-servers"]
    )


@app.command(epilog=exitcodes.command_epilog("history"))
def history(
    server: Annotated[str, typer.Argument(help="The server's name as the registry lists it.")],
    db: DbOption = "fathom.db",
    fmt: FormatOption = QueryFormat.table,
    wide: WideOption = False,
    preview: PreviewOption = False,
) -> None:
    """One server's scans over time (the table newest first; JSON and CSV oldest first): outcome, registry and
    server version, tools, tokens per provider, score, findings, a column per per-scan metric (handshake and list
    times, tools/list pages), what was run and what each client sends per turn at rest (JSON/CSV: "clients") and,
    under the table, the newest scan's stderr tail and, when it failed, the next step (the FATHOM_SECRET_...
    variable to set for an HTTP 401)."""
    from scanner.report import queries

    found: list[dict[str, Any]] = []

    def fetch() -> list[dict[str, Any]]:
        found.extend(queries.history(_db_url(db, existing=True), server, _preview(preview)))
        # The table reads newest first, as a person looks for the last scan; JSON and CSV keep time order.
        return found[::-1] if fmt is QueryFormat.table else found

    _table(fmt, fetch, queries.history_columns, wide=wide, optional=queries.OPTIONAL_COLUMNS["history"])
    if fmt is QueryFormat.table:
        typer.echo(queries.stderr_note(found), nl=False)
        typer.echo(queries.next_step_note(server, found, None if wide else _table_width()), nl=False)


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
        typer.Option(
            "--open",
            help="Only findings not gone: present in their server's newest scan that listed tools (a registry-data "
            "finding, MCP7xx: in its newest scan).",
        ),
    ] = False,
    db: DbOption = "fathom.db",
    fmt: FormatOption = QueryFormat.table,
    wide: WideOption = False,
    preview: PreviewOption = False,
) -> None:
    """Findings over time, with the run each first appeared in and the run it went away in (if it did): the tool
    lists' findings, each scan's own, and the registry entries' (MCP701-MCP705, whatever the scan's outcome).
    Preview rules' findings only with --preview or --rule naming one, then marked (status, precision).

    An unknown rule code or slug is an error (exit 2) that names the nearest one."""
    from datetime import datetime

    from scanner.models import Severity
    from scanner.report import queries

    try:
        when = datetime.fromisoformat(since) if since else None
    except ValueError:
        _fail(f"--since wants a date like 2026-11-01 or 2026-11-01T18:00, got {since!r}", 2)
    chosen = Severity.parse(severity.value) if severity is not None else None
    if run is None:  # the whole history: rows streamed a chunk of servers at a time, never all held
        url, shown_preview = _db_url(db, existing=True), _preview(preview)
        _stream_table(
            fmt,
            lambda: queries.finding_stream(
                url, rule=rule, server=server, since=when, severity=chosen, still_open=still_open, preview=shown_preview
            ),
            queries.finding_columns,
            candidates=queries.finding_columns([{"status": "preview"}]),
            wide=wide,
            optional=queries.OPTIONAL_COLUMNS["findings"],
        )
        return
    _table(
        fmt,
        lambda: queries.findings(
            _db_url(db, existing=True),
            rule=rule,
            server=server,
            since=when,
            run=run,
            severity=chosen,
            still_open=still_open,
            preview=_preview(preview),
        ),
        queries.finding_columns,
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
    preview: PreviewOption = False,
) -> None:
    """What changed on a server between two runs: registry and server versions, outcome changes, tools renamed
    (one row), added, removed and changed, tokens, findings by rule (new, fixed, gone with the tool). A server that
    never answered shows its outcomes. Preview rules' findings only with --preview, marked."""
    from scanner.report import queries

    fetch = lambda: queries.diff(_db_url(db, existing=True), server, from_run, to_run, _preview(preview))  # noqa: E731
    _table(fmt, fetch, queries.DIFF_COLUMNS, wide=wide)


@app.command(epilog=exitcodes.command_epilog("rescore"))
def rescore(
    db: DbOption = "fathom.db",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; write nothing.")] = False,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Measure every stored tool list again, also those already measured under this catalogue and "
            "measurement basis (after a change the basis does not name, such as a shared helper of the rules).",
        ),
    ] = False,
) -> None:
    """Recompute findings and token counts of every stored tool list not yet measured under the current rule
    catalogue and measurement basis (the rules' digest, the tokenizers, the client table: `--all` for every
    list), and every scan's own findings (MCP5xx, MCP6xx, MCP809, instructions); print findings added/removed per
    rule."""
    from scanner.measure.toollist import measure
    from scanner.rules import RULES_VERSION
    from scanner.store import open_store
    from scanner.store.lock import writer_lock

    with open_store(_db_url(db, existing=True)) as store, writer_lock(store.engine, "rescore"):
        result = store.rescore_history(RULES_VERSION, measure, dry_run=dry_run, every=every)
    typer.echo(result.text())
