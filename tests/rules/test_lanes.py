"""MCP601 and MCP602 on their fixtures: lanes described as data (what each credential saw), no server needed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scanner.models import Outcome, ScanOutcome
from scanner.rules import RULES
from scanner.rules.lanes import lane_findings

FIXTURES = Path(__file__).parents[1] / "fixtures" / "rules"


@dataclass(frozen=True)
class _Lane:
    label: str
    outcome: ScanOutcome
    tools: tuple[str, ...]
    only_here: tuple[str, ...]


@dataclass(frozen=True)
class _Signals:
    status: int | None
    challenge: dict[str, Any] | None
    resource_metadata: dict[str, Any] | None


def _load(code: str, kind: str) -> tuple[list[_Lane], _Signals, list[dict[str, Any]]]:
    data = json.loads((FIXTURES / code / f"{kind}.json").read_text(encoding="utf-8"))
    anonymous_tools = set(data["lanes"][0]["tools"])
    lanes = []
    for index, lane in enumerate(data["lanes"]):
        outcome = ScanOutcome(
            outcome=Outcome(lane["outcome"]),
            transport="streamable-http",
            detail="",
            tools=tuple({"name": name} for name in lane["tools"]) if lane["outcome"] == "ok" else None,
            extra={"status": lane["status"]} if "status" in lane else {},
        )
        only = tuple(name for name in lane["tools"] if name not in anonymous_tools) if index else ()
        lanes.append(_Lane(lane["label"], outcome, tuple(lane["tools"]), only))
    return lanes, _Signals(**data["signals"]), data["expect"]


@pytest.mark.parametrize("code", [code for code, rule in RULES.items() if rule.scope == "lanes"])
@pytest.mark.parametrize("kind", ["positive", "negative"])
def test_lane_rule_fixtures(code: str, kind: str) -> None:
    lanes, signals, expected = _load(code, kind)
    findings = [finding for finding in lane_findings(lanes, signals) if finding.code == code]
    assert len(findings) == len(expected)
    for finding, want in zip(findings, expected, strict=True):
        rule = RULES[code]
        assert (finding.rule, finding.severity, finding.hint, finding.tool) == (
            rule.slug,
            rule.severity,
            rule.hint,
            None,
        )
        for key, value in want.items():
            if key != "code":
                assert finding.details[key] == value


def test_silent_lane_message_names_both_counts_and_the_hidden_tools() -> None:
    lanes, signals, _ = _load("MCP601", "positive")
    (finding,) = lane_findings(lanes, signals)
    assert finding.message.startswith("With MEMBER_TOKEN the server lists 5 tools; without a credential it lists 2")
    assert "create_issue, close_issue, invite" in finding.message


def test_a_challenge_on_the_anonymous_answer_is_a_sign_too() -> None:
    lanes, _, _ = _load("MCP601", "positive")
    signals = _Signals(
        status=200, challenge={"scheme": "Bearer", "params": {"scope": "tools:admin"}}, resource_metadata=None
    )
    assert lane_findings(lanes, signals) == []
