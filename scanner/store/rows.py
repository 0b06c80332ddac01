"""What the store's queries return: frozen dataclasses, never ORM objects, so callers cannot touch the session.

Every row is keyword-only (``kw_only``): a row is built by naming its fields, so two fields of one type cannot
swap silently when a field is added.

Times are timezone-aware UTC. ``tokens`` maps a provider (``anthropic``, ``openai``, ``gemini``) to the tokens the
whole list costs it per turn. ``problems``/``warnings``/``notes`` count findings under the run's rule version
(plus the scan's over-time findings, MCP5xx).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from scanner.measure.history import ChangeEvent
from scanner.models import Finding, Severity


@dataclass(frozen=True, kw_only=True)
class ScanRecord:
    """What :meth:`Store.record_scan` wrote for one server: the scan, whether its toolset was new, what changed."""

    scan_id: int
    run_id: int
    server: str
    outcome: str
    toolset_sha256: str | None
    new_toolset: bool
    measured: bool
    events: tuple[ChangeEvent, ...] = ()
    history_findings: tuple[Finding, ...] = ()
    duplicate: bool = False  # the server already had a scan in this run; nothing was written


@dataclass(frozen=True, kw_only=True)
class RunRow:
    id: int
    started_at: datetime
    finished_at: datetime | None
    status: str
    source: str
    rule_version: str
    options: Mapping[str, object]  # JSON values
    servers_scanned: int
    servers_ok: int
    planned: int | None = None  # a distributed run: servers queued (progress is servers_scanned / planned)
    workers: tuple[str, ...] = ()  # a distributed run: the workers that wrote its scans, by name


@dataclass(frozen=True, kw_only=True)
class ServerSummary:
    """A server with its last scan's outcome and the tools and tokens of its last successful scan
    (:meth:`Store.servers`; a leaderboard line of the report is ``scanner.report.data.ServerRow``)."""

    name: str
    first_seen: datetime
    last_run_id: int | None
    last_scanned_at: datetime | None
    last_outcome: str | None
    last_detail: str
    last_ok_run_id: int | None
    server_version: str | None
    tools_count: int | None
    tokens: Mapping[str, int]
    toolset_sha256: str | None
    last_run: RunSpec | None = None  # what the last scan ran
    last_stderr_tail: tuple[str, ...] = ()  # the last scan's stderr tail (normalised, scrubbed; not escaped)
    last_ok_scan_id: int | None = None  # the scan the tools and tokens come from (its score: Store.scan_scores)

    @property
    def max_tokens(self) -> int:
        return max(self.tokens.values(), default=0)


@dataclass(frozen=True, kw_only=True)
class ScanScore:
    """One scan's leaderboard score and its finding counts under the run's scoring rule version
    (:meth:`Store.scan_scores`): the toolset's findings plus the scan's own, scored as the report scores them
    with the toolset's tokens per turn. ``score`` is None for a list with no tools (it has no score)."""

    score: float | None
    problems: int
    warnings: int
    notes: int


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """What one scan ran: the entry's version in its registry, its package or URL, and its command line (secrets
    redacted). ``package`` holds ``registry_type``, ``identifier``, ``version``, ``pinned``, ``spec``, ``runner``
    when the entry was a registry package. All None for scans stored before migration 0003."""

    registry_version: str | None = None
    package: Mapping[str, object] | None = None  # JSON values
    url: str | None = None
    command: str | None = None

    def what(self) -> str | None:
        """One line: the command, else the URL, else the package's identifier and version."""
        if self.command or self.url:
            return self.command or self.url
        if self.package:
            return f"{self.package.get('identifier')} {self.package.get('version') or ''}".strip()
        return None


@dataclass(frozen=True, kw_only=True)
class LaneRow:
    """One lane of a scan in lanes (docs/lanes.md): ``anonymous`` or ``credentialed``, how it ended, the tools it
    listed, and (anonymous) the auth signals its answer gave."""

    lane: str
    outcome: str
    detail: str
    tools_count: int | None
    toolset_sha256: str | None
    signals: Mapping[str, object]  # JSON values


