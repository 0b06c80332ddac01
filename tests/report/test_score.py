"""The score's worked examples (docs/score.md, kept in step by a test here) and its guarantees: bounded, monotone
in findings and in tokens, no score without tools, removed tools and preview rules never move it."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from scanner.measure.score import COST_BUDGET, SCORE_VERSION, cost_penalty, score, score_breakdown, score_counts
from scanner.models import Finding, Severity

DOCS = Path(__file__).resolve().parents[2] / "docs" / "score.md"


def hit(code: str, severity: Severity, index: int | None = None, tool: str | None = None) -> Finding:
    name = tool if tool is not None else (None if index is None else f"tool_{index}")
    return Finding(code, "slug", severity, name, "message", "hint", tool_index=index)


P, W, N = Severity.PROBLEM, Severity.WARNING, Severity.NOTE

# Each row of the worked-examples table in docs/score.md: (the "list" cell, tools, tokens, findings, score).
WORKED: list[tuple[str, int, int, list[Finding], float | None]] = [
    ("10 tools, no findings, 900 tokens", 10, 900, [], 100.0),
    ("10 tools, no findings, 2,000 tokens", 10, 2000, [], 96.0),
    ("10 tools, no findings, 16,000 tokens (8 × the list above)", 10, 16000, [], 84.0),
    ("10 tools, no findings, 20,001 tokens", 10, 20001, [], 82.7),
    ("10 tools, one tool with a problem (MCP102), 2,000 tokens", 10, 2000, [hit("MCP102", P, 0)], 77.5),
    (
        "10 tools, one tool with 2 warnings (MCP210) and a note (MCP213), 1,000 tokens",
        10,
        1000,
        [hit("MCP210", W, 1), hit("MCP210", W, 1), hit("MCP213", N, 1)],
        87.8,
    ),
    (
        "60 tools, MCP305 tools-over-40 and MCP306 list-over-20k (warnings), 24,000 tokens",
        60,
        24000,
        [hit("MCP305", W), hit("MCP306", W)],
        73.7,
    ),
    ("2 tools, MCP301 names-confusable (problem, names tool 0), 800 tokens", 2, 800, [hit("MCP301", P, 0)], 90.0),
    (
        "4 tools, each with 3 problems, 1,500 tokens",
        4,
        1500,
        [hit("MCP102", P, i) for i in range(4) for _ in range(3)],
        0.0,
    ),
    ("0 tools (an empty list), whatever its findings", 0, 0, [hit("MCP302", P)], None),
    (
        "45 tools, 44 MCP301 names-confusable (problem) + MCP305 tools-over-40, 9,000 tokens",
        45,
        9000,
        [*(hit("MCP301", P, i) for i in range(44)), hit("MCP305", W)],
        53.3,
    ),
    (
        "45 tools, 44 MCP113 not-for-the-model (warning, **preview**: not counted) + MCP305, 9,000 tokens",
        45,
        9000,
        [*(hit("MCP113", W, i) for i in range(44)), hit("MCP305", W)],
        83.3,
    ),
    ("3 tools, one problem on a tool at index 7 (outside the list), 700 tokens", 3, 700, [hit("MCP102", P, 7)], 90.0),
    (
        "3 tools, MCP502 tool-removed notes on 2 tools no longer in the list, 700 tokens",
        3,
        700,
        [hit("MCP502", N, tool="gone_a"), hit("MCP502", N, tool="gone_b")],
        100.0,
    ),
    (
        "10 tools, one with a root anyOf (MCP801: the Anthropic API refuses the whole list), 900 tokens",
        10,
        900,
        [hit("MCP801", P, 3)],
        30.0,
    ),
    (
        "10 tools, one with an array without items (MCP803: the OpenAI API refuses the whole list) and MCP102, "
        "900 tokens",
        10,
        900,
        [hit("MCP803", P, 2), hit("MCP102", P, 2)],
        30.0,
    ),
    (
        "10 tools, one with a `type` list (MCP805: Gemini's `parameters` refuses the whole request), 900 tokens",
        10,
        900,
        [hit("MCP805", P, 1)],
        30.0,
    ),
]


@pytest.mark.parametrize(("label", "tools", "tokens", "findings", "expected"), WORKED, ids=[row[0] for row in WORKED])
def test_worked_examples(label: str, tools: int, tokens: int, findings: list[Finding], expected: float | None) -> None:
    assert score(tools, findings, tokens=tokens) == expected


def test_the_docs_table_is_the_worked_examples() -> None:
    """docs/score.md's table lists exactly these examples, in this order, each with the score computed here."""
    rows = []
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[0] not in ("list", "---"):
            rows.append((cells[0], cells[-1]))
    assert [label for label, _ in rows] == [row[0] for row in WORKED]
    for (label, shown), (_, tools, tokens, findings, _expected) in zip(rows, WORKED, strict=True):
        value = score(tools, findings, tokens=tokens)
        text = "no score" if value is None else f"{value:.1f}"
        assert re.match(rf"\*\*{re.escape(text)}\*\*", shown), (label, shown, text)


