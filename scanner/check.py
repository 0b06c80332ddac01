"""Measure one tool list: provider token costs, per-tool costs and findings. The heart of ``fathom check``.

:func:`measure` is pure given a tool list (and the offline tokenizer); the crawler and the store call it for every
new toolset, ``fathom check`` for one. :func:`run_check` is the single library call behind ``fathom check``: it
gets the list (from a file, or from a server through the MCP client), measures it, and returns both.

``--select``/``--ignore`` and the per-tool ignores of a config file never drop a finding: :func:`run_check`
measures every rule, then moves the findings the author chose not to see to :attr:`CheckResult.ignored` with the
reason. The score (:meth:`CheckResult.score`) is the leaderboard's: :func:`scanner.score.score_breakdown` over
every finding, ignored ones included, and the list's tokens per turn, so ``check`` and the leaderboard always give
a list the same number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scanner.errors import OutputError
from scanner.models import (
    CONTEXT_WINDOW,
    CheckReport,
    Finding,
    ScanOutcome,
    ServerEntry,
    ToolCost,
    Toolset,
)

if TYPE_CHECKING:
    from scanner.baseline import Comparison
    from scanner.gates import GateResult
    from scanner.mcp import ClientLimits
    from scanner.score import ScoreBreakdown


def tool_label(tool: Any, index: int) -> str:
    """A name to show for a tool, even one whose name is missing or not a string."""
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) and name else f"#{index}"


def measure(
    toolset: Toolset,
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    instructions: str | None = None,
) -> CheckReport:
    """Token costs per provider, every tool's own cost, and the findings of the rule catalogue.

    With ``instructions`` (the server's text) the report also carries their cost per provider as a system text,
    and MCP401/MCP402 over them join the findings (``tool`` None, ``pointer`` ``"instructions"``).

    Raises :class:`~scanner.errors.TokenizerUnavailable` if the offline tokenizer cannot be loaded: a number
    without its tokenizer is never reported.
    """
    from scanner import providers, tokenizer
    from scanner.providers.base import read_tool
    from scanner.rules import RuleContext, run_rules

    tools = list(toolset.tools)
    parts = [read_tool(tool) for tool in tools]  # copied and bounded once, shared by every provider
    measured = providers.measure_all(parts)
    tokens = {provider: measurement.total for provider, measurement in measured.items()}
    tool_costs = tuple(
        ToolCost(
            name=tool_label(tool, index),
            index=index,
            tokens={provider: measurement.per_tool[index] for provider, measurement in measured.items()},
        )
        for index, tool in enumerate(tools)
    )
    most = max(count.tokens for count in tokens.values())
    context = RuleContext(
        count_tokens=tokenizer.count,
        list_tokens_max=most,
        cost_text=providers.text_cost,
        cost_method=providers.text_cost_method(),
        tool_tokens_max=tuple(max(cost.tokens.values(), default=0) for cost in tool_costs),
        tool_tokens_method="per tool, the most expensive provider's view",
    )
    findings = run_rules(tools, context, select=select, ignore=ignore)
    cost = None
    if instructions:
        from scanner.instructions import instruction_findings, measure_instructions

        cost = measure_instructions(instructions)
        extra = instruction_findings(instructions, select=select, ignore=ignore)
        if extra:
            findings = sorted([*findings, *extra], key=lambda finding: finding.sort_key())
    return CheckReport(
        tools_count=len(tools),
        tokens=tokens,
        context_share=most / CONTEXT_WINDOW,
        tool_costs=tool_costs,
        findings=tuple(findings),
        toolset_sha256=toolset.sha256,
        instructions=cost,
    )


@dataclass(frozen=True)
class ToolIgnore:
    """A per-tool ignore from a config file: these rules (code prefixes; every rule when empty) on this tool,
    and why the author decided the finding is fine."""

    tool: str
    rules: tuple[str, ...]
    reason: str

    def matches(self, finding: Finding) -> bool:
        from scanner.report.check_groups import tools_of

        if self.tool not in tools_of(finding):
            return False
        return not self.rules or any(finding.code.startswith(prefix) for prefix in self.rules)


@dataclass(frozen=True)
class IgnoredFinding:
    """A finding kept out of the gates and the findings list, with the reason it was ignored."""

    finding: Finding
    reason: str


@dataclass(frozen=True)
class RuleCost:
    """What one rule's findings cost the score: how many points fixing all of them would give back."""

    code: str
    rule: str
    findings: int
    points: float


@dataclass(frozen=True)
class CheckRequest:
    """What ``fathom check`` was asked to do: read a file, or connect to one server."""

    tools_file: str | None = None
    entry: ServerEntry | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    max_bytes: int | None = None
    limits: ClientLimits | None = None  # the MCP client's limits (its defaults when None)
    profile: str = "rich"
    save: Path | None = None
    measure: bool = True  # False: only fetch the list (``--as`` prints a provider view and needs no tokenizer)
    tool_ignores: tuple[ToolIgnore, ...] = ()
    db_url: str | None = None  # with ``server``: check that server's newest stored list in this database
    server: str | None = None
    preview: bool = False  # show preview rules' findings (marked); never scored or gated either way


@dataclass(frozen=True)
class CheckResult:
    """The raw tools and their report (None when not measured or the server could not be listed) and, for a
    server, how the connection went."""

    report: CheckReport | None
    tools: tuple[Any, ...] | None = None
    outcome: ScanOutcome | None = None
    source: str = ""
    instructions: str | None = None  # the server's instructions, when it sent any (``--as`` prints them apart)
    # What the connection itself showed when no list was read: MCP602 on a 401 a client cannot learn to answer.
    outcome_findings: tuple[Finding, ...] = ()
    ignored: tuple[IgnoredFinding, ...] = ()  # findings --select/--ignore or a per-tool ignore kept out, with why
    comparison: Comparison | None = None  # against --baseline, when one was given
    gates: tuple[GateResult, ...] = field(default=())  # every gate asked for, passed or failed
    openai_strict: bool = False  # show OpenAI's strict-mode view (check --openai-strict): never scored or gated

    @property
    def scored_findings(self) -> tuple[Finding, ...]:
        """Every finding the leaderboard would count: shown, ignored and the connection's own."""
        shown = self.report.findings if self.report is not None else ()
        return (*shown, *(item.finding for item in self.ignored), *self.outcome_findings)

    @cached_property
    def score(self) -> ScoreBreakdown | None:
        """The leaderboard's score of this list (None when no list was measured, or the list has no tools):
        its findings, its tool count and its tokens per turn with the dearest provider, as the store keeps them."""
        if self.report is None:
            return None
        from scanner.score import score_breakdown

        return score_breakdown(self.report.tools_count, self.scored_findings, tokens=self.report.max_tokens)

    @cached_property
    def rule_costs(self) -> tuple[RuleCost, ...]:
        """Per rule, the points its findings cost (the score without them minus the score), dearest first.

        Each rule is priced alone, by the same :func:`~scanner.score.score_breakdown`; because the worst tool
        weighs in, the costs need not add up to ``100 - score``. Rules that cost nothing are left out.
        """
        if self.report is None or self.score is None:
            return ()
        from scanner.score import score_breakdown

        found = self.scored_findings
        costs = []
        for code in dict.fromkeys(finding.code for finding in found):
            rest = [finding for finding in found if finding.code != code]
            without = score_breakdown(self.report.tools_count, rest, tokens=self.report.max_tokens)
            points = round(without.score - self.score.score, 1) if without is not None else 0.0
            if points > 0:
                same = [finding for finding in found if finding.code == code]
                costs.append(RuleCost(code=code, rule=same[0].rule, findings=len(same), points=points))
        return tuple(sorted(costs, key=lambda cost: (-cost.points, cost.code)))

    @property
    def failed_gates(self) -> tuple[GateResult, ...]:
        return tuple(gate for gate in self.gates if not gate.passed)


def run_check(request: CheckRequest) -> CheckResult:
    """Get the tool list the request names, measure it, and return both.

    A server that cannot be listed is not an exception: the result carries its outcome and no report.
    """
    if request.server is not None:
        return _stored_check(request)
    if request.entry is None:
        from scanner.toolsets import DEFAULT_MAX_BYTES, load_tools

        source = request.tools_file or "-"
        toolset = Toolset.from_tools(load_tools(source, request.max_bytes or DEFAULT_MAX_BYTES))
        label = "standard input" if source == "-" else source
        report, ignored = _measure(request, toolset)
        return CheckResult(report=report, tools=toolset.tools, source=label, ignored=ignored)

    import anyio

    from scanner.mcp import ClientLimits, scan_server
    from scanner.packages.checkrun import check_entry, classify_check

    # A package runner's command runs as a scan runs it: the installer settings, the cause classifier.
    entry = check_entry(request.entry)
    outcome = classify_check(entry, anyio.run(scan_server, entry, request.limits or ClientLimits(), request.profile))
    if not outcome.ok or outcome.tools is None:
        from scanner.lanes import scan_findings

        found = tuple(scan_findings(outcome))
        return CheckResult(report=None, outcome=outcome, source=entry.target(), outcome_findings=found)
    if request.save is not None:
        from scanner import safefile  # never through a symlink, inside the working tree (docs/ci.md)

        safefile.write_text(
            request.save,
            json.dumps({"tools": list(outcome.tools)}, indent=2) + "\n",
            label="--save",
            failed=f"Cannot save the tool list to {request.save}",
        )
    toolset = Toolset.from_tools(list(outcome.tools))
    from scanner.instructions import instructions_text

    text = instructions_text(outcome.extra)
    report, ignored = _measure(request, toolset, text)
    return CheckResult(
        report=report,
        ignored=ignored,
        tools=toolset.tools,
        outcome=outcome,
        source=entry.target(),
        instructions=text,
    )


def _stored_check(request: CheckRequest) -> CheckResult:
    """``--db DB --server NAME``: the server's newest stored list as the leaderboard has it, nothing re-measured.

    The tokens, each tool's cost and the findings (the toolset's under the run's scoring catalogue, and the scan's
    own) are the stored ones, so the score is the leaderboard's to the decimal. ``--select``/``--ignore`` and the
    per-tool ignores set findings aside as for any list (still scored).
    """
    from scanner.instructions import text_sha256
    from scanner.models import InstructionsCost
    from scanner.rules.registry import check_prefixes
    from scanner.store import open_store

    assert request.db_url is not None and request.server is not None
    check_prefixes(request.select)
    check_prefixes(request.ignore)
    for tool_ignore in request.tool_ignores:
        check_prefixes(tool_ignore.rules)
    with open_store(request.db_url) as store:
        stored = store.stored_list(request.server)
    row = stored.row
    toolset = Toolset.from_tools(stored.tools)
    if toolset.sha256 != row.toolset_sha256:  # never score one list under another's name
        raise OutputError(f"{stored.server}: the stored tool list does not match its hash {row.toolset_sha256}")
    cost = None
    if stored.instructions is not None and stored.instructions_tokens:
        cost = InstructionsCost(
            text=stored.instructions,
            sha256=text_sha256(stored.instructions),
            tokens=stored.instructions_tokens,
        )
    most = max((count.tokens for count in stored.tokens.values()), default=0)
    report: CheckReport | None = CheckReport(
        tools_count=int(row.tools_count or 0),
        tokens=stored.tokens,
        context_share=most / CONTEXT_WINDOW,
        tool_costs=tuple(stored.tool_costs),
        findings=tuple(sorted(row.findings, key=lambda finding: finding.sort_key())),
        toolset_sha256=toolset.sha256,
        instructions=cost,
    )
    if not request.measure:
        report = None
    found = report.findings if report is not None else ()
    kept, ignored = _shown(partition(found, request.select, request.ignore, request.tool_ignores), request.preview)
    when = f", scanned {stored.scanned_at:%Y-%m-%d %H:%M}" if stored.scanned_at is not None else ""
    return CheckResult(
        report=replace(report, findings=kept) if report is not None else None,
        tools=toolset.tools,
        source=f"{stored.server} (stored: run {stored.run_id}, scan {stored.scan_id}{when})",
        ignored=ignored,
        instructions=stored.instructions,
    )


def _measure(
    request: CheckRequest, toolset: Toolset, instructions: str | None = None
) -> tuple[CheckReport | None, tuple[IgnoredFinding, ...]]:
    """Measure with every rule, then set aside what the request ignores (never dropped: the score counts it)."""
    if not request.measure:
        return None, ()
    from scanner.rules.registry import check_prefixes

    check_prefixes(request.select)
    check_prefixes(request.ignore)
    for tool_ignore in request.tool_ignores:
        check_prefixes(tool_ignore.rules)
    report = measure(toolset, instructions=instructions)
    kept, ignored = _shown(
        partition(report.findings, request.select, request.ignore, request.tool_ignores), request.preview
    )
    return replace(report, findings=kept), ignored


def _shown(
    split: tuple[tuple[Finding, ...], tuple[IgnoredFinding, ...]], preview: bool
) -> tuple[tuple[Finding, ...], tuple[IgnoredFinding, ...]]:
    """Findings shown and ignored, less the preview rules' unless ``preview``: measured like every rule (the store
    keeps them), shown only when asked for, and never scored or gated either way (rules.md, status)."""
    kept, ignored = split
    if preview:
        return kept, ignored
    from scanner.rules.registry import is_preview

    return (
        tuple(finding for finding in kept if not is_preview(finding.code)),
        tuple(item for item in ignored if not is_preview(item.finding.code)),
    )


def stale_ignores(result: CheckResult, tool_ignores: Sequence[ToolIgnore]) -> list[str]:
    """The config's per-tool ignores that no longer apply, one sentence each: a tool the list does not have (the
    nearest name said), or an ignore that set no finding aside. A stale ignore is accepted, never silent."""
    import difflib

    if result.tools is None or not tool_ignores:
        return []
    names = [tool_label(tool, index) for index, tool in enumerate(result.tools)]
    used = set()
    for item in result.ignored:  # as partition() decides: the first per-tool ignore that matches sets it aside
        first = next((rule for rule in tool_ignores if rule.matches(item.finding)), None)
        if first is not None and first.reason == item.reason:
            used.add(first)
    out = []
    for rule in tool_ignores:
        scope = f"per-tool ignore of {rule.tool!r}" + (f" ({', '.join(rule.rules)})" if rule.rules else "")
        if rule.tool not in names:
            near = difflib.get_close_matches(rule.tool, names, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            out.append(f"{scope}: the list has no tool of that name{hint}")
        elif rule not in used:
            out.append(f"{scope}: it set no finding aside (fixed? then remove it)")
    return out


def partition(
    findings: Sequence[Finding],
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    tool_ignores: Sequence[ToolIgnore] = (),
) -> tuple[tuple[Finding, ...], tuple[IgnoredFinding, ...]]:
    """Split findings into those shown and those ignored (with the reason), keeping their order."""
    from scanner.rules.registry import rule_selected

    kept: list[Finding] = []
    ignored: list[IgnoredFinding] = []
    for finding in findings:
        if not rule_selected(finding.code, select, ()):
            ignored.append(IgnoredFinding(finding, "rule not selected"))
        elif not rule_selected(finding.code, (), ignore):
            ignored.append(IgnoredFinding(finding, "rule ignored"))
        else:
            reason = next((rule.reason for rule in tool_ignores if rule.matches(finding)), None)
            if reason is None:
                kept.append(finding)
            else:
                ignored.append(IgnoredFinding(finding, reason))
    return tuple(kept), tuple(ignored)
