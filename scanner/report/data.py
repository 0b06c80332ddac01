"""The report site's data: frozen dataclasses shaped from the store, and the one function that builds them.

Renderers (``html``, ``markdown``, ``jsonout``, ``csv_out``, ``svg``) read only these classes, never the store,
so every output format tells the same numbers and a test can build a site from a fixed :class:`SiteData`.
Strings here are still the server's own text: each renderer escapes for its format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scanner.measure import metrics as scan_metrics
from scanner.measure.history import LogEntry
from scanner.measure.metrics import Metric
from scanner.measure.score import ScoreBreakdown
from scanner.measure.verdicts import Verdict
from scanner.models import MEASURED_PROVIDERS, PROVIDERS, Outcome
from scanner.report.nextstep import reason_group
from scanner.store.rows import RunSpec

# Why a server was not ranked, for the report's grouping: (key, heading, the outcomes it covers), in the order
# shown. A package's own causes come first: they are what a nightly registry scan mostly meets.
FAILURE_CAUSES: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("install_failed", "Install failed", frozenset({"install_failed"})),
    ("package_not_found", "Package not found", frozenset({"package_not_found"})),
    ("runner_missing", "Runner missing", frozenset({"runner_missing"})),
    ("needs_configuration", "Needs configuration", frozenset({"needs_configuration"})),
    ("crashed", "Crashed or exited", frozenset({"crashed", "exited", "spawn_error"})),
    ("timeout", "Timed out", frozenset({"timeout"})),
    ("unreachable", "Unreachable", frozenset({"connect_error", "http_error"})),
    ("auth_required", "Authentication required", frozenset({"auth_required"})),
    ("payment_required", "Payment required", frozenset({"payment_required"})),
    ("rate_limited", "Rate limited (not measured)", frozenset({"rate_limited"})),
    ("not_mcp", "Not MCP (a web page or another API)", frozenset({"not_mcp"})),
    ("protocol", "Protocol errors", frozenset({"protocol_error", "invalid_response"})),
    ("too_large", "Too large", frozenset({"too_large", "memory_limit"})),
    ("skipped", "Skipped by policy", frozenset({"skipped", "refused"})),
    ("delisted", "Delisted or deprecated in the registry", frozenset({"delisted", "deprecated"})),
    # Read, but empty: a list with no tools has no score (docs/score.md), so it is listed apart too.
    ("no_tools", "Listed no tools (no score)", frozenset({"ok"})),
)
_CAUSE_OF = {outcome: (key, label) for key, label, outcomes in FAILURE_CAUSES for outcome in outcomes}


def failure_cause(outcome: str) -> tuple[str, str]:
    """The (key, heading) of the cause an unranked outcome is grouped under; an unknown outcome is ``other``."""
    return _CAUSE_OF.get(outcome, ("other", "Other"))


@dataclass(frozen=True)
class FindingView:
    """One current finding of a server, as the server page lists it (worst first); a rule firing on more than
    five tools is one row (``scanner.check.groups``)."""

    code: str
    rule: str
    severity: str
    tool: str | None
    message: str
    hint: str
    pointer: str | None = None
    grouped: int = 0  # >0: this row stands for that many findings of one rule (``tool`` then names the tools)
    status: str = "stable"  # the rule's status; ``preview`` findings are listed apart, never scored
    precision: str = ""  # a preview rule's measured precision on real lists, in words


@dataclass(frozen=True)
class ServerRow:
    """One server in one run, as the leaderboard and exports show it.

    ``rank`` is None for servers that are not ranked (any outcome but ok): they are listed apart, with their
    outcome and detail, rather than ranked last. ``movement`` is ``up``, ``down``, ``same`` or ``new`` against
    the rank in the previous finished run, and ``moved_by`` the number of places.
    """

    name: str
    slug: str
    outcome: str
    detail: str
    rank: int | None
    movement: str
    moved_by: int
    score: float | None
    tools_count: int | None
    tokens: Mapping[str, int]
    problems: int
    warnings: int
    notes: int
    toolset_sha256: str | None
    server_name: str | None = None
    server_version: str | None = None
    lane: str | None = None  # a scan in lanes: the lane ranked (the richest), said beside the name
    lanes: str = ""  # a scan in lanes: every lane side by side, "anonymous: 3 of 14 tools; credentialed: 14 tools"
    # What each client sends per turn at rest (scanner.measure.clients), by client key; empty when not measured.
    clients: Mapping[str, int] = field(default_factory=dict)
    codes: tuple[str, ...] = ()  # the rule codes of its current findings, sorted (for the leaderboard's filter)
    breakdown: ScoreBreakdown | None = None  # the parts of its score (scanner.measure.score.score_breakdown)
    # Findings of preview rules (rules.md, status): stored and counted here, left out of problems/warnings/notes
    # and the score; ``preview_codes`` are their rules, sorted.
    preview: int = 0
    preview_codes: tuple[str, ...] = ()
    # Will it load? Each client's verdict on its list (scanner.measure.verdicts); empty when not measured.
    verdicts: tuple[Verdict, ...] = ()

    @property
    def ranked(self) -> bool:
        return self.rank is not None

    @property
    def loads(self) -> str:
        """The leaderboard's "Will it load?" cell: ``loads everywhere``, or who refuses and who drops tools."""
        from scanner.measure.verdicts import compact

        return compact(self.verdicts) if self.verdicts else ""


