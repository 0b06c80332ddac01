"""Every rule against its fixtures: the positive list yields the rule (with the pinned tool, pointer and details),
the negative list, a near miss, does not. Also: every rule is documented and has both fixtures."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from scanner.models import Finding
from scanner.rules import RULES, RuleContext, run_rules

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"

_WORDS = [
    "amber",
    "basil",
    "cedar",
    "dune",
    "ember",
    "fjord",
    "grove",
    "heath",
    "iris",
    "juniper",
    "kelp",
    "larch",
    "moss",
    "nettle",
    "orchid",
    "pine",
    "quartz",
]


def _prose(count: int, seed: int) -> str:
    """Deterministic varied text (varied so the tokenizer cannot merge it into a few long tokens)."""
    out, value = [], seed
    for _ in range(count):
        value = (value * 1103515245 + 12345) % 2**31
        out.append(f"{_WORDS[value % len(_WORDS)]}{value % 89}")
    return " ".join(out)


def _mcp306(positive: bool) -> list[dict[str, Any]]:
    count = 60 if positive else 5
    return [
        {
            "name": f"tool_{index}",
            "description": _prose(220, index),
            "inputSchema": {"type": "object", "properties": {}},
        }
        for index in range(count)
    ]


# List rules whose fixtures are easier to build than to store: code -> builder(positive) -> tools.
BUILT = {"MCP306": _mcp306}


def _load(code: str, kind: str) -> Any:
    if code in BUILT:
        return BUILT[code](kind == "positive")
    with (FIXTURES / code / f"{kind}.json").open(encoding="utf-8") as handle:
        return json.load(handle)


def _expected(code: str) -> list[dict[str, Any]]:
    path = FIXTURES / code / "expected.json"
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as handle:
        return list(json.load(handle))


# lanes: test_lanes.py; registry (MCP7xx, a registry of server.json entries): tests/census/test_registry_rules.py
CHECKED = [
    code
    for code, rule in RULES.items()
    if rule.scope not in ("history", "lanes", "registry") and rule.status != "removed"  # a removed rule never runs
]


def _of(findings: list[Finding], code: str) -> list[Finding]:
    return [finding for finding in findings if finding.code == code]


@pytest.mark.parametrize("code", CHECKED)
def test_positive_fixture_fires(code: str, context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    tools = _load(code, "positive")
    findings = run_rules(tools, context_for(tools))
    hits = _of(findings, code)
    assert hits, f"{code} did not fire on its positive fixture"
    rule = RULES[code]
    for finding in hits:
        assert (finding.rule, finding.severity) == (rule.slug, rule.severity)
        assert finding.hint.endswith(rule.hint)  # a finding may name its own first step before the rule's fix
        assert finding.message and not finding.message[0].islower() and finding.message.endswith(".")
        json.dumps(finding.to_json())  # stored and printed as JSON
    for want in _expected(code):
        matching = [finding for finding in hits if finding.tool == want["tool"]]
        assert matching, f"{code}: no finding for tool {want['tool']!r}: {hits}"
        finding = matching[0]
        assert finding.pointer == want["pointer"]
        for key, value in want["details"].items():
            assert finding.details.get(key) == value, (code, key, finding.details)
        if finding.tool is not None:
            assert finding.tool_index is not None and tools[finding.tool_index]["name"] == finding.tool
            assert finding.tool in finding.message


@pytest.mark.parametrize("code", CHECKED)
def test_negative_fixture_is_silent(code: str, context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    tools = _load(code, "negative")
    findings = run_rules(tools, context_for(tools))
    assert not _of(findings, code), _of(findings, code)


def test_mcp306_counts_with_the_dearest_provider(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    tools = _mcp306(True)
    context = context_for(tools)
    (finding,) = _of(run_rules(tools, context), "MCP306")
    assert finding.tool is None and finding.details["tokens"] == context.list_tokens_max > 20_000


def test_mcp210_reports_the_o200k_count(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    tools = _load("MCP210", "positive")
    (finding,) = _of(run_rules(tools, context_for(tools)), "MCP210")
    from scanner.measure import tokenizer

    compact = json.dumps(tools[0]["inputSchema"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert finding.details["tokens"] == tokenizer.count(compact) > 1000
    negative = _load("MCP210", "negative")
    assert len(json.dumps(negative[0]["inputSchema"], separators=(",", ":"))) > 1000  # a real near miss


def test_mcp214_unknown_dialect_is_said_in_the_message(context_for: Callable[[Sequence[Any]], RuleContext]) -> None:
    tools = _load("MCP214", "positive")
    findings = _of(run_rules(tools, context_for(tools)), "MCP214")
    old = next(finding for finding in findings if finding.tool == "search_old")
    assert "https://example.com/my-dialect" in old.message and "2020-12" in old.message
    new = next(finding for finding in findings if finding.tool == "search")
    assert "'text' is not a JSON Schema type" in new.message and new.message.endswith("at /properties/q/type.")


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_is_documented_and_has_fixtures(code: str) -> None:
    rule = RULES[code]
    assert rule.code == code and rule.slug and rule.hint.strip()
    assert len(rule.doc.split()) >= 25, "a doc says what, why, and shows bad and good"
    assert "Bad" in rule.doc and "Good" in rule.doc
    if rule.scope in ("history", "lanes"):
        assert rule.check is None
    if rule.scope == "history" or code in BUILT:
        return
    for kind in ("positive", "negative"):
        assert (FIXTURES / code / f"{kind}.json").is_file(), f"{code} has no {kind} fixture"
