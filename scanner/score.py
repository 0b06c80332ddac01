"""The leaderboard score: one number from 0 to 100 saying how well a model can use a server's tool list.

Why a blend of the mean and the worst tool: a list of forty good tools and one a model cannot call is not 97.5 %
usable, since the model meets the broken tool on every turn and may pick it. The mean rewards a list that is
mostly good; the worst tool keeps one bad tool visible. List-wide findings (duplicates, too many tools, a list
too large) cost fixed points, because they hurt every tool at once.

The formula (version :data:`SCORE_VERSION`; ``docs/score.md`` has worked examples)::

    tool score   t_i = max(0, 1 - 0.50 * problems_i - 0.15 * warnings_i - 0.03 * notes_i)
    blend        b   = 0.7 * mean(t_i) + 0.3 * min(t_i)        (1.0 for a list with no tools)
    penalty      p   = 10 * list problems + 4 * list warnings + 1 * list notes   (each code counted at most 3x)
    score            = clamp(100 * b - p, 0, 100), rounded to one decimal

A list rule that fires once per pair (MCP303 on 45 near-identical descriptions fires 44 times) counts at most
:data:`LIST_CAP_PER_CODE` times: the penalty says "this list has that fault", not how many pairs show it.

A finding is *list-wide* when it names no tool or when its code is in the list family (``MCP3xx``: pair rules
name their first tool, but the fault belongs to the pair). Otherwise it belongs to the tool at its
``tool_index`` (or, when the index is unknown, to the tool of that name). A finding whose index lies outside the
list still counts, as an extra tool: the score never drops a finding silently.

Only findings of ``stable`` rules count (rules.md: a rule is stable when at least 80 % of its findings on
hand-labelled real tool lists are right). A ``preview`` rule's findings are still reported and listed, but a
ranking built on a rule that is wrong more often than one time in five would be mostly noise. Findings of a code
the catalogue does not know (a newer catalogue's) count, so nothing unknown is dropped silently.
:attr:`ScoreBreakdown.left_out` says how many findings were left out.

The score is a pure function of the findings and the tool count, so any stored toolset can be re-scored when the
formula changes; bump :data:`SCORE_VERSION` whenever any constant or step above changes, because scores of
different versions are not comparable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from scanner.models import Severity

SCORE_VERSION = "2"

TOOL_PENALTY: dict[Severity, float] = {Severity.PROBLEM: 0.50, Severity.WARNING: 0.15, Severity.NOTE: 0.03}
LIST_PENALTY: dict[Severity, float] = {Severity.PROBLEM: 10.0, Severity.WARNING: 4.0, Severity.NOTE: 1.0}
MEAN_WEIGHT = 0.7
WORST_WEIGHT = 0.3
LIST_FAMILY_PREFIX = "MCP3"
LIST_CAP_PER_CODE = 3

SCORE_FORMULA = (
    "tool score = max(0, 1 - 0.50 x problems - 0.15 x warnings - 0.03 x notes); "
    "score = clamp(100 x (0.7 x mean tool score + 0.3 x worst tool score) "
    "- (10 x list problems + 4 x list warnings + 1 x list notes, each rule counted at most 3 times), 0, 100); "
    "only findings of stable rules count"
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
    version: str = SCORE_VERSION
    left_out: int = 0
    """Findings of preview (or deprecated) rules, reported but not counted."""


def is_list_wide(finding: Scorable) -> bool:
    """True for findings about the list as a whole rather than one tool."""
    return (finding.tool is None and finding.tool_index is None) or finding.code.startswith(LIST_FAMILY_PREFIX)


Counts = tuple[int, int, int]
"""(problems, warnings, notes)."""


def tally(tools_count: int, findings: Iterable[Scorable]) -> tuple[list[Counts], Counts, int]:
    """Group findings into per-tool counts (one entry per tool hit), the list-wide counts (each code at most
    :data:`LIST_CAP_PER_CODE` times), and how many of the tools hit lie outside the list (an index out of range).
    A finding with no index is placed by tool name."""
    per_tool: dict[object, list[int]] = {}
    list_counts = [0, 0, 0]
    per_code: dict[str, int] = {}
    for finding in findings:
        severity = int(Severity(finding.severity))
        if is_list_wide(finding):
            seen = per_code[finding.code] = per_code.get(finding.code, 0) + 1
            if seen <= LIST_CAP_PER_CODE:
                list_counts[severity] += 1
            continue
        index = finding.tool_index
        if index is None:
            key: object = ("name", finding.tool)
        elif 0 <= index < tools_count:
            key = index
        else:
            key = ("outside", index)
        per_tool.setdefault(key, [0, 0, 0])[severity] += 1
    tools = [(c[0], c[1], c[2]) for c in per_tool.values()]
    outside = sum(1 for key in per_tool if isinstance(key, tuple) and key[0] == "outside")
    return tools, (list_counts[0], list_counts[1], list_counts[2]), outside


def score_counts(tools_count: int, tool_counts: Iterable[Counts], list_counts: Counts) -> ScoreBreakdown:
    """The score from per-tool severity counts (tools with no findings may be left out) and list-wide counts.

    ``tool_counts`` holds one (problems, warnings, notes) per tool; entries beyond ``tools_count`` count as
    extra tools, so a finding is never dropped. ``list_counts`` are taken as given: :func:`tally` applies the
    per-code cap.
    """
    scores = [
        max(0.0, 1.0 - sum(TOOL_PENALTY[sev] * count for sev, count in zip(Severity, counts, strict=True)))
        for counts in tool_counts
    ]
    total = max(max(0, int(tools_count)), len(scores))
    if total == 0:
        mean_tool = worst_tool = 1.0
    else:
        mean_tool = (sum(scores) + (total - len(scores))) / total
        worst_tool = min(scores, default=1.0)
    list_penalty = sum(LIST_PENALTY[sev] * count for sev, count in zip(Severity, list_counts, strict=True))
    blend = MEAN_WEIGHT * mean_tool + WORST_WEIGHT * worst_tool
    value = min(100.0, max(0.0, 100.0 * blend - list_penalty))
    return ScoreBreakdown(
        score=round(value, 1),
        mean_tool=round(mean_tool, 4),
        worst_tool=round(worst_tool, 4),
        list_penalty=list_penalty,
    )


def counts_in_score(code: str) -> bool:
    """Whether a rule's findings count in the score: its status is ``stable``, or the code is unknown here."""
    from scanner.rules import RULES

    rule = RULES.get(code)
    return rule is None or rule.status == "stable"


def score_breakdown(
    tools_count: int, findings: Iterable[Scorable], *, counts: Callable[[str], bool] = counts_in_score
) -> ScoreBreakdown:
    """Compute the score of a list of ``tools_count`` tools carrying ``findings``; see the module docstring.

    ``counts`` says which codes count (by default the stable rules of the catalogue).
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
    per_tool, list_counts, outside = tally(tools_count, kept)
    # Tools hit at an index outside the list count on top of it, so their findings never vanish.
    result = score_counts(tools_count + outside, per_tool, list_counts)
    return replace(result, left_out=left_out)


def score(tools_count: int, findings: Iterable[Scorable], *, counts: Callable[[str], bool] = counts_in_score) -> float:
    """The score (0 to 100, one decimal) of a list of ``tools_count`` tools with ``findings``."""
    return score_breakdown(tools_count, findings, counts=counts).score