@dataclass(frozen=True)
class ChangeRow:
    """One line of "What changed in this run": a server and what happened to it since the previous run.

    ``kind`` is one of :data:`CHANGE_KINDS`; ``slug`` is None for a server that left (it has no page this run).
    """

    kind: str
    server: str
    slug: str | None
    detail: str
    weight: float = 0.0
    """How much it changed (points of score, tools, new problems): the largest changes of a kind show first."""

    @property
    def label(self) -> str:
        return dict(CHANGE_KINDS).get(self.kind, self.kind)


CHANGES_SHOWN = 5
"""Changes of one kind shown at once in "What changed"; the rest wait behind "more"."""


@dataclass(frozen=True)
class ChangeGroup:
    """One kind of change in "What changed": the largest :data:`CHANGES_SHOWN` first, the rest behind "more"."""

    kind: str
    label: str
    shown: tuple[ChangeRow, ...]
    more: tuple[ChangeRow, ...]

    @property
    def count(self) -> int:
        return len(self.shown) + len(self.more)


def change_groups(changes: Sequence[ChangeRow], shown: int = CHANGES_SHOWN) -> tuple[ChangeGroup, ...]:
    """``changes`` grouped by kind in :data:`CHANGE_KINDS` order, each group largest change first, then by name."""
    order = {kind: index for index, (kind, _) in enumerate(CHANGE_KINDS)}
    groups: dict[str, list[ChangeRow]] = {}
    for change in changes:
        groups.setdefault(change.kind, []).append(change)
    out = []
    for kind in sorted(groups, key=lambda kind: (order.get(kind, 99), kind)):
        rows = sorted(groups[kind], key=lambda change: (-change.weight, change.server))
        out.append(ChangeGroup(kind, rows[0].label, tuple(rows[:shown]), tuple(rows[shown:])))
    return tuple(out)


# The kinds of change the leaderboard's change block lists, in the order shown.
CHANGE_KINDS: tuple[tuple[str, str], ...] = (
    ("added", "Added"),
    ("gone", "Gone"),
    ("started_failing", "Started failing"),
    ("stopped_failing", "Answers again"),
    ("silent_change", "Silent change"),
    ("new_problems", "New problems"),
    ("score_down", "Score down"),
    ("score_up", "Score up"),
    ("tools_changed", "Tools changed"),
    ("version", "Version bump"),
)
SCORE_MOVE_THRESHOLD = 5.0  # points: a smaller move of the score is not listed as a change


