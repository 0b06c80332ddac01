"""``fathom scan``: resolve a registry, crawl it, store every result, and keep the run's state honest.

:func:`run_scan` is the one library call behind the command. A run is ``running`` while it goes, ``finished``
when every entry was written, ``interrupted`` when stopped (Ctrl-C, SIGTERM); ``--resume`` continues the newest
unfinished run (of the database, or of the source given) with the run's own stored source and options, and only
the servers it has not written yet; with nothing to resume it is an error, never a silent new run.

One scan writes to a database at a time: :func:`run_scan` holds the database's writer lock
(:mod:`scanner.store.lock`) from before it looks at earlier runs until its run is closed, so a second scan on the
same database stops at once with :class:`~scanner.errors.WriterBusy` (exit 4) instead of colliding in the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import typing
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scanner import wire
from scanner.errors import InputError
from scanner.models import ScanOutcome, ServerEntry
from scanner.scan.crawl import CrawlSettings, crawl_collector
from scanner.store import owner

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from scanner.store import Store

# A run still ``running`` with no new scan for this long was left by a killed process (a live crawl writes a
# server at least every per-server deadline); a new scan marks it interrupted so ``fathom runs`` stops showing it
# as running. ``--resume`` finishes it either way, and a live run wrongly marked (a crawl whose every worker waits
# on a deadline longer than this) is set back to finished by its own finish_run.
STALE_RUN_AFTER = timedelta(minutes=10)


@dataclass(frozen=True)
class ScanConfig:
    """Everything ``fathom scan`` was asked to do. Holds no secret: headers come from the environment.

    ``source`` may be None only with ``resume``: the run to finish brings its own.
    """

    source: str | None
    db_url: str = "sqlite:///fathom.db"
    kind: str | None = None
    updated_since: str | None = None
    run_packages: bool = False
    run_commands: bool = False
    memory_limit_mb: int = 1024
    max_input_mb: int = 128
    resume: bool = False
    crawl: CrawlSettings = field(default_factory=CrawlSettings)
    only: tuple[str, ...] = ()  # scan only the entries of these names (--only)
    limit: int | None = None  # scan only the first N entries (after --only; --limit)

    def options(self) -> dict[str, Any]:
        """The run's options as stored with it: every field of this config, of its crawl settings and of their
        client limits, flattened to one level (``timeout``, not ``crawl.limits.timeout``), minus
        :data:`OPTIONS_EXCLUDED`. Derived, not listed, so a new setting is stored the day it is added."""
        return _flat_fields(self, OPTIONS_EXCLUDED)


# Config fields never stored with a run. ``source`` is stored apart, redacted (``runs.source``); ``db_url`` can
# carry a database password; ``resume`` says how this process started, not what the run does; ``environ`` (the
# packages' settings) is where installer settings are read, values that may be secrets. A field that holds a
# secret or a callable must be added here.
OPTIONS_EXCLUDED = frozenset({"source", "db_url", "resume", "environ"})


def _json_ready(value: Any) -> Any:
    """An option value as it is stored (JSON): a path as its text, a tuple as a list."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_json_ready(item) for item in value]
    return value


def _flat_fields(settings: DataclassInstance, excluded: frozenset[str]) -> dict[str, Any]:
    """The fields of a dataclass instance, nested dataclasses merged in (their own field names, no prefix)."""
    flat: dict[str, Any] = {}
    for item in dataclasses.fields(settings):
        if item.name in excluded:
            continue
        value = getattr(settings, item.name)
        inner = (
            _flat_fields(value, excluded)
            if dataclasses.is_dataclass(value) and not isinstance(value, type)
            else {item.name: _json_ready(value)}
        )
        clash = flat.keys() & inner.keys()
        if clash:
            raise ValueError(f"run option {sorted(clash)[0]!r} is defined twice; rename one of the settings")
        flat.update(inner)
    return flat


