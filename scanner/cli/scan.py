"""``fathom scan`` and ``fathom worker``: a registry scanned concurrently into the database."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scanner import exitcodes  # the one table of exit codes (a light module)
from scanner.scan.lanes import LaneChoice  # --lanes (a light module: models and the standard library)

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    from scanner.models import ScanOutcome, ServerEntry
    from scanner.scan.crawl import CrawlSettings
    from scanner.scan.night import ScanConfig, ScanSummary
from scanner.cli.base import _SETTINGS, DB_HELP, _db_url, _fail, _known_profile, _seconds, _table_width, app


def _note(line: str) -> None:
    """A note on standard error (a warning, a hint): ``fathom: line``, unless --quiet."""
    if not _SETTINGS["quiet"]:
        typer.echo(f"fathom: {line}", err=True)


class ScanFormat(enum.StrEnum):
    text = "text"
    json = "json"


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
            "(docs/registry.md). [default: $XDG_CACHE_HOME/fathom, or ~/.cache/fathom; /var/cache/fathom for root]",
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
    from scanner.packages.runners import namespace_line, network_line, warning_lines
    from scanner.scan.night import ScanConfig, resolve_entries, run_scan

    settings = _crawl_settings(
        concurrency,
        per_host,
        timeout,
        connect_timeout,
        profile,
        retries,
        allow_private,
        cache_dir=cache_dir,
        disk_limit_mb=disk_limit_mb,
        cache_max_mb=cache_max_mb,
        retry_too_large=retry_too_large,
        pass_env=pass_env,
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
        from scanner.registry.dryrun import remembered_verdicts, totals, with_refusals

        entries = with_refusals(resolve_entries(config), allow_private=settings.allow_private)
        for line in warning_lines(entries, settings.packages):
            _note(line)
        for notice in (namespace_line(entries), network_line(entries)):
            if notice is not None:
                _note(notice)
        verdicts = remembered_verdicts(entries, settings.packages) if run_packages else {}
        _print_entries(entries, fmt, verdicts)
        if fmt is ScanFormat.text:
            typer.echo("\n".join(totals(entries, verdicts, width=_table_width())))
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
            f"run {queued.run_id} queued: {queued.queued:,} servers"
            + (f" ({queued.duplicates:,} duplicate names left out)" if queued.duplicates else "")
            + "; start `fathom worker --db ...` on any machine"
        )
        return
    needs: dict[str, int] = {}
    summary = _scan_with_progress(config, run_scan, needs)
    from scanner.scan.night import skipped_line

    skipped_note = skipped_line(needs)
    if fmt is ScanFormat.json:
        import dataclasses
        import json

        typer.echo(json.dumps({**dataclasses.asdict(summary), "scanned": summary.scanned}, indent=2))
    else:
        typer.echo(_scan_line(summary))
    if skipped_note:
        _note(skipped_note)
    if fmt is ScanFormat.text and not summary.interrupted and (unread := _unread_line(db, summary)):
        _note(unread)
    if summary.interrupted:
        import shlex

        from scanner.scan.night import resume_flags
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


NOT_READ_SHOWN = 5  # servers named in the line after a scan; the rest counted
_NOT_FAILED = frozenset({"ok", "skipped", "refused"})  # skips and refusals: the skipped line names their flag


def _unread_line(db: str, summary: ScanSummary) -> str:
    """``3 servers not read: a (auth_required), b (timeout) and 1 more; why each failed and what to do: fathom
    servers --db DB`` after a run whose scans did not all read a list ('' when every one did)."""
    if not set(summary.run_counts or summary.counts) - _NOT_FAILED:
        return ""
    import shlex

    from scanner.store import open_store
    from scanner.store.engine import url_without_password

    store = open_store(_db_url(db))
    try:
        failed = [
            (row.name, row.last_outcome or "?")
            for row in store.servers()
            if row.last_run_id == summary.run_id and (row.last_outcome or "?") not in _NOT_FAILED
        ]
    finally:
        store.close()
    if not failed:
        return ""
    named = ", ".join(f"{name} ({outcome})" for name, outcome in failed[:NOT_READ_SHOWN])
    more = f" and {len(failed) - NOT_READ_SHOWN:,} more" if len(failed) > NOT_READ_SHOWN else ""
    noun = "server" if len(failed) == 1 else "servers"
    where = shlex.quote(url_without_password(db))
    said = f"{len(failed):,} {noun} not read: {named}{more}"
    return f"{said}; why each failed and what to do: fathom servers --db {where}"


def _scan_line(summary: ScanSummary) -> str:
    """``run 3 interrupted: 57 of 120 servers scanned · ok 50 · timeout 7``; after a resume, the whole run's
    totals (what was done before it, and what it did)."""
    before = summary.already_done if summary.resumed else 0
    shown = summary.run_counts if summary.resumed and summary.run_counts else summary.counts
    counts = " · ".join(f"{name} {count:,}" for name, count in sorted(shown.items()))
    total = summary.total + before
    servers = "server" if total == 1 else "servers"
    if summary.interrupted:
        head = f"run {summary.run_id} interrupted: {summary.scanned + before:,} of {total:,} {servers} scanned"
    else:
        head = f"run {summary.run_id} finished: {total:,} {servers}"
    if summary.resumed:
        head += f" ({summary.already_done:,} done before this resume)"
    return f"{head} · {counts or 'nothing scanned'}"


def _scan_with_progress(
    config: ScanConfig, run_scan: Callable[..., ScanSummary], needs: dict[str, int] | None = None
) -> ScanSummary:
    """Run the scan with a progress display from the first second, turning SIGTERM into the same clean stop as
    Ctrl-C; ``needs`` counts the servers left unscanned by the opt-in flag that would scan them."""
    import signal

    from scanner.scan.night import opt_in_flags
    from scanner.scan.progress import Progress

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
            on_phase=progress.phase,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        progress.close()


def _print_entries(entries: list[ServerEntry], fmt: ScanFormat, verdicts: dict[str, str] | None = None) -> None:
    import json

    from scanner.registry.dryrun import entries_to_json

    rows = entries_to_json(entries, verdicts)
    if fmt is ScanFormat.json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=True))
        return
    from scanner.report.tabular import TableFormat, render_rows

    columns = ["name", "transport", "target", "skip", "findings"]
    table = [
        {
            **row,
            "target": row.get("url") or " ".join(row.get("command") or []),
            "skip": row["skip"]
            or (f"remembered too_large: {row['remembered_too_large']}" if row.get("remembered_too_large") else None),
            "findings": " ".join(dict.fromkeys(finding["code"] for finding in row["findings"])),
        }
        for row in rows
    ]
    # Fits the terminal like the query tables: target, skip and findings wrap, transport goes when still too wide.
    text = render_rows(
        table,
        TableFormat.table,
        columns=columns,
        width=_table_width(),
        optional=["transport"],  # the findings (MCP701-705) stay; the totals count the transports
        wrap=["target", "skip", "findings"],
    )
    typer.echo(text, nl=False)


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
    cache_max_mb: Annotated[
        int,
        typer.Option(
            min=64,
            help="With --run-packages: clear killed runs' leftovers as the worker starts; when it stops, prune and "
            "remove the least recently used packages' installs until the cache holds at most this many MiB.",
        ),
    ] = 20480,
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
    from scanner.distributed import WorkerConfig, run_worker
    from scanner.distributed.worker import default_name

    config = WorkerConfig(
        db_url=_db_url(db),
        crawl=_crawl_settings(
            concurrency,
            per_host,
            timeout,
            connect_timeout,
            profile,
            retries,
            allow_private,
            cache_dir=cache_dir,
            disk_limit_mb=disk_limit_mb,
            cache_max_mb=cache_max_mb,
            pass_env=pass_env,
        ),
        name=name or default_name(),
        stall_timeout=stall_timeout,
        until_idle=until_idle,
        run_packages=run_packages,
        run_commands=run_commands,
        memory_limit_mb=memory_limit_mb,
    )
    done = run_worker(
        config,
        on_closed=lambda run_id: typer.echo(f"run {run_id} finished"),
        on_warning=lambda line: typer.echo(f"fathom: {line}", err=True),
    )
    counts = " · ".join(f"{outcome} {count:,}" for outcome, count in sorted(done.counts.items()))
    other = f" · {done.other_runs:,} jobs of another run dropped" if done.other_runs else ""
    typer.echo(f"worker {done.name} stopped: {done.written:,} servers written · {counts or 'nothing scanned'}{other}")


def _crawl_settings(
    concurrency: int,
    per_host: int,
    timeout: float,
    connect_timeout: float,
    profile: str,
    retries: int,
    allow_private: bool,
    *,
    cache_dir: Path | None,
    disk_limit_mb: int,
    cache_max_mb: int,
    pass_env: list[str] | None,
    retry_too_large: bool = False,
    lanes: LaneChoice = LaneChoice.both,
) -> CrawlSettings:
    """What ``scan`` and ``worker`` share of a crawl's options, as data: the one place both build their
    ``CrawlSettings`` and its ``PackageSettings`` (``worker`` has no ``--retry-too-large`` or ``--lanes``)."""
    from scanner.mcp import ClientLimits
    from scanner.packages import PackageSettings
    from scanner.scan.crawl import CrawlSettings

    return CrawlSettings(
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