def test_version_is_named() -> None:
    assert SCORE_VERSION == "3"
    parts = score_breakdown(1, [], tokens=500)
    assert parts is not None and parts.version == SCORE_VERSION
    assert f"Score version {SCORE_VERSION}" in DOCS.read_text(encoding="utf-8")


# --- cost counts ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("small", [380, 500, 999, 1000, 1500, 2500, 5000, 12_000, 40_000, 250_000])
def test_eight_times_the_tokens_is_at_least_5_points_lower(small: int) -> None:
    """Of two lists with no findings, the one costing 8x the other's tokens scores at least 5 points lower (any
    list with a tool costs at least about 380 tokens with the dearest provider)."""
    cheap, dear = score(10, [], tokens=small), score(10, [], tokens=8 * small)
    assert cheap is not None and dear is not None
    assert cheap - dear >= 5.0


@pytest.mark.parametrize("tokens", [20_001, 20_500, 35_447, 41_439, 100_000, 2_000_000])
@pytest.mark.parametrize("tools", [1, 38, 98, 128])
def test_no_list_over_20k_tokens_scores_above_85(tools: int, tokens: int) -> None:
    value = score(tools, [], tokens=tokens)
    assert value is not None and value <= 85.0


def test_cost_is_monotone_and_free_within_the_budget() -> None:
    values = [score(10, [], tokens=tokens) for tokens in range(0, 400_000, 997)]
    assert all(a is not None and b is not None and a >= b for a, b in itertools.pairwise(values))
    assert cost_penalty(COST_BUDGET) == 0.0 and cost_penalty(0) == 0.0
    assert cost_penalty(COST_BUDGET + 1) > 0.0
    assert cost_penalty(2 * COST_BUDGET) == pytest.approx(4.0)


def test_the_breakdown_says_what_the_cost_took() -> None:
    parts = score_breakdown(10, [hit("MCP102", P, 0)], tokens=4000)
    assert parts is not None
    assert (parts.cost_penalty, parts.tokens) == (8.0, 4000)
    assert parts.score == round(100 * (0.7 * parts.mean_tool + 0.3 * parts.worst_tool) - 8.0, 1)


# --- no tools, no score --------------------------------------------------------------------------------------


def test_an_empty_list_has_no_score() -> None:
    assert score_breakdown(0, [], tokens=0) is None
    assert score_breakdown(0, [hit("MCP306", W)], tokens=30_000) is None
    assert score_counts(0, [], (0, 0, 0), tokens=0) is None


# --- removed tools never raise it ----------------------------------------------------------------------------


def test_findings_on_tools_outside_the_list_never_raise_the_score() -> None:
    """A finding on a tool with no place in the list (gone, or a bad index) never counts as an extra tool."""
    base = [hit("MCP102", P, 0)]
    alone = score(3, base, tokens=700)
    assert alone is not None
    for extra in (
        [hit("MCP213", N, tool="gone")],
        [hit("MCP213", N, 5), hit("MCP213", N, 6), hit("MCP213", N, 9)],
        [hit("MCP502", N, tool=f"gone_{i}") for i in range(10)],
    ):
        value = score(3, [*base, *extra], tokens=700)
        assert value is not None and value <= alone