@dataclass(frozen=True)
class Leaderboard:
    """The leaderboard of one run: ranked servers best first, then the unreachable and auth-only ones."""

    run_id: int
    started_at: datetime
    finished_at: datetime | None
    rule_version: str
    score_version: str
    score_formula: str
    previous_run_id: int | None
    providers: tuple[str, ...]
    # Tuples, or views of the rows a report build spooled to disk (scanner.report.spool.RowView): read, never held.
    ranked: Sequence[ServerRow]
    unranked: Sequence[ServerRow]
    changes: tuple[ChangeRow, ...] = ()  # what changed since the previous finished run (none for the first)

    @property
    def change_groups(self) -> tuple[ChangeGroup, ...]:
        """:attr:`changes` grouped by kind, largest first (:func:`change_groups`)."""
        return change_groups(self.changes)

    @property
    def changes_more(self) -> int:
        """How many changes wait behind "more"."""
        return sum(len(group.more) for group in self.change_groups)

    @property
    def rule_codes(self) -> tuple[str, ...]:
        """Every rule code that hits a ranked server, sorted (the leaderboard's rule filter)."""
        spooled = getattr(self.ranked, "rule_codes", None)
        if spooled is not None:
            return tuple(spooled())
        return tuple(sorted({code for row in self.ranked for code in row.codes}))

    @property
    def unranked_outcomes(self) -> tuple[str, ...]:
        """Every outcome of an unranked server, sorted (the leaderboard's outcome filter)."""
        spooled = getattr(self.unranked, "outcomes", None)
        if spooled is not None:
            return tuple(spooled())
        return tuple(sorted({row.outcome for row in self.unranked}))

    @property
    def failure_groups(self) -> tuple[FailureGroup, ...]:
        """The unranked servers grouped by cause (see :data:`FAILURE_CAUSES`), in that order, each by name (by the
        rows' own spool when they have one: :mod:`scanner.report.spool`)."""
        spooled = getattr(self.unranked, "failure_groups", None)
        if spooled is not None:
            return tuple(spooled())
        grouped: dict[str, list[ServerRow]] = {}
        for row in self.unranked:
            grouped.setdefault(failure_cause(row.outcome)[0], []).append(row)
        order = [key for key, _, _ in FAILURE_CAUSES] + ["other"]
        return tuple(
            FailureGroup(
                key=key,
                label=failure_cause(grouped[key][0].outcome)[1],
                rows=tuple(sorted(grouped[key], key=lambda row: row.name)),
            )
            for key in order
            if key in grouped
        )


@dataclass(frozen=True)
class FailureGroup:
    """Unranked servers that failed for one cause (``key`` and ``label`` from :data:`FAILURE_CAUSES`)."""

    key: str
    label: str
    rows: Sequence[ServerRow]

    @property
    def reasons(self) -> tuple[ReasonGroup, ...]:
        """The servers of this cause grouped by reason (``scanner.report.nextstep.reason_group``), the largest
        group first, then by reason (by the rows' own spool when they have one)."""
        spooled = getattr(self.rows, "reasons", None)
        if spooled is not None:
            return tuple(spooled())
        grouped: dict[str, tuple[str, list[ServerRow]]] = {}
        for row in self.rows:
            key, label = reason_group(row.outcome, row.detail)
            grouped.setdefault(key, (label, []))[1].append(row)
        ordered = sorted(grouped.items(), key=lambda item: (-len(item[1][1]), item[1][0]))
        return tuple(ReasonGroup(key=key, label=label, rows=tuple(rows)) for key, (label, rows) in ordered)


@dataclass(frozen=True)
class ReasonGroup:
    """Servers of one cause that failed for the same reason (their detail with per-server parts blanked)."""

    key: str
    label: str
    rows: Sequence[ServerRow]


@dataclass(frozen=True)
class TrendPoint:
    """One finished run, summarised for the trend charts."""

    run_id: int
    label: str
    servers_scanned: int
    servers_ok: int
    servers_with_problems: int
    median_tokens: int | None
    p90_tokens: int | None
    outcomes: Mapping[str, int]
    findings_by_rule: Mapping[str, int]
    date: str = ""  # the run's start, date and time (UTC), for the table's Date column ("label" may be "run N")

    @property
    def client_refusals(self) -> int:
        """Findings of the stable MCP8xx rules in the run: tools a client refuses or drops
        (scanner.measure.verdicts)."""
        from scanner.measure.verdicts import FAMILY
        from scanner.rules import RULES

        return sum(
            count
            for code, count in self.findings_by_rule.items()
            if code.startswith(FAMILY) and code in RULES and RULES[code].status == "stable"
        )

    @property
    def problem_share(self) -> float | None:
        """Servers with at least one problem, as a share of the servers that answered (None if none did)."""
        return self.servers_with_problems / self.servers_ok if self.servers_ok else None


