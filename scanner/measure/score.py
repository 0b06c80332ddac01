"""The leaderboard score: one number from 0 to 100 saying how well a model can use a server's tool list, and
what it costs on every turn.

Why a blend of the mean and the worst tool: a list of forty good tools and one a model cannot call is not 97.5 %
usable, since the model meets the broken tool on every turn and may pick it. The mean rewards a list that is
mostly good; the worst tool keeps one bad tool visible. List-wide findings (duplicates, too many tools, a list
too large) cost fixed points, because they hurt every tool at once. The list's size costs points too: a model
reads every tool on every turn, so a list twice as large as it needs to be is worse to use.

The formula (version :data:`SCORE_VERSION`; ``docs/score.md`` has worked examples)::

    tool score   t_i = max(0, 1 - 0.50 * problems_i - 0.15 * warnings_i - 0.03 * notes_i)
    blend        b   = 0.7 * mean(t_i) + 0.3 * min(t_i)
    penalty      p   = 10 * list problems + 4 * list warnings + 1 * list notes   (each code counted at most 3x)
    cost         c   = 4 * log2(T / 1000) when T > 1000, else 0    (T: tokens per turn, the dearest provider)
    score            = clamp(100 * b - p - c, 0, 100), rounded to one decimal
                       (at most 30 when a client refuses the whole list: a stable MCP801-MCP803 finding)

``T`` is the list's tokens per turn with the most expensive provider Fathom measures (the figure the leaderboard
ranks ties by and ``--max-tokens N`` gates): :data:`COST_BUDGET` tokens are free, and every doubling beyond costs
:data:`COST_PER_DOUBLING` points. So a list eight times as large as another (three doublings) scores 12 points
lower when neither has findings (both above the budget; any list with a tool costs at least about 380 tokens
with the dearest provider, so eight times it is always beyond the budget by more than 5 points' worth), and a
list over 20 000 tokens loses more than 17 points (at most 82.7).

A list with no tools has no score (:func:`score_breakdown` returns None): nothing was measured that a model could
use, so it is never ranked, never gets a coloured badge, and every score gate fails on it.

A list rule that fires once per pair (MCP303 on 45 near-identical descriptions fires 44 times) counts at most
:data:`LIST_CAP_PER_CODE` times: the penalty says "this list has that fault", not how many pairs show it.

A finding is *list-wide* when it names no tool or when its code is in the list family (``MCP3xx``: pair rules
name their first tool, but the fault belongs to the pair). It belongs to a tool when its ``tool_index`` is a
place in the list. A finding that names a tool at no place in the list (no index, or one out of range) counts
list-wide: never as an extra tool, so a finding about a tool that is gone can never raise the score.

Only findings about the list a model reads count: those of ``stable`` rules (rules.md: a rule is stable when at
least 80 % of its findings on hand-labelled real tool lists are right), outside the families about something
else: changes between two scans (``MCP5xx``: a tool removed, changed silently), the connection (``MCP6xx``)
and the registry entry (``MCP7xx``). Those are reported, never scored, so the same list scores the same from a
file, a server or the store, whatever happened the night before. A ``preview`` rule's findings are still
reported, but a ranking built on a rule that is wrong more often than one time in five would be mostly noise.
Findings of a code the catalogue does not know (a newer catalogue's) count, so nothing unknown is dropped
silently. :attr:`ScoreBreakdown.left_out` says how many findings were left out.

The score is a pure function of the findings, the tool count and the tokens per turn, so any stored toolset can
be re-scored when the formula changes; bump :data:`SCORE_VERSION` whenever any constant or step above changes,
because scores of different versions are not comparable.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from scanner.models import Severity

SCORE_VERSION = "3"

TOOL_PENALTY: dict[Severity, float] = {Severity.PROBLEM: 0.50, Severity.WARNING: 0.15, Severity.NOTE: 0.03}
LIST_PENALTY: dict[Severity, float] = {Severity.PROBLEM: 10.0, Severity.WARNING: 4.0, Severity.NOTE: 1.0}
MEAN_WEIGHT = 0.7
WORST_WEIGHT = 0.3
LIST_FAMILY_PREFIX = "MCP3"
LIST_CAP_PER_CODE = 3
COST_BUDGET = 1000
"""Tokens per turn (the dearest provider's count) that cost no points."""
COST_PER_DOUBLING = 4.0
"""Points each doubling of the tokens per turn beyond :data:`COST_BUDGET` costs."""
REFUSED_CAP = 30.0
"""The most a list scores when a client refuses it whole (a stable MCP8xx rule whose effect is "refuses"): every
turn of every conversation that carries it fails with that client, the worst a list can do, so it is never above
the red band whatever else it does well."""
NOT_SCORED_PREFIXES = ("MCP5", "MCP6", "MCP7")
"""Families about something other than the list a model reads: changes over time, the connection, the registry."""

SCORE_FORMULA = (
    "tool score = max(0, 1 - 0.50 x problems - 0.15 x warnings - 0.03 x notes); "
    "cost = 4 x log2(tokens per turn / 1000) above 1000 tokens (the dearest provider), else 0; "
    "score = clamp(100 x (0.7 x mean tool score + 0.3 x worst tool score) "
    "- (10 x list problems + 4 x list warnings + 1 x list notes, each rule counted at most 3 times) - cost, 0, 100); "
    "only findings of stable rules about the list count; a list a client refuses whole scores at most 30; "
    "a list with no tools has no score"
)
"""One line for the leaderboard footer and the exports."""


class Scorable(Protocol):
    """What the score reads of a finding (a :class:`scanner.models.Finding` has all of it)."""

    @property
    def code(self) -> str: ...

    @property
    def severity(self) -> Severity: ...

    @property
    def tool(self) -> str | None: ...

    @property
    def tool_index(self) -> int | None: ...


@dataclass(frozen=True)
class ScoreBreakdown:
    """The score and the parts it was made from, for a page that explains a server's number."""

    score: float
    mean_tool: float
    worst_tool: float
    list_penalty: float
    cost_penalty: float = 0.0
    """Points the list's tokens per turn took (rounded to one decimal), :func:`cost_penalty`."""
    tokens: int = 0
    """The tokens per turn the cost was reckoned from (the dearest provider's count)."""
    version: str = SCORE_VERSION
    refused: tuple[str, ...] = ()
    """The rules by which a client refuses the whole list (MCP801...); when any, the score is at most
    :data:`REFUSED_CAP`."""
    left_out: int = 0
    """Findings of preview (or deprecated) rules and of the unscored families, reported but not counted."""


def cost_penalty(tokens: int) -> float:
    """Points a list costing ``tokens`` per turn (the dearest provider's count) loses: nothing up to
    :data:`COST_BUDGET`, then :data:`COST_PER_DOUBLING` per doubling. Never negative, and rising with the tokens."""
    if tokens <= COST_BUDGET:
        return 0.0
    return COST_PER_DOUBLING * math.log2(tokens / COST_BUDGET)


def is_list_wide(finding: Scorable) -> bool:
    """True for findings about the list as a whole rather than one tool."""
    return (finding.tool is None and finding.tool_index is None) or finding.code.startswith(LIST_FAMILY_PREFIX)


Counts = tuple[int, int, int]
"""(problems, warnings, notes)."""


def tally(tools_count: int, findings: Iterable[Scorable]) -> tuple[list[Counts], Counts]:
    """Group findings into per-tool counts (one entry per tool hit) and the list-wide counts (each code at most
    :data:`LIST_CAP_PER_CODE` times). A finding whose tool has no place in the list (no index, or one out of
    range) is list-wide: it never counts as an extra tool."""
    per_tool: dict[int, list[int]] = {}
    list_counts = [0, 0, 0]
    per_code: dict[str, int] = {}
    for finding in findings:
        severity = int(Severity(finding.severity))
        index = finding.tool_index
        if is_list_wide(finding) or index is None or not 0 <= index < tools_count:
            seen = per_code[finding.code] = per_code.get(finding.code, 0) + 1
            if seen <= LIST_CAP_PER_CODE:
                list_counts[severity] += 1
            continue
        per_tool.setdefault(index, [0, 0, 0])[severity] += 1
    tools = [(c[0], c[1], c[2]) for c in per_tool.values()]
    return tools, (list_counts[0], list_counts[1], list_counts[2])


def score_counts(
    tools_count: int, tool_counts: Iterable[Counts], list_counts: Counts, *, tokens: int
) -> ScoreBreakdown | None:
    """The score from per-tool severity counts (tools with no findings may be left out), list-wide counts and the
    tokens per turn (the dearest provider's count); None for a list with no tools.

    ``tool_counts`` holds one (problems, warnings, notes) per tool hit, at most ``tools_count`` of them.
    ``list_counts`` are taken as given: :func:`tally` applies the per-code cap.
    """
    tools_count = max(0, int(tools_count))
    if tools_count == 0:
        return None
    scores = [
        max(0.0, 1.0 - sum(TOOL_PENALTY[sev] * count for sev, count in zip(Severity, counts, strict=True)))
        for counts in tool_counts
    ]
    if len(scores) > tools_count:
        raise ValueError(f"{len(scores)} tools hit in a list of {tools_count}")
    mean_tool = (sum(scores) + (tools_count - len(scores))) / tools_count
    worst_tool = min(scores, default=1.0)
    list_penalty = sum(LIST_PENALTY[sev] * count for sev, count in zip(Severity, list_counts, strict=True))
    tokens = max(0, int(tokens))
    cost = cost_penalty(tokens)
    blend = MEAN_WEIGHT * mean_tool + WORST_WEIGHT * worst_tool
    value = min(100.0, max(0.0, 100.0 * blend - list_penalty - cost))
    return ScoreBreakdown(
        score=round(value, 1),
        mean_tool=round(mean_tool, 4),
        worst_tool=round(worst_tool, 4),
        list_penalty=list_penalty,
        cost_penalty=round(cost, 1),
        tokens=tokens,
    )


def counts_in_score(code: str) -> bool:
    """Whether a rule's findings count in the score: the code is not of an unscored family
    (:data:`NOT_SCORED_PREFIXES`), and its status is ``stable`` or the code is unknown here."""
    if code.startswith(NOT_SCORED_PREFIXES):
        return False
    from scanner.rules import RULES

    rule = RULES.get(code)
    return rule is None or rule.status == "stable"


def score_breakdown(
    tools_count: int,
    findings: Iterable[Scorable],
    *,
    tokens: int,
    counts: Callable[[str], bool] = counts_in_score,
) -> ScoreBreakdown | None:
    """Compute the score of a list of ``tools_count`` tools carrying ``findings`` and costing ``tokens`` per turn
    with the dearest provider; see the module docstring. None for a list with no tools (it has no score).

    ``counts`` says which codes count (by default the stable rules of the catalogue about the list itself).
    """
    tools_count = max(0, int(tools_count))
    kept: list[Scorable] = []
    left_out = 0
    decided: dict[str, bool] = {}
    for finding in findings:
        code = finding.code
        if code not in decided:
            decided[code] = counts(code)
        if decided[code]:
            kept.append(finding)
        else:
            left_out += 1
    per_tool, list_counts = tally(tools_count, kept)
    result = score_counts(tools_count, per_tool, list_counts, tokens=tokens)
    if result is None:
        return None
    refused = tuple(sorted({finding.code for finding in kept} & refusing_codes()))
    if refused:
        result = replace(result, score=min(result.score, REFUSED_CAP), refused=refused)
    return replace(result, left_out=left_out)


@functools.cache
def refusing_codes() -> frozenset[str]:
    """The codes whose findings mean a client refuses the whole request (scanner.rules.clients_reject.EFFECTS)."""
    from scanner.rules.clients_reject import EFFECTS

    return frozenset(code for code, effects in EFFECTS.items() if any(effect == "refuses" for _, effect in effects))


def score(
    tools_count: int, findings: Iterable[Scorable], *, tokens: int, counts: Callable[[str], bool] = counts_in_score
) -> float | None:
    """The score (0 to 100, one decimal) of a list of ``tools_count`` tools with ``findings`` costing ``tokens``
    per turn; None for a list with no tools."""
    result = score_breakdown(tools_count, findings, tokens=tokens, counts=counts)
    return result.score if result is not None else None
