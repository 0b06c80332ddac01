"""The verdicts against the clients' own behaviour as publicly reported (issue 43, acceptance 2): a set of cases
kept apart from the implementation (tests/fixtures/clients-public/cases.json, each a tool-list shape from a public
report with the client's reported behaviour, the source and its date; near misses included; a behaviour the
client has since fixed is expected as "loads" with a dated note). The benchmark is
what the clients did, not Fathom's fixtures: every case's client must get the reported verdict, counting every
rule (stable and preview: a preview rule's refusal is still the client's behaviour, only not gated)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scanner.measure.toollist import measure
from scanner.measure.verdicts import CLIENT_KEYS, verdicts
from scanner.models import Toolset

CASES = Path(__file__).parent.parent / "fixtures" / "clients-public" / "cases.json"
ALL: list[dict[str, Any]] = json.loads(CASES.read_text(encoding="utf-8"))["cases"]


def _tools(case: dict[str, Any]) -> tuple[Any, ...]:
    if "generate" in case:
        return tuple(
            {
                "name": f"tool_{index}",
                "description": f"Returns record {index}.",
                "inputSchema": {"type": "object", "properties": {}},
            }
            for index in range(int(case["generate"]))
        )
    return tuple(case["tools"])


@pytest.mark.parametrize("case", ALL, ids=[case["id"] for case in ALL])
def test_the_verdict_is_what_the_client_did(case: dict[str, Any]) -> None:
    assert case["client"] in CLIENT_KEYS and case["source"].startswith("https://github.com/")
    report = measure(Toolset.from_tools(_tools(case)), server_key=case.get("server_key", ""))
    verdict = next(verdict for verdict in verdicts(report.findings) if verdict.client == case["client"])
    state = verdict.preview_state or verdict.state
    assert state == case["expect"], (case["reported"], verdict.to_json())
    if case.get("dated_note"):  # a refusal the client has since fixed: a dated note, not a verdict
        assert verdict.notes, verdict.to_json()
    if case["expect"] == "drops":
        dropped = verdict.preview_dropped if verdict.preview_state == "drops" else verdict.dropped
        assert sorted(dropped) == sorted(case["dropped"])


def test_the_cases_cover_every_new_rule_and_near_misses() -> None:
    assert len(ALL) >= 25
    assert sum(case["expect"] == "loads" for case in ALL) >= 8  # near misses
    clients = {case["client"] for case in ALL}
    assert {"claude-code", "claude-desktop", "codex", "windsurf", "cursor", "openai-api", "anthropic-api"} <= clients
