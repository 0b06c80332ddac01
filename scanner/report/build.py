"""``fathom report``: read the store, shape :class:`SiteData`, write the site and the exports.

Two steps, kept apart so each can be tested alone: :func:`site_data` reads the store through its query API (no
SQL here) and returns frozen dataclasses; :func:`build_report` hands them to the renderers and writes the files.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import methodcaller
from pathlib import Path
from typing import overload

from scanner.check.groups import FindingGroup, group_findings
from scanner.errors import InputError, OutputError
from scanner.measure.history import number_text, readable_log
from scanner.measure.score import SCORE_FORMULA, SCORE_VERSION, ScoreBreakdown, score_breakdown
from scanner.measure.verdicts import verdicts
from scanner.models import PROVIDER_SHORT, Finding, Severity, ToolCost
from scanner.report.changes import run_changes
from scanner.report.client_costs import leader_client_costs, leader_key
from scanner.report.clients_view import clients_view
from scanner.report.csv_out import write_csv
from scanner.report.data import (
    NOT_RUN_OUTCOMES,
    ChangeRow,
    EventView,
    FindingView,
    History,
    Leaderboard,
    RuleShare,
    RuleView,
    ServerPage,
    ServerRow,
    SiteData,
    ToolCostRow,
    TrendPoint,
    declared_text,
    is_ranked_outcome,
    provider_order,
)
from scanner.report.html import write_site
from scanner.report.jsonout import write_json
from scanner.report.markdown import write_markdown
from scanner.report.nextstep import next_step
from scanner.report.preview import only_visible, showing, shown_preview, visible
from scanner.report.registry_health import run_health, write_health
from scanner.report.spool import BoardSpool, every_row, release
from scanner.report.text import ERA_WORDS, MAX_SERVER_NAME, clean_text
from scanner.report.views import page_views
from scanner.scan.lanes import lanes_text
from scanner.store import Store
from scanner.store.readsafe import unreadable
from scanner.store.rows import EventRow, HistoryColumns, LeaderRow, RunRow

# Servers whose histories are read in one bulk query: a year of nightly scans is 365 rows each, so 250 servers
# hold about 90 000 scan rows in memory at a time.
PAGE_CHUNK = 250
_NO_HISTORY = HistoryColumns.empty()


@dataclass(frozen=True)
class ReportResult:
    """What :func:`build_report` wrote: every path, and the counts a CLI prints."""

    out_dir: Path
    run_id: int
    paths: Sequence[Path]
    servers_ranked: int
    servers_unranked: int
    server_pages: int
    runs_in_trends: int
    seconds: float


def _label(moment: datetime | None) -> str:
    # date().isoformat() rather than strftime: it runs once per scan, 730 000 times for a year of 2 000 servers.
    return moment.date().isoformat() if moment is not None else "?"


def _timed_label(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M") if moment is not None else "?"


class _Labels(dict[datetime, str]):
    """Chart labels by scan time, each computed once (a year of 2 000 servers is 730 000 scans, few dates).
    ``timed`` holds the labels with the time of day, for a series whose points share a day. A cache only: emptied
    once it holds :data:`_LABELS_KEPT` times (every scan has its own), so it does not grow with servers."""

    def __init__(self) -> None:
        super().__init__()
        self.timed = _TimedLabels()

    def __missing__(self, moment: datetime) -> str:
        if len(self) >= _LABELS_KEPT:
            self.clear()
        label = self[moment] = _label(moment)
        return label


class _TimedLabels(dict[datetime, str]):
    def __missing__(self, moment: datetime) -> str:
        if len(self) >= _LABELS_KEPT:
            self.clear()
        label = self[moment] = _timed_label(moment)
        return label


_LABELS_KEPT = 4096


def _labels_of(
    moments: Sequence[datetime],
    labels: Mapping[datetime, str],
    timed: Mapping[datetime, str],
    run_ids: Sequence[int] = (),
) -> tuple[str, ...]:
    """Chart labels for ``moments``: the date, or the date and time when two points share a day (so that same-day
    runs do not all read "2026-11-30"), or "run N" when even the minutes repeat (two runs in one minute)."""
    dated = tuple(map(labels.__getitem__, moments))
    if len(set(dated)) == len(dated):
        return dated
    with_time = tuple(map(timed.__getitem__, moments))
    if len(set(with_time)) == len(with_time) or len(run_ids) != len(moments):
        return with_time
    return tuple(f"run {run_id}" for run_id in run_ids)


def _severity_label(value: Severity | int) -> str:
    try:
        return Severity(int(value)).label
    except (TypeError, ValueError):
        return clean_text(value, limit=20)


def _choose_run(store: Store, run_id: int | None) -> tuple[RunRow, RunRow | None]:
    """The run to show (the given one, else the newest finished) and the finished run before it, if any."""
    runs = sorted(store.runs(), key=lambda run: run.id)
    if not runs:
        raise InputError("the database has no runs yet: run `fathom scan` first")
    finished = [run for run in runs if run.status == "finished"]
    if run_id is None:
        chosen = finished[-1] if finished else runs[-1]
    else:
        matches = [run for run in runs if run.id == run_id]
        if not matches:
            raise InputError(f"no run {run_id} in the database (runs: {runs[0].id}–{runs[-1].id})")
        chosen = matches[0]
    earlier = [run for run in finished if run.id < chosen.id]
    return chosen, (earlier[-1] if earlier else None)


def breakdown_of(row: LeaderRow) -> ScoreBreakdown | None:
    """The score of one leaderboard row and its parts, from its findings (the toolset's and the scan's own), its
    tool count and its tokens per turn with the dearest provider; None when it has no score (a list without
    tools). ``fathom check --db DB --server NAME`` scores the same stored figures the same way."""
    return score_breakdown(int(row.tools_count or 0), row.findings, tokens=row.max_tokens)


class _NoSlug(dict[str, str]):
    """Slugs before every name is known: a draft row's slug is filled in once the whole board is read."""

    def __missing__(self, name: str) -> str:
        return ""


