"""Measure one tool list: provider token costs, per-tool costs and findings. The heart of ``fathom check``.

:func:`measure` is pure given a tool list (and the offline tokenizer); the crawler and the store call it for every
new toolset, ``fathom check`` for one. :func:`run_check` is the single library call behind ``fathom check``: it
gets the list (from a file, or from a server through the MCP client), measures it, and returns both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scanner.errors import OutputError
from scanner.models import (
    CONTEXT_WINDOW,
    CheckReport,
    Finding,
    ScanOutcome,
    ServerEntry,
    ToolCost,
    Toolset,
)

if TYPE_CHECKING:
    from scanner.mcp import ClientLimits


def tool_label(tool: Any, index: int) -> str:
    """A name to show for a tool, even one whose name is missing or not a string."""
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) and name else f"#{index}"


def measure(
    toolset: Toolset,
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    instructions: str | None = None,
) -> CheckReport:
    """Token costs per provider, every tool's own cost, and the findings of the rule catalogue.

    With ``instructions`` (the server's text) the report also carries their cost per provider as a system text,
    and MCP401/MCP402 over them join the findings (``tool`` None, ``pointer`` ``"instructions"``).

    Raises :class:`~scanner.errors.TokenizerUnavailable` if the offline tokenizer cannot be loaded: a number
    without its tokenizer is never reported.
    """
    from scanner import providers, tokenizer
    from scanner.providers.base import read_tool
    from scanner.rules import RuleContext, run_rules

    tools = list(toolset.tools)
    parts = [read_tool(tool) for tool in tools]  # copied and bounded once, shared by every provider
    measured = providers.measure_all(parts)
    tokens = {provider: measurement.total for provider, measurement in measured.items()}
    tool_costs = tuple(
        ToolCost(
            name=tool_label(tool, index),
            index=index,
            tokens={provider: measurement.per_tool[index] for provider, measurement in measured.items()},
        )
        for index, tool in enumerate(tools)
    )
    most = max(count.tokens for count in tokens.values())
    context = RuleContext(
        count_tokens=tokenizer.count,
        list_tokens_max=most,
        cost_text=providers.text_cost,
        cost_method=providers.text_cost_method(),
        tool_tokens_max=tuple(max(cost.tokens.values(), default=0) for cost in tool_costs),
        tool_tokens_method="per tool, the most expensive provider's view",
    )
    findings = run_rules(tools, context, select=select, ignore=ignore)
    cost = None
    if instructions:
        from scanner.instructions import instruction_findings, measure_instructions

        cost = measure_instructions(instructions)
        extra = instruction_findings(instructions, select=select, ignore=ignore)
        if extra:
            findings = sorted([*findings, *extra], key=lambda finding: finding.sort_key())
    return CheckReport(
        tools_count=len(tools),
        tokens=tokens,
        context_share=most / CONTEXT_WINDOW,
        tool_costs=tool_costs,
        findings=tuple(findings),
        toolset_sha256=toolset.sha256,
        instructions=cost,
    )


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


def run_check(request: CheckRequest) -> CheckResult:
    """Get the tool list the request names, measure it, and return both.

    A server that cannot be listed is not an exception: the result carries its outcome and no report.
    """
    if request.entry is None:
        from scanner.toolsets import DEFAULT_MAX_BYTES, load_tools

        source = request.tools_file or "-"
        toolset = Toolset.from_tools(load_tools(source, request.max_bytes or DEFAULT_MAX_BYTES))
        label = "standard input" if source == "-" else source
        return CheckResult(report=_measure(request, toolset), tools=toolset.tools, source=label)

    import anyio

    from scanner.mcp import ClientLimits, scan_server

    entry = request.entry
    outcome = anyio.run(scan_server, entry, request.limits or ClientLimits(), request.profile)
    if not outcome.ok or outcome.tools is None:
        from scanner.lanes import scan_findings

        found = tuple(scan_findings(outcome))
        return CheckResult(report=None, outcome=outcome, source=entry.target(), outcome_findings=found)
    if request.save is not None:
        try:
            request.save.write_text(json.dumps({"tools": list(outcome.tools)}, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"Cannot save the tool list to {request.save}: {exc.strerror or exc}") from exc
    toolset = Toolset.from_tools(list(outcome.tools))
    from scanner.instructions import instructions_text

    text = instructions_text(outcome.extra)
    return CheckResult(
        report=_measure(request, toolset, text),
        tools=toolset.tools,
        outcome=outcome,
        source=entry.target(),
        instructions=text,
    )


def _measure(request: CheckRequest, toolset: Toolset, instructions: str | None = None) -> CheckReport | None:
    if not request.measure:
        return None
    return measure(toolset, select=request.select, ignore=request.ignore, instructions=instructions)