@dataclass(frozen=True)
class History:
    """One server's scans, oldest first, as columns (one entry per scan) for its history charts.

    Columns rather than one object per scan: a year of nightly scans of 2 000 servers is 730 000 scans, and the
    charts read whole columns anyway. ``tokens[provider][i]`` and the finding counts are None where scan ``i``
    did not read a tool list (a failed outcome), so the charts show a gap there.
    """

    run_ids: tuple[int, ...]
    labels: tuple[str, ...]
    outcomes: tuple[str, ...]
    tokens: Mapping[str, tuple[int | None, ...]]
    problems: tuple[int | None, ...]
    warnings: tuple[int | None, ...]
    notes: tuple[int | None, ...]
    details: tuple[str, ...] = ()  # each scan's one-line detail (the reason, for a failed scan)
    # Each scan's date and time (UTC, to the minute) for tables' Date columns; the chart labels may be "run N".
    dates: tuple[str, ...] = ()
    # The registered metrics (scanner.measure.metrics) of the newest scans (at most 10), aligned with the end of the
    # columns.
    metrics: tuple[Mapping[str, int | float], ...] = ()

    def __len__(self) -> int:
        return len(self.run_ids)

    @property
    def has_data(self) -> bool:
        """Whether any scan read a tool list (otherwise its charts would be empty)."""
        return any(value is not None for value in self.problems)


@dataclass(frozen=True)
class EventView:
    """One change-log line of a server."""

    run_id: int
    at: datetime
    kind: str
    tool: str | None
    code: str | None
    summary: str


# Outcomes that never start a process whatever the scan's stored marks (scans stored before ``not_run`` was).
NOT_RUN_OUTCOMES = frozenset({"skipped", "refused", "runner_missing"})


_SPEC_JOINT = {"pypi": "==", "oci": ":"}  # how each registry writes name and version; npm's "@" otherwise


def declared_text(ran: RunSpec) -> str:
    """What a scan's entry declared, in one line: ``npm foo@1.2.3`` for a registry package in its registry's own
    spelling (``pypi foo==1.2.3``, ``oci image:1.2.3``; ``(no version declared)`` without one), else its URL or its
    command. Unescaped: the renderer escapes it."""
    package = ran.package
    if package:
        kind, identifier, version = (package.get(key) for key in ("registry_type", "identifier", "version"))
        joint = _SPEC_JOINT.get(str(kind), "@")
        spec = f"{identifier}{joint}{version}" if version else f"{identifier} (no version declared)"
        if version and str(identifier).endswith((f":{version}", f"@{version}")):
            spec = str(identifier)  # an image reference that names its tag already
        return f"{kind} {spec}" if kind else spec
    if ran.url:
        return f"URL {ran.url}"
    return f"command {ran.command}" if ran.command else ""