@dataclass(frozen=True, kw_only=True)
class ScanRow:
    """One scan of one server, as ``fathom history`` shows it."""

    scan_id: int
    run_id: int
    scanned_at: datetime
    outcome: str
    detail: str
    transport: str
    era: str | None
    protocol_version: str | None
    server_name: str | None
    server_version: str | None
    tools_count: int | None
    tokens: Mapping[str, int]
    problems: int
    warnings: int
    notes: int
    toolset_sha256: str | None
    rule_version: str
    ran: RunSpec = field(default_factory=RunSpec)
    stderr_tail: tuple[str, ...] = ()  # normalised and scrubbed when stored; escape it to show it
    not_run: bool = False  # skipped before any process started (``extra["not_run"]``); ``ran`` is then declared
    lane: str | None = None  # a scan in lanes: the lane whose result this row is (the richest)
    lanes: tuple[LaneRow, ...] = ()  # a scan in lanes: every lane, anonymous first
    metrics: Mapping[str, int | float] = field(default_factory=dict)  # scanner.measure.metrics: {name: number}

    @property
    def max_tokens(self) -> int:
        return max(self.tokens.values(), default=0)

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


@dataclass(frozen=True, kw_only=True)
class HistoryColumns:
    """One server's scans ordered by run (oldest first) as columns, and its newest scan in full.

    Entry ``i`` of every column is the same scan; each value is the one :meth:`Store.history` gives that scan
    (``tokens[i]`` its toolset's tokens, empty without a toolset and shared by the scans of one toolset: read
    it, never change it). ``latest`` is the scan of the highest run id as a full :class:`ScanRow`. Columns rather
    than a row object per scan: a chart reads whole columns, and a year of 2 000 servers is 730 000 scans.
    """

    scan_ids: tuple[int, ...]
    run_ids: tuple[int, ...]
    scanned_at: tuple[datetime, ...]
    outcomes: tuple[str, ...]
    tokens: tuple[Mapping[str, int], ...]
    problems: tuple[int, ...]
    warnings: tuple[int, ...]
    notes: tuple[int, ...]
    latest: ScanRow | None
    details: tuple[str, ...] = ()  # each scan's one-line detail ("" for most ok scans)
    # The registered metrics (scanner.measure.metrics) of the newest scans only (at most ``read.RECENT_METRICS``),
    # aligned
    # with the end of the columns: ``metrics[-1]`` is the newest scan's, ``{}`` for a scan that measured none.
    metrics: tuple[Mapping[str, int | float], ...] = ()

    def __len__(self) -> int:
        return len(self.scan_ids)

    @classmethod
    def empty(cls) -> HistoryColumns:
        """A server with no scans."""
        return cls(
            scan_ids=(),
            run_ids=(),
            scanned_at=(),
            outcomes=(),
            tokens=(),
            problems=(),
            warnings=(),
            notes=(),
            latest=None,
        )


@dataclass(frozen=True, kw_only=True)
class FindingRow:
    """A finding on a server, with when it first appeared (this time round) and when it went away, if it did."""

    server: str
    code: str
    rule: str
    severity: Severity
    tool: str | None
    tool_index: int | None
    message: str
    hint: str
    pointer: str | None
    details: Mapping[str, object]  # JSON values
    run_id: int | None  # the run this row was read from (None: listed from the event history)
    first_seen_run: int | None
    first_seen_at: datetime | None
    gone_run: int | None
    gone_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class EventRow:
    id: int
    server: str
    run_id: int
    scan_id: int
    at: datetime
    kind: str
    tool: str | None
    code: str | None
    details: Mapping[str, object]  # JSON values