def config_from_options(
    source: str, db_url: str, options: typing.Mapping[str, Any], given: ScanConfig | None = None
) -> tuple[ScanConfig, list[str]]:
    """The :class:`ScanConfig` a run was started with, rebuilt from its stored options (the inverse of
    :meth:`ScanConfig.options`), for ``--resume``. A setting the run did not store (a run of an older version)
    takes its value from ``given`` (the command line), else its default. Returns the config and one line per such
    setting, and per stored option this version no longer has (ignored)."""
    notes: list[str] = []
    used: set[str] = set()

    def fields_of(cls: type[Any], fallback: Any) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for item in dataclasses.fields(cls):
            if item.name in OPTIONS_EXCLUDED:
                continue
            hint = hints[item.name]
            if isinstance(hint, type) and dataclasses.is_dataclass(hint):
                values[item.name] = hint(**fields_of(hint, getattr(fallback, item.name, None)))
            elif item.name in options:
                used.add(item.name)
                values[item.name] = _from_json(options[item.name], hint)
            elif fallback is not None:
                values[item.name] = getattr(fallback, item.name)
                notes.append(f"the run stored no {item.name!r}; this command's value is used")
            else:
                notes.append(f"the run stored no {item.name!r}; the default is used")
        return values

    values = fields_of(ScanConfig, given)
    notes.extend(
        f"the run's option {key!r} is unknown to this version; ignored"
        for key in options
        if key not in used and key != owner.KEY
    )
    return ScanConfig(source=source, db_url=db_url, resume=True, **values), notes


def _from_json(value: Any, hint: Any) -> Any:
    """A stored option value as its setting holds it: a list as a tuple, a path's text as a Path."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, str) and (hint is Path or Path in typing.get_args(hint)):
        return Path(value)
    return value


@dataclass(frozen=True)
class ScanSummary:
    """What one ``fathom scan`` process did. ``total`` is what it set out to scan (after a resume: what was left),
    ``scanned`` what it wrote, ``already_done`` what a resumed run had written before, ``run_counts`` (a resumed
    run only) the outcomes of the whole run, before and during this resume."""

    run_id: int
    total: int
    counts: dict[str, int]
    interrupted: bool = False
    resumed: bool = False
    already_done: int = 0
    duplicates: int = 0
    source: str = ""
    run_counts: dict[str, int] = field(default_factory=dict)

    @property
    def scanned(self) -> int:
        return sum(self.counts.values())


def source_key(source: str) -> str:
    """How a run records its source: a file as its absolute path, so ``--resume`` finds the run however the path
    was typed (``servers.json``, ``./servers.json``); a URL or ``-`` as given."""
    if source == "-" or "://" in source:
        return source
    path = Path(source)
    return str(path.resolve()) if path.exists() else source


def resolve_entries(config: ScanConfig) -> list[ServerEntry]:
    from scanner.registry import load_entries

    if config.source is None:
        raise InputError("name the registry to scan (only --resume may leave it out).")
    entries = load_entries(
        config.source,
        kind=config.kind,
        updated_since=config.updated_since,
        run_packages=config.run_packages,
        run_commands=config.run_commands,
        memory_limit_mb=config.memory_limit_mb,
        max_input_bytes=config.max_input_mb * 1024 * 1024,
    )
    if config.run_packages:
        # A container runner whose daemon does not answer: its images are runner_missing, said once.
        from scanner.packages.runners import check_daemons

        entries = check_daemons(entries, config.crawl.packages.source())
    return pick_entries(entries, config.only, config.limit)


def pick_entries(entries: list[ServerEntry], only: Sequence[str], limit: int | None) -> list[ServerEntry]:
    """The entries named in ``only`` (all when empty), in input order, then the first ``limit`` of them. A name
    ``only`` gives that no entry has is an :class:`InputError` naming the nearest (a typo never scans nothing)."""
    if only:
        names = {entry.name for entry in entries}
        missing = [name for name in only if name not in names]
        if missing:
            import difflib

            near = difflib.get_close_matches(missing[0], sorted(names), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise InputError(f"--only {missing[0]!r}: no entry of that name in the input{hint}")
        wanted = set(only)
        entries = [entry for entry in entries if entry.name in wanted]
    return entries if limit is None else entries[:limit]


OPT_IN_FLAGS = ("--run-packages", "--run-commands", "--allow-private")
"""The flags a skipped or refused server's detail may name as the way to scan it."""