@dataclass(frozen=True)
class _Earlier:
    """What the board needs of a server in the previous run: its outcome, and its score if it was ranked."""

    server: str
    outcome: str


def _previous_board(
    store: Store, previous: RunRow | None, spool: BoardSpool
) -> tuple[list[_Earlier], dict[str, float]]:
    """The previous run's servers (name and outcome) and the scores of those it ranked, read a chunk of rows at a
    time: only these narrow facts are kept, never the rows' findings; each ranked one's (name, score, tokens) goes
    to ``spool``, which places it."""
    if previous is None:
        return [], {}
    earlier: list[_Earlier] = []
    scores: dict[str, float] = {}
    for part in store.leaderboard_chunks(previous.id):
        for row in part:
            earlier.append(_Earlier(str(row.server), row.outcome))
            if is_ranked_outcome(row.outcome):
                parts = breakdown_of(row)
                if parts is not None:
                    spool.add_previous(str(row.server), parts.score, row.max_tokens)
                    scores[str(row.server)] = parts.score
    return earlier, scores


def build_leaderboard(
    store: Store,
    run: RunRow,
    previous: RunRow | None,
    rows: Iterable[LeaderRow] | None = None,
    events: Mapping[str, Sequence[EventRow]] | None = None,
) -> Leaderboard:
    """Rank ``rows`` (the store's leaderboard of ``run``; by default read from the store a chunk at a time) and
    compare with ``previous``, the finished run before it (read from the store): movement and the change block
    (``events``: each server's stored events of ``run``; others are ignored).

    Each row is made a :class:`ServerRow` as it is read, its findings dropped, and put in a
    :class:`~scanner.report.spool.BoardSpool` on disk: the board's ``ranked`` and ``unranked`` are views that
    read it back a chunk at a time, so no list of every server's row is held (ranked by the spool's SQL)."""
    spool = BoardSpool()
    previous_rows, previous_scores = _previous_board(store, previous, spool)
    chunks: Iterable[Sequence[LeaderRow]] = store.leaderboard_chunks(run.id) if rows is None else (list(rows),)
    seen: set[str] = set()
    no_slug = _NoSlug()
    for part in chunks:
        clients = leader_client_costs(store, part)
        for row in part:
            if len(row.server) > MAX_SERVER_NAME:  # a crafted row: no page, no line (issue 42), said once
                unreadable("servers.name", f"a name of {len(row.server):,} characters ({row.server[:40]!r})", "skipped")
                continue
            parts = breakdown_of(row) if is_ranked_outcome(row.outcome) else None
            draft = _server_row(row, None, "unranked", 0, parts, no_slug, clients if parts is not None else None)
            spool.add(draft, parts.score if parts is not None else None, row.max_tokens)
            seen.update(row.tokens)
        del part
    spool.finish()  # one page per name, whatever the names; best first: score, fewer tokens, then name
    ranked, unranked = spool.ranked(), spool.unranked()
    changes: tuple[ChangeRow, ...] = ()
    if previous is not None:
        changes = run_changes(run.id, spool.every(), previous_rows, previous_scores, events or {})
    return Leaderboard(
        run_id=run.id,
        started_at=run.started_at,
        finished_at=run.finished_at,
        rule_version=run.rule_version,
        score_version=SCORE_VERSION,
        score_formula=SCORE_FORMULA,
        previous_run_id=previous.id if previous is not None else None,
        providers=provider_order(seen),
        ranked=ranked,
        unranked=unranked,
        changes=changes,
    )


