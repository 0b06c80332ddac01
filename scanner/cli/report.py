"""``fathom report`` and ``fathom demo``: the published site."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from scanner import exitcodes  # the one table of exit codes (a light module)

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    pass
from scanner.cli.base import RUN_ID_MAX, DbOption, _db_url, _fail, app, invocation


@app.command(epilog=exitcodes.command_epilog("report"))
def report(
    out: Annotated[Path, typer.Option(help="Folder the site is written to.")] = Path("reports"),
    run: Annotated[
        int | None, typer.Option(min=1, max=RUN_ID_MAX, help="Report this run (default: the latest finished run).")
    ] = None,
    db: DbOption = "fathom.db",
    preview: Annotated[
        bool,
        typer.Option(
            "--preview",
            help="Also show preview rules' findings (pages, trends, change log, health, rule filter, exports), each "
            "marked with its rule's measured precision; or preview = true in the config file.",
        ),
    ] = False,
) -> None:
    """Build the static report site: leaderboard, trends, a page per server, the rule catalogue, and
    Markdown/JSON/CSV exports of the leaderboard. It opens from file:// with no network. Every page and export
    shows and counts the stable rules' findings only, unless --preview."""
    from scanner.cli.queries import _preview
    from scanner.report import build_report
    from scanner.report.text import plural
    from scanner.store import open_store

    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file; the report is a folder of pages (name a new or existing folder)", 2)
    with open_store(_db_url(db, existing=True)) as store:
        result = build_report(store, out, run_id=run, preview=_preview(preview))
    typer.echo(
        f"run {result.run_id}: {plural(result.servers_ranked, 'server')} ranked, {result.servers_unranked:,} listed "
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
        counts = " · ".join(f"{name} {count:,}" for name, count in sorted(summary.counts.items()))
        typer.echo(f"scan {number} (run {summary.run_id}): {summary.total:,} servers · {counts}")
    database = result.database
    me = invocation()
    typer.echo(f"database: {database}  (try: {me} servers --db {database}; {me} findings --db {database})")
    # What the second scan changed on one server, the demo's own rename among it (one row, as docs/report.md says).
    typer.echo(f"changes:  {me} diff example/quickcalc --db {database}")
    typer.echo(f"report:   {result.report_index.resolve().as_uri()}")