def opt_in_flags(detail: str) -> tuple[str, ...]:
    """The :data:`OPT_IN_FLAGS` a skip reason or outcome detail names (``package: needs --run-packages``)."""
    return tuple(flag for flag in OPT_IN_FLAGS if flag in detail)


def skipped_line(needs: Mapping[str, int]) -> str:
    """``12 servers were not scanned: 10 need --run-packages, 2 need --allow-private`` ('' when none)."""
    if not needs:
        return ""
    total = sum(needs.values())
    noun = "server was" if total == 1 else "servers were"
    parts = [f"{count:,} need{'s' if count == 1 else ''} {flag}" for flag, count in needs.items()]
    return f"{total:,} {noun} not scanned: {', '.join(parts)} (run again with the flag to scan them)"


def resume_config(store: Store, config: ScanConfig) -> tuple[int, ScanConfig, list[str]]:
    """The run ``--resume`` finishes and the config it was started with: the newest unfinished run of
    ``config.source`` (of any source when None). Raises :class:`InputError` when there is none, or when the run's
    source was stored redacted (a credential in its URL) and no registry was given to read it again."""
    wanted = source_key(config.source) if config.source is not None else None
    run_id = store.resumable_run(wanted)
    if run_id is None:
        of = f" of {wanted}" if wanted is not None else ""
        raise InputError(f"nothing to resume{of}: no interrupted run in this database. Run the scan without --resume.")
    run = next(row for row in store.runs() if row.id == run_id)
    source = config.source if config.source is not None else run.source
    if config.source is None and ("[redacted]" in run.source or run.source == "-"):
        raise InputError(
            f"run {run_id} read {run.source!r}, which cannot be read again as stored; "
            "give the registry too: fathom scan REGISTRY --resume --db DB"
        )
    resumed, notes = config_from_options(source, config.db_url, run.options, config)
    resumed, capped = within_opt_ins(resumed, config)
    return run_id, resumed, notes + capped


def resume_flags(config: ScanConfig) -> list[str]:
    """The opt-ins a command that resumes ``config``'s run must repeat (:func:`within_opt_ins` keeps no more)."""
    chosen = (
        ("--run-packages", config.run_packages),
        ("--run-commands", config.run_commands),
        ("--allow-private", config.crawl.allow_private),
    )
    flags = [flag for flag, on in chosen if on]
    for name in config.crawl.packages.pass_env:
        flags += ["--pass-env", name]
    return flags


def within_opt_ins(stored: ScanConfig, given: ScanConfig) -> tuple[ScanConfig, list[str]]:
    """``stored`` (a run's options, read from the database) cut down to what the resuming command line allows.

    A run row is data: whoever can write the database could plant one. So a resume never runs more than the
    command that resumes asked for: ``--run-packages``, ``--run-commands`` and ``--allow-private`` hold only when
    both the run and this command line give them; ``--pass-env`` names only those given both times; the cache
    folder is this command line's; the memory, disk and input limits are the smaller of the two. Returns the
    config and one line per option cut.
    """
    notes: list[str] = []

    def both(flag: str, had: bool, has: bool) -> bool:
        if had and not has:
            notes.append(f"the run had {flag}; this command line does not, so the resume runs without it")
        return had and has

    def smaller(flag: str, had: int, has: int) -> int:
        if had > has:
            notes.append(f"the run had {flag} {had}; this command line's {has} is used (the smaller)")
        return min(had, has)

    packages = stored.crawl.packages
    pass_env = tuple(name for name in packages.pass_env if name in given.crawl.packages.pass_env)
    if pass_env != packages.pass_env:
        left = ", ".join(name for name in packages.pass_env if name not in pass_env)
        notes.append(f"the run passed {left} to packages (--pass-env); this command line does not")
    if packages.cache_dir is not None and packages.cache_dir != given.crawl.packages.cache_dir:
        notes.append("the run's --cache-dir is not used: this command line's is")
    crawl = dataclasses.replace(
        stored.crawl,
        allow_private=both("--allow-private", stored.crawl.allow_private, given.crawl.allow_private),
        packages=dataclasses.replace(
            packages,
            pass_env=pass_env,
            cache_dir=given.crawl.packages.cache_dir,
            disk_limit_mb=smaller("--disk-limit-mb", packages.disk_limit_mb, given.crawl.packages.disk_limit_mb),
            environ=given.crawl.packages.environ,
        ),
    )
    capped = dataclasses.replace(
        stored,
        run_packages=both("--run-packages", stored.run_packages, given.run_packages),
        run_commands=both("--run-commands", stored.run_commands, given.run_commands),
        memory_limit_mb=smaller("--memory-limit-mb", stored.memory_limit_mb, given.memory_limit_mb),
        max_input_mb=smaller("--max-input-mb", stored.max_input_mb, given.max_input_mb),
        crawl=crawl,
    )
    return capped, notes