def _server_row(
    row: LeaderRow,
    rank: int | None,
    movement: str,
    moved_by: int,
    parts: ScoreBreakdown | None,
    slugs: Mapping[str, str],
    clients: Mapping[str, Mapping[str, int]] | None = None,
) -> ServerRow:
    from scanner.rules.registry import is_preview

    previews = [finding for finding in row.findings if is_preview(str(finding.code))] if parts is not None else []
    held = [sum(1 for finding in previews if int(finding.severity) == level) for level in range(3)]
    shown = only_visible(row.findings)  # preview rules' findings only when asked for (--preview), then marked
    previews = previews if shown_preview() else []
    return ServerRow(
        name=row.server,
        slug=slugs[row.server],
        outcome=row.outcome,
        detail=row.detail or "",
        rank=rank,
        movement=movement,
        moved_by=moved_by,
        score=parts.score if parts is not None else None,
        tools_count=row.tools_count,
        tokens=dict(row.tokens),
        problems=max(0, row.problems - held[0]),  # the scored findings: preview ones are counted apart
        warnings=max(0, row.warnings - held[1]),
        notes=max(0, row.notes - held[2]),
        toolset_sha256=row.toolset_sha256,
        server_version=row.server_version,
        lane=row.lane,
        lanes=lanes_text(row.lanes),
        clients=dict((clients or {}).get(leader_key(row), {})),
        codes=tuple(sorted({str(finding.code) for finding in shown})) if parts is not None else (),
        breakdown=parts,
        preview=len(previews),
        preview_codes=tuple(sorted({str(finding.code) for finding in previews})),
        verdicts=verdicts(shown) if parts is not None else (),
    )


def build_trends(store: Store) -> tuple[TrendPoint, ...]:
    """One point per finished run, oldest first."""
    points = []
    finished = [trend for trend in sorted(store.trends(), key=lambda item: item.run_id) if trend.status == "finished"]
    labels = _labels_of(
        [trend.started_at for trend in finished], _Labels(), _TimedLabels(), [trend.run_id for trend in finished]
    )
    for trend, label in zip(finished, labels, strict=True):
        points.append(
            TrendPoint(
                run_id=trend.run_id,
                label=label,
                servers_scanned=trend.servers_scanned,
                servers_ok=trend.servers_ok,
                servers_with_problems=trend.servers_with_problems,
                median_tokens=trend.median_tokens,
                p90_tokens=trend.p90_tokens,
                outcomes=dict(trend.outcomes),
                findings_by_rule={code: n for code, n in trend.findings_by_rule.items() if visible(code)},
                date=_timed_label(trend.started_at),
            )
        )
    return tuple(points)


def _event_summary(kind: str, details: Mapping[str, object]) -> str:
    """One readable line for the change log; the full details stay in the store (``fathom history`` / JSON)."""
    fields = details.get("fields")
    if kind == "tool_changed" and isinstance(fields, list):
        return clean_text("changed: " + ", ".join(str(name) for name in fields), limit=500)
    if kind in ("finding_appeared", "finding_resolved") and isinstance(details.get("rule"), str):
        message = details.get("message")
        severity = details.get("severity", "")
        line = f"{severity} {details['rule']}" + (f": {message}" if isinstance(message, str) else "")
        return clean_text(line.strip(), limit=500)
    if kind in ("server_version_changed", "outcome_changed") and {"from", "to"} <= set(details):
        return clean_text(f"{details['from']} → {details['to']}", limit=500)
    if kind in ("tool_added", "tool_removed"):
        return ""
    if kind == "instructions_changed" and {"from_chars", "to_chars"} <= set(details):
        return clean_text(
            f"instructions: {number_text(details['from_chars'])} → {number_text(details['to_chars'])} characters",
            limit=500,
        )
    parts = []
    for key, value in sorted(details.items()):
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        parts.append(f"{key}: {text}")
    return clean_text("; ".join(parts), limit=500)


