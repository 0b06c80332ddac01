"""What a check asks for and what it finds: the values every part of :mod:`scanner.check` passes around.

:class:`CheckRequest` (what ``fathom check`` was asked to do) and :class:`CheckResult` (the list, its report,
what was ignored and why, the comparison with a baseline, every gate's verdict), with the smaller values they
hold: a per-tool ignore, a rule's cost to the score, a gate's result, and a baseline comparison's deltas. They
live on the floor below the modules that make them (:mod:`~scanner.check.run`, :mod:`~scanner.check.baseline`,
:mod:`~scanner.check.gates`) and the renderers that read them, so none of those import each other in a circle.

The score (:attr:`CheckResult.score`) is the leaderboard's: :func:`scanner.measure.score.score_breakdown` over
every finding, ignored ones included, and the list's tokens per turn, so ``check`` and the leaderboard always
give a list the same number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scanner.models import CheckReport, Finding, ScanOutcome, ServerEntry, Severity

if TYPE_CHECKING:
    from scanner.mcp import ClientLimits
    from scanner.measure.score import ScoreBreakdown


@dataclass(frozen=True)
class ToolIgnore:
    """A per-tool ignore from a config file: these rules (code prefixes; every rule when empty) on this tool,
    and why the author decided the finding is fine."""

    tool: str
    rules: tuple[str, ...]
    reason: str

    def matches(self, finding: Finding) -> bool:
        from scanner.check.groups import tools_of

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
    server_key: str | None = None  # the name clients give the server (MCP809); None: the server's serverInfo.name


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
        from scanner.measure.score import score_breakdown

        return score_breakdown(self.report.tools_count, self.scored_findings, tokens=self.report.max_tokens)

    @cached_property
    def rule_costs(self) -> tuple[RuleCost, ...]:
        """Per rule, the points its findings cost (the score without them minus the score), dearest first.

        Each rule is priced alone, by the same :func:`~scanner.measure.score.score_breakdown`; because the worst tool
        weighs in, the costs need not add up to ``100 - score``. Rules that cost nothing are left out.
        """
        if self.report is None or self.score is None:
            return ()
        from scanner.measure.score import score_breakdown

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


@dataclass(frozen=True)
class GateResult:
    """One gate: its flag as written, whether it passed, and a sentence with the numbers."""

    gate: str
    passed: bool
    message: str

    def line(self) -> str:
        return f"gate {self.gate} {'passed' if self.passed else 'failed'}: {self.message}"


@dataclass(frozen=True)
class BaselineFinding:
    """A finding as the baseline keeps it (or a finding now, for the same matching)."""

    code: str
    rule: str
    severity: Severity
    tool: str | None
    message: str

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.code, self.tool)

    @classmethod
    def of(cls, finding: Finding) -> BaselineFinding:
        return cls(finding.code, finding.rule, finding.severity, finding.tool, finding.message)

    def to_json(self) -> dict[str, Any]:
        """As ``check --format json`` lists a fixed or gone finding of the baseline."""
        return {
            "code": self.code,
            "rule": self.rule,
            "severity": self.severity.label,
            "tool": self.tool,
            "message": self.message,
        }


@dataclass(frozen=True)
class TokenDelta:
    """One provider's tokens per turn in the baseline and now."""

    provider: str
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before

    @property
    def percent(self) -> float | None:
        return None if self.before == 0 else 100.0 * self.delta / self.before


@dataclass(frozen=True)
class ToolDelta:
    """A tool added, removed or changed since the baseline, with its cost per provider before and after."""

    name: str
    change: str  # "added", "removed" or "changed"
    before: Mapping[str, int]
    after: Mapping[str, int]
    fields: tuple[str, ...] = ()
    """For a changed tool, what changed (``description``, ``inputSchema``, ``annotations``...); empty when the
    baseline predates per-field hashes."""

    def delta(self, provider: str) -> int:
        return self.after.get(provider, 0) - self.before.get(provider, 0)


@dataclass(frozen=True)
class Comparison:
    """What changed between the baseline and this check."""

    baseline: str  # the baseline file, as given
    source: str  # what the baseline checked
    tokens: tuple[TokenDelta, ...]
    tools: tuple[ToolDelta, ...]
    new: tuple[Finding, ...]  # findings now whose (rule, tool) the baseline had fewer of
    fixed: tuple[BaselineFinding, ...]  # baseline findings whose (rule, tool) is now seen fewer times
    score_before: float | None
    score_after: float | None
    tools_before: int
    tools_after: int
    gone: tuple[BaselineFinding, ...] = ()
    """Baseline findings of a tool that was removed: gone with the tool, not fixed."""

    @property
    def added(self) -> tuple[ToolDelta, ...]:
        return tuple(tool for tool in self.tools if tool.change == "added")

    @property
    def removed(self) -> tuple[ToolDelta, ...]:
        return tuple(tool for tool in self.tools if tool.change == "removed")

    @property
    def changed(self) -> tuple[ToolDelta, ...]:
        return tuple(tool for tool in self.tools if tool.change == "changed")