def run_scan(
    config: ScanConfig,
    *,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[ServerEntry, ScanOutcome], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    on_begin: Callable[[ServerEntry], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> ScanSummary:
    """Scan every entry of ``config.source`` into the database at ``config.db_url``.

    With ``config.resume`` the newest unfinished run is finished with its own stored source and options (see
    :func:`resume_config`), cut down to the opt-ins of ``config`` (:func:`within_opt_ins`); the other options of
    ``config`` are used only for a setting the run did not store.
    ``on_start(run_id, to_scan)`` and ``on_result(entry, outcome)`` feed a progress display; both run in the
    writer, never concurrently; ``on_begin(entry)`` says a server's scan started (in the event loop). A
    KeyboardInterrupt (Ctrl-C, or SIGTERM turned into one by the CLI) marks the run interrupted, keeps every
    server already written, and returns a summary with ``interrupted=True``. ``on_phase(what)`` says a step
    after the last server started (the package cache's housekeeping), so a display shows that step rather than
    a finished bar; the run's ``finished_at`` is stamped after it.
    """
    from scanner.measure import tokenizer
    from scanner.store import open_store
    from scanner.store.engine import sqlite_file_missing
    from scanner.store.lock import writer_lock

    if config.source is None and not config.resume:
        raise InputError("name the registry to scan (only --resume may leave it out).")
    entries: list[ServerEntry] = []
    if not config.resume:
        entries = _entries(config, on_warning)  # bad input fails before a database is created
    elif sqlite_file_missing(config.db_url):
        raise InputError(f"nothing to resume: no database at {config.db_url} (--db names it).")
    # Fail before connecting to anything if token counts cannot be made (no silent heuristic, no wasted crawl).
    tokenizer.verify()  # built on the first new tool list: an unchanged rescan never pays for it
    with open_store(config.db_url) as store, writer_lock(store.engine, "scan") as lock:
        resume_id: int | None = None
        if config.resume:
            resume_id, config, notes = resume_config(store, config)
            if on_warning is not None:
                on_warning(f"resuming run {resume_id} of {config.source} with its own options")
                for note in notes:
                    on_warning(note)
            entries = _entries(config, on_warning)
        with crawl_collector():
            tidy = _package_cache_kept(config, entries, on_warning)
            tidied = False

            def housekeeping() -> None:
                nonlocal tidied
                if tidy is None or tidied:
                    return
                tidied = True
                if on_phase is not None:
                    on_phase(HOUSEKEEPING)
                tidy()

            try:
                return _scan_into(
                    store, config, entries, resume_id, on_start, on_result, lock.check, on_begin, housekeeping
                )
            finally:
                housekeeping()  # a scan that stopped early still leaves the cache in bounds


HOUSEKEEPING = "housekeeping: pruning the package cache and holding --cache-max-mb"


def _package_cache_kept(
    config: ScanConfig, entries: list[ServerEntry], on_warning: Callable[[str], None] | None
) -> Callable[[], None] | None:
    """When packages will run: clear what killed runs left in the package cache now, and return what prunes it
    and holds ``--cache-max-mb`` after the scan (:mod:`scanner.packages.housekeeping`); else None."""
    if not config.run_packages or not any(entry.package and not entry.skip for entry in entries):
        return None
    from scanner.packages import housekeeping

    return housekeeping.kept(config.crawl.packages, on_warning or (lambda line: None))


def _entries(config: ScanConfig, on_warning: Callable[[str], None] | None) -> list[ServerEntry]:
    """The entries to scan, and the missing runners said once, before connecting to anything."""
    from scanner.packages.runners import namespace_line, network_line, warning_lines

    entries = resolve_entries(config)
    if on_warning is not None:
        for line in warning_lines(entries, config.crawl.packages):
            on_warning(line)
        for notice in (namespace_line(entries), network_line(entries)):
            if notice is not None:
                on_warning(notice)
    return entries


def _scan_into(
    store: Store,
    config: ScanConfig,
    entries: list[ServerEntry],
    resume_id: int | None,
    on_start: Callable[[int, int], None] | None,
    on_result: Callable[[ServerEntry, ScanOutcome], None] | None,
    still_writer: Callable[[], None] = lambda: None,
    on_begin: Callable[[ServerEntry], None] | None = None,
    before_finish: Callable[[], None] = lambda: None,
) -> ScanSummary:
    import anyio

    from scanner.measure.toollist import measure
    from scanner.rules import RULES_VERSION
    from scanner.scan.crawl import crawl

    assert config.source is not None  # resolve_entries has read it
    source = source_key(config.source)
    done = set[str]()
    if resume_id is not None:
        run_id = resume_id
        done = store.resume_run(run_id)
    else:
        store.mark_gone_runs_interrupted()
        store.mark_stale_runs_interrupted(older_than=STALE_RUN_AFTER)
        run_id = store.start_run(source, RULES_VERSION, {**config.options(), owner.KEY: owner.this_process()})
    resumed = resume_id is not None
    # A name is a server's identity in the store: a second entry with the same name would be scanned for nothing
    # (the store keeps one scan per server per run), so only the first is scanned and the rest are counted. Names
    # are compared as the store keeps them (NUL and lone surrogates as U+FFFD), so --resume recognises them.
    first: dict[str, ServerEntry] = {}
    for entry in entries:
        name = wire.clean_str(entry.name)
        first.setdefault(name, entry if name is entry.name else dataclasses.replace(entry, name=name))
    unique = list(first.values())
    duplicates = len(entries) - len(unique)
    todo = [entry for entry in unique if entry.name not in done]
    counts: Counter[str] = Counter()

    def summary(interrupted: bool) -> ScanSummary:
        whole: dict[str, int] = {}
        if resumed:
            with contextlib.suppress(Exception):  # the totals are a courtesy: a failing read never loses the run
                whole = dict(Counter(row.outcome for row in store.leaderboard(run_id)))
        return ScanSummary(
            run_id,
            len(todo),
            dict(counts),
            interrupted=interrupted,
            resumed=resumed,
            already_done=len(done & first.keys()),
            duplicates=duplicates,
            source=source,
            run_counts=whole,
        )

    def write(results: list[tuple[ServerEntry, ScanOutcome]]) -> None:
        still_writer()  # raises WriterBusy if another process took the lock over
        store.record_scans(run_id, results, measure)
        for entry, outcome in results:
            counts[outcome.outcome.value] += 1
            if on_result is not None:
                on_result(entry, outcome)

    if on_start is not None:
        on_start(run_id, len(todo))
    try:
        anyio.run(functools.partial(crawl, on_begin=on_begin, sink_many=write), todo, config.crawl, None)
    except Exception:
        # A run-fatal error while writing (no tokenizer, the database refusing writes): keep what was written
        # resumable, then let the caller report the error. Best effort: the database may be what failed.
        with contextlib.suppress(Exception):
            store.finish_run(run_id, "interrupted")
        raise
    except KeyboardInterrupt:
        store.finish_run(run_id, "interrupted")
        return summary(interrupted=True)
    before_finish()  # housekeeping belongs to the run: it is finished when that is done
    store.finish_run(run_id, "finished")
    return summary(interrupted=False)
