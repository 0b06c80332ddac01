"""Shared pieces for the store tests: a real SQLite file per test, and a small deterministic ``measure``.

``local_measure`` stands in for ``scanner.measure.toollist.measure`` so the expected findings are known exactly: it
flags a
missing or one-word description (MCP102, problem) and a parameter without a type (MCP205, problem), notes more
than two tools (MCP305 stand-in, a list finding), and counts tokens as characters / 4 with a per-provider factor.
``test_with_real_measure`` runs the write path with the real one when the rule catalogue is importable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scanner.models import (
    CheckReport,
    Finding,
    Outcome,
    ScanOutcome,
    ServerEntry,
    Severity,
    TokenCount,
    ToolCost,
    Toolset,
    canonical_json,
)
from scanner.store import Store, open_store

FACTORS = {"anthropic": 1.1, "openai": 1.0, "gemini": 1.05}


def _tokens(value: Any, factor: float) -> int:
    return round(len(canonical_json(value)) / 4 * factor)


def local_measure(toolset: Toolset) -> CheckReport:
    """A deterministic CheckReport of ``toolset`` (see the module docstring); counts its calls."""
    local_measure.calls += 1  # type: ignore[attr-defined]
    findings: list[Finding] = []
    costs = []
    for index, tool in enumerate(toolset.tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        label = name if isinstance(name, str) else f"#{index}"
        costs.append(ToolCost(name=label, index=index, tokens={p: _tokens(tool, f) for p, f in FACTORS.items()}))
        if not isinstance(tool, dict):
            continue
        description = tool.get("description")
        if not isinstance(description, str) or len(description.split()) < 2:
            findings.append(
                Finding(
                    "MCP102",
                    "description-missing",
                    Severity.PROBLEM,
                    label,
                    f"{label}: no description",
                    "Say what the tool does.",
                    "/description",
                    {},
                    index,
                )
            )
        schema = tool.get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        untyped = sorted(k for k, v in (properties or {}).items() if not (isinstance(v, dict) and "type" in v))
        if untyped:
            findings.append(
                Finding(
                    "MCP205",
                    "param-untyped",
                    Severity.PROBLEM,
                    label,
                    f"{label}: untyped {untyped}",
                    "Give each a type.",
                    "/inputSchema/properties",
                    {"params": untyped},
                    index,
                )
            )
    if len(toolset.tools) > 2:
        findings.append(
            Finding("MCP305", "tools-over-40", Severity.WARNING, None, "many tools", "Offer fewer.", None, {}, None)
        )
    tokens = {p: TokenCount(p, _tokens(list(toolset.tools), f) + 100, f"chars/4x{f}") for p, f in FACTORS.items()}
    most = max(t.tokens for t in tokens.values())
    findings.sort(key=Finding.sort_key)
    return CheckReport(
        tools_count=len(toolset.tools),
        tokens=tokens,
        context_share=most / 200_000,
        tool_costs=tuple(costs),
        findings=tuple(findings),
        toolset_sha256=toolset.sha256,
    )


local_measure.calls = 0  # type: ignore[attr-defined]


def tool(name: Any, description: Any = "Does a useful thing with the given input.", **props: Any) -> dict[str, Any]:
    """A tool whose parameters are ``props`` (name -> JSON type, or None for an untyped parameter)."""
    properties = {key: ({"type": kind, "description": key} if kind else {}) for key, kind in props.items()}
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties}}


def entry(name: str) -> ServerEntry:
    return ServerEntry(name=name, transport="streamable-http", url=f"https://{name}.example/mcp")  # type: ignore[arg-type]


def ok(tools: list[Any], version: str | None = "1.0.0", **extra: Any) -> ScanOutcome:
    return ScanOutcome(
        outcome=Outcome.OK,
        transport="streamable-http",
        tools=tuple(tools),
        server_name="demo",
        server_version=version,
        protocol_version="2025-06-18",
        era="legacy",
        capability_profile="fathom-default",
        timings_ms={"connect": 12.345, "initialize": 30.0, "list": 8.25},
        pages=1,
        **extra,
    )


def failed(outcome: Outcome = Outcome.TIMEOUT, detail: str = "no answer within 10 s") -> ScanOutcome:
    return ScanOutcome(outcome=outcome, transport="streamable-http", detail=detail)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "fathom.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{db_path}")
    yield opened
    opened.close()
