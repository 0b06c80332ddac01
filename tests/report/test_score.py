"""The score's worked examples (docs/score.md) and its guarantees: bounded, monotone, never drops a finding."""

from __future__ import annotations

import pytest

from scanner.models import Finding, Severity
from scanner.score import SCORE_VERSION, score, score_breakdown, score_counts


def hit(code: str, severity: Severity, index: int | None = None, tool: str | None = None) -> Finding:
    name = tool if tool is not None else (None if index is None else f"tool_{index}")
    return Finding(code, "slug", severity, name, "message", "hint", tool_index=index)


P, W, N = Severity.PROBLEM, Severity.WARNING, Severity.NOTE


@pytest.mark.parametrize(
    ("tools", "findings", "expected"),
    [
        (10, [], 100.0),
        (10, [hit("MCP102", P, 0)], 81.5),
        (10, [hit("MCP210", W, 1), hit("MCP210", W, 1), hit("MCP213", N, 1)], 87.8),
        (60, [hit("MCP305", W)], 96.0),
        (2, [hit("MCP301", P, 0)], 90.0),
        (4, [hit("MCP102", P, i) for i in range(4) for _ in range(3)], 0.0),
        (0, [hit("MCP302", P), hit("MCP306", W)], 86.0),
        (3, [hit("MCP102", P, 7)], 76.2),
        (45, [*(hit("MCP301", P, i) for i in range(44)), hit("MCP305", W)], 66.0),
    ],
)
def test_worked_examples_from_the_docs(tools: int, findings: list[Finding], expected: float) -> None:
    assert score(tools, findings) == expected


def test_version_is_named() -> None:
    assert SCORE_VERSION == "2"
    assert score_breakdown(1, []).version == SCORE_VERSION


def test_a_finding_without_index_is_placed_by_tool_name() -> None:
    by_name = score(5, [hit("MCP102", P, tool="a"), hit("MCP210", W, tool="a")])
    # Both land on one tool: t = 0.35, mean 0.87, worst 0.35 -> 71.4
    assert by_name == 71.4
    # The same findings spread over two tools: same mean, a less bad worst tool (0.5) -> 75.9
    assert score(5, [hit("MCP102", P, tool="a"), hit("MCP210", W, tool="b")]) == 75.9


def test_worse_findings_never_raise_the_score() -> None:
    base = [hit("MCP210", W, 0)]
    assert score(10, base) > score(10, [*base, hit("MCP213", N, 3)]) > score(10, [*base, hit("MCP205", P, 3)])


def test_clamped_to_zero_with_many_list_problems() -> None:
    list_problems = [hit(code, P) for code in ("MCP301", "MCP302", "MCP304", "MCP3X1") for _ in range(3)]
    assert score(1, list_problems) == 0.0
    assert score(1, list_problems[:3] * 10) == 70.0  # one code repeated: counted three times


def test_counts_and_findings_agree() -> None:
    findings = [hit("MCP102", P, 0), hit("MCP210", W, 2), hit("MCP210", W, 2), hit("MCP305", W)]
    assert score_counts(8, [(1, 0, 0), (0, 2, 0)], (0, 1, 0)).score == score(8, findings)


def test_severity_may_arrive_as_its_integer_value() -> None:
    class Loose:
        code, tool, tool_index = "MCP102", "x", 0
        severity = 0

    assert score(2, [Loose()]) == score(2, [hit("MCP102", P, 0)])  # type: ignore[list-item]


def test_only_stable_rules_count() -> None:
    """rules.md: a preview rule (under 80 % precision on real lists) is reported but left out of the score."""
    from scanner.rules import RULES

    assert RULES["MCP303"].status == "preview" and RULES["MCP305"].status == "stable"
    findings = [*(hit("MCP303", W, i) for i in range(44)), hit("MCP305", W)]
    breakdown = score_breakdown(45, findings)
    assert (breakdown.score, breakdown.left_out) == (96.0, 44)
    assert score(45, findings, counts=lambda code: True) == 84.0  # what counting every rule would give
    assert score(1, [hit("MCP999", P, 0)]) == 50.0  # a code this catalogue does not know still counts