def _finding_view(item: Finding | FindingGroup) -> FindingView:
    from scanner.rules.catalogue import precision_label
    from scanner.rules.registry import status_of

    first = item.first if isinstance(item, FindingGroup) else item
    status = status_of(str(first.code))
    precision = precision_label(str(first.code)) if status == "preview" else ""
    if isinstance(item, FindingGroup):
        return FindingView(
            code=str(first.code),
            rule=str(first.rule),
            severity=_severity_label(first.severity),
            tool=item.summary(),
            message=first.message,
            hint=first.hint,
            pointer=first.pointer,
            grouped=len(item.findings),
            status=status,
            precision=precision,
        )
    finding = item
    return FindingView(
        code=str(finding.code),
        rule=str(finding.rule),
        severity=_severity_label(finding.severity),
        tool=finding.tool,
        message=finding.message,
        hint=finding.hint,
        pointer=finding.pointer,
        status=status,
        precision=precision,
    )


def score_shares(tools_count: int, findings: Sequence[Finding], tokens: int) -> tuple[RuleShare, ...]:
    """What each rule costs a server's score: the points it would gain were that rule's findings gone, dearest
    first (the shares need not add up to the whole loss: the worst tool and the caps interact). Rules that cost
    nothing (preview rules, the unscored families, a finding lost under the caps) are left out: no share is zero
    or negative. Nothing for a list with no score."""
    whole = score_breakdown(tools_count, findings, tokens=tokens)
    if whole is None:
        return ()
    by_code: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_code[str(finding.code)].append(finding)
    shares = []
    for code, members in by_code.items():
        rest = score_breakdown(tools_count, [f for f in findings if f.code != code], tokens=tokens)
        without = rest.score if rest is not None else whole.score
        points = round(without - whole.score, 1)
        if points <= 0:
            continue
        first = members[0]
        shares.append(
            RuleShare(
                code=code,
                rule=str(first.rule),
                severity=_severity_label(first.severity),
                findings=len(members),
                points=points,
            )
        )
    shares.sort(key=lambda share: (-share.points, share.code))
    return tuple(shares)


_NO_TOKENS: Mapping[str, int] = {}


def _history_columns(scans: HistoryColumns, providers: Sequence[str], labels: _Labels) -> History:
    """The store's history of one server (ordered by run) as chart columns; failed scans are gaps.

    ``labels`` maps a scan time to its label, shared by every page (a run's scans share dates). The per-scan
    work is ``map`` over columns, in C: 2 000 pages of a year's nightly scans are 730 000 entries per column.
    """
    outcomes = scans.outcomes
    # Positions of the failed scans (a few per server-year): their values become gaps.
    failed = [index for index, outcome in enumerate(outcomes) if outcome != "ok"]

    def column(values: tuple[int, ...]) -> tuple[int | None, ...]:
        if not failed:
            return values
        gapped: list[int | None] = list(values)
        for index in failed:
            gapped[index] = None
        return tuple(gapped)

    tokens: Sequence[Mapping[str, int]] = scans.tokens
    if failed:
        tokens = list(tokens)
        for index in failed:
            tokens[index] = _NO_TOKENS
    return History(
        run_ids=scans.run_ids,
        labels=_labels_of(scans.scanned_at, labels, labels.timed, scans.run_ids),
        dates=tuple(map(labels.timed.__getitem__, scans.scanned_at)),
        outcomes=outcomes,
        tokens={provider: tuple(map(methodcaller("get", provider), tokens)) for provider in providers},
        problems=column(scans.problems),
        warnings=column(scans.warnings),
        notes=column(scans.notes),
        details=scans.details,
        metrics=scans.metrics,
    )