def test_worse_findings_never_raise_the_score() -> None:
    base = [hit("MCP210", W, 0)]
    worse = (base, [*base, hit("MCP213", N, 3)], [*base, hit("MCP205", P, 3)])
    values = [score(10, found, tokens=1200) for found in worse]
    assert values[0] is not None and values[1] is not None and values[2] is not None
    assert values[0] > values[1] > values[2]


def test_clamped_to_zero_with_many_list_problems() -> None:
    list_problems = [hit(code, P) for code in ("MCP301", "MCP302", "MCP304", "MCP3X1") for _ in range(3)]
    assert score(1, list_problems, tokens=500) == 0.0
    assert score(1, list_problems[:3] * 10, tokens=500) == 70.0  # one code repeated: counted three times


def test_counts_and_findings_agree() -> None:
    findings = [hit("MCP102", P, 0), hit("MCP210", W, 2), hit("MCP210", W, 2), hit("MCP305", W)]
    parts = score_counts(8, [(1, 0, 0), (0, 2, 0)], (0, 1, 0), tokens=3000)
    assert parts is not None and parts.score == score(8, findings, tokens=3000)


def test_severity_may_arrive_as_its_integer_value() -> None:
    class Loose:
        code, tool, tool_index = "MCP102", "x", 0
        severity = 0

    assert score(2, [Loose()], tokens=500) == score(2, [hit("MCP102", P, 0)], tokens=500)  # type: ignore[list-item]


# --- preview findings never move it --------------------------------------------------------------------------


def test_only_stable_rules_about_the_list_count() -> None:
    """rules.md: a preview rule (under 80 % precision on real lists) is reported but left out of the score; so are
    the findings about changes over time (MCP5xx), the connection (MCP6xx) and the registry entry (MCP7xx)."""
    from scanner.rules import RULES

    assert RULES["MCP113"].status == "preview" and RULES["MCP305"].status == "stable"
    findings = [*(hit("MCP113", W, i) for i in range(44)), hit("MCP305", W)]
    breakdown = score_breakdown(45, findings, tokens=900)
    assert breakdown is not None and (breakdown.score, breakdown.left_out) == (96.0, 44)
    assert score(45, findings, tokens=900, counts=lambda code: True) == 81.2  # what counting every rule would give
    retired = [hit("MCP303", W, i) for i in range(44)]  # a retired rule's stored findings never count either
    assert RULES["MCP303"].status == "removed" and score(45, retired, tokens=900) == 100.0
    assert score(1, [hit("MCP999", P, 0)], tokens=500) == 50.0  # a code this catalogue does not know still counts
    others = [hit("MCP501", W, 0), hit("MCP502", N, tool="x"), hit("MCP601", W), hit("MCP701", P)]
    assert score(2, others, tokens=500) == 100.0


@pytest.mark.parametrize("code", ["MCP113", "MCP216", "MCP218", "MCP402", "MCP403", "MCP806"])
def test_preview_findings_never_move_it(code: str) -> None:
    from scanner.rules import RULES

    if RULES[code].status != "preview":
        pytest.skip(f"{code} is not a preview rule in this catalogue")
    base = [hit("MCP102", P, 1)]
    noisy = [*base, *(hit(code, RULES[code].severity, i) for i in range(5) for _ in range(3)), hit(code, P)]
    assert score(5, noisy, tokens=3000) == score(5, base, tokens=3000)


def test_a_refused_list_is_capped_below_every_list_that_loads_and_says_why() -> None:
    """Issue 35: a refused list is the worst finding a server can have, and the score says so."""
    from scanner.measure.score import REFUSED_CAP

    refused = score_breakdown(10, [hit("MCP801", P, 3)], tokens=900)
    merely_bad = score_breakdown(10, [hit("MCP102", P, i) for i in range(3)], tokens=900)
    assert refused is not None and merely_bad is not None
    assert refused.score == REFUSED_CAP < merely_bad.score
    assert refused.refused == ("MCP801",) and merely_bad.refused == ()
