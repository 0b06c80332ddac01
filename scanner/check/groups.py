"""Findings made readable at 200: a rule that fires on more than five tools is shown once, with its count.

Text and Markdown output (``fathom check``) and the report's server page group this way; ``--verbose`` lists
every finding, and JSON, SARIF and the database always keep every finding. Grouping keeps the report's order
(worst first, then tool order): a group stands where its rule's first finding stood.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scanner.models import Finding

GROUP_OVER = 5
"""A rule firing on more tools than this is shown as one group."""
SHOWN_TOOLS = 3
"""How many of a group's tools are named."""


@dataclass(frozen=True)
class FindingGroup:
    """Every finding of one rule, shown once: the first finding stands for them, then how many tools."""

    findings: tuple[Finding, ...]

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for finding in self.findings for name in tools_of(finding)))

    def summary(self) -> str:
        """``18 tools: get_user, get_page, search and 15 more``."""
        tools = self.tools
        shown = ", ".join(tools[:SHOWN_TOOLS])
        more = f" and {len(tools) - SHOWN_TOOLS} more" if len(tools) > SHOWN_TOOLS else ""
        return f"{len(tools)} tools: {shown}{more}"


def tools_of(finding: Finding) -> tuple[str, ...]:
    """The tools a finding is about: its tool, and for a pair rule the other tool named in its details."""
    other = finding.details.get("other")
    names = (finding.tool, other if isinstance(other, str) else None)
    return tuple(name for name in names if name is not None)


def group_findings(findings: Sequence[Finding], *, verbose: bool = False) -> list[Finding | FindingGroup]:
    """The findings to show, in order, with each rule firing on more than :data:`GROUP_OVER` tools as one group."""
    if verbose:
        return list(findings)
    by_code: dict[str, list[Finding]] = {}
    for finding in findings:
        by_code.setdefault(finding.code, []).append(finding)
    grouped = {
        code
        for code, found in by_code.items()
        if len({name for finding in found for name in tools_of(finding)}) > GROUP_OVER
    }
    out: list[Finding | FindingGroup] = []
    for finding in findings:
        if finding.code not in grouped:
            out.append(finding)
        elif by_code[finding.code][0] is finding:
            out.append(FindingGroup(tuple(by_code[finding.code])))
    return out