def build_server_page(
    row: ServerRow,
    leader: LeaderRow,
    providers: Sequence[str],
    server_events: Sequence[EventRow],
    scans: HistoryColumns,
    tools: Sequence[object] | None,
    labels: _Labels | None = None,
    stored_costs: Sequence[ToolCost] | None = None,
) -> ServerPage:
    """One server's page from what the store returned for it: ``scans`` (its history as columns,
    :meth:`Store.history_columns`), ``server_events`` (its change log), ``leader`` (its leaderboard row, whose
    findings are shown worst first) and ``tools`` (its stored tool list, for the provider views; None when the
    list was not read). ``labels`` caches chart labels by scan time across pages; ``stored_costs`` are the
    scan's per-tool costs of the list (:meth:`Store.toolsets_costs`), measured again when absent."""
    points = _history_columns(scans, providers, labels if labels is not None else _Labels())
    server_events = [event for event in server_events if event.code is None or visible(event.code)]
    events = tuple(
        EventView(
            run_id=event.run_id,
            at=event.at,
            kind=event.kind,
            tool=event.tool,
            code=event.code,
            summary=_event_summary(event.kind, event.details),
        )
        for event in sorted(server_events, key=lambda item: item.id, reverse=True)
    )
    first_ok = scans.outcomes.index("ok") if "ok" in scans.outcomes else None
    oldest_first: list[EventRow] = sorted(server_events, key=lambda item: item.id)
    log = readable_log(
        oldest_first,
        baseline_run=scans.run_ids[first_ok] if first_ok is not None else None,
    )
    findings: tuple[FindingView, ...] = ()
    previews: tuple[FindingView, ...] = ()
    views: dict[str, str] = {}
    shapes: dict[str, str] = {}
    costs: tuple[ToolCostRow, ...] = ()
    shares: tuple[RuleShare, ...] = ()
    if row.toolset_sha256 and is_ranked_outcome(row.outcome) and tools is not None:
        # The leaderboard row already holds the toolset's findings and the scan's own (MCP5xx), under the run's
        # scoring rule version: no second query.
        raw = leader.findings
        ordered = sorted(raw, key=lambda f: (int(f.severity), -1 if f.tool_index is None else f.tool_index, f.code))
        every = tuple(_finding_view(finding) for finding in group_findings(ordered))
        # Preview rules' findings stand apart, after the scored ones (rules.md, status): never in the score.
        findings = tuple(view for view in every if view.status != "preview")
        previews = tuple(view for view in every if view.status == "preview" and shown_preview())
        views, shapes, costs = page_views(tools, providers, stored_costs)
        shares = score_shares(int(leader.tools_count or 0), list(raw), leader.max_tokens)
    info: dict[str, str] = {}
    latest = scans.latest
    # What ran and its stderr belong to this run's scan: a report of an older run does not show a newer one's.
    shown = latest if latest is not None and latest.scan_id == leader.scan_id else None
    if latest is not None:
        for key, value in (
            ("Server info name", latest.server_name),
            ("Server info version", latest.server_version),
            ("Protocol version", latest.protocol_version),
            ("Handshake", ERA_WORDS.get(latest.era or "", latest.era)),
            ("Transport", latest.transport),
        ):
            if value:
                info[key] = value
    told = leader.instructions_tokens
    if told and providers:  # the server's instructions, read as a system text beside the tools on every turn
        key = providers[0]
        info["Instructions"] = (
            f"{told.get(key, 0):,} tokens per turn ({PROVIDER_SHORT.get(key, key)}) beside the tools' "
            f"{row.tokens.get(key, 0):,}"
        )
    if row.lanes:  # a scan in lanes: what each credential sees, and which lane the leaderboard ranks
        info["Lanes"] = row.lanes
        if row.lane:
            info["Ranked lane"] = f"{row.lane} (the richest)"
    not_run = shown is not None and (shown.not_run or shown.outcome in NOT_RUN_OUTCOMES)
    return ServerPage(
        row=row,
        history=points,
        events=events,
        findings=findings,
        provider_views=views,
        provider_shapes=shapes,
        server_info=info,
        ran=shown.ran if shown is not None else None,
        stderr_tail=shown.stderr_tail if shown is not None else (),
        log=log,
        score_shares=shares,
        tool_costs=costs,
        preview_findings=previews,
        next_step="" if row.ranked else next_step(row.name, row.outcome, row.detail),
        declared=(declared_text(shown.ran) or "nothing runnable") if shown is not None and not_run else "",
    )