@dataclass(frozen=True)
class ServerPage:
    """Everything one server's page shows."""

    row: ServerRow
    history: History
    events: tuple[EventView, ...]
    findings: tuple[FindingView, ...]
    provider_views: Mapping[str, str]  # provider -> pretty JSON of the list as that provider receives it
    server_info: Mapping[str, str] = field(default_factory=dict)  # label -> the server's own text
    ran: RunSpec | None = None  # what this run's scan ran (registry version, package, URL, command; redacted)
    stderr_tail: tuple[str, ...] = ()  # its last stderr lines (normalised, scrubbed; escaped by the renderer)
    log: tuple[LogEntry, ...] = ()  # the readable change log (scanner.measure.history.readable_log), newest first
    score_shares: tuple[RuleShare, ...] = ()  # what each rule costs the score, dearest first
    tool_costs: tuple[ToolCostRow, ...] = ()  # every tool's tokens per provider, dearest first
    preview_findings: tuple[FindingView, ...] = ()  # findings of preview rules: shown apart, never scored
    next_step: str = ""  # for a server not ranked: what to do so the next scan reads its list
    # For a scan that started nothing (skipped, or stopped before running): what the entry declared, e.g.
    # "npm foo@1.2.3", shown with its reason instead of "What was run". Empty when something ran.
    declared: str = ""
    # provider -> how it wraps each tool (pretty JSON, the tool's parts written NAME, DESCRIPTION, SCHEMA), for a
    # provider whose view is the first view's values in another wrapping: shown instead of the same list again.
    provider_shapes: Mapping[str, str] = field(default_factory=dict)

    @property
    def scan_table(self) -> tuple[tuple[int, str, str, str], ...]:
        """The history as table rows (run, date, outcome, detail), newest first, at most 50."""
        history = self.history
        details = history.details or ("",) * len(history)
        rows = zip(history.run_ids, history.dates or history.labels, history.outcomes, details, strict=True)
        return tuple(reversed(tuple(rows)))[:50]

    @property
    def metric_table(self) -> tuple[tuple[Metric, ...], tuple[tuple[int, str, tuple[str, ...]], ...]]:
        """The per-scan metrics some scan measured (the columns: one no scan filled, such as a package install's
        time on a server that is not a package, is not shown) and, newest first, those of the newest 10 scans that
        measured any of them as (run, date, one formatted value per metric, "" where not measured). No rows: no
        table."""
        metrics = tuple(scan_metrics.METRICS.values())
        history = self.history
        rows: list[tuple[int, str, tuple[str, ...]]] = []
        offset = len(history.run_ids) - len(history.metrics)
        for index in range(len(history.metrics) - 1, -1, -1):
            values = history.metrics[index]
            cells = tuple(_metric_text(values.get(metric.name)) for metric in metrics)
            if any(cells):
                rows.append((history.run_ids[offset + index], (history.dates or history.labels)[offset + index], cells))
        filled = [column for column in range(len(metrics)) if any(cells[column] for _, _, cells in rows)]
        shown = tuple(metrics[column] for column in filled)
        return shown, tuple((run, date, tuple(cells[column] for column in filled)) for run, date, cells in rows)


def _metric_text(value: int | float | None) -> str:
    """``1,234`` for an int, ``12.3`` for a float, ``""`` for a scan that did not measure it."""
    if value is None:
        return ""
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


@dataclass(frozen=True)
class RuleShare:
    """One rule's part in a server's score: the points the score would gain without its findings."""

    code: str
    rule: str
    severity: str
    findings: int
    points: float


@dataclass(frozen=True)
class ToolCostRow:
    """One tool of a server's list and its tokens per provider (its own declaration, without the request's
    fixed overhead)."""

    name: str
    index: int
    tokens: Mapping[str, int]


@dataclass(frozen=True)
class RuleView:
    """One catalogue entry and how many servers it hits in the run shown."""

    code: str
    slug: str
    severity: str
    hint: str
    doc: str
    servers_hit: int
    status: str = "stable"
    precision: str = ""  # measured on hand-labelled real tool lists, in words (docs/rules.md)


@dataclass(frozen=True)
class SiteData:
    """The whole site: one leaderboard, the trend series, a page per server and the rule catalogue.

    ``servers`` is a tuple, or a one-shot iterator when the site is built for writing: ``build_report`` shapes,
    renders and drops one server page at a time, so memory stays flat however long the history is.
    """

    leaderboard: Leaderboard
    trends: tuple[TrendPoint, ...]
    servers: Iterable[ServerPage]
    rules: tuple[RuleView, ...]
    generated_at: datetime
    # Each server's uptime and latency over time (scanner.report.health.Health by name; the registry health page's
    # figures).
    health: Mapping[str, Any] = field(default_factory=dict)
    # The registry's view of clients (scanner.report.clients_view.ClientsView): the Clients page; None: no page.
    clients: Any = None


def is_ranked_outcome(outcome: str) -> bool:
    """Only servers whose tool list was read are ranked; every other outcome is listed apart."""
    return outcome == Outcome.OK.value


def provider_order(seen: set[str]) -> tuple[str, ...]:
    """The providers to show as columns: the headline ones in their usual order (Claude's current tokenizer
    generation, not the earlier one, which is stored but not a column), then any unknown others sorted."""
    known = [name for name in PROVIDERS if name in seen]
    return tuple(known + sorted(seen - set(MEASURED_PROVIDERS)))