@dataclass(frozen=True, kw_only=True)
class Diff:
    """What changed on a server between two scans (``from_run`` None: everything is new).

    By default the two are its last two successful scans; a server with no successful scan compares its last two
    scans, whatever their outcome. Tools, tokens and findings are compared only when both sides answered
    (``tools_compared``); outcome changes on the way (``outcome_changes``: run, before, after) and both sides'
    versions (the registry's and the server's own) are always given. A rename (same description and inputSchema,
    or a name that folds to the same words) is one ``tools_renamed`` pair; the findings that followed it to its
    new name are neither new nor fixed, and its MCP502 is not new. Findings of a removed tool are
    ``findings_gone_with_tool``, not fixed.
    """

    server: str
    from_run: int | None
    to_run: int
    from_version: str | None
    to_version: str | None
    from_sha256: str | None
    to_sha256: str | None
    tools_added: tuple[str, ...]
    tools_removed: tuple[str, ...]
    tools_changed: tuple[tuple[str, tuple[str, ...]], ...]  # (tool, fields that changed)
    tokens_from: Mapping[str, int]
    tokens_to: Mapping[str, int]
    findings_new: tuple[Finding, ...]
    findings_fixed: tuple[Finding, ...]
    from_outcome: str | None = None
    to_outcome: str = "ok"
    from_registry_version: str | None = None
    to_registry_version: str | None = None
    outcome_changes: tuple[tuple[int, str | None, str | None], ...] = ()
    tools_compared: bool = True
    lanes_from: tuple[LaneRow, ...] = ()  # the lanes of each side, when it was scanned in lanes
    lanes_to: tuple[LaneRow, ...] = ()
    # (old, new): one tool renamed (the same description and inputSchema, or names that fold to the same words:
    # scanner.measure.history.pair_renames); not in tools_added/tools_removed.
    tools_renamed: tuple[tuple[str, str], ...] = ()
    # new name -> what changed besides the name (empty when only the name did).
    renamed_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Findings of the earlier scan on a tool that was removed (not renamed): gone with it, not fixed.
    findings_gone_with_tool: tuple[Finding, ...] = ()

    @property
    def token_deltas(self) -> dict[str, int]:
        providers = sorted(set(self.tokens_from) | set(self.tokens_to))
        return {p: self.tokens_to.get(p, 0) - self.tokens_from.get(p, 0) for p in providers}

    @property
    def unchanged(self) -> bool:
        return (
            self.from_sha256 == self.to_sha256
            and not self.findings_new
            and not self.findings_fixed
            and not self.findings_gone_with_tool
            and self.from_outcome == self.to_outcome
            and not self.outcome_changes
        )


@dataclass(frozen=True, kw_only=True)
class LeaderRow:
    """One server in one run, with everything the leaderboard needs to score and show it without a recount.

    ``tool_severities[i]`` counts (problems, warnings, notes) of findings on the tool at index ``i``;
    ``list_severities`` counts those on no single tool (list rules and removed tools).
    """

    server: str
    scan_id: int
    outcome: str
    detail: str
    transport: str
    era: str | None
    protocol_version: str | None
    server_version: str | None
    anonymous: bool
    tools_count: int | None
    tokens: Mapping[str, int]
    token_methods: Mapping[str, str]
    problems: int
    warnings: int
    notes: int
    toolset_sha256: str | None
    findings: tuple[Finding, ...] = ()
    tool_severities: tuple[tuple[int, int, int], ...] = ()
    list_severities: tuple[int, int, int] = (0, 0, 0)
    lane: str | None = None  # a scan in lanes: the lane ranked (the richest), said beside the name
    lanes: tuple[LaneRow, ...] = ()
    instructions_tokens: Mapping[str, int] = field(default_factory=dict)  # the server's instructions, per provider

    @property
    def max_tokens(self) -> int:
        return max(self.tokens.values(), default=0)

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


@dataclass(frozen=True, kw_only=True)
class RunTrend:
    """One run's aggregates: a point on every trend chart."""

    run_id: int
    started_at: datetime
    finished_at: datetime | None
    status: str
    rule_version: str
    servers_scanned: int
    servers_ok: int
    servers_with_problems: int
    outcomes: Mapping[str, int]
    median_tokens: int | None
    p90_tokens: int | None
    median_tokens_by_provider: Mapping[str, int]
    median_tools: int | None
    findings_by_rule: Mapping[str, int] = field(default_factory=dict)