def server_pages(
    store: Store,
    run_id: int,
    rows: Sequence[ServerRow],
    providers: Sequence[str],
    chunk: int = PAGE_CHUNK,
) -> Iterator[ServerPage]:
    """The pages of ``rows`` (servers of run ``run_id``) in order, reading the store ``chunk`` servers at a time:
    bulk leaderboard-row, history, change-log, tool-list and per-tool-cost queries per chunk, never one per
    server, and only a chunk's findings, histories and events in memory (a year of nightly runs at 20 000
    servers is over half a million events; 25 000 real lists are hundreds of thousands of findings)."""
    labels = _Labels()
    for start in range(0, len(rows), chunk):
        part = list(rows[start : start + chunk])
        names = [row.name for row in part]
        leaders = store.leaderboard_of(run_id, names)
        histories = store.history_columns(names)
        events = store.events_of(names)
        wanted = {row.toolset_sha256 for row in part if row.toolset_sha256 and is_ranked_outcome(row.outcome)}
        packed = store.toolsets_packed(wanted) if wanted else {}  # unpacked a page at a time: lists are large
        costs = store.toolsets_costs(sorted(wanted)) if wanted else {}
        for row in part:
            sha = row.toolset_sha256
            yield build_server_page(
                row,
                leaders[row.name],
                providers,
                events.get(row.name, ()),
                histories.get(row.name, _NO_HISTORY),
                store.unpack_tools(sha, packed[sha]) if sha and sha in packed else None,
                labels,
                costs.get(row.toolset_sha256) if row.toolset_sha256 else None,
            )
        del leaders, histories, events, packed, costs


def build_rules(store: Store, run_id: int) -> tuple[RuleView, ...]:
    """The catalogue, each rule with the number of servers it hits in ``run_id``, its status and its measured
    precision."""
    from scanner.rules import RULES
    from scanner.rules.catalogue import precision_label

    hits = store.rule_hits(run_id)
    return tuple(
        RuleView(
            code=code,
            slug=rule.slug,
            severity=rule.severity.label,
            hint=rule.hint,
            doc=rule.doc,
            servers_hit=int(hits.get(code, 0)),
            status=rule.status,
            precision=precision_label(code),
        )
        for code, rule in RULES.items()
    )


def site_data(
    store: Store, *, run_id: int | None = None, now: datetime | None = None, stream: bool = False
) -> SiteData:
    """Everything the site shows for ``run_id`` (default: the newest finished run), shaped from the store.

    With ``stream``, ``servers`` is a one-shot iterator that reads each server's history only when asked.
    """
    run, previous = _choose_run(store, run_id)
    # The change block reads this run's events only (one query); each page reads its server's with its chunk.
    # The board reads the run's rows a chunk at a time and keeps only what it shows; the pages read their own
    # rows (with every finding) again with their chunk.
    events: dict[str, list[EventRow]] = defaultdict(list)
    if previous is not None:  # with no run before it there is no change block (a first night's events are many)
        for event in only_visible(store.events(run=run.id)):  # a preview rule's finding only with --preview
            events[event.server].append(event)
    board = build_leaderboard(store, run, previous, None, events)
    pages = server_pages(store, run.id, every_row(board), board.providers)
    trends = build_trends(store)
    return SiteData(
        leaderboard=board,
        trends=trends,
        servers=pages if stream else tuple(pages),
        rules=build_rules(store, run.id),
        generated_at=now or datetime.now(UTC),
        health=run_health(store.engine, board),
        clients=clients_view(store, board, trends),
    )


def write_exports(board: Leaderboard, out_dir: Path) -> list[Path]:
    """Write ``leaderboard.md``, ``leaderboard.json`` and ``leaderboard.csv``; return their paths. Each is written
    as its rows are read (the board's rows may be a spool's views: scanner.report.spool), never whole."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, write in (
        ("leaderboard.md", write_markdown),
        ("leaderboard.json", write_json),  # the largest export (78 MB at 25 000 servers)
        ("leaderboard.csv", write_csv),
    ):
        path = out_dir / name
        # newline="" keeps the CSV's \r\n as written; the other formats use \n only.
        with path.open("w", encoding="utf-8", newline="") as stream:
            write(board, stream)
        written.append(path)
    return written


@contextmanager
def _long_lived_frozen() -> Iterator[None]:
    """Keep what is alive now (the leaderboard, every event, the trends) out of the garbage collector's full
    passes while the pages are written, then hand it back.

    Writing 2 000 pages allocates enough to start dozens of full collections, each walking every object of the
    process; the report's own data lives until the end anyway. Objects made inside the block are collected as
    usual, so a page's garbage never piles up. Left alone when the caller already froze objects itself (unfreezing
    would thaw theirs too).
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


_STAGING = ".fathom-build-"


def _staging_folder(out_dir: Path) -> Path:
    """A new hidden folder inside ``out_dir`` (so on its file system: every page is renamed, never copied, into
    place) for this build; a folder a killed build left behind (its process gone) is removed first."""
    for left in out_dir.glob(f"{_STAGING}*"):
        pid = left.name[len(_STAGING) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)) and left.is_dir() and not left.is_symlink():
            shutil.rmtree(left, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}-", dir=out_dir))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def _publish(staging: Path, out_dir: Path, built: Sequence[str]) -> list[str]:
    """Move every file of a finished build (``built``: paths relative to ``staging``, ``/``-separated) from
    ``staging`` into ``out_dir``, each by one rename, the pages that link to others last and ``index.html`` the
    very last: a build killed at any moment leaves either the old index (whose pages are all still there: nothing
    is deleted) or the new one with every page it links. Returns them in the order moved."""

    def order(relative: str) -> tuple[int, str]:
        top_page = "/" not in relative and relative.endswith(".html")
        return (2 if relative == "index.html" else 1 if top_page else 0, relative)

    published = sorted(built, key=order)
    for relative in published:
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / relative, target)
    return published


class _Files(Sequence[Path]):
    """The files a build wrote, as paths under ``out_dir``, made when asked for: 30 000 files' ``Path`` objects
    held at once were a few MB that grew with servers."""

    def __init__(self, out_dir: Path, relative: Sequence[str]) -> None:
        self._out_dir, self._relative = out_dir, relative

    def __len__(self) -> int:
        return len(self._relative)

    @overload
    def __getitem__(self, index: int) -> Path: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Path]: ...

    def __getitem__(self, index: int | slice) -> Path | Sequence[Path]:
        if isinstance(index, slice):
            return [self._out_dir / relative for relative in self._relative[index]]
        return self._out_dir / self._relative[index]


def build_report(
    store: Store, out_dir: Path, *, run_id: int | None = None, now: datetime | None = None, preview: bool = False
) -> ReportResult:
    """Build the whole site for ``run_id`` (default: the newest finished run) into ``out_dir``; preview rules'
    findings only with ``preview``. Raises :class:`scanner.errors.InputError` when the database has no runs or
    no such run. ``now`` fixes the "generated" time (for reproducible output)."""
    with showing(preview):
        return _build_report(store, out_dir, run_id, now)


def _build_report(store: Store, out_dir: Path, run_id: int | None, now: datetime | None) -> ReportResult:
    started = time.perf_counter()
    data = site_data(store, run_id=run_id, now=now, stream=True)
    staging: Path | None = None
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        staging = _staging_folder(out_dir)
        with _long_lived_frozen():
            built = write_site(data, staging)  # relative to staging: no Path object per file is kept
            built += [path.relative_to(staging).as_posix() for path in write_exports(data.leaderboard, staging)]
            # health.html/json/csv, from the health the pages already show
            health = write_health(store.engine, data.leaderboard, staging, data.generated_at, data.health, data.clients)
            built += [path.relative_to(staging).as_posix() for path in health]
        paths = _publish(staging, out_dir, built)
    except OSError as exc:  # a full disk, a read-only folder, --out naming a file: one line, exit 4
        raise OutputError(f"cannot write the report to {out_dir}: {exc.strerror or exc}") from exc
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        release(data.leaderboard)  # the spooled rows' temporary file
    pages = sum(1 for path in paths if path.startswith("servers/") and path.count("/") == 1)
    return ReportResult(
        out_dir=out_dir,
        run_id=data.leaderboard.run_id,
        paths=_Files(out_dir, paths),
        servers_ranked=len(data.leaderboard.ranked),
        servers_unranked=len(data.leaderboard.unranked),
        server_pages=pages,
        runs_in_trends=len(data.trends),
        seconds=time.perf_counter() - started,
    )
